package oracle

import (
	"fmt"
	"strings"
)

// FormatID is the kernel format code of docs/format.md §6: v_bits + 16 if compact.
type FormatID int

// The three cache dtypes the kernels accept.
const (
	K3V3        FormatID = 3  // octave_k3v3: block-K, 3-bit V, 216-byte slot
	K3V4        FormatID = 4  // octave_k3v4: block-K, 4-bit V, 248-byte slot
	K3V3Compact FormatID = 19 // octave_k3v3_compact: 3-bit K over the whole head, 196-byte slot
)

// Format constants of docs/format.md §1.
const (
	HadamardBlock = 64 // K rotation block of the block-K layout, and the fallback V block
	RopeBits      = 4  // code width of block-K rope blocks
	NopeBits      = 3  // code width of block-K nope blocks and of compact K
	LUTOne        = 64 // fixed point of the stored scales
	SignSeed      = 0x5E17
	// KernelHeadSize and KernelRopeDim are the only shape the kernels compile for.
	KernelHeadSize = 256
	KernelRopeDim  = 64
)

// AllFormats lists the format ids the kernels accept, in id order.
var AllFormats = []FormatID{K3V3, K3V4, K3V3Compact}

var formatNames = map[FormatID]string{
	K3V3:        "octave_k3v3",
	K3V4:        "octave_k3v4",
	K3V3Compact: "octave_k3v3_compact",
}

// String returns the cache-dtype name of the id, or "format(N)" for an unknown id.
func (id FormatID) String() string {
	if s, ok := formatNames[id]; ok {
		return s
	}
	return fmt.Sprintf("format(%d)", int(id))
}

// VBits is the V code width of the id (3 or 4).
func (id FormatID) VBits() int { return int(id) & 15 }

// Compact reports whether K is quantized as one 256-dim group.
func (id FormatID) Compact() bool { return int(id)&16 != 0 }

// Valid reports whether the kernels accept the id.
func (id FormatID) Valid() bool { _, ok := formatNames[id]; return ok }

// ParseFormatID parses a cache-dtype name ("octave_k3v4") or a decimal kernel code ("4").
func ParseFormatID(s string) (FormatID, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	for id, name := range formatNames {
		if t == name || t == fmt.Sprint(int(id)) {
			return id, nil
		}
	}
	return 0, fmt.Errorf("oracle: unknown cache dtype %q: expected one of octave_k3v3 (3), octave_k3v4 (4), octave_k3v3_compact (19)", s)
}

// Format is a validated slot layout: a format id with its head size and rope dims. The kernels
// support only HeadSize 256 and RopeDim 64; the oracle accepts any layout the reference accepts
// (see NewFormat).
type Format struct {
	ID       FormatID
	HeadSize int // d
	RopeDim  int // r: the leading r dims are rotary (block-K only)
}

// NewFormat validates a layout. Rules (docs/format.md §8 plus Octant's decisions in docs/oracle.md):
// the id must be 3, 4 or 19; head_size a positive multiple of 64 (at most 4096); rope_dim a
// multiple of 64 in [0, head_size]; compact needs a power-of-two head size. rope_dim 0 and
// rope_dim = head_size are accepted (the reference would crash on them, docs/format.md §8.3; the oracle
// packs empty sections as empty).
func NewFormat(id FormatID, headSize, ropeDim int) (Format, error) {
	if !id.Valid() {
		return Format{}, fmt.Errorf("oracle: format id %d is not a kernel format: expected 3 (octave_k3v3), 4 (octave_k3v4) or 19 (octave_k3v3_compact)", int(id))
	}
	if headSize <= 0 || headSize%64 != 0 || headSize > 4096 {
		return Format{}, fmt.Errorf("oracle: head_size %d: expected a positive multiple of 64 up to 4096", headSize)
	}
	if ropeDim < 0 || ropeDim%64 != 0 || ropeDim > headSize {
		return Format{}, fmt.Errorf("oracle: rope_dim %d: expected a multiple of 64 in [0, head_size=%d]", ropeDim, headSize)
	}
	if id.Compact() && headSize&(headSize-1) != 0 {
		return Format{}, fmt.Errorf("oracle: %v needs a power-of-two head_size, got %d", id, headSize)
	}
	return Format{ID: id, HeadSize: headSize, RopeDim: ropeDim}, nil
}

// MustFormat is NewFormat for known-good constants; it panics on error.
func MustFormat(id FormatID, headSize, ropeDim int) Format {
	f, err := NewFormat(id, headSize, ropeDim)
	if err != nil {
		panic(err)
	}
	return f
}

// KernelFormat returns the kernels' layout (head 256, rope 64) for id.
func KernelFormat(id FormatID) (Format, error) { return NewFormat(id, KernelHeadSize, KernelRopeDim) }

// ParseFormat builds a Format from a cache-dtype string, as OctaveFormat.from_cache_dtype does.
func ParseFormat(name string, headSize, ropeDim int) (Format, error) {
	id, err := ParseFormatID(name)
	if err != nil {
		return Format{}, err
	}
	return NewFormat(id, headSize, ropeDim)
}

func (f Format) String() string {
	return fmt.Sprintf("%v(d=%d,r=%d)", f.ID, f.HeadSize, f.RopeDim)
}

// Name is the cache-dtype string.
func (f Format) Name() string { return f.ID.String() }

// VBits is the V code width.
func (f Format) VBits() int { return f.ID.VBits() }

// Compact reports whether K is one 3-bit group over the whole head.
func (f Format) Compact() bool { return f.ID.Compact() }

// KRotBlock is the K (and query) rotation block: 64 for block-K, head_size for compact.
func (f Format) KRotBlock() int {
	if f.Compact() {
		return f.HeadSize
	}
	return HadamardBlock
}

// VRotBlock is the V rotation block: head_size if it is a power of two, else 64.
func (f Format) VRotBlock() int {
	if f.HeadSize&(f.HeadSize-1) == 0 {
		return f.HeadSize
	}
	return HadamardBlock
}

// KWideDim is the number of 4-bit K dims (rope_dim for block-K, 0 for compact).
func (f Format) KWideDim() int {
	if f.Compact() {
		return 0
	}
	return f.RopeDim
}

// NumKBlocks is the number of 64-dim K blocks (head_size/64).
func (f Format) NumKBlocks() int { return f.HeadSize / 64 }

// NumKScales is the number of K scales: one per 64-dim block (block-K) or one (compact).
func (f Format) NumKScales() int {
	if f.Compact() {
		return 1
	}
	return f.NumKBlocks()
}

// NumScales is NumKScales + 1 (the V scale).
func (f Format) NumScales() int { return f.NumKScales() + 1 }

// OffKNope is the byte offset of the 3-bit K section.
func (f Format) OffKNope() int { return f.KWideDim() * 4 / 8 }

// OffV is the byte offset of the V codes.
func (f Format) OffV() int { return f.OffKNope() + (f.HeadSize-f.KWideDim())*3/8 }

// OffScales is the byte offset of the fp16 scales (K scales first, then V).
func (f Format) OffScales() int { return f.OffV() + f.HeadSize*f.VBits()/8 }

// SlotBytes is the slot size including pad: the scales' end rounded up to 8 (block-K) or 4 (compact).
func (f Format) SlotBytes() int {
	end := f.OffScales() + 2*f.NumScales()
	a := 8
	if f.Compact() {
		a = 4
	}
	return (end + a - 1) / a * a
}

// PadBytes is the number of trailing pad bytes (ignored by readers).
func (f Format) PadBytes() int { return f.SlotBytes() - f.OffScales() - 2*f.NumScales() }

// BitsPerValue is slot_bits / (2·head_size): the storage cost per K or V element.
func (f Format) BitsPerValue() float64 { return float64(f.SlotBytes()*8) / float64(2*f.HeadSize) }

// Group describes one quantization group of a slot: which rotated dims it covers, its code width,
// and where its codes and scale live.
type Group struct {
	Name     string // "K0".."K3" (block-K), "K" (compact), "V"
	IsV      bool
	Dim0     int // first rotated dim of the group (within K or V)
	N        int // number of dims
	Bits     int // code width
	Section  int // byte offset of the packed stream holding the group's codes
	SecLen   int // number of codes in that stream
	SecIndex int // index of the group's first code within the stream
	ScaleOff int // byte offset of the group's fp16 scale
}

// Groups lists the quantization groups of a slot in scale order (K groups, then V).
func (f Format) Groups() []Group {
	var gs []Group
	sc := f.OffScales()
	if f.Compact() {
		gs = append(gs, Group{Name: "K", Dim0: 0, N: f.HeadSize, Bits: NopeBits, Section: 0, SecLen: f.HeadSize, SecIndex: 0, ScaleOff: sc})
	} else {
		for b := 0; b < f.NumKBlocks(); b++ {
			g := Group{Name: fmt.Sprintf("K%d", b), Dim0: 64 * b, N: 64, ScaleOff: sc + 2*b}
			if 64*b < f.RopeDim {
				g.Bits, g.Section, g.SecLen, g.SecIndex = RopeBits, 0, f.RopeDim, 64*b
			} else {
				g.Bits, g.Section, g.SecLen, g.SecIndex = NopeBits, f.OffKNope(), f.HeadSize-f.RopeDim, 64*b-f.RopeDim
			}
			gs = append(gs, g)
		}
	}
	gs = append(gs, Group{Name: "V", IsV: true, Dim0: 0, N: f.HeadSize, Bits: f.VBits(), Section: f.OffV(), SecLen: f.HeadSize, SecIndex: 0, ScaleOff: sc + 2*f.NumKScales()})
	return gs
}
