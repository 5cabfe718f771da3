package cases

import (
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// SignSpec is a sign pattern over the 256 head dims: the format's default (docs/format.md §2), or any
// other as 8 int32 words (bit i of word w set ⇔ dim 32w+i negated, the kernels' sign_bits form).
type SignSpec struct {
	Default bool    `json:"default,omitempty"`
	Words   []int32 `json:"words,omitempty"`
}

// DefaultSignSpec is the pattern vLLM passes for both K and V.
var DefaultSignSpec = SignSpec{Default: true}

// Signs expands the pattern to n dims (n ≤ 32·len(Words) for a word pattern).
func (s SignSpec) Signs(n int) oracle.Signs {
	if s.Default || len(s.Words) == 0 {
		return oracle.DefaultSigns(n)
	}
	sg, err := oracle.SignsFromInt32(s.Words, n)
	if err != nil {
		panic("fuzz: " + err.Error())
	}
	return sg
}

// Int32Words is the kernels' form of the pattern (8 words for 256 dims).
func (s SignSpec) Int32Words() []int32 {
	if s.Default || len(s.Words) == 0 {
		return oracle.DefaultSigns(oracle.KernelHeadSize).Int32Words()
	}
	return append([]int32(nil), s.Words...)
}

func (s SignSpec) String() string {
	if s.Default || len(s.Words) == 0 {
		return "default"
	}
	return "random"
}

// SignSpecs draws a sign pattern: the default one, every dim positive, every dim negated, or
// random words.
func SignSpecs() *rapid.Generator[SignSpec] {
	return rapid.Custom(func(t *rapid.T) SignSpec {
		switch rapid.IntRange(0, 5).Draw(t, "signs_kind") {
		case 0, 1, 2:
			return DefaultSignSpec
		case 3:
			return SignSpec{Words: make([]int32, 8)} // no dim negated
		case 4:
			w := make([]int32, 8)
			for i := range w {
				w[i] = -1 // every dim negated
			}
			return SignSpec{Words: w}
		default:
			return SignSpec{Words: rapid.SliceOfN(rapid.Int32(), 8, 8).Draw(t, "sign_words")}
		}
	})
}

// SignPatterns draws a sign pattern over the 256 dims.
func SignPatterns() *rapid.Generator[oracle.Signs] {
	return rapid.Map(SignSpecs(), func(s SignSpec) oracle.Signs { return s.Signs(oracle.KernelHeadSize) })
}

// SignPair is the K and V sign patterns of a call. docs/contract.md §1: every op must work for any
// pattern, and K and V may differ.
type SignPair struct {
	K SignSpec `json:"k"`
	V SignSpec `json:"v"`
}

// SignPairs draws K and V patterns independently (so: both default, one default, both random and
// different, or — by drawing the same words — both random and equal).
func SignPairs() *rapid.Generator[SignPair] {
	return rapid.Custom(func(t *rapid.T) SignPair {
		k := SignSpecs().Draw(t, "k_signs")
		if rapid.IntRange(0, 3).Draw(t, "v_same_as_k") == 1 {
			return SignPair{K: k, V: k}
		}
		return SignPair{K: k, V: SignSpecs().Draw(t, "v_signs")}
	})
}
