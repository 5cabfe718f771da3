package cases

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"testing"

	"github.com/octant-kv/octant/arch"
)

// seededDigest hashes the JSON of seeds 0..n−1 of op's seeded recipes.
func seededDigest(t *testing.T, op arch.Op, n int) string {
	h := sha256.New()
	for seed := 0; seed < n; seed++ {
		r, err := SeededRecipe(op, uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pinnedSeeded is the digest of seeds 0..31 of each op under CaseGenVersion. A change to a draw
// function changes what a certificate's seeds mean: bump CaseGenVersion and update these.
var pinnedSeeded = map[arch.Op]string{
	arch.Store:   "3cdada1640dd6322311f61ae14dca690b505b86b87087fe4dd2056456da895bb",
	arch.Rotate:  "48e81de626b8de54d73b2b88359b1bf6f6848f59d5197104bc84e920dca08324",
	arch.Decode:  "f3a5556f11229135a597527956e1e0883cad46891d684bdfe94d951788639d59",
	arch.Reduce:  "342c8c8463a87e0ea5caeae48d0890b8c1f217545c2965af65d4e9c60c41d87b",
	arch.Prefill: "ebc0ee76d36dacd0009e2a9a6229d2f24cf64accb431396c4183cabc19fd462c",
}

// TestSeededRecipesPinned: the conformance battery's cases come from the seeded generator alone:
// derived twice they are the same bytes, and they are the bytes pinned for CaseGenVersion (rapid
// is not involved, so a rapid upgrade cannot change them; a change to the draw functions fails
// here until the version is bumped).
func TestSeededRecipesPinned(t *testing.T) {
	for _, op := range arch.Ops() {
		a, b := seededDigest(t, op, 32), seededDigest(t, op, 32)
		if a != b {
			t.Errorf("%s: two derivations of seeds 0..31 differ (%s, %s): the seeded generator is not deterministic", op, a, b)
		}
		if a != pinnedSeeded[op] {
			t.Errorf("%s: seeds 0..31 hash to %s, pinned %s for %s: a draw function changed what the seeds produce; bump CaseGenVersion and update pinnedSeeded",
				op, a, pinnedSeeded[op], CaseGenVersion)
		}
	}
	if _, err := SeededRecipe("attend", 1); err == nil {
		t.Error("SeededRecipe of an unknown op: expected an error")
	}
}

// TestNoLongCallsInFuzzWorker: a worker of Go's fuzzer (-test.fuzzworker) never draws a long
// call, since the fuzzer ends any input that runs past 10 s; elsewhere long calls are drawn.
func TestNoLongCallsInFuzzWorker(t *testing.T) {
	f := flag.Lookup("test.fuzzworker")
	if f == nil {
		t.Skip("no -test.fuzzworker flag in this binary")
	}
	old := f.Value.String()
	defer flag.Set("test.fuzzworker", old)
	count := func() (decode, prefill int) {
		for seed := uint64(0); seed < 40000; seed++ {
			d := rngDraw{newRand(seed, 77)}
			if drawGPUDecodeCase(d, GPUDecodeOptions()).Spec.KVMax() >= 1<<16 {
				decode++
			}
			if drawGPUPrefillCase(d).Batch.MaxSeq() >= 1<<16 {
				prefill++
			}
		}
		return
	}
	d, p := count()
	if d == 0 || p == 0 {
		t.Fatalf("outside a fuzz worker: %d long decode and %d long prefill calls in 40000 draws each, expected some", d, p)
	}
	flag.Set("test.fuzzworker", "true")
	if d, p := count(); d != 0 || p != 0 {
		t.Errorf("in a fuzz worker: %d long decode and %d long prefill calls, expected none", d, p)
	}
}
