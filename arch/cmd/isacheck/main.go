// Command isacheck checks disassembled AMD code objects against the arch registry (`make isa`).
//
//	isacheck -dir build/isa gfx1100 gfx942
//
// reads every *.s (llvm-objdump -d output) under DIR/TARGET for each target, prints one row per
// (target, kernel, piece) with the instruction found and its count, and exits 1 when a kernel
// symbol or a required instruction is missing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/octant-kv/octant/arch"
)

func main() {
	dir := flag.String("dir", "build/isa", "directory with one subdirectory of *.s disassemblies per target")
	flag.Parse()
	targets := flag.Args()
	if len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "isacheck: name at least one target (gfx1100, gfx942)")
		os.Exit(2)
	}
	failed := false
	fmt.Printf("%-8s %-28s %-16s %-22s %6s  %s\n", "target", "kernel", "piece", "instruction", "count", "status")
	for _, t := range targets {
		a, err := arch.Lookup(t)
		if err != nil {
			fmt.Fprintln(os.Stderr, "isacheck:", err)
			os.Exit(2)
		}
		files, _ := filepath.Glob(filepath.Join(*dir, t, "*.s"))
		sort.Strings(files)
		if len(files) == 0 {
			fmt.Fprintf(os.Stderr, "isacheck: no disassemblies (*.s) in %s\n", filepath.Join(*dir, t))
			os.Exit(1)
		}
		var all bytes.Buffer
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "isacheck:", err)
				os.Exit(1)
			}
			all.Write(b)
			all.WriteByte('\n')
		}
		d, err := arch.ParseObjdump(&all)
		if err != nil {
			fmt.Fprintln(os.Stderr, "isacheck:", err)
			os.Exit(1)
		}
		rows, err := a.Check(d)
		for _, r := range rows {
			fmt.Println(r)
		}
		for _, u := range a.Unknown(d) {
			fmt.Printf("%-8s %-28s (not in the registry)\n", t, u)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "isacheck:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("isacheck: %d target(s) pass\n", len(targets))
}
