package golden

import (
	"fmt"

	"github.com/octant-kv/octant/oracle"
)

// SlotStats counts the oracle's verdicts over a slot file. A slot is identical when every byte,
// pad included, equals the oracle's; explained when docs/format.md §10 accepts every difference;
// unexplained otherwise.
type SlotStats struct {
	File                              string
	CacheDtype                        string
	Identical, Explained, Unexplained int
	Rules                             map[string]int // accepted differences by rule, one per differing code or scale
	Hazards                           map[string]int // format hazards by group name and kind: how many quantization groups have each
	UnexplainedCases                  []string       // "name: summary" of each unexplained slot
}

// Total is the number of slots judged.
func (s SlotStats) Total() int { return s.Identical + s.Explained + s.Unexplained }

// IdenticalPercent is the share of byte-identical slots.
func (s SlotStats) IdenticalPercent() float64 {
	if s.Total() == 0 {
		return 0
	}
	return 100 * float64(s.Identical) / float64(s.Total())
}

// Inputs converts a case's raw K and V to float32 (exact for fp16 and bf16).
func (c SlotCase) Inputs() (k, v []float32, err error) {
	conv := oracle.F16ToF32
	switch c.InputDtype {
	case "float16":
	case "bfloat16":
		conv = oracle.BF16ToF32
	default:
		return nil, nil, fmt.Errorf("case %s: input_dtype %q: expected float16 or bfloat16", c.Name, c.InputDtype)
	}
	for _, h := range c.K.U16() {
		k = append(k, conv(h))
	}
	for _, h := range c.V.U16() {
		v = append(v, conv(h))
	}
	return k, v, nil
}

// Format returns the oracle format of the file.
func (f *SlotFile) Format() (oracle.Format, error) {
	fm, err := oracle.ParseFormat(f.CacheDtype, f.HeadSize, f.RopeDim)
	if err != nil {
		return fm, err
	}
	if int(fm.ID) != f.KernelCode || fm.SlotBytes() != f.SlotBytes {
		return fm, fmt.Errorf("%s: kernel_code %d and slot_bytes %d, but %v has code %d and %d bytes", f.Path, f.KernelCode, f.SlotBytes, fm, int(fm.ID), fm.SlotBytes())
	}
	return fm, nil
}

// CheckSlots judges every slot of a file with the oracle's acceptance rule. It also checks the
// file's own dequantized values against the oracle's decoding of the file's slot bytes.
func CheckSlots(f *SlotFile) (SlotStats, error) {
	st := SlotStats{File: f.Path, CacheDtype: f.CacheDtype, Rules: map[string]int{}, Hazards: map[string]int{}}
	fm, err := f.Format()
	if err != nil {
		return st, err
	}
	signs, err := oracle.SignsFromInt32(f.SignBitsI32, f.HeadSize)
	if err != nil {
		return st, fmt.Errorf("%s: %w", f.Path, err)
	}
	acc, err := oracle.NewAcceptor(fm, signs, signs)
	if err != nil {
		return st, err
	}
	for _, c := range f.Cases {
		k, v, err := c.Inputs()
		if err != nil {
			return st, fmt.Errorf("%s: %w", f.Path, err)
		}
		sv, err := acc.Accept(k, v, c.Slot)
		if err != nil {
			return st, fmt.Errorf("%s: case %s: %w", f.Path, c.Name, err)
		}
		if msg := checkDequant(fm, signs, c); msg != "" {
			sv.Verdict = oracle.Unexplained
			st.UnexplainedCases = append(st.UnexplainedCases, c.Name+": "+msg)
		}
		switch {
		case sv.Verdict == oracle.Unexplained:
			st.Unexplained++
			st.UnexplainedCases = append(st.UnexplainedCases, c.Name+": "+sv.Summary())
		case sv.ByteIdentical:
			st.Identical++
		default:
			st.Explained++
		}
		for _, g := range sv.Groups {
			for _, d := range g.Diffs {
				st.Rules[d.Rule]++
			}
		}
		for _, h := range sv.Hazards() {
			st.Hazards[h]++
		}
	}
	return st, nil
}

// checkDequant compares the file's dequantized K and V with the oracle's decoding of the file's
// own slot: the unrotation is float32 in both, in the same stage order, so they must agree to the
// bit (NaN matching NaN). It returns "" when they do.
func checkDequant(fm oracle.Format, s oracle.Signs, c SlotCase) string {
	k, v := oracle.DequantizeSlotOriginal(fm, c.Slot, s, s)
	for _, x := range []struct {
		name string
		got  []float32
		want []uint32
	}{{"k_dequant_f32", k, c.KDequant.U32()}, {"v_dequant_f32", v, c.VDequant.U32()}} {
		for i, w := range x.want {
			g := x.got[i]
			if oracle.F32Bits(g) != w && !(g != g && oracle.F32FromBits(w) != oracle.F32FromBits(w)) {
				return fmt.Sprintf("%s[%d] = %v in the file, the oracle decodes the file's slot to %v", x.name, i, oracle.F32FromBits(w), g)
			}
		}
	}
	return ""
}
