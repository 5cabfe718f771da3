// Package mutate measures which tests kill deliberately broken kernel libraries: the work behind
// `octant mutate`, usable from Go on its own.
//
// A mutant is one defect compiled into the kernels with -DOCTAVE_MUTANT=<id>; the ids are the
// `#define OCT_MUT_<OP>_<WHAT> <id>` lines of csrc/include/octave_mutant.h ([ReadMutants]), the
// defects are described in corpus/mutants.md, and id 0 is the unmutated build ([Unmutated]).
//
// # Contract
//
//   - [Run] builds each library of its list with make in the working directory, which must be
//     the repository root ([Build]: `make <kind>-mutant MUTANT=<id>`, `make <kind>` for id 0),
//     [Config].Jobs at a time, and always the unmutated build with them, the control: the list's
//     own row 0 when it holds one, else built beside the mutants with no row of its own (its build
//     log is logs/m0-build.log). It then runs on each library of the list, with OCTANT_LIB naming
//     it (or, with [Config].Through, an adapter spec naming it: every judge then reaches the
//     library through a worker, docs/adapters.md): the kernel grid ([GridPhase]: the mutant's op's tests first, -short unless
//     [Config].Full); while it survives, the GPU fuzz targets ([FuzzPhase], [Config].Budget
//     shared by [FuzzTargets]; the unmutated build always gets the whole budget, since it must
//     survive it); and the conventional suite (TestConventional*, the comparison, not counted as
//     a kill, and not confirmed on the control).
//   - Each test binary runs as go test runs a package's binary: in its package's directory
//     (grids/, fuzz/) when the working directory has it, the binary's path and every path of the
//     environment (the library, the reproducers' directory under [Config].Out) absolute, since the
//     tests find their inputs from there (the golden vectors at ../corpus/golden/upstream, the
//     fuzz targets' seed corpora, the test sources TestLongFirstOrder reads).
//   - Kills are decided from structured results, never from matched text: each test binary runs
//     with -test.v=test2json, and its marked framing lines become test events ([Event], as `go
//     test -json` has them; [ReadEvents] reads such a stream, [Decide] decides over one). A phase
//     stops at the first failed test ([RunUntilFail]; a subtest reports before its parent, so the
//     innermost failing test names the kill); a binary that exits non-zero while a test runs
//     failed that test (a crash). A non-zero exit with no test running is an error, and a phase in
//     which no test passed (all skipped, or none ran) is no evidence ([KillResult.Outcome]):
//     neither is a kill nor a survival. Reaching the budget is not a kill. The time to kill runs
//     from the grid's start.
//   - A mutant's kill counts only when the killing test passes on the unmutated build ([Control]):
//     after the phases, that test alone runs on the control, with the phase's flags: a grid kill
//     with -test.run selecting exactly its path ([ExactRunPattern]), a fuzz kill with
//     -test.run=^FuzzX$ and no -test.fuzz (the target's seed corpus and the failing inputs the
//     fuzzer wrote under fuzz/testdata/fuzz/FuzzX). If it fails, crashes, errs or does not pass
//     there, or the control did not build, the row is unconfirmed ([Row.Outcome]), never killed:
//     a test that fails without the defect says nothing about it, and a control that did not
//     build confirms nothing.
//   - A row passes ([Row.OK]) when its library built and it is killed (confirmed), or, for the
//     unmutated build, when nothing fails, some test passed, and nothing errs. The kill matrix
//     (kill-matrix.md and kill-matrix.json, [WriteKillMatrix]; the JSON has each row's control
//     run) is written after every row, so a run stopped early leaves one; logs go to <Out>/logs
//     (a mutant's control run in that mutant's log, after a "== control:" line).
//   - A run can be split into shards ([Shard], [ShardOf]): entry k of its list in shard k mod n, a
//     rule that depends only on the list; each shard builds and runs its own control. With
//     [Config].Info set, the kill matrix records the run ([RunInfo]: commit, the header's sha256,
//     the whole list, the verdict flags, the shard), and kill-matrix.md says a shard's matrix is
//     partial. [MergeMatrices] combines the shards' matrices ([ReadMatrix]) into the unsharded
//     run's, refusing shards of other runs, doubled shards and cut files; a missing shard's rows
//     are not run ([Row].NotRun), never killed, survived or OK.
//   - [Plan] says in one line what a run will do before it starts: a full run builds and tests
//     every mutant and takes long, so the command asks for --all or --only.
package mutate
