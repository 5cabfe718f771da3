package harness

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// testCache is a zeroed cache of format k3v4, 4 blocks of 16 tokens, 2 KV heads, in the LBHNC
// layout (lbnhc: LBNHC).
func testCache(t *testing.T, lbnhc bool) *oracle.Cache {
	t.Helper()
	f, err := oracle.NewFormat(oracle.K3V4, 256, 64)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, oracle.CacheBytes(f, 4, 2, 16))
	mk := oracle.NewCacheLBHNC
	if lbnhc {
		mk = oracle.NewCacheLBNHC
	}
	c, err := mk(f, data, 4, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// flipped is the default sign pattern with dim i negated once more.
func flipped(i int) oracle.Signs {
	s := oracle.DefaultSigns(256)
	s[i] = !s[i]
	return s
}

// testDecode is one request over two logical blocks (table 0, 1), one query row attending 20
// tokens, default signs, contiguous views: in no input class.
func testDecode(t *testing.T) *DecodeCall {
	return &DecodeCall{Dtype: F16, NumSplits: 1, QueryGroup: 1, In: &oracle.DecodeInput{
		Cache: testCache(t, false), NumQHeads: 2, BlockTable: []int32{0, 1}, NumReqs: 1, MaxBlocks: 2,
		QToReq: []int32{0}, QToKlen: []int32{20}, SMScale: 1.0 / 16, KSigns: oracle.DefaultSigns(256), VSigns: oracle.DefaultSigns(256)}}
}

// testPrefill is one sequence of 3 new tokens after a 7-token prefix (block table 0, 1): in no
// input class.
func testPrefill(t *testing.T) *PrefillCall {
	return &PrefillCall{Dtype: F16, In: &oracle.PrefillInput{Cache: testCache(t, false), NumTokens: 3, NumQHeads: 2,
		CuSeqlensQ: []int32{0, 3}, SeqLens: []int32{10}, BlockTable: []int32{0, 1}, MaxBlocks: 2, SMScale: 1.0 / 16}}
}

func testStore(t *testing.T) *StoreCall {
	return &StoreCall{Cache: testCache(t, false), Dtype: F16, Rows: 3, Mapping: []int64{0, 5, -1},
		KSigns: oracle.DefaultSigns(256), VSigns: oracle.DefaultSigns(256)}
}

// TestCallClasses: each input class is detected from the call's own inputs on hand-built calls,
// and a call just inside each class's boundary is in none.
func TestCallClasses(t *testing.T) {
	for _, c := range []struct {
		what string
		call func() Call
		want []Class
	}{
		{"plain decode", func() Call { return testDecode(t) }, nil},
		{"decode reading an invalid block", func() Call { d := testDecode(t); d.In.BlockTable[1] = 4; return d }, []Class{InvalidBlockIDs}},
		{"decode reading a negative block", func() Call { d := testDecode(t); d.In.BlockTable[0] = -1; return d }, []Class{InvalidBlockIDs}},
		{"decode not reading its invalid block (klen 16)", func() Call {
			d := testDecode(t)
			d.In.BlockTable[1], d.In.QToKlen[0] = 99, 16
			return d
		}, nil},
		{"decode padding row of an invalid request", func() Call { d := testDecode(t); d.In.QToReq[0] = 1; d.In.BlockTable[0] = 99; return d }, []Class{OutOfRangeRequests}},
		{"decode padding row by klen 0", func() Call { d := testDecode(t); d.In.QToKlen[0] = 0; d.In.BlockTable[0] = 99; return d }, nil},
		{"decode klen past the table", func() Call { d := testDecode(t); d.In.QToKlen[0] = 33; return d }, []Class{KlenClamped}},
		{"decode klen at the table's end", func() Call { d := testDecode(t); d.In.QToKlen[0] = 32; return d }, nil},
		{"decode K signs", func() Call { d := testDecode(t); d.In.KSigns = flipped(255); return d }, []Class{CustomSigns}},
		{"decode V signs", func() Call { d := testDecode(t); d.In.VSigns = flipped(0); return d }, []Class{CustomSigns}},
		{"decode LBNHC", func() Call { d := testDecode(t); d.In.Cache = testCache(t, true); return d }, []Class{LBNHCLayout}},
		{"decode padded token stride", func() Call { d := testDecode(t); d.In.Cache.StrideToken += 8; return d }, []Class{PaddedCacheStrides}},
		{"decode padded block stride", func() Call { d := testDecode(t); d.In.Cache.StrideBlock += 256; return d }, []Class{PaddedCacheStrides}},
		{"decode fused query", func() Call { d := testDecode(t); d.QueryPadHeads = 4; return d }, []Class{StridedViews}},
		{"decode output gaps", func() Call { d := testDecode(t); d.OutPad = 2; return d }, []Class{StridedViews}},
		{"decode in three classes", func() Call {
			d := testDecode(t)
			d.In.BlockTable[0], d.OutPad, d.In.KSigns = 7, 1, flipped(3)
			return d
		}, []Class{InvalidBlockIDs, CustomSigns, StridedViews}},

		{"plain prefill", func() Call { return testPrefill(t) }, nil},
		{"prefill prefix reading an invalid block", func() Call { p := testPrefill(t); p.In.SeqLens[0], p.In.BlockTable[1] = 20, 9; return p }, []Class{InvalidBlockIDs}},
		{"prefill prefix not reaching its invalid block", func() Call { p := testPrefill(t); p.In.BlockTable[1] = 9; return p }, nil},
		{"prefill prefix longer than the table", func() Call { p := testPrefill(t); p.In.SeqLens[0] = 36; return p }, []Class{PrefillCtxClamped}},
		{"prefill seq_len below qlen", func() Call { p := testPrefill(t); p.In.SeqLens[0] = 2; return p }, []Class{PrefillCtxClamped}},
		{"prefill prefix filling the table", func() Call { p := testPrefill(t); p.In.SeqLens[0] = 35; return p }, nil},
		{"prefill rows in no sequence", func() Call { p := testPrefill(t); p.In.NumTokens = 5; return p }, []Class{RowsOutsideSequences}},
		{"prefill fused", func() Call { p := testPrefill(t); p.Fused = true; return p }, []Class{StridedViews}},

		{"plain store", func() Call { return testStore(t) }, nil},
		{"store to the last slot", func() Call { s := testStore(t); s.Mapping[1] = 63; return s }, nil},
		{"store past the last slot", func() Call { s := testStore(t); s.Mapping[1] = 64; return s }, []Class{SlotOutOfRange}},
		{"store twice to one slot", func() Call { s := testStore(t); s.Mapping[1] = 0; return s }, []Class{DuplicateSlots}},
		{"store skipping twice", func() Call { s := testStore(t); s.Mapping = []int64{-1, -1, 2}; return s }, nil},
		{"store signs and a fused view", func() Call { s := testStore(t); s.VSigns, s.FusedQHeads = flipped(100), 2; return s }, []Class{CustomSigns, StridedViews}},

		{"plain rotate", func() Call { return &RotateCall{Dtype: BF16, Rows: 1, Heads: 1, Signs: oracle.DefaultSigns(256)} }, nil},
		{"rotate with gaps", func() Call {
			return &RotateCall{Dtype: BF16, Rows: 1, Heads: 1, RowGap: 3, Signs: oracle.DefaultSigns(256)}
		}, []Class{StridedViews}},
		{"rotate with other signs", func() Call { return &RotateCall{Dtype: BF16, Rows: 1, Heads: 1, Signs: flipped(7)} }, []Class{CustomSigns}},
		{"plain reduce", func() Call {
			return &ReduceCall{Dtype: F16, NumQ: 1, Heads: 1, Splits: 1, VSigns: oracle.DefaultSigns(256)}
		}, nil},
		{"reduce with output gaps", func() Call {
			return &ReduceCall{Dtype: F16, NumQ: 1, Heads: 1, Splits: 1, OutPad: 4, VSigns: flipped(1)}
		}, []Class{CustomSigns, StridedViews}},
	} {
		if got := CallClasses(c.call()); !slices.Equal(got, c.want) {
			t.Errorf("%s: classes %v, expected %v", c.what, got, c.want)
		}
	}
}

// TestClassVocabulary: every class has a definition and the ops it applies to, and its words are
// its name with spaces.
func TestClassVocabulary(t *testing.T) {
	for _, c := range Classes {
		if c.Definition == "" || len(c.Ops) == 0 {
			t.Errorf("class %s: definition %q, ops %v: expected both", c.Class, c.Definition, c.Ops)
		}
	}
	if got := InvalidBlockIDs.Words(); got != "invalid block ids" {
		t.Errorf("words %q", got)
	}
}

// fullDecl declares every op, dtype and format, any block size, nothing excluded.
func fullDecl() *Declaration {
	d := &Declaration{Ops: map[arch.Op]OpDecl{}, Formats: []oracle.FormatID{3, 4, 19}}
	for _, op := range arch.Ops() {
		d.Ops[op] = OpDecl{Dtypes: []Dtype{F16, BF16}, ReportsTier: true}
	}
	return d
}

// TestOutside: a call outside the declaration gets every reason it is outside, in order; a call
// inside it, or a Lib without a declaration, gets none.
func TestOutside(t *testing.T) {
	dec := testDecode(t)
	dec.In.BlockTable[1], dec.Dtype = 9, BF16
	for _, c := range []struct {
		what string
		decl func(d *Declaration)
		call Call
		want string
	}{
		{"whole contract", func(d *Declaration) {}, dec, ""},
		{"undeclared op", func(d *Declaration) { delete(d.Ops, arch.Prefill) }, testPrefill(t), "outside declared domain: prefill not declared"},
		{"reduce inside decode", func(d *Declaration) { delete(d.Ops, arch.Reduce); d.ReduceInDecode = true },
			&ReduceCall{Dtype: F16, NumQ: 1, Heads: 1, Splits: 1, VSigns: oracle.DefaultSigns(256)}, "outside declared domain: reduce inside decode (no reduce op of its own)"},
		{"dtype", func(d *Declaration) { d.Ops[arch.Decode] = OpDecl{Dtypes: []Dtype{F16}} }, dec, "outside declared domain: dtype bf16 (decode declares [fp16])"},
		{"format", func(d *Declaration) { d.Formats = []oracle.FormatID{3} }, dec, "outside declared domain: format 4 (declared: [3])"},
		{"block size", func(d *Declaration) { d.BlockSizes = []int{32, 64} }, dec, "outside declared domain: block size 16 (declared: [32 64])"},
		{"block size declared", func(d *Declaration) { d.BlockSizes = []int{16} }, dec, ""},
		{"excluded class", func(d *Declaration) { d.Excludes = []Class{CustomSigns, InvalidBlockIDs} }, dec, "outside declared domain: invalid block ids"},
		{"excluded class the call is not in", func(d *Declaration) { d.Excludes = []Class{CustomSigns, DuplicateSlots} }, dec, ""},
		{"several reasons", func(d *Declaration) {
			d.Excludes = []Class{InvalidBlockIDs}
			d.Ops[arch.Decode] = OpDecl{Dtypes: []Dtype{F16}}
		}, dec, "outside declared domain: dtype bf16 (decode declares [fp16]), invalid block ids"},
	} {
		d := fullDecl()
		c.decl(d)
		got := ""
		if e := (&Lib{Decl: d}).Outside(c.call); e != nil {
			got = e.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, expected %q", c.what, got, c.want)
		}
	}
	if e := (&Lib{}).Outside(dec); e != nil {
		t.Errorf("a Lib without a declaration: %v, expected inside (the whole contract)", e)
	}
	if e := (*Lib)(nil).Outside(dec); e != nil {
		t.Errorf("no Lib (the oracle alone): %v", e)
	}
}

// TestCheckOutsideRunsNothing: a call outside the declared domain gets NotSupported verdicts with
// the reason from Check and CheckAll without running anything (the Lib has no device: running
// would panic), one per implementation, and an undeclared op has no implementation.
func TestCheckOutsideRunsNothing(t *testing.T) {
	d := fullDecl()
	d.Excludes = []Class{InvalidBlockIDs}
	delete(d.Ops, arch.Store)
	l := &Lib{Path: "host:/x/adapter.py", Decl: d, Tiers: []kernels.TierDesc{{Name: "portable", Ops: 3}, {Name: "wmma", Tier: 1, Ops: 3}}}
	dec := testDecode(t)
	dec.In.BlockTable[1] = -7
	vs := CheckAll(l, dec)
	if len(vs) != 2 || vs[0].Impl != "portable" || vs[1].Impl != "wmma" {
		t.Fatalf("verdicts %v: expected one per decode tier", vs)
	}
	for _, v := range vs {
		if v.Status != NotSupported || v.Err == nil || v.Err.Error() != "outside declared domain: invalid block ids" {
			t.Errorf("%s: %v: expected NotSupported, outside declared domain: invalid block ids", v.Impl, v)
		}
	}
	if de, ok := OutsideDomain(vs); !ok || de.Op != arch.Decode {
		t.Errorf("OutsideDomain: %v, %v", de, ok)
	}
	if err := FirstFailure(vs); err != nil {
		t.Errorf("FirstFailure %v: a call outside the domain is no failure", err)
	}
	if v := Check(l, Impl{Name: "portable"}, dec); v.Status != NotSupported {
		t.Errorf("Check: %v", v)
	}
	vs = CheckAll(l, testStore(t))
	if len(vs) != 1 || vs[0].Status != NotSupported || vs[0].Impl != "library" || !strings.Contains(vs[0].Err.Error(), "store not declared") {
		t.Errorf("an undeclared op: %v", vs)
	}
	if l.Offers(arch.Store, arch.Portable) || !l.Offers(arch.Rotate, arch.Portable) {
		t.Errorf("Offers: store %v, rotate %v; expected only the declared rotate", l.Offers(arch.Store, arch.Portable), l.Offers(arch.Rotate, arch.Portable))
	}
	if _, err := Impls(l, arch.Store); err == nil || !strings.Contains(err.Error(), "declares no store op") {
		t.Errorf("Impls of an undeclared op: %v", err)
	}
	var de *DomainError
	if errors.As(FirstFailure(vs), &de) {
		t.Errorf("a NotSupported verdict counted as a failure")
	}
}

// TestParseDeclaration: the worker's normalised declaration reaches Go with its narrowing, an
// unknown input-class name is an error listing the vocabulary, and null (no adapter) is nil.
func TestParseDeclaration(t *testing.T) {
	d, err := ParseDeclaration([]byte(`{"contract": 1, "ops": {"store": {"dtypes": ["fp16", "bf16"], "reports_tier": true},
		"decode": {"dtypes": ["fp16"], "tiers": {"portable": "dot4-int8q"}, "reports_tier": false}, "query_maps": {"dtypes": ["fp16", "bf16"]}},
		"formats": [3, 4], "block_sizes": [16, 32], "excludes": ["invalid-block-ids", "slot-out-of-range"], "reduce_in_decode": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Declares(arch.Store) || d.Declares(arch.Reduce) || !d.QueryMaps || d.ReportsTier(arch.Decode) || !d.ReportsTier(arch.Store) ||
		!slices.Equal(d.BlockSizes, []int{16, 32}) || !d.Excluded(InvalidBlockIDs) || !d.ReduceInDecode {
		t.Errorf("declaration %+v", d)
	}
	want := []string{"not declared: rotate, prefill", "reduce inside decode", "formats not declared: 19", "decode bf16 not declared",
		"block sizes only [16 32]", "outside declared domain: invalid block ids, slot out of range", "decode tier not reported"}
	if got := d.Narrowing(arch.Ops()); !slices.Equal(got, want) {
		t.Errorf("Narrowing:\n%q\nexpected\n%q", got, want)
	}
	any, err := ParseDeclaration([]byte(`{"ops": {"rotate": {"dtypes": ["bf16"]}}, "formats": [3, 4, 19], "block_sizes": "any", "excludes": []}`))
	if err != nil || any.BlockSizes != nil {
		t.Errorf("block_sizes any: %+v, %v", any, err)
	}
	if d, err := ParseDeclaration([]byte("null")); d != nil || err != nil {
		t.Errorf("null: %v, %v; expected nil, nil", d, err)
	}
	for _, c := range []struct{ json, want string }{
		{`{"ops": {}, "excludes": ["invalid-blocks"]}`, `excludes "invalid-blocks": not an input class; expected some of invalid-block-ids, slot-out-of-range`},
		{`{"ops": {"fft": {}}}`, `op "fft"`},
		{`{"ops": {"store": {"dtypes": ["fp8"]}}}`, `dtype "fp8"`},
		{`{"ops": {"reduce": {}}, "reduce_in_decode": true}`, "reduce_in_decode is true and reduce is declared"},
		{`{"ops": {}, "block_sizes": [16, 0]}`, "block_sizes [16, 0]"},
		{`{"ops": {}, "formats": [5]}`, "format 5"},
	} {
		if _, err := ParseDeclaration([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, expected an error containing %q", c.json, err, c.want)
		}
	}
}

// TestNarrowsCalls: a declaration narrows the calls of an op when the op is not declared, or it
// leaves out a format, one of that op's dtypes, a block size or an input class; another op's
// narrowing does not count.
func TestNarrowsCalls(t *testing.T) {
	d, err := ParseDeclaration([]byte(`{"ops": {"store": {"dtypes": ["fp16", "bf16"]}, "rotate": {"dtypes": ["fp16", "bf16"]},
		"decode": {"dtypes": ["fp16"]}}, "formats": [3, 4, 19], "block_sizes": "any", "excludes": []}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ops  []arch.Op
		want string
	}{
		{[]arch.Op{arch.Store, arch.Rotate}, ""},
		{[]arch.Op{arch.Decode}, "decode bf16 not declared"},
		{[]arch.Op{arch.Prefill}, "prefill not declared"},
		{arch.Ops(), "reduce not declared; prefill not declared; decode bf16 not declared"},
	} {
		if got := strings.Join(d.NarrowsCalls(c.ops...), "; "); got != c.want {
			t.Errorf("NarrowsCalls(%v) = %q, expected %q", c.ops, got, c.want)
		}
	}
	e, err := ParseDeclaration([]byte(`{"ops": {"store": {"dtypes": ["fp16", "bf16"]}}, "formats": [3], "block_sizes": [16], "excludes": ["duplicate-slots"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(e.NarrowsCalls(arch.Store), "; "), "format 4 not declared; format 19 not declared; block sizes only [16]; excludes duplicate slots"; got != want {
		t.Errorf("NarrowsCalls(store) = %q, expected %q", got, want)
	}
	if (*Declaration)(nil).NarrowsCalls(arch.Ops()...) != nil {
		t.Error("a C library (no declaration) narrows nothing")
	}
}
