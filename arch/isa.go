package arch

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Disassembly is the instruction mnemonics of each function symbol of a disassembly, with counts.
type Disassembly map[string]map[string]int

// ParseObjdump reads `llvm-objdump -d` output: a line "<addr> <symbol>:" starts a function, and each
// following tab-indented line is an instruction whose first word is its mnemonic. Encoding suffixes
// (_e32, _e64, _dpp, _sdwa) are removed, so v_dot4c_i32_i8_e32 counts as v_dot4c_i32_i8. Several
// objdump outputs may be concatenated.
func ParseObjdump(r io.Reader) (Disassembly, error) {
	d := Disassembly{}
	var cur map[string]int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if sym, ok := symbolHeader(line); ok {
			if d[sym] == nil {
				d[sym] = map[string]int{}
			}
			cur = d[sym]
			continue
		}
		if cur == nil || !strings.HasPrefix(line, "\t") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "//") {
			continue
		}
		cur[NormalizeMnemonic(f[0])]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("arch: reading disassembly: %w", err)
	}
	return d, nil
}

// symbolHeader recognizes "0000000000001600 <octave_store_kernel>:".
func symbolHeader(line string) (string, bool) {
	i := strings.Index(line, " <")
	if i <= 0 || !strings.HasSuffix(line, ">:") {
		return "", false
	}
	for _, c := range line[:i] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return "", false
		}
	}
	return line[i+2 : len(line)-2], true
}

// NormalizeMnemonic strips AMDGPU encoding suffixes from a mnemonic.
func NormalizeMnemonic(m string) string {
	for _, s := range []string{"_e64_dpp", "_e32", "_e64", "_dpp", "_sdwa"} {
		if strings.HasSuffix(m, s) {
			return strings.TrimSuffix(m, s)
		}
	}
	return m
}

// Row is one line of an ISA check: a (target, kernel, piece) with the instruction found and how
// often, or what is missing.
type Row struct {
	Target, Kernel, Piece string
	Instruction           string // the mnemonic found, or the alternatives looked for
	Count                 int
	OK                    bool
	Problem               string // "" when OK
}

func (r Row) String() string {
	st := "ok"
	if !r.OK {
		st = "MISSING: " + r.Problem
	}
	return fmt.Sprintf("%-8s %-28s %-16s %-22s %6d  %s", r.Target, r.Kernel, r.Piece, r.Instruction, r.Count, st)
}

// Check checks a disassembly of the architecture's code objects against its Kernels: every kernel
// symbol must be present and show each of its pieces. It returns one row per (kernel, piece) — a
// kernel without pieces gets one row for its presence — and an error naming every failure.
func (a Arch) Check(d Disassembly) ([]Row, error) {
	var rows []Row
	var bad []string
	for _, k := range a.Kernels {
		ins, ok := d[k.Kernel]
		if !ok {
			rows = append(rows, Row{Target: a.Name, Kernel: k.Kernel, Piece: "symbol", Instruction: "-",
				Problem: "kernel symbol not in the code objects"})
			bad = append(bad, fmt.Sprintf("%s: kernel %s missing", a.Name, k.Kernel))
			continue
		}
		if len(k.Pieces) == 0 {
			n := 0
			for _, c := range ins {
				n += c
			}
			rows = append(rows, Row{Target: a.Name, Kernel: k.Kernel, Piece: "symbol", Instruction: "(any)", Count: n, OK: true})
			continue
		}
		for _, pn := range k.Pieces {
			p, ok := a.Piece(pn)
			if !ok {
				return nil, fmt.Errorf("arch: %s: kernel %s needs piece %q, which the registry does not define", a.Name, k.Kernel, pn)
			}
			r := Row{Target: a.Name, Kernel: k.Kernel, Piece: pn, Instruction: strings.Join(p.AnyOf, "|")}
			for _, m := range p.AnyOf {
				if ins[m] > 0 {
					r.Instruction, r.Count, r.OK = m, ins[m], true
					break
				}
			}
			if !r.OK {
				r.Problem = fmt.Sprintf("no %s instruction", strings.Join(p.AnyOf, " or "))
				bad = append(bad, fmt.Sprintf("%s: kernel %s has no %s (%s)", a.Name, k.Kernel, pn, strings.Join(p.AnyOf, " or ")))
			}
			rows = append(rows, r)
		}
	}
	if len(bad) > 0 {
		return rows, fmt.Errorf("arch: ISA check failed: %s", strings.Join(bad, "; "))
	}
	return rows, nil
}

// Unknown returns the function symbols of d that the architecture's registry does not list
// (helpers the compiler did not inline, or kernels added without registering them), sorted.
func (a Arch) Unknown(d Disassembly) []string {
	known := map[string]bool{}
	for _, k := range a.Kernels {
		known[k.Kernel] = true
	}
	var u []string
	for s := range d {
		if !known[s] {
			u = append(u, s)
		}
	}
	sort.Strings(u)
	return u
}
