package grids_test

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// storeCase is one cache_store call (docs/contract.md §3.1); the harness judges it
// (harness.StoreCall).
type storeCase struct {
	f       oracle.Format
	dt      kernels.Dtype
	hkv     int
	nb, bs  int
	lbnhc   bool
	ks, vs  oracle.Signs
	slots   []int64 // slot_mapping, n entries (n ≤ T)
	T       int     // token rows of key and value
	kf, vf  []float32
	hq      int    // > 0: key and value are views into one fused qkv buffer [T][hq+2·hkv][256]
	hostMap bool   // pass slot_mapping_host as well
	cache   []byte // the cache before the store
}

// run stores on the library and reports the harness's verdict (harness.StoreCall: every written
// slot accepted under docs/format.md §10, pad bytes and every byte outside the written slots
// unchanged, canaries intact, inputs unchanged, the same bytes twice). It returns the verdict; its
// Output is the cache after the store.
func (c *storeCase) run(t *testing.T, l *harness.Lib, what string) harness.Verdict {
	t.Helper()
	call := &harness.StoreCall{Cache: newCache(t, c.f, c.cache, c.nb, c.hkv, c.bs, c.lbnhc), Dtype: harness.DtypeOf(c.dt), K: c.kf, V: c.vf,
		Rows: c.T, Mapping: c.slots, KSigns: c.ks, VSigns: c.vs, FusedQHeads: c.hq, HostMap: c.hostMap}
	v := harness.Check(l, libImpl(t, l, arch.Store), call)
	report(t, what, v)
	if v.Output == nil {
		t.FailNow()
	}
	return v
}

// storeAxes are the store grid's axes; every pair of values appears in some case (grid_test.go).
var storeAxes = []axis{
	{"fmt", []string{"k3v3", "k3v4", "k3v3c"}},
	{"dt", []string{"f16", "bf16"}},
	{"hkv", []string{"hkv1", "hkv2", "hkv5"}},
	{"bs", []string{"bs16", "bs32", "bs48", "bs64", "bs1"}},
	{"lay", []string{"lbhnc", "lbnhc"}},
	{"map", []string{"seq", "rev", "rand", "padfirst", "padmid", "padlast", "sparse"}},
	{"signs", signKinds},
	{"view", []string{"contig", "fused"}},
	{"host", []string{"devmap", "hostmap"}},
	{"dist", []string{"gauss", "spread", "outlier", "tiny", "huge"}},
}

var storeFormats = map[string]oracle.FormatID{"k3v3": oracle.K3V3, "k3v4": oracle.K3V4, "k3v3c": oracle.K3V3Compact}

// TestStoreGrid stores batches of tokens into caches of random bytes, over a pairwise grid of
// formats, dtypes, KV heads, block sizes, layouts, slot-mapping patterns (−1 padding first, in the
// middle, last; reversed, random, sparse), sign patterns, fused-QKV views, host or device slot
// mapping and input distributions, and judges every byte (storeCase.judge).
func TestStoreGrid(t *testing.T) {
	l := lib(t)
	grid, err := buildGrid(storeAxes, 2, nil, *seedFlag)
	if err != nil {
		t.Fatal(err)
	}
	tokens := 400
	if testing.Short() {
		tokens = 120
	}
	t.Logf("%d cases (pairwise over %d axes), up to %d tokens each", len(grid), len(storeAxes), tokens)
	var expl, total int
	for _, gc := range grid {
		path := fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s/%s/%s/%s", gc["fmt"], gc["dt"], gc["hkv"], gc["bs"], gc["lay"], gc["map"], gc["signs"], gc["view"], gc["host"], gc["dist"])
		t.Run(path, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(caseSeed("store/"+path), 1))
			c := &storeCase{f: kernelFormat(t, storeFormats[gc["fmt"]]), dt: kernels.F16, lbnhc: gc["lay"] == "lbnhc", hostMap: gc["host"] == "hostmap"}
			if gc["dt"] == "bf16" {
				c.dt = kernels.BF16
			}
			fmt.Sscanf(gc["hkv"], "hkv%d", &c.hkv)
			fmt.Sscanf(gc["bs"], "bs%d", &c.bs)
			c.ks, c.vs = makeSigns(rng, gc["signs"])
			n := 1 + rng.IntN(tokens)
			c.nb = (2*n+c.bs-1)/c.bs + 1
			nslots := c.nb * c.bs
			c.slots = storeMapping(rng, gc["map"], n, nslots)
			c.T = n + rng.IntN(3) // rows past num_tokens are never read
			if gc["view"] == "fused" {
				c.hq = c.hkv * (1 + rng.IntN(3))
			}
			dist := map[string]actDist{"gauss": gaussian, "spread": {sigma: 0.3, spread: 30, outlier: -1},
				"outlier": {sigma: 1, outlier: rng.IntN(256)}, "tiny": {sigma: 1e-6, spread: 10, outlier: -1},
				"huge": {outlier: -1}}[gc["dist"]]
			if gc["dist"] == "huge" && c.dt == kernels.BF16 {
				dist.sigma = 1e30 // bf16 reaches values whose Σx² overflows float32
			} else if gc["dist"] == "huge" {
				dist.sigma = 8000 // fp16: up to ~6σ stays below 65504
			}
			_, c.kf = randRows(rng, c.T*c.hkv, c.dt, dist)
			_, c.vf = randRows(rng, c.T*c.hkv, c.dt, dist)
			c.cache = randBytes(rng, oracle.CacheBytes(c.f, c.nb, c.hkv, c.bs))
			v := c.run(t, l, "store")
			expl, total = expl+v.Explained, total+v.Judged
		})
	}
	t.Logf("%d slots written: %d identical to the oracle, %d explained by docs/format.md §10", total, total-expl, expl)
}

// storeMapping returns a slot_mapping of n entries into nslots slots for a pattern.
func storeMapping(rng *rand.Rand, pattern string, n, nslots int) []int64 {
	perm := rng.Perm(nslots)
	m := make([]int64, n)
	base := rng.IntN(nslots - n + 1)
	for i := range m {
		switch pattern {
		case "rev":
			m[i] = int64(base + n - 1 - i)
		case "rand", "sparse":
			m[i] = int64(perm[i])
		default:
			m[i] = int64(base + i)
		}
	}
	pad := func(i int) {
		if i >= 0 && i < n {
			m[i] = -1 - int64(rng.IntN(3)) // −1 (vLLM), or any other negative value
		}
	}
	switch pattern {
	case "padfirst":
		for i := 0; i < 1+n/8; i++ {
			pad(i)
		}
	case "padmid":
		for i := n / 3; i < n/3+1+n/8; i++ {
			pad(i)
		}
	case "padlast":
		for i := n - 1 - n/8; i < n; i++ {
			pad(i)
		}
	case "sparse":
		for i := range m {
			if rng.IntN(2) == 0 {
				pad(i)
			}
		}
	}
	return m
}

// TestStoreWorkedExample stores docs/format.md §9's worked example (fp16 and bf16 represent its small
// integers exactly) in both layouts at a slot in the middle of a cache of 0xAA and requires the
// spec's bytes, pad untouched.
func TestStoreWorkedExample(t *testing.T) {
	l := lib(t)
	want := map[oracle.FormatID]string{
		oracle.K3V4:        "54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd0368849474314688df50b815e9d11836d5c975b995786782bd6ac56887ba987fa8b6c314c7c633973b6876384838c6e88584767c95439311aa44aa9379e793c4c97788816666c8d8a3b437c52d64be6b6da7966c8d9b8d467ad791c6576537b65137739b4a572d965442d3635c859dc1488aa5c35cb974383d98f95258764cc5779f8a4232c3997b3bb264ad528e8d41644060405c403843",
		oracle.K3V3:        "54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd0368849474314688df50b815e9d1e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9010af8ff78a865e63bed2e1702bbbdefd71758b796d3aa296298a841ce9486f01a8a5f93e06d9535816cbad70b615b5ae2877a823eba6320bb851d2e902e4480cb1a553f3dd210eb8d41644060405c40cf41",
		oracle.K3V3Compact: "89068fd40cb2ab9253e1718a646f6847316bf92a79fa11e6ce8f67953a1faa57b7df66ff51369224b774d186763391f75514d4d07bd3687edb9d166cce8faede548c0463b81579f11b7ea1a8858472a5b08220b3316b572e866add975807cbd1e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9010af8ff78a865e63bed2e1702bbbdefd71758b796d3aa296298a841ce9486f01a8a5f93e06d9535816cbad70b615b5ae2877a823eba6320bb851d2e902e4480cb1a553f3dd210eb7040cf41",
	}
	for _, id := range oracle.AllFormats {
		for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
			for _, lbnhc := range []bool{false, true} {
				path := fmt.Sprintf("%s/%s/%s", fmtName(id), dtName(dt), layoutName(lbnhc))
				t.Run(path, func(t *testing.T) {
					c := &storeCase{f: kernelFormat(t, id), dt: dt, hkv: 2, nb: 2, bs: 16, lbnhc: lbnhc, T: 1, slots: []int64{21},
						ks: oracle.DefaultSigns(256), vs: oracle.DefaultSigns(256)}
					c.kf, c.vf = make([]float32, 2*256), make([]float32, 2*256)
					for h := 0; h < 2; h++ {
						for d := 0; d < 256; d++ {
							c.kf[h*256+d] = float32((37*d+11)%7 - 3)
							c.vf[h*256+d] = float32((53*d+5)%9 - 4)
						}
					}
					c.cache = make([]byte, oracle.CacheBytes(c.f, c.nb, c.hkv, c.bs))
					for i := range c.cache {
						c.cache[i] = 0xAA
					}
					v := c.run(t, l, "worked example")
					view := newCache(t, c.f, v.Output, c.nb, c.hkv, c.bs, c.lbnhc)
					w, _ := hex.DecodeString(want[id])
					for h := 0; h < 2; h++ {
						got := view.Slot(1, h, 5)[:len(w)]
						if hex.EncodeToString(got) != want[id] {
							failf(t, "worked example (docs/format.md §9), KV head %d:\n got %x\nwant %x", h, got, w)
						}
					}
				})
			}
		}
	}
}

// TestStoreEdgeValues stores groups the format treats specially: NaN and ±inf inputs (the group
// must decode to zero, docs/format.md §10 rule 4), bf16 values whose Σx² overflows float32, values far
// below fp16's range, all-zero and all-negative-zero rows, constant rows (exact threshold ties), and
// a spike in one dim.
func TestStoreEdgeValues(t *testing.T) {
	l := lib(t)
	for _, id := range oracle.AllFormats {
		for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
			path := fmt.Sprintf("%s/%s", fmtName(id), dtName(dt))
			t.Run(path, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(caseSeed("store-edge/"+path), 2))
				type row struct {
					name string
					k, v func(d int) float32
				}
				g := func(s float64) func(int) float32 { return func(int) float32 { return float32(rng.NormFloat64() * s) } }
				nan, inf := float32(math.NaN()), float32(math.Inf(1))
				rows := []row{
					{"nan-k-rope", func(d int) float32 { return map[bool]float32{true: nan, false: float32(rng.NormFloat64())}[d == 7] }, g(1)},
					{"nan-k-nope", func(d int) float32 { return map[bool]float32{true: nan, false: float32(rng.NormFloat64())}[d == 130] }, g(1)},
					{"inf-v", g(1), func(d int) float32 { return map[bool]float32{true: inf, false: float32(rng.NormFloat64())}[d == 3] }},
					{"neginf-k", func(d int) float32 { return map[bool]float32{true: -inf, false: float32(rng.NormFloat64())}[d == 200] }, g(1)},
					{"tiny-v", g(1), g(1e-7)},
					{"zero", func(int) float32 { return 0 }, func(int) float32 { return 0 }},
					{"negzero", func(int) float32 { return float32(math.Copysign(0, -1)) }, func(int) float32 { return float32(math.Copysign(0, -1)) }},
					{"const", func(int) float32 { return 1 }, func(int) float32 { return -2 }},
					{"spike", func(d int) float32 { return map[bool]float32{true: 1000, false: 0}[d == 17] }, func(d int) float32 { return map[bool]float32{true: -3, false: 0}[d == 255] }},
					{"max", func(d int) float32 { return map[bool]float32{true: 65504, false: -65504}[d%2 == 0] }, g(1)},
				}
				if dt == kernels.BF16 {
					rows = append(rows, row{"huge-bf16", g(3e37), g(1e20)})
				}
				c := &storeCase{f: kernelFormat(t, id), dt: dt, hkv: 1, nb: 2, bs: 16, T: len(rows), ks: oracle.DefaultSigns(256), vs: oracle.DefaultSigns(256)}
				for i, r := range rows {
					for d := 0; d < 256; d++ {
						c.kf, c.vf = append(c.kf, fromAct(toAct(r.k(d), dt), dt)), append(c.vf, fromAct(toAct(r.v(d), dt), dt))
					}
					c.slots = append(c.slots, int64(2*i))
				}
				c.cache = randBytes(rng, oracle.CacheBytes(c.f, c.nb, c.hkv, c.bs))
				c.run(t, l, "edge values")
			})
		}
	}
}
