package golden

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/oracle"
)

// AttentionStats is the oracle's verdict on an attention file.
type AttentionStats struct {
	File           string
	Cases          []AttentionCaseStats
	MaxRelL2       float64
	PaddingNonZero int // padding rows (klen 0) not exactly zero, in the reference or the oracle
}

// AttentionCaseStats is one case's comparison.
type AttentionCaseStats struct {
	Name           string
	CacheDtype     string
	G              int
	RelL2          float64
	MaxAbsErr      float64
	PaddingRows    int
	PaddingNonZero int
}

// DecodeInput turns a golden attention case into an oracle decode call: LBHNC cache, fp16 query,
// and the format's default sign pattern for K and V (the golden files are made with it, docs/format.md
// §2; the files carry no sign words of their own).
func (f *AttentionFile) DecodeInput(c AttentionCase) (*oracle.DecodeInput, error) {
	fm, err := oracle.ParseFormat(c.CacheDtype, f.HeadSize, f.RopeDim)
	if err != nil {
		return nil, fmt.Errorf("%s: case %s: %w", f.Path, c.Name, err)
	}
	cache, err := oracle.NewCacheLBHNC(fm, c.Cache, c.NumBlocks, c.NumKVHeads, c.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("%s: case %s: %w", f.Path, c.Name, err)
	}
	maxBlocks := 0
	if len(c.BlockTable) > 0 {
		maxBlocks = len(c.BlockTable[0])
	}
	bt := make([]int32, 0, len(c.BlockTable)*maxBlocks)
	for _, row := range c.BlockTable {
		for _, b := range row {
			bt = append(bt, int32(b))
		}
	}
	q := make([]float32, 0, len(c.QueryF16)/2)
	for _, h := range c.QueryF16.U16() {
		q = append(q, oracle.F16ToF32(h))
	}
	signs := oracle.DefaultSigns(f.HeadSize)
	return &oracle.DecodeInput{Cache: cache, Query: q, NumQHeads: c.NumQHeads, BlockTable: bt, NumReqs: len(c.BlockTable),
		MaxBlocks: maxBlocks, QToReq: ints32(c.QToReq), QToKlen: ints32(c.QToKlen), SMScale: c.Scale, KSigns: signs, VSigns: signs}, nil
}

func ints32(x []int) []int32 {
	y := make([]int32, len(x))
	for i, v := range x {
		y[i] = int32(v)
	}
	return y
}

// CheckAttention runs the oracle's exact decode on every case and compares it with the file's
// out_f32: relative L2 per case and padding rows exactly zero. Judging the numbers against a
// tolerance is the caller's (oracle.GoldenAttentionRelL2 for upstream files).
func CheckAttention(f *AttentionFile) (AttentionStats, error) {
	st := AttentionStats{File: f.Path}
	for _, c := range f.Cases {
		in, err := f.DecodeInput(c)
		if err != nil {
			return st, err
		}
		ref := make([]float32, 0, len(c.OutF32)/4)
		for _, u := range c.OutF32.U32() {
			ref = append(ref, math.Float32frombits(u))
		}
		chk, _, err := oracle.CheckDecode(in, ref)
		if err != nil {
			return st, fmt.Errorf("%s: case %s: %w", f.Path, c.Name, err)
		}
		cs := AttentionCaseStats{Name: c.Name, CacheDtype: c.CacheDtype, G: in.Group(), RelL2: chk.RelL2, MaxAbsErr: chk.MaxAbsErr,
			PaddingRows: chk.PaddingRows, PaddingNonZero: len(chk.BadPadding)}
		if math.IsNaN(cs.RelL2) {
			st.MaxRelL2 = math.NaN()
		} else if !(st.MaxRelL2 >= cs.RelL2) {
			st.MaxRelL2 = cs.RelL2
		}
		st.PaddingNonZero += cs.PaddingNonZero
		st.Cases = append(st.Cases, cs)
	}
	return st, nil
}
