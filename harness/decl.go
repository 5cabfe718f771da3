package harness

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/oracle"
)

// Declaration is what an adapter says it supports (its DECLARATION, docs/adapters.md, as the
// worker normalised it): the ops, their dtypes and whether they report the tier that ran, the
// cache formats and block sizes, and the contract's input classes it does not handle. A Lib with
// a nil Declaration (a C library) is judged on the whole contract.
type Declaration struct {
	// Ops are the ops of Call it implements (store, rotate, decode, reduce, prefill); an op not
	// here has no implementation (Impls, Offers).
	Ops map[arch.Op]OpDecl
	// QueryMaps says it implements the query maps (not an op of Call: the grids call it).
	QueryMaps bool
	// Formats are the cache format ids it takes.
	Formats []oracle.FormatID
	// BlockSizes are the cache block sizes it takes; nil: any.
	BlockSizes []int
	// Excludes are the input classes it does not handle (Classes): a call in one is outside
	// its declared domain.
	Excludes []Class
	// ReduceInDecode says its reduce runs inside its decode and has no op of its own.
	ReduceInDecode bool
}

// OpDecl is what a declaration says of one op.
type OpDecl struct {
	// Dtypes are the activation dtypes the op takes.
	Dtypes []Dtype
	// ReportsTier is false when the op's callable returns None: the tier that ran is not
	// reported, so a silent fallback to another tier shows only where the two tiers' bounds
	// tell their outputs apart.
	ReportsTier bool
}

// declJSON is the normalised declaration's JSON (kernels/worker/py/octant_worker/adapter.py,
// normalise).
type declJSON struct {
	Ops map[string]struct {
		Dtypes      []string `json:"dtypes"`
		ReportsTier *bool    `json:"reports_tier"`
	} `json:"ops"`
	Formats        []int           `json:"formats"`
	BlockSizes     json.RawMessage `json:"block_sizes"`
	Excludes       []string        `json:"excludes"`
	ReduceInDecode bool            `json:"reduce_in_decode"`
}

// ParseDeclaration reads a worker's normalised declaration (kernels/worker, Backend.Declaration).
// An input-class name outside the vocabulary (Classes), an unknown op or dtype, or a malformed
// key is an error that names it and lists what is accepted. null gives nil: no adapter, nothing
// declared.
func ParseDeclaration(raw []byte) (*Declaration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var j declJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("declaration %.200s: %v; expected the worker's normalised declaration (a JSON object)", raw, err)
	}
	d := &Declaration{Ops: map[arch.Op]OpDecl{}, ReduceInDecode: j.ReduceInDecode}
	for name, o := range j.Ops {
		if name == "query_maps" {
			d.QueryMaps = true
			continue
		}
		op := arch.Op(name)
		if !slices.Contains(arch.Ops(), op) {
			return nil, fmt.Errorf("declaration: op %q: expected one of %v or query_maps", name, arch.Ops())
		}
		od := OpDecl{ReportsTier: o.ReportsTier == nil || *o.ReportsTier}
		for _, t := range o.Dtypes {
			if !Dtype(t).Valid() {
				return nil, fmt.Errorf("declaration: %s: dtype %q: expected some of %v", name, t, Dtypes)
			}
			od.Dtypes = append(od.Dtypes, Dtype(t))
		}
		d.Ops[op] = od
	}
	if d.ReduceInDecode && d.Declares(arch.Reduce) {
		return nil, fmt.Errorf("declaration: reduce_in_decode is true and reduce is declared: a reduce inside decode has no op of its own")
	}
	for _, f := range j.Formats {
		if !oracle.FormatID(f).Valid() {
			return nil, fmt.Errorf("declaration: format %d: expected some of 3, 4, 19", f)
		}
		d.Formats = append(d.Formats, oracle.FormatID(f))
	}
	if len(j.BlockSizes) > 0 && string(j.BlockSizes) != `"any"` && string(j.BlockSizes) != "null" {
		if err := json.Unmarshal(j.BlockSizes, &d.BlockSizes); err != nil || len(d.BlockSizes) == 0 || slices.ContainsFunc(d.BlockSizes, func(b int) bool { return b <= 0 }) {
			return nil, fmt.Errorf("declaration: block_sizes %s: expected \"any\" or a non-empty list of positive block sizes", j.BlockSizes)
		}
	}
	for _, x := range j.Excludes {
		c := Class(x)
		if _, ok := classInfo(c); !ok {
			return nil, fmt.Errorf("declaration: excludes %q: not an input class; expected some of %s (docs/adapters.md, \"Input classes\")", x, strings.Join(ClassNames(), ", "))
		}
		if !slices.Contains(d.Excludes, c) {
			d.Excludes = append(d.Excludes, c)
		}
	}
	return d, nil
}

// Declares reports whether d implements op (nil d: every op).
func (d *Declaration) Declares(op arch.Op) bool {
	if d == nil {
		return true
	}
	_, ok := d.Ops[op]
	return ok
}

// Excluded reports whether d excludes the input class c (nil d: none).
func (d *Declaration) Excluded(c Class) bool { return d != nil && slices.Contains(d.Excludes, c) }

// ReportsTier reports whether op reports the tier that ran (nil d, or an undeclared op: true).
func (d *Declaration) ReportsTier(op arch.Op) bool {
	if d == nil {
		return true
	}
	o, ok := d.Ops[op]
	return !ok || o.ReportsTier
}

// Narrowing lists how d narrows the contract, one phrase each, in a fixed order: the required
// ops it does not declare (of required), the reduce inside decode, the formats, dtypes and block
// sizes it leaves out, the input classes it excludes, the ops that do not report their tier.
// Empty for nil d or a declaration of the whole contract.
func (d *Declaration) Narrowing(required []arch.Op) []string {
	if d == nil {
		return nil
	}
	var out []string
	var undeclared []string
	for _, op := range required {
		if !d.Declares(op) && (op != arch.Reduce || !d.ReduceInDecode) {
			undeclared = append(undeclared, string(op))
		}
	}
	if len(undeclared) > 0 {
		out = append(out, "not declared: "+strings.Join(undeclared, ", "))
	}
	if d.ReduceInDecode {
		out = append(out, "reduce inside decode")
	}
	var formats []string
	for _, f := range []oracle.FormatID{oracle.K3V3, oracle.K3V4, oracle.K3V3Compact} {
		if !slices.Contains(d.Formats, f) {
			formats = append(formats, fmt.Sprint(int(f)))
		}
	}
	if len(formats) > 0 {
		out = append(out, "formats not declared: "+strings.Join(formats, ", "))
	}
	for _, op := range arch.Ops() {
		o, ok := d.Ops[op]
		if !ok {
			continue
		}
		for _, t := range Dtypes {
			if !slices.Contains(o.Dtypes, t) {
				out = append(out, fmt.Sprintf("%s %s not declared", op, t))
			}
		}
	}
	if d.BlockSizes != nil {
		out = append(out, fmt.Sprintf("block sizes only %v", d.BlockSizes))
	}
	if len(d.Excludes) > 0 {
		var words []string
		for _, c := range d.Excludes {
			words = append(words, c.Words())
		}
		out = append(out, "outside declared domain: "+strings.Join(words, ", "))
	}
	for _, op := range arch.Ops() {
		if o, ok := d.Ops[op]; ok && !o.ReportsTier {
			out = append(out, string(op)+" tier not reported")
		}
	}
	return out
}

// NarrowsCalls lists how d narrows what a caller may pass the given ops (nil when it does not):
// each of them that is not declared (a reduce inside decode has no op to call), formats, those
// ops' dtypes and block sizes left out, and excluded input classes. A test that hands the ops
// every format, dtype, block size and input class and expects the ABI's own statuses (the error
// and alignment tables) cannot run on such a declaration: the worker refuses what is not declared
// with its own status first.
func (d *Declaration) NarrowsCalls(ops ...arch.Op) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, op := range ops {
		if !d.Declares(op) {
			out = append(out, string(op)+" not declared")
		}
	}
	for _, f := range []oracle.FormatID{oracle.K3V3, oracle.K3V4, oracle.K3V3Compact} {
		if !slices.Contains(d.Formats, f) {
			out = append(out, fmt.Sprintf("format %d not declared", int(f)))
		}
	}
	for _, op := range ops {
		if o, ok := d.Ops[op]; ok {
			for _, t := range Dtypes {
				if !slices.Contains(o.Dtypes, t) {
					out = append(out, fmt.Sprintf("%s %s not declared", op, t))
				}
			}
		}
	}
	if d.BlockSizes != nil {
		out = append(out, fmt.Sprintf("block sizes only %v", d.BlockSizes))
	}
	for _, c := range d.Excludes {
		out = append(out, "excludes "+c.Words())
	}
	return out
}
