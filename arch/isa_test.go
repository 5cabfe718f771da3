package arch

import (
	"strings"
	"testing"
)

// A fragment shaped like llvm-objdump -d output for gfx942.
const fixture942 = `
build/isa/gfx942/decode.o:	file format elf64-amdgpu

Disassembly of section .text:

0000000000001600 <octave_decode_dot4_k3v4_q6_kernel>:
	s_load_dwordx2 s[0:1], s[4:5], 0x0                         // 000000001600: C0060002 00000000
	v_dot4c_i32_i8_e32 v6, v4, v5                              // 000000001684: 720C0B04
	v_perm_b32 v6, s0, v7, v6                                  // 00000000168C: D1ED0006 041A0E00
	s_endpgm                                                   // 000000001690: BF810000

0000000000001700 <octave_store_kernel>:
	v_perm_b32 v6, s0, v7, v6                                  // 00000000170C: D1ED0006 041A0E00
	s_endpgm
`

func TestParseObjdump(t *testing.T) {
	d, err := ParseObjdump(strings.NewReader(fixture942))
	if err != nil {
		t.Fatal(err)
	}
	if got := d["octave_decode_dot4_k3v4_q6_kernel"]["v_dot4c_i32_i8"]; got != 1 {
		t.Errorf("v_dot4c_i32_i8 (from _e32) counted %d times, expected 1", got)
	}
	if got := d["octave_store_kernel"]["v_perm_b32"]; got != 1 {
		t.Errorf("store v_perm_b32 counted %d times, expected 1", got)
	}
}

func TestCheckReportsMissing(t *testing.T) {
	a, err := Lookup("gfx942:sramecc+:xnack-")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ParseObjdump(strings.NewReader(fixture942))
	rows, err := a.Check(d)
	if err == nil {
		t.Fatal("Check passed a disassembly without rotate, reduce, prefill and query maps kernels")
	}
	for _, k := range []string{KernelRotate, KernelReduce, KernelPrefill, KernelQueryMaps} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name missing kernel %s", err, k)
		}
	}
	var okDot4 bool
	for _, r := range rows {
		if r.Kernel == KernelDecode && r.Piece == PieceDot4 && r.OK && r.Instruction == "v_dot4c_i32_i8" {
			okDot4 = true
		}
	}
	if !okDot4 {
		t.Errorf("decode dot4 row not ok with v_dot4c_i32_i8: %v", rows)
	}

	// gfx1100 wants v_dot4_i32_iu8: the gfx942 instruction does not count.
	a11, _ := Lookup("gfx1100")
	if _, err := a11.Check(d); err == nil || !strings.Contains(err.Error(), "v_dot4_i32_iu8") {
		t.Errorf("gfx1100 check of gfx942 code: error %v, expected one naming v_dot4_i32_iu8", err)
	}
}

func TestRegistry(t *testing.T) {
	for _, a := range All() {
		if a.LogicalWave != 32 || (a.WaveSize != 32 && a.WaveSize != 64) {
			t.Errorf("%s: wave %d logical %d", a.Name, a.WaveSize, a.LogicalWave)
		}
		bt := a.BuiltTiers()
		if len(bt) == 0 || bt[0].Name != "portable" || bt[0].DecodeProfile != "dot4-int8q" {
			t.Errorf("%s: built tiers %v, expected portable (dot4-int8q) first", a.Name, bt)
		}
		// gfx1100 also has its wmma tier (decode wmma-f16q, prefill the int8row + chunk-f16 pair);
		// sm_90 its mma tier (decode int8rowq, prefill the same pair as gfx1100); the others only
		// portable.
		switch a.Name {
		case "gfx1100":
			if len(bt) != 2 || bt[1].Name != "wmma" || bt[1].DecodeProfile != "wmma-f16q" || bt[1].PrefillProfile != "int8rowq+chunk-f16" {
				t.Errorf("%s: built tiers %v", a.Name, bt)
			}
		case "sm_90":
			if len(bt) != 2 || bt[1].Name != "mma" || bt[1].DecodeProfile != "int8rowq" || !bt[1].BuiltFor(Decode) ||
				!bt[1].BuiltFor(Prefill) || bt[1].PrefillProfile != "int8rowq+chunk-f16" {
				t.Errorf("%s: built tiers %v, expected portable and mma (decode and prefill)", a.Name, bt)
			}
		case "gfx942":
			if len(bt) != 2 || bt[1].Name != "mfma" || bt[1].DecodeProfile != "int8rowq" || !bt[1].BuiltFor(Decode) ||
				!bt[1].BuiltFor(Prefill) || bt[1].PrefillProfile != "int8rowq+chunk-f16" {
				t.Errorf("%s: built tiers %v, expected portable and mfma (decode and prefill)", a.Name, bt)
			}
		default:
			if len(bt) != 1 {
				t.Errorf("%s: built tiers %v", a.Name, bt)
			}
		}
		for _, k := range a.Kernels {
			for _, p := range k.Pieces {
				if _, ok := a.Piece(p); !ok {
					t.Errorf("%s: kernel %s needs undefined piece %q", a.Name, k.Kernel, p)
				}
			}
		}
	}
	if _, err := Lookup("gfx90a"); err == nil {
		t.Error("Lookup(gfx90a) succeeded; it is not a supported architecture")
	}
}
