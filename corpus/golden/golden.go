// Package golden loads golden-vector files: gzip-compressed JSON produced by the upstream Octave KV
// reference (schema in upstream/README.md). It only parses and validates shapes; judging the
// contents is the oracle's job (cmd/octant golden --check).
package golden

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SlotFile is a slots-<cache_dtype>.json.gz file.
type SlotFile struct {
	Path        string     `json:"-"`
	CacheDtype  string     `json:"cache_dtype"`
	HeadSize    int        `json:"head_size"`
	RopeDim     int        `json:"rope_dim"`
	KernelCode  int        `json:"kernel_code"`
	SlotBytes   int        `json:"slot_bytes"`
	SignBitsI32 []int32    `json:"sign_bits_i32"`
	Producer    string     `json:"producer"`
	Cases       []SlotCase `json:"cases"`
}

// SlotCase is one (token, KV head) of a slot file.
type SlotCase struct {
	Name       string `json:"name"`
	InputDtype string `json:"input_dtype"` // float16 or bfloat16
	K          Hex    `json:"k"`
	V          Hex    `json:"v"`
	Slot       Hex    `json:"slot"`
	KDequant   Hex    `json:"k_dequant_f32"`
	VDequant   Hex    `json:"v_dequant_f32"`
}

// AttentionFile is an attention.json.gz file.
type AttentionFile struct {
	Path     string          `json:"-"`
	HeadSize int             `json:"head_size"`
	RopeDim  int             `json:"rope_dim"`
	Producer string          `json:"producer"`
	Cases    []AttentionCase `json:"cases"`
}

// AttentionCase is one decode batch: a cache, block table, query maps, query and the reference's
// float32 output.
type AttentionCase struct {
	Name        string  `json:"name"`
	CacheDtype  string  `json:"cache_dtype"`
	NumKVHeads  int     `json:"num_kv_heads"`
	NumQHeads   int     `json:"num_q_heads"`
	BlockSize   int     `json:"block_size"`
	NumBlocks   int     `json:"num_blocks"`
	CacheLayout string  `json:"cache_layout"`
	BlockTable  [][]int `json:"block_table"`
	QToReq      []int   `json:"q_to_req"`
	QToKlen     []int   `json:"q_to_klen"`
	Scale       float64 `json:"scale"`
	QueryF16    Hex     `json:"query_f16"`
	Cache       Hex     `json:"cache"`
	OutF32      Hex     `json:"out_f32"`
}

// LayoutLBHNC is the only cache layout the golden files use: blocks, kv_heads, block_size, slot.
const LayoutLBHNC = "blocks,kv_heads,block_size,slot"

// Hex is a byte string stored as lowercase hex in JSON.
type Hex []byte

// UnmarshalJSON decodes a hex string.
func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a hex string: %w", err)
	}
	d, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = d
	return nil
}

// MarshalJSON encodes as a hex string.
func (h Hex) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

// U16 returns the bytes as little-endian uint16 values.
func (h Hex) U16() []uint16 {
	u := make([]uint16, len(h)/2)
	for i := range u {
		u[i] = uint16(h[2*i]) | uint16(h[2*i+1])<<8
	}
	return u
}

// U32 returns the bytes as little-endian uint32 values (float32 bit patterns).
func (h Hex) U32() []uint32 {
	u := make([]uint32, len(h)/4)
	for i := range u {
		u[i] = uint32(h[4*i]) | uint32(h[4*i+1])<<8 | uint32(h[4*i+2])<<16 | uint32(h[4*i+3])<<24
	}
	return u
}

func readGz(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: not gzip: %w", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadSlots reads and shape-checks a slot file.
func LoadSlots(path string) (*SlotFile, error) {
	var f SlotFile
	if err := readGz(path, &f); err != nil {
		return nil, err
	}
	f.Path = path
	if f.HeadSize <= 0 || f.SlotBytes <= 0 {
		return nil, fmt.Errorf("%s: head_size %d, slot_bytes %d: expected positive values", path, f.HeadSize, f.SlotBytes)
	}
	if len(f.SignBitsI32)*32 < f.HeadSize {
		return nil, fmt.Errorf("%s: %d sign words, need %d for head_size %d", path, len(f.SignBitsI32), (f.HeadSize+31)/32, f.HeadSize)
	}
	for i, c := range f.Cases {
		where := fmt.Sprintf("%s: case %d (%s)", path, i, c.Name)
		if c.InputDtype != "float16" && c.InputDtype != "bfloat16" {
			return nil, fmt.Errorf("%s: input_dtype %q: expected float16 or bfloat16", where, c.InputDtype)
		}
		for _, x := range []struct {
			name      string
			got, want int
		}{{"k", len(c.K), 2 * f.HeadSize}, {"v", len(c.V), 2 * f.HeadSize}, {"slot", len(c.Slot), f.SlotBytes},
			{"k_dequant_f32", len(c.KDequant), 4 * f.HeadSize}, {"v_dequant_f32", len(c.VDequant), 4 * f.HeadSize}} {
			if x.got != x.want {
				return nil, fmt.Errorf("%s: %s has %d bytes, expected %d", where, x.name, x.got, x.want)
			}
		}
	}
	return &f, nil
}

// LoadAttention reads and shape-checks an attention file. slotBytes maps a cache dtype to its slot
// size (the caller knows the formats; this package does not).
func LoadAttention(path string, slotBytes func(cacheDtype string, headSize, ropeDim int) (int, error)) (*AttentionFile, error) {
	var f AttentionFile
	if err := readGz(path, &f); err != nil {
		return nil, err
	}
	f.Path = path
	d := f.HeadSize
	for i, c := range f.Cases {
		where := fmt.Sprintf("%s: case %d (%s)", path, i, c.Name)
		if c.CacheLayout != LayoutLBHNC {
			return nil, fmt.Errorf("%s: cache_layout %q: expected %q", where, c.CacheLayout, LayoutLBHNC)
		}
		if c.NumKVHeads <= 0 || c.NumQHeads <= 0 || c.NumQHeads%c.NumKVHeads != 0 {
			return nil, fmt.Errorf("%s: num_q_heads %d, num_kv_heads %d: expected positive with Hq a multiple of Hkv", where, c.NumQHeads, c.NumKVHeads)
		}
		sb, err := slotBytes(c.CacheDtype, d, f.RopeDim)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		nq := len(c.QToReq)
		if len(c.QToKlen) != nq {
			return nil, fmt.Errorf("%s: q_to_req has %d entries, q_to_klen %d", where, nq, len(c.QToKlen))
		}
		for _, x := range []struct {
			name      string
			got, want int
		}{{"query_f16", len(c.QueryF16), 2 * nq * c.NumQHeads * d}, {"out_f32", len(c.OutF32), 4 * nq * c.NumQHeads * d},
			{"cache", len(c.Cache), c.NumBlocks * c.NumKVHeads * c.BlockSize * sb}} {
			if x.got != x.want {
				return nil, fmt.Errorf("%s: %s has %d bytes, expected %d", where, x.name, x.got, x.want)
			}
		}
		for r, row := range c.BlockTable {
			if len(row) != len(c.BlockTable[0]) {
				return nil, fmt.Errorf("%s: block_table row %d has %d entries, row 0 has %d", where, r, len(row), len(c.BlockTable[0]))
			}
		}
	}
	return &f, nil
}

// Dir lists the golden files of a directory: slot files (slots-*.json.gz) and attention files
// (attention*.json.gz), each sorted by name.
func Dir(dir string) (slots, attention []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case e.IsDir() || !strings.HasSuffix(n, ".json.gz"):
		case strings.HasPrefix(n, "slots-"):
			slots = append(slots, filepath.Join(dir, n))
		case strings.HasPrefix(n, "attention"):
			attention = append(attention, filepath.Join(dir, n))
		}
	}
	sort.Strings(slots)
	sort.Strings(attention)
	if len(slots)+len(attention) == 0 {
		return nil, nil, fmt.Errorf("%s: no golden files (expected slots-*.json.gz or attention*.json.gz)", dir)
	}
	return slots, attention, nil
}
