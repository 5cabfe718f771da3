package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/harness"
)

// unitFlags are conform's flags over the battery's units: --list-units prints the plan and runs
// nothing; --units runs some units of it (a partial certificate, never CERTIFIED). A pytest
// run (contrib/pytest, docs/conformance.md) lists the units once and judges its shard's.
type unitFlags struct {
	list  *bool
	units *string
}

func addUnitFlags(fs *flag.FlagSet) unitFlags {
	return unitFlags{
		list:  fs.Bool("list-units", false, "print the battery's units (op/tier) for the library as JSON and run nothing"),
		units: fs.String("units", "", "comma-separated units (op/tier, as --list-units names them) to judge: a partial run, whose certificate never certifies"),
	}
}

// names is --units as a list (nil when not given).
func (f unitFlags) names() ([]string, error) {
	if *f.units == "" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(*f.units, ",") {
		if n = strings.TrimSpace(n); n == "" {
			return nil, fmt.Errorf("--units %q: an empty unit name, expected op/tier names joined by commas", *f.units)
		}
		out = append(out, n)
	}
	return out, nil
}

// UnitList is what --list-units prints: the library, the architecture and mode of the run, and
// its units in the battery's order.
type UnitList struct {
	Lib   string       `json:"lib"`
	Arch  string       `json:"arch"`
	Mode  string       `json:"mode"` // conformance.ModeRuntime or ModeModel
	Units []ListedUnit `json:"units"`
	Notes []string     `json:"notes,omitempty"`
}

// ListedUnit is one unit of the plan: its name (what --units takes), op and tier, the tier's
// name in the library, and whether it is beyond the architecture's requirements.
type ListedUnit struct {
	Unit     string `json:"unit"`
	Op       string `json:"op"`
	Tier     string `json:"tier"`
	LibTier  string `json:"lib_tier"`
	Optional bool   `json:"optional"`
	Offered  bool   `json:"offered"` // false: a required tier the library lacks (its unit is one failing case)
}

// listUnits prints the plan of a run of conform on l for architecture a (on a model of it when
// model) as JSON and returns the exit status.
func listUnits(stdout, stderr io.Writer, l *harness.Lib, a arch.Arch, o conformance.Options, model bool) int {
	o.Arch, o.Model = a, model
	units, notes, err := conformance.Plan(l, o)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	list := UnitList{Lib: l.Path, Arch: a.Name, Mode: conformance.ModeRuntime, Units: []ListedUnit{}, Notes: notes}
	if model {
		list.Mode = conformance.ModeModel
	}
	for _, u := range units {
		lt := u.Tier
		if u.LibTier != "" {
			lt = u.LibTier
		}
		list.Units = append(list.Units, ListedUnit{Unit: u.String(), Op: string(u.Op), Tier: string(u.Tier), LibTier: string(lt),
			Optional: u.Optional, Offered: l.Offers(u.Op, lt)})
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}
