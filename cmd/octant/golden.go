package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/octant-kv/octant/corpus/golden"
	"github.com/octant-kv/octant/oracle"
)

func runGolden(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("golden", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.String("check", "", "directory of golden files (slots-*.json.gz, attention*.json.gz) to verify")
	verbose := fs.Bool("v", false, "list every explained difference rule and hazard")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant golden --check DIR [-v]\n\nVerifies every golden file in DIR against the oracle: slots by docs/format.md §10's acceptance rule,\nattention cases by relative L2 ≤ 1e-5 with padding rows exactly zero. Exit 1 if any check fails.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case *check == "" && fs.NArg() > 0:
		fmt.Fprintf(stderr, "octant golden: expected --check DIR; got a bare argument %q: did you mean --check %s?\n", fs.Arg(0), fs.Arg(0))
		return 2
	case *check == "":
		fmt.Fprintln(stderr, "octant golden: expected --check DIR (a directory of golden files)")
		fs.Usage()
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "octant golden: unexpected argument %q after --check %s\n", fs.Arg(0), *check)
		return 2
	}
	slotPaths, attnPaths, err := golden.Dir(*check)
	if err != nil {
		fmt.Fprintf(stderr, "octant golden: %v\n", err)
		return 2
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	// A slot file's case is one slot: its columns count slots. -v's lines count differences per
	// code or scale, and hazards per quantization group; each says so.
	fmt.Fprintln(tw, "file\tkind\tcases\tidentical slots\texplained slots\tunexplained slots\tidentical %\tmax rel L2\tpadding ok\t")
	failed := false
	var nIdent, nExpl, nUnexpl, nAttn int
	maxRel := 0.0
	var problems []string
	for _, p := range slotPaths {
		f, err := golden.LoadSlots(p)
		if err != nil {
			fmt.Fprintf(stderr, "octant golden: %v\n", err)
			return 2
		}
		st, err := golden.CheckSlots(f)
		if err != nil {
			fmt.Fprintf(stderr, "octant golden: %v\n", err)
			return 2
		}
		fmt.Fprintf(tw, "%s\tslots\t%d\t%d\t%d\t%d\t%.1f\t-\t-\t\n", filepath.Base(p), st.Total(), st.Identical, st.Explained, st.Unexplained, st.IdenticalPercent())
		nIdent += st.Identical
		nExpl += st.Explained
		nUnexpl += st.Unexplained
		if st.Unexplained > 0 {
			failed = true
		}
		for _, u := range st.UnexplainedCases {
			problems = append(problems, fmt.Sprintf("%s: unexplained slot %s", filepath.Base(p), u))
		}
		if *verbose {
			problems = append(problems, fmt.Sprintf("%s: accepted differences from the exact quantization, counted per code or scale, by rule: %s; format hazards, counted per quantization group: %s",
				filepath.Base(p), countList(st.Rules), countList(st.Hazards)))
		}
	}
	for _, p := range attnPaths {
		f, err := golden.LoadAttention(p, oracle.SlotBytesFor)
		if err != nil {
			fmt.Fprintf(stderr, "octant golden: %v\n", err)
			return 2
		}
		st, err := golden.CheckAttention(f)
		if err != nil {
			fmt.Fprintf(stderr, "octant golden: %v\n", err)
			return 2
		}
		padOK := "yes"
		if st.PaddingNonZero > 0 {
			padOK = fmt.Sprintf("NO (%d rows)", st.PaddingNonZero)
			failed = true
		}
		fmt.Fprintf(tw, "%s\tattention\t%d\t-\t-\t-\t-\t%.2e\t%s\t\n", filepath.Base(p), len(st.Cases), st.MaxRelL2, padOK)
		nAttn += len(st.Cases)
		maxRel = max(maxRel, st.MaxRelL2)
		for _, c := range st.Cases {
			if c.RelL2 > oracle.GoldenAttentionRelL2 || c.RelL2 != c.RelL2 {
				failed = true
				problems = append(problems, fmt.Sprintf("%s: case %s: relative L2 %.3g > %g", filepath.Base(p), c.Name, c.RelL2, oracle.GoldenAttentionRelL2))
			}
			if c.PaddingNonZero > 0 {
				problems = append(problems, fmt.Sprintf("%s: case %s: %d padding rows not exactly zero", filepath.Base(p), c.Name, c.PaddingNonZero))
			}
		}
	}
	tw.Flush()
	for _, m := range problems {
		fmt.Fprintln(stdout, m)
	}
	slots, attn := "no slot file", "no attention file"
	if len(slotPaths) > 0 {
		slots = fmt.Sprintf("slots %d identical, %d explained, %d unexplained", nIdent, nExpl, nUnexpl)
	}
	if len(attnPaths) > 0 {
		attn = fmt.Sprintf("attention %d cases, max rel L2 %.2e", nAttn, maxRel)
	}
	fmt.Fprintf(stdout, "golden: %s; %s\n", slots, attn)
	if failed {
		return 1
	}
	return 0
}

// countList prints counts by name for people: "code-tie 261, none 1", sorted by name; "none" when
// there are none.
func countList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var f []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f = append(f, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(f, ", ")
}
