package conformance

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
)

// Unit is one (op, tier) of the battery: every case of it is the seeded recipe of the op
// (cases.SeededRecipe) judged by the harness on that tier alone.
type Unit struct {
	Op   arch.Op
	Tier arch.TierName
	// Optional marks a tier the library lists beyond the architecture's requirements (judged all
	// the same: a Fail in it blocks the certificate).
	Optional bool
	// LibTier is the tier's name in the library when it differs from Tier: a library that runs
	// an architecture's native tier on a model of its instructions offers it as "<tier>-model"
	// (arch.TierName.Model).
	LibTier arch.TierName
}

// libTier is the name of the unit's tier in the library.
func (u Unit) libTier() arch.TierName {
	if u.LibTier != "" {
		return u.LibTier
	}
	return u.Tier
}

// Units returns the battery's units for an architecture's requirements: one per required tier of
// decode and prefill, one each for store, reduce and rotate (the portable implementation).
func Units(reqs []arch.Requirement) []Unit {
	var out []Unit
	for _, r := range reqs {
		for _, t := range r.RequiredTiers() {
			out = append(out, Unit{Op: r.Op, Tier: t})
		}
	}
	return out
}

func (u Unit) String() string { return string(u.Op) + "/" + string(u.Tier) }

// property is the fuzz property whose reproducer replays a case of the op.
var property = map[arch.Op]string{arch.Store: cases.PropNameGPUStore, arch.Rotate: cases.PropNameGPURotate, arch.Decode: cases.PropNameGPUDecode,
	arch.Reduce: cases.PropNameGPUReduce, arch.Prefill: cases.PropNameGPUPrefill}

// Run draws case seed of the unit (cases.SeededRecipe), judges it on the unit's tier of l
// (harness.Check) and returns the case's result, named op/tier/<recipe path>/seed<N>. A failing
// case is written as a reproducer under regressions/ in o.OutDir (when set) and carries its
// replay command; a case still running after o.CaseTimeout is written so too and handed to
// o.Hung.
func (u Unit) Run(l *harness.Lib, seed uint64, o Options) CaseResult {
	outDir := o.OutDir
	t0 := time.Now()
	// What a failure's reproducer records of the library, taken before the library is judged.
	found, replay := "octant conform on "+l.String(), "octant replay --lib "+cases.ShellWord(l.Path)
	r := CaseResult{Path: fmt.Sprintf("%s/seed%d", u, seed)}
	finish := func() CaseResult { r.Seconds = time.Since(t0).Seconds(); return r }
	recipe, err := cases.SeededRecipe(u.Op, seed)
	if err == nil {
		r.Path = fmt.Sprintf("%s/%s/seed%d", u, recipe.Path(), seed)
	}
	var call harness.Call
	if err == nil {
		call, err = recipe.Call()
	}
	if err != nil {
		r.Status, r.Message = harness.Fail, fmt.Sprintf("building case %d of %s: %v", seed, u.Op, err)
		return finish()
	}
	impls, err := harness.Impls(l.OnTier(u.libTier()), u.Op)
	if err != nil || len(impls) != 1 {
		r.Status, r.Message = harness.Fail, fmt.Sprintf("the library offers no %s tier for %s (tiers: %v)", u.libTier(), u.Op, l.TierNames())
		return finish()
	}
	if o.CaseTimeout > 0 && o.Hung != nil {
		path := r.Path
		dog := time.AfterFunc(o.CaseTimeout, func() {
			err := fmt.Errorf("hung: the library had not returned after %v", o.CaseTimeout)
			cmd, _ := reproducer(u, recipe, err, outDir, found, replay)
			o.Hung(HungCase{Path: path, After: o.CaseTimeout, Replay: cmd})
		})
		defer dog.Stop()
	}
	v := harness.Check(l, impls[0], call)
	r.Status, r.BoundErr, r.RelL2, r.Judged = v.Status, v.Ratio, v.RelL2, v.Judged
	if v.Err != nil {
		r.Message = v.Err.Error()
	}
	if v.Status == harness.Fail {
		if d, ok := recipe.(*cases.GPUDecodeCase); ok {
			d.Digest = cases.Digest(call.(*harness.DecodeCall).In) // the reproducer notices if the generators change under it
		}
		var p string
		r.Replay, p = reproducer(u, recipe, v.Err, outDir, found, replay)
		r.Python = pythonReproducer(l, u, call, v, p)
	}
	return finish()
}

// reproducer writes the failing case as a reproducer (found: what it was found with) and returns
// its replay command (replay and the file) and the file, or "" and "" when no directory is given,
// or why it could not be written and "".
func reproducer(u Unit, recipe cases.Recipe, err error, dir, found, replay string) (cmd, path string) {
	if dir == "" {
		return "", ""
	}
	r, rerr := cases.NewReproducer(property[u.Op], recipe, "fail", err.Error())
	if rerr != nil {
		return "(no reproducer: " + rerr.Error() + ")", ""
	}
	r.Found += "; " + found
	p, werr := r.Write(filepath.Join(dir, "regressions"))
	if werr != nil {
		return "(no reproducer: " + werr.Error() + ")", ""
	}
	return replay + " " + p, p
}

// pythonReproducer writes the Python reproducer of a failing case on a library run by an
// adapter beside its JSON reproducer at path (cases.WritePythonReproducer) and returns the
// command that runs it, or why none was written; "" when l runs no adapter or no reproducer was
// written.
func pythonReproducer(l *harness.Lib, u Unit, call harness.Call, v harness.Verdict, path string) string {
	if l.Worker == nil || path == "" {
		return ""
	}
	py, err := cases.WritePythonReproducer(l.OnTier(u.libTier()), call, []harness.Verdict{v}, path)
	if err != nil {
		return "(no Python reproducer: " + err.Error() + ")"
	}
	if py == "" {
		return ""
	}
	return "python3 " + cases.ShellWord(py)
}
