// Package arch is Octant's architecture registry: for each GPU architecture the Octave kernels
// support, its wave size, its pieces (the hardware instructions the contract names, docs/contract.md §6),
// its tiers with their numeric profiles, how its code is built, and the instructions its code
// objects must contain, with a static check of a disassembly against them.
//
// The registry is data; nothing here talks to a GPU. The kernels package matches the architecture
// string a device reports ("gfx1100", "gfx942", "sm_90") against Lookup, and `make isa` checks the
// AMD code objects with CheckDisassembly (arch/cmd/isacheck).
package arch

import "fmt"

// Vendor is who makes the architecture.
type Vendor string

// Vendors.
const (
	AMD    Vendor = "amd"
	NVIDIA Vendor = "nvidia"
	CPU    Vendor = "cpu" // the CPU emulator build (csrc/emu): runs the kernels, has no ISA
)

// Piece is one hardware capability the contract names, and the mnemonics that show it in a
// disassembly (any one of them suffices: the compiler may pick a variant).
type Piece struct {
	Name  string   // "int8 dot4", "codebook lookup", ...
	AnyOf []string // mnemonics, without encoding suffixes (_e32, _e64, _dpp, _sdwa)
}

// Tier is a family of kernels with one numeric profile per op; ID is the C ABI's octave_tier.
type Tier struct {
	ID             int
	Name           TierName
	Ops            []Op   // Decode, Prefill
	DecodeProfile  string // docs/contract.md §5 profile of its decode ("" if no decode)
	PrefillProfile string // profile of its prefill ("" if no prefill)
	// Built says the tier's kernels are compiled into the library this repository builds. A tier
	// that is registered but not built cannot be certified: Missing names it.
	Built bool
	// NotBuilt lists the ops of a built tier whose kernels do not exist yet (gfx1100's wmma tier
	// had its decode, issue 14 part 1, before its prefill, part 2): the architecture stays not
	// certifiable, and Missing names the kernel. An op is built when the tier is Built and the op
	// is not listed here (BuiltFor).
	NotBuilt []Op
	// VariantProfiles lists, per op, the profiles of other builds of the tier that this
	// repository makes and tests (a compile-time variant whose arithmetic differs): a library of
	// such a build may declare them (AllowedProfiles), and no other.
	VariantProfiles map[Op][]string
	// CouplesRows declares that the tier's decode arithmetic lets a query row's output depend on
	// cache bytes past the row's own klen that a sibling row (a longer MTP or chunk row of the same
	// request, sharing its workgroup under query_group > 1) attends. The isolation property
	// (cases.CheckIsolation, docs/fuzz.md) then holds the tier's rows to their declared profile's
	// bound and to finite output when those bytes are poisoned, instead of to the same bits. false:
	// every row's output is bit for bit independent of every byte outside its own attended range.
	CouplesRows bool
}

// BuiltFor reports whether the tier's kernels for op are compiled into the library this
// repository builds.
func (t Tier) BuiltFor(op Op) bool {
	if !t.Built {
		return false
	}
	for _, o := range t.NotBuilt {
		if o == op {
			return false
		}
	}
	return true
}

// KernelNeeds says which pieces a kernel symbol's code must show on an architecture.
type KernelNeeds struct {
	Kernel string   // symbol in the code object
	Pieces []string // Piece names
}

// Arch is one registered architecture.
type Arch struct {
	Name        string // as the device reports it: "gfx1100", "gfx942", "sm_90", "emu"
	Vendor      Vendor
	Family      string // "RDNA3", "CDNA3 (MI300)", "Hopper"
	WaveSize    int    // hardware wave/warp size
	LogicalWave int    // the kernels' logical wave: always 32
	Pieces      []Piece
	Tiers       []Tier
	BuildFlags  []string      // how its code objects are compiled (mk/kernels.mk)
	Disassemble string        // the disassembler whose output CheckDisassembly reads ("" = none)
	Kernels     []KernelNeeds // what its code objects must contain
	// Requires lists, per op, the tiers a certificate needs (docs/contract.md §6). A required tier that
	// is not registered, does not implement the op, declares no profile for it, or is not built
	// is a kernel that does not exist: the architecture is not certifiable (Missing).
	Requires []Requirement
	// Model names the model of the architecture's native instructions that other libraries run its
	// native tiers on ("<tier>-model"), for the certificates made on it; nil where none exists.
	Model *InstructionModel
}

// InstructionModel is the model of an architecture's matrix instructions that the emulator and
// CUDA builds supply, so that its native tiers' kernel source runs without its hardware.
type InstructionModel struct {
	Instructions string // "WMMA", "MFMA"
	Header       string // the source that supplies them: "csrc/include/octave_wmma.h"
	Doc          string // the docs/kernels.md section with the facts and their sources
}

// Requirement is one op a certificate needs, on the named tiers (none for store, rotate and
// reduce, which have one implementation per library: the portable one).
type Requirement struct {
	Op    Op
	Tiers []TierName // all must be present and pass
}

// RequiredTiers is the tiers the requirement names, or the portable tier for an untiered op.
func (r Requirement) RequiredTiers() []TierName {
	if len(r.Tiers) == 0 {
		return []TierName{Portable}
	}
	return r.Tiers
}

// Missing names the required kernels that do not exist in this repository, one line each: a
// required tier that is not registered, that does not implement the op or declares no profile
// for it, or whose kernels are not built. An architecture with anything missing is not
// certifiable, whatever a runtime battery says.
func (a Arch) Missing() []string {
	var out []string
	for _, r := range a.Requires {
		for _, tn := range r.RequiredTiers() {
			t, ok := a.Tier(tn)
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: tier %s is not registered for %s", r.Op, tn, a.Name))
			case r.Op.Tiered() && !t.Implements(r.Op):
				out = append(out, fmt.Sprintf("%s: the %s tier has no %s kernel (the contract requires a %s %s on %s)", r.Op, tn, r.Op, tn, r.Op, a.Name))
			case !t.BuiltFor(r.Op):
				out = append(out, fmt.Sprintf("%s: the %s tier's %s kernel is not built by this repository (registered with profile %q, no code)", r.Op, tn, r.Op, t.Profile(r.Op)))
			}
		}
	}
	return out
}

// Implements reports whether the tier lists op and declares a profile for it (untiered ops: every
// built tier of an architecture's library implements them through the portable code).
func (t Tier) Implements(op Op) bool {
	if !op.Tiered() {
		return true
	}
	for _, o := range t.Ops {
		if o == op {
			return t.Profile(op) != ""
		}
	}
	return false
}

// Profile is the tier's declared numeric profile for a tiered op ("" for untiered ops or none).
func (t Tier) Profile(op Op) string {
	switch op {
	case Decode:
		return t.DecodeProfile
	case Prefill:
		return t.PrefillProfile
	}
	return ""
}

// Tier returns the named tier.
func (a Arch) Tier(name TierName) (Tier, bool) {
	for _, t := range a.Tiers {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}

// The ABI's tier ids (csrc/include/octave_capi.h, enum octave_tier).
const (
	TierPortable = 0
	TierWMMA     = 1
	TierMFMA     = 2
	TierMMA      = 3
)

// Kernel symbols of the portable tier (csrc/*.hip).
const (
	KernelStore     = "octave_store_kernel"
	KernelRotate    = "octave_rotate_kernel"
	KernelDecode    = "octave_decode_dot4_k3v4_q6_kernel" // the variant the k3v4, G = 6 shapes run
	KernelReduce    = "octave_reduce_kernel"
	KernelPrefill   = "octave_prefill_fp32_kernel"
	KernelQueryMaps = "octave_query_maps_kernel"
)

// KernelDecodeWMMAVariants are the symbols of the WMMA tier's decode kernel, one per format
// (csrc/decode_wmma.hip): every one must show the f16 WMMA and the codebook lookup on gfx1100.
func KernelDecodeWMMAVariants() []string {
	return []string{"octave_decode_wmma_k3v4_kernel", "octave_decode_wmma_k3v3_kernel", "octave_decode_wmma_k3v3c_kernel"}
}

// KernelPrefillWMMAVariants are the symbols of the WMMA tier's prefill kernel, one per format for
// fp16 (csrc/prefill_wmma.hip): every one must show the int8 WMMA (the prefix's QK), the f16 WMMA
// (the prefix's P'·V, the chunk) and the codebook lookup on gfx1100.
func KernelPrefillWMMAVariants() []string {
	return []string{"octave_prefill_wmma_k3v4_kernel", "octave_prefill_wmma_k3v3_kernel", "octave_prefill_wmma_k3v3c_kernel"}
}

// KernelPrefillWMMABF16Variants are the bf16 variants of the WMMA prefill (an Octant extension):
// the same pieces, and the bf16 WMMA of the chunk.
func KernelPrefillWMMABF16Variants() []string {
	return []string{"octave_prefill_wmma_k3v4_bf16_kernel", "octave_prefill_wmma_k3v3_bf16_kernel", "octave_prefill_wmma_k3v3c_bf16_kernel"}
}

// KernelPrefillMFMAVariants are the symbols of the mfma tier's prefill kernel, one per format for
// fp16 (csrc/prefill_mfma.hip): on gfx942 every one shows the int8 MFMA (the prefix's QK), the f16
// MFMA (the prefix's P'·V, the chunk) and the codebook lookup.
func KernelPrefillMFMAVariants() []string {
	return []string{"octave_prefill_mfma_k3v4_kernel", "octave_prefill_mfma_k3v3_kernel", "octave_prefill_mfma_k3v3c_kernel"}
}

// KernelPrefillMFMABF16Variants are the bf16 variants of the mfma prefill (an Octant extension):
// the same pieces, and the bf16 MFMA of the chunk.
func KernelPrefillMFMABF16Variants() []string {
	return []string{"octave_prefill_mfma_k3v4_bf16_kernel", "octave_prefill_mfma_k3v3_bf16_kernel", "octave_prefill_mfma_k3v3c_bf16_kernel"}
}

// KernelWMMASelftest is the test entry point's kernel (csrc/wmma_selftest.hip, not part of the ABI):
// one WMMA of each form, so on gfx1100 it shows that the builtins become the f16, bf16 and iu8
// instructions.
const KernelWMMASelftest = "octave_wmma_selftest_kernel"

// KernelMFMASelftest is the MFMA test entry point's kernel (csrc/mfma_selftest.hip, not part of the
// ABI): one MFMA of each form, so on gfx942 it shows that the builtins become the i8, f16 and bf16
// instructions the mfma tier's kernels use. It marks no tier built.
const KernelMFMASelftest = "octave_mfma_selftest_kernel"

// KernelDecodeMFMAVariants are the symbols of the mfma tier's decode kernel, one per format
// (csrc/decode_mfma.hip): every one must show the i8 MFMA (QK), the f16 MFMA (P'·V) and the
// codebook lookup on gfx942.
func KernelDecodeMFMAVariants() []string {
	return []string{"octave_decode_mfma_k3v4_kernel", "octave_decode_mfma_k3v3_kernel", "octave_decode_mfma_k3v3c_kernel"}
}

// KernelReduceMFMA is the mfma tier's wave64 reduce (csrc/reduce_mfma.hip), which octave_decode
// launches on that tier.
const KernelReduceMFMA = "octave_reduce_mfma_kernel"

// KernelDecodeVariants are the symbols of the portable decode kernel, one per format and bound on
// the queries a wave holds (csrc/decode.hip); every one must show the decode pieces.
func KernelDecodeVariants() []string {
	var v []string
	for _, f := range []string{"k3v4", "k3v3", "k3v3c"} {
		for _, q := range []string{"q4", "q6", "q8"} {
			v = append(v, "octave_decode_dot4_"+f+"_"+q+"_kernel")
		}
	}
	return v
}

// Piece names.
const (
	PieceDot4     = "int8 dot4"
	PieceCodebook = "codebook lookup"
	PieceMatrix   = "int8 matrix core" // the native tiers' int8 instruction (prefill's prefix QK)
	PieceWMMAF16  = "f16 matrix core"  // gfx1100's f16 WMMA with fp32 results (the wmma tier's decode, prefill's P·V and chunk)
	PieceWMMABF16 = "bf16 matrix core" // gfx1100's bf16 WMMA with fp32 results (the wmma prefill's bf16 chunk)
	PieceMFMAF16  = "f16 mfma"         // gfx942's f16 MFMA with fp32 results (the mfma tier's P·V)
	PieceMFMABF16 = "bf16 mfma"        // gfx942's bf16 MFMA with fp32 results (the mfma prefill's bf16 chunk)
)

func portable() Tier {
	return Tier{ID: TierPortable, Name: Portable, Ops: []Op{Decode, Prefill},
		DecodeProfile: "dot4-int8q", PrefillProfile: "prefill-fp32", Built: true}
}

// portableNeeds: where the contract puts the pieces. Decode dots the int8 query against codebook
// bytes (dot4 + byte permute); store looks up the codebook for its dot (byte permute); prefill
// decodes the packed prefix (byte permute). Reduce, rotate and query maps must only exist.
func portableNeeds() []KernelNeeds {
	needs := []KernelNeeds{
		{KernelStore, []string{PieceCodebook}},
		{KernelRotate, nil},
	}
	for _, k := range KernelDecodeVariants() {
		needs = append(needs, KernelNeeds{k, []string{PieceDot4, PieceCodebook}})
	}
	return append(needs,
		KernelNeeds{KernelReduce, nil},
		KernelNeeds{KernelPrefill, []string{PieceCodebook}},
		KernelNeeds{KernelQueryMaps, nil},
	)
}

// wmmaNeeds: the WMMA tier's kernels on gfx1100. Decode dots the fp16 query against codebook
// values (byte permute, then fp16) with the f16 WMMA, and P'·V likewise; prefill dots the int8
// query against the K codebook bytes with the iu8 WMMA and runs P'·V and the chunk on the f16 WMMA
// (its bf16 variants the chunk on the bf16 WMMA); the self-test kernel runs every form.
func wmmaNeeds() []KernelNeeds {
	var needs []KernelNeeds
	for _, k := range KernelDecodeWMMAVariants() {
		needs = append(needs, KernelNeeds{k, []string{PieceWMMAF16, PieceCodebook}})
	}
	for _, k := range KernelPrefillWMMAVariants() {
		needs = append(needs, KernelNeeds{k, []string{PieceMatrix, PieceWMMAF16, PieceCodebook}})
	}
	for _, k := range KernelPrefillWMMABF16Variants() {
		needs = append(needs, KernelNeeds{k, []string{PieceMatrix, PieceWMMAF16, PieceWMMABF16, PieceCodebook}})
	}
	return append(needs, KernelNeeds{KernelWMMASelftest, []string{PieceWMMAF16, PieceWMMABF16, PieceMatrix}})
}

// mfmaNeeds: the mfma tier's kernels on gfx942. Decode dots the int8 query against the K codebook
// bytes (byte permute) with the i8 MFMA and runs P'·V on the f16 MFMA; its reduce must only exist;
// prefill dots the int8 query against the K codebook bytes with the i8 MFMA and runs P'·V and the
// chunk on the f16 MFMA (its bf16 variants the chunk on the bf16 MFMA); the self-test kernel runs
// every form.
func mfmaNeeds() []KernelNeeds {
	var needs []KernelNeeds
	for _, k := range KernelDecodeMFMAVariants() {
		needs = append(needs, KernelNeeds{k, []string{PieceMatrix, PieceMFMAF16, PieceCodebook}})
	}
	needs = append(needs, KernelNeeds{KernelReduceMFMA, nil})
	for _, k := range KernelPrefillMFMAVariants() {
		needs = append(needs, KernelNeeds{k, []string{PieceMatrix, PieceMFMAF16, PieceCodebook}})
	}
	for _, k := range KernelPrefillMFMABF16Variants() {
		needs = append(needs, KernelNeeds{k, []string{PieceMatrix, PieceMFMAF16, PieceMFMABF16, PieceCodebook}})
	}
	return append(needs, KernelNeeds{KernelMFMASelftest, []string{PieceMatrix, PieceMFMAF16, PieceMFMABF16}})
}

var amdFlags = []string{"-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-nogpulib",
	"--rocm-path=/usr", "-O3", "-fhip-fp32-correctly-rounded-divide-sqrt"}

var registry = []Arch{
	{
		Name: "gfx1100", Vendor: AMD, Family: "RDNA3", WaveSize: 32, LogicalWave: 32,
		Pieces: []Piece{
			{PieceDot4, []string{"v_dot4_i32_iu8"}},
			{PieceCodebook, []string{"v_perm_b32"}},
			{PieceMatrix, []string{"v_wmma_i32_16x16x16_iu8"}},
			{PieceWMMAF16, []string{"v_wmma_f32_16x16x16_f16"}},
			{PieceWMMABF16, []string{"v_wmma_f32_16x16x16_bf16"}},
		},
		// The wmma tier: decode (csrc/decode_wmma.hip) and prefill (csrc/prefill_wmma.hip) built, on
		// the instructions. Its prefill profile is the pair int8rowq (prefix) +
		// prefill-chunk-f16 (chunk), written as the library declares it (31-character ABI field;
		// oracle.ParsePrefillProfile). The emulator and CUDA libraries run the same kernels on a
		// model of the instructions and list them as "wmma-model": evidence for this tier (ran on a
		// model), not a tier of emu or sm_90, which is why those architectures do not register it.
		Tiers: []Tier{portable(), {ID: TierWMMA, Name: WMMA, Ops: []Op{Decode, Prefill},
			DecodeProfile: "wmma-f16q", PrefillProfile: "int8rowq+chunk-f16", Built: true}},
		BuildFlags:  append([]string{"--offload-arch=gfx1100"}, amdFlags...),
		Disassemble: "llvm-objdump-19 -d --mcpu=gfx1100",
		Kernels:     append(portableNeeds(), wmmaNeeds()...),
		Requires:    nativeRequires(WMMA),
		Model:       &InstructionModel{Instructions: "WMMA", Header: "csrc/include/octave_wmma.h", Doc: "The WMMA tier and its model"},
	},
	{
		Name: "gfx942", Vendor: AMD, Family: "CDNA3 (MI300)", WaveSize: 64, LogicalWave: 32,
		Pieces: []Piece{
			{PieceDot4, []string{"v_dot4_i32_i8", "v_dot4c_i32_i8"}},
			{PieceCodebook, []string{"v_perm_b32"}},
			{PieceMatrix, []string{"v_mfma_i32_16x16x32_i8"}},
			{PieceMFMAF16, []string{"v_mfma_f32_16x16x16_f16"}},
			{PieceMFMABF16, []string{"v_mfma_f32_16x16x16_bf16"}},
		},
		// The mfma tier: decode (csrc/decode_mfma.hip, profile int8rowq, with its wave64 reduce
		// csrc/reduce_mfma.hip) and prefill (csrc/prefill_mfma.hip, the WMMA tier's profile pair),
		// on the v_mfma instructions. The emulator and CUDA libraries run the same kernels on a model
		// of the instructions and list them as "mfma-model": evidence for this tier (ran on a model).
		Tiers: []Tier{portable(), {ID: TierMFMA, Name: MFMA, Ops: []Op{Decode, Prefill}, DecodeProfile: "int8rowq",
			PrefillProfile: "int8rowq+chunk-f16", Built: true}},
		BuildFlags:  append([]string{"--offload-arch=gfx942"}, amdFlags...),
		Disassemble: "llvm-objdump-19 -d --mcpu=gfx942",
		Kernels:     append(portableNeeds(), mfmaNeeds()...),
		Requires:    nativeRequires(MFMA),
		Model:       &InstructionModel{Instructions: "MFMA", Header: "csrc/include/octave_mfma.h", Doc: "The MFMA instructions and their model"},
	},
	{
		Name: "sm_90", Vendor: NVIDIA, Family: "Hopper", WaveSize: 32, LogicalWave: 32,
		Pieces: []Piece{
			{PieceDot4, []string{"IDP.4A"}},
			{PieceCodebook, []string{"PRMT"}},
		},
		// The mma tier: decode (csrc/decode_mma*.hip, profile int8rowq on mma.sync's s8 form
		// for the scores; a build with OCT_DM_INT8K=0 computes wmma-f16q and says so) and prefill
		// (csrc/prefill_mma.hip, the WMMA tier's profile pair on mma.sync's s8 and f16 forms).
		Tiers: []Tier{portable(), {ID: TierMMA, Name: MMA, Ops: []Op{Decode, Prefill}, DecodeProfile: "int8rowq",
			PrefillProfile: "int8rowq+chunk-f16", Built: true, VariantProfiles: map[Op][]string{Decode: {"wmma-f16q"}}}},
		BuildFlags:  []string{"nvcc", "-x", "cu", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC"},
		Disassemble: "cuobjdump -sass",
		Kernels:     portableNeeds(),
		// The contract's native requirements with mma as the native tier (docs/contract.md §6):
		// decode on mma and portable, prefill on mma.
		Requires: nativeRequires(MMA),
	},
	{
		Name: "emu", Vendor: CPU, Family: "CPU emulator", WaveSize: 32, LogicalWave: 32,
		Tiers:      []Tier{portable()},
		BuildFlags: []string{"c++", "-x", "c++", "-std=c++17", "-O2", "-ffp-contract=off"},
		// The emulator certifies like sm_90 (the portable tiers), so the runner runs anywhere.
		Requires: portableRequires(),
	},
}

// nativeRequires is docs/contract.md §6 for an architecture with a native tier: decode on it and the
// portable dot4 reference, prefill on the native tier, store, reduce and rotate (one portable
// implementation each).
func nativeRequires(native TierName) []Requirement {
	return []Requirement{{Decode, []TierName{native, Portable}}, {Prefill, []TierName{native}},
		{Store, nil}, {Reduce, nil}, {Rotate, nil}}
}

// portableRequires is Octant's requirement for the CPU emulator, so that the runner can be
// exercised anywhere: decode and prefill on the portable tier.
func portableRequires() []Requirement {
	return []Requirement{{Decode, []TierName{Portable}}, {Prefill, []TierName{Portable}},
		{Store, nil}, {Reduce, nil}, {Rotate, nil}}
}

// All returns the registered architectures (a copy).
func All() []Arch { return append([]Arch(nil), registry...) }

// Lookup returns the architecture with the given name as a device reports it. AMD names may carry
// target features ("gfx942:sramecc+:xnack-"); they are ignored.
func Lookup(name string) (Arch, error) {
	base := name
	for i := 0; i < len(name); i++ {
		if name[i] == ':' {
			base = name[:i]
			break
		}
	}
	for _, a := range registry {
		if a.Name == base {
			return a, nil
		}
	}
	return Arch{}, fmt.Errorf("arch: %q is not a supported architecture: expected one of %v", name, names())
}

func names() []string {
	n := make([]string, len(registry))
	for i, a := range registry {
		n[i] = a.Name
	}
	return n
}

// Piece returns the named piece of the architecture.
func (a Arch) Piece(name string) (Piece, bool) {
	for _, p := range a.Pieces {
		if p.Name == name {
			return p, true
		}
	}
	return Piece{}, false
}

// BuiltTiers returns the tiers compiled into this repository's library for the architecture (for
// at least one op: see Tier.BuiltFor).
func (a Arch) BuiltTiers() []Tier {
	var t []Tier
	for _, x := range a.Tiers {
		if x.Built {
			t = append(t, x)
		}
	}
	return t
}
