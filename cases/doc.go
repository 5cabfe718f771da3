// Package cases owns what an Octave KV case is: the recipes of every op's call, the two random
// sources that draw them, and the reproducer file that records one. Whoever runs a case — the rapid
// properties and `go test -fuzz` targets (package fuzz), `octant conform` (package conformance),
// `octant replay` and `octant mutate` — takes it from here and hands its call to the one judge,
// package harness. This package draws and builds cases and checks properties of a case; it never
// decides which library runs, where failures go or how a run is reported: its callers do.
//
// # Contract
//
//   - A [Recipe] ([GPUStoreCase], [GPURotateCase], [GPUDecodeCase], [GPUReduceCase],
//     [GPUPrefillCase]) is JSON and rebuilds the same [harness.Call] anywhere ([Recipe.Call]).
//   - Two random sources feed the same draw functions: rapid (the generators below: recorded, so
//     rapid can shrink them and `go test -fuzz` can mutate them) and a PCG stream of math/rand/v2
//     ([SeededRecipe], versioned by [CaseGenVersion]: the same (op, seed) gives the same recipe on
//     every platform and with any rapid version).
//   - [Properties] and [GPUProperties] are the registry: each property's name, the directory of
//     its reproducers and how a reproducer's case is read, checked and replayed ([ParseReproducer],
//     [Replayable.Run]).
//
// # Generators
//
// Every generator is a [pgregory.net/rapid] generator, so it composes with rapid's own
// (rapid.Custom, rapid.Map, Generator.Filter) and shrinks: a failure is reported on the smallest
// case rapid finds. Small choices (sizes, kinds, lengths, the maps and the block table) are rapid
// draws; bulk content (the 256 values of a vector, every slot of a cache) is a recipe — a kind,
// a few parameters and a seed — that Build expands deterministically with a PCG stream. So a case
// stays cheap to draw, shrinks towards simple recipes, and serializes to a few hundred bytes.
//
// Values ([Values], [Vectors], [ValueSpecs]; [ValueSpec.Build]) are head-size float32 vectors
// exactly representable in the chosen [Dtype] (fp16 or bf16), by kind: gaussian, outliers,
// rope-heavy (dims 0..63 large), tiny, fp16-subnormal, huge (group RMS around the fp16 scale
// overflow of docs/format.md §10, 4.7e4–5.8e4, and beyond), zero, constant, spike, hadamard-row
// (Unrotate of a one-hot vector: all energy in one rotated coordinate, for the signs and block the
// vector will be rotated with — pass them in [VecContext]), head-scale (a scale per head from
// 2^-16..2^15) and extremes (the dtype's max finite, min normal and min subnormal values).
// Non-finite values (NaN, ±inf) come only from [NonFiniteValues]: their expectation differs (a
// group holding one must decode to zero, docs/format.md §10 rule 4), so they are never mixed into
// [Values].
//
// Signs ([SignSpecs], [SignPairs]) are the default pattern, none or every dim negated, or random
// words; K and V independently. Lengths ([Lengths], [QueryLens], [Splits]) reach
// [KlenBoundaries] (0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129), block-size multiples ±1, the
// ends of their range (sequences up to 2^17), decode, MTP runs and 128-token chunks, split counts
// 1..1024 with one token per split and more splits than tokens; most draws stay small so cases
// are cheap. [GQAGroups], [SMScales] and [BlockSizes] draw the rest of a call's parameters.
//
// Batches ([Batches], [BatchOptions]) are valid request metadata; [BuilderMaps] turns one into
// the query maps of docs/contract.md §4 (oracle.BuildQueryMaps) and [WildMaps] into maps no builder
// produces (interleaved requests, non-monotone or out-of-range klen, padding in the middle,
// negative and out-of-range requests). [BlockTables] shuffle physical blocks, share leading
// blocks between requests (prefix caching), put invalid ids inside a request's blocks and
// garbage past its last one. [CacheShapes] give both layouts (LBHNC, LBNHC) with padded strides;
// [BuildCache] fills a cache: quantized values in live slots (random pad bytes, as the store
// leaves them), stale garbage ([Garbage]) elsewhere, random bytes between slots.
// [SlotMappings] draws a store's slot_mapping.
//
// [DecodeSpecs] combines all of these into whole decode calls ([DecodeSpec], JSON, rebuilt by
// [DecodeSpec.Build] into an oracle.DecodeInput; [Digest] fingerprints the result), and
// [Geometries] draws split geometries (portable, WMMA, random). GPU targets draw a DecodeSpec,
// build it once, run every tier on it and compare with the oracle.
//
// A property is an ordinary rapid property:
//
//	func TestMine(t *testing.T) {
//		rapid.Check(t, func(t *rapid.T) {
//			s := cases.DecodeSpecs(cases.DecodeOptions{}).Draw(t, "call")
//			in, err := s.Build()
//			if err != nil {
//				t.Fatal(err)
//			}
//			// … run something on in and compare with oracle.ExactDecode(in) …
//		})
//	}
//
// # Seeded cases
//
// [SeededRecipe] draws the recipe of one call from (op, seed) alone, through the same draw
// functions fed by a PCG stream instead of rapid (whose choice encoding may change between
// versions). It is what `octant conform` certifies; [CaseGenVersion] names it and is recorded in
// every certificate, and TestSeededRecipesPinned holds its output.
//
// A GPU failure writes its reproducer under corpus/regressions/<op>/ with target "lib"; its
// message ends with `go run ./cmd/octant replay --lib <library> <file>` ($OCTANT_REPLAY_CMD
// replaces the command on a machine without Go). [ReplayLib] runs it on a library; [Replay] and
// `octant replay` without --lib run the oracle's side alone. The file format is
// [Reproducer].
//
// # Reproducers
//
// When a property fails, it writes a reproducer ([Reproducer]) to the one regression corpus,
// corpus/regressions/<op>/<property>-<hash>.json (rapid's own fail files are turned off by
// fuzz package's TestMain: one corpus, not two)
// (or to $OCTANT_REGRESSIONS; "off" writes none): the op, the property, the case in JSON — concrete
// inputs where small (slot values as dtype bits, query-map arrays), recipes and seeds with a
// [Digest] where not (a merge case's cache and query) — and the verdict with the failure message.
// While rapid shrinks, each smaller failure replaces the previous file, so the smallest remains.
// The failure message ends with the command that replays the file from the repository root:
//
//	go run ./cmd/octant replay corpus/regressions/merge/merge-partials-3f2a….json
//
// [Replay] rebuilds the case and re-runs the property against the oracle: nil when it holds (the
// bug is fixed; example files pass), else the failure. Before anything runs, [ParseReproducer]
// checks the file: a known property, every field of its case in its range (the case types'
// Validate methods: an error names the field, its value and what was expected) and its call
// built; a reproducer whose digest no longer matches what the generators build is refused rather
// than silently testing something else. Such a refusal is a *[ReproducerError], apart from a
// failure (`octant replay` counts it unreadable, exit 2). FuzzReadReproducer fuzzes that reader
// over arbitrary bytes, FuzzReproducerFields over every field of the committed and generated
// reproducers set to any value.
// TestReplayRegressions (package fuzz) replays every file under corpus/regressions on every go test.
package cases
