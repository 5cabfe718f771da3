// Package conformance certifies an architecture's Octave kernels against the contract
// (docs/contract.md §5–§6) and writes the evidence: certificate.json (schema in docs/conformance.md),
// report.md and junit.xml.
//
// The battery is derived from the arch registry: every op a certificate requires (arch.Requirement:
// decode and prefill on the named tiers, store, reduce, rotate) gets a fixed set of cases (seeds
// 0..N−1 of the fuzz generators, so every run checks the same calls) and then random cases from
// --seed until the time budget ends. Each case is checked by the fuzz harness's check for its op
// (fuzz.CheckGPUDecode, …) against the oracle under the tier's declared numeric profile. Cases are
// named as paths (decode/portable/k3v4/bf16/g6/bs16/lbnhc/splits7/q5/seed12). Statuses: Pass;
// Fail; NotSupported (with the reason); QualityWarning (outside the declared profile's bound but
// within the contract's relative-L2 bound). The worst status wins up the tree (case → tier → op →
// architecture).
//
// A required kernel the registry knows does not exist (arch.Arch.Missing, e.g. a native prefill
// for gfx942) makes the architecture not certifiable, whatever the cases say. Static
// certification (--isa-only) checks the compiled AMD code objects (`make isa`) against the
// registry where no such GPU is present; its runtime parts are NotSupported.
package conformance
