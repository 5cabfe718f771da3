/* The C ABI of the Octave KV kernels (liboctave_hip.so, liboctave_cuda.so, liboctave_emu.so).
 *
 * One ABI for every build. Go loads it with purego (no cgo), so everything is a plain C function
 * taking pointers and scalars. This header is the contract a client codes against: everything a
 * client needs to call the library correctly is here. The operations' mathematics are in
 * docs/contract.md (operations) and docs/format.md (bytes); docs/kernels.md records how this
 * library implements them ("Octant decision"), tables the struct offsets and the error statuses,
 * and repeats the rules below with examples.
 *
 * ==== Versioning ====================================================================================
 * octave_abi_version() returns OCTAVE_ABI_VERSION of the library; a client checks it against the
 * value of the header it was compiled with before calling anything else (the Go binding requires
 * equality). Struct layouts are fixed within a version.
 *  - 1: the first ABI.
 *  - 2: adds octave_decode_workspace_size; octave_last_error is written only by failing calls
 *       (errno-like); every pointer is checked for the alignment its kernel needs
 *       (OCTAVE_ERR_ALIGNMENT); octave_free refuses a pointer that is not an outstanding allocation
 *       of its context; octave_close frees the allocations still outstanding; device_get_info
 *       refuses a struct_size over the OCTAVE_STRUCT_SIZE_SLACK limit and zeroes the bytes past
 *       its own struct.
 *  - 3: adds octave_timer_start and octave_timer_stop (the device time between two points of the
 *       context's queue, as CUDA/HIP events measure it).
 *
 * ==== Status and messages ===========================================================================
 * Every function but the four informational ones (octave_abi_version, octave_last_error,
 * octave_status_name, octave_build_info) and octave_decode_workspace_bytes returns an int32_t status:
 * OCTAVE_OK (0) or one of enum octave_status. Nothing in this library aborts the process.
 *  - A failing call (status != OCTAVE_OK) writes a message for the calling thread that names the
 *    op, the field, what was expected and what was found, e.g.
 *    "decode: num_splits = 1025, expected 1..1024". octave_last_error() returns it.
 *  - errno-like: successful calls leave the message as it was, and nothing resets it. Read it right
 *    after a call returned a status other than OCTAVE_OK, on the same thread; after a successful
 *    call it still holds the message of the last failing call on that thread ("" if none failed).
 *  - A failing op has done nothing: every argument is checked before anything is launched or
 *    written. (The exceptions are runtime failures, OCTAVE_ERR_RUNTIME and OCTAVE_ERR_LAUNCH, and
 *    octave_close, which releases its context whatever its status.)
 *
 * ==== Structs and struct_size =======================================================================
 *  - Op arguments are a struct whose first field is struct_size = sizeof(the struct) as the caller
 *    compiled it. Smaller than this library's struct: refused (INVALID_ARGUMENT). Larger: accepted
 *    when the extra bytes are all zero (a newer caller that does not use newer fields), refused
 *    otherwise, and refused as implausible when it exceeds this library's size by more than
 *    OCTAVE_STRUCT_SIZE_SLACK bytes. The library copies the struct at the call; it keeps no pointer
 *    to it.
 *  - Output structs (octave_device_info) also lead with struct_size, and the CALLER sets it before
 *    the call (0 is refused): at least this library's size and at most OCTAVE_STRUCT_SIZE_SLACK
 *    bytes more. The library writes its own struct, zeroes the bytes from its size up to
 *    struct_size, and sets struct_size to its own size (so a newer caller sees which fields were
 *    filled). octave_tier_desc has no struct_size: it is written as an array of `cap` elements.
 *  - Layouts are fixed: every field is naturally aligned, 8-byte fields first, no implicit padding
 *    (static_asserts in capi_layout.cpp pin every offset; docs/kernels.md lists them). Fields named
 *    reserved0 must be 0.
 *
 * ==== Pointers ======================================================================================
 *  - "device" pointers address memory of the device's runtime: from octave_alloc, or any device
 *    allocation of the same runtime on the same device (a framework's tensor). "host" pointers
 *    address the caller's memory. A device pointer may be used with any context of its device.
 *  - NULL: a pointer may be NULL exactly where the call's comment says so, which is where the count
 *    that sizes its buffer is 0 (then the pointer is not read at all). The cache pointer is always
 *    required. A NULL that is needed: INVALID_ARGUMENT naming the field.
 *  - Sizes are not checkable: the library cannot see how large a caller's buffer is. The caller
 *    guarantees that every element the counts and strides address lies inside its buffer (e.g.
 *    out: rows 0..num_q-1 x heads 0..Hq-1 x 256 elements at the given strides). The one exception
 *    is the decode/reduce workspace, whose capacity is passed (partials_bytes) and checked.
 *  - Alignment, checked for every non-NULL pointer of an op's args (even when a count is 0) before
 *    anything is launched; a misaligned pointer is refused with OCTAVE_ERR_ALIGNMENT and a message
 *    naming the field, how many bytes it is misaligned by and the alignment needed:
 *
 *      pointer                                              alignment  why
 *      activations: store key, value; rotate x; decode      2 bytes    fp16/bf16 elements (16-bit
 *        query, out; reduce out; prefill q, k, v, out                  accesses; a 16-byte vector
 *                                                                      access only where the
 *                                                                      address allows it)
 *      int32 arrays: block_table, q_to_req, q_to_klen,      4 bytes    int32 loads and stores
 *        cu_seqlens_q, seq_lens, query_start_loc
 *      slot_mapping (device), slot_mapping_host (host)      8 bytes    int64 loads
 *      cache, formats 3 and 4 (k3v3, k3v4)                  8 bytes    slots copied in 8-byte units
 *      cache, format 19 (k3v3_compact)                      4 bytes    slots copied in 4-byte units
 *      partials (decode, reduce)                            16 bytes   16-byte vector loads/stores
 *
 *    Strides keep every later row aligned when the base is: activation strides are in elements,
 *    block_table rows are max_blocks int32s apart, cache strides must be multiples of 8 bytes (4
 *    for compact; else OCTAVE_ERR_STRIDE) and partial_stride a multiple of 4 floats (16 bytes; else
 *    OCTAVE_ERR_WORKSPACE). octave_copy_* and octave_memset are byte-granular: no alignment.
 *    Host output pointers (octave_open's out, octave_alloc's out, info, octave_tiers' out and
 *    count) must be aligned for their C type; they are not checked.
 *
 * ==== Strides and units =============================================================================
 *  - Activation strides (key_/value_/query_/out_/q_/k_/v_stride_token and _head, rotate's
 *    stride_token and stride_head) are in ELEMENTS of the dtype (2 bytes), >= 0 (negative:
 *    OCTAVE_ERR_STRIDE); the innermost stride (between the 256 elements of a row) is 1. Any
 *    non-negative value is accepted, including views into a fused QKV tensor and rows with gaps.
 *  - Cache strides (cache_stride_block, _head, _token) are in BYTES: non-negative multiples of 8
 *    (4 for format 19); the innermost stride (between the bytes of a slot) is 1. LBHNC and LBNHC
 *    layouts are both expressible (docs/contract.md §1).
 *  - partial_stride is in FLOATS (4 bytes): the distance between consecutive partial rows.
 *  - block_table is row-major and contiguous: row r (a request or sequence) starts at element
 *    r * max_blocks.
 *
 * ==== Execution, asynchronous errors ================================================================
 *  - Ops (octave_cache_store, _rotate, _decode, _reduce, _prefill, _query_maps) are enqueued on the
 *    device's default (legacy) stream, in call order, and return before the device has finished: the
 *    buffers they use must stay allocated and unmodified by the host until the op has completed
 *    (octave_sync, or any later synchronous call below, waits for it). Their status covers argument
 *    checks and the launch (OCTAVE_ERR_LAUNCH); an error while the kernel runs surfaces later, as
 *    OCTAVE_ERR_RUNTIME from octave_sync or from the next call that waits for the device.
 *    Exception: octave_cache_store with slot_mapping_host == NULL first copies slot_mapping to the
 *    host, which waits for every op enqueued before it.
 *  - octave_sync waits for everything enqueued on the device and reports asynchronous errors.
 *  - octave_copy_h2d returns once src may be reused; octave_copy_d2h returns once dst holds the
 *    data (after every op enqueued before it); octave_copy_d2d is ordered after earlier ops and
 *    before later ones but may return before it has finished; octave_memset returns when done.
 *  - A kernel fault on a GPU (an illegal address, e.g. from buffers smaller than the counts and
 *    strides say) is sticky in the GPU runtime: every later call in the process then fails with
 *    OCTAVE_ERR_RUNTIME, and only a new process recovers. The argument checks exist so that a
 *    well-formed call can never cause one.
 *
 * ==== Threads =======================================================================================
 *  - Every function may be called from any thread. Calls on one context from several threads may
 *    overlap (allocation bookkeeping is locked); their ops go to the same stream in the order the
 *    calls enqueue them. octave_close must be the last call on its context: no other call on it may
 *    be in progress or follow.
 *  - octave_last_error is per thread.
 *
 * ==== Ownership =====================================================================================
 *  - octave_open returns a context the caller owns; octave_close releases it. Several contexts may
 *    be open on one device; they share the device and its default stream.
 *  - octave_alloc's memory belongs to the context that allocated it: octave_free with that context
 *    frees it (any other pointer, a second free, or a pointer into the middle of an allocation is
 *    refused with INVALID_ARGUMENT), and octave_close frees whatever is still outstanding.
 *  - The library keeps no pointer a caller passes beyond the call (the device buffers of an op until
 *    the op completes, see above).
 *  - Strings returned by octave_status_name and octave_build_info are static. octave_last_error's
 *    string belongs to the calling thread: it is overwritten by the thread's next failing call and
 *    freed when the thread exits; copy it to keep it.
 */
#ifndef OCTAVE_CAPI_H
#define OCTAVE_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OCTAVE_ABI_VERSION 3

/* A struct_size may exceed this library's struct by at most this many bytes (see above). */
#define OCTAVE_STRUCT_SIZE_SLACK 4096

/* ---- status codes ------------------------------------------------------------------------------ */
enum octave_status {
  OCTAVE_OK = 0,
  OCTAVE_ERR_INVALID_ARGUMENT = 1, /* needed pointer NULL, count out of range, reserved field != 0, bad
                                      struct_size, grid too large, free of a pointer not allocated */
  OCTAVE_ERR_FORMAT = 2,           /* format id not 3, 4 or 19 */
  OCTAVE_ERR_GQA = 3,              /* G = Hq/Hkv not an integer in {1,2,4,6,8} (decode), or Hq % Hkv (prefill) */
  OCTAVE_ERR_HEAD_SIZE = 4,        /* head_size != 256 */
  OCTAVE_ERR_STRIDE = 5,           /* cache stride not a multiple of 8 (4 for compact), or any stride negative */
  OCTAVE_ERR_ALIGNMENT = 6,        /* a pointer not aligned as the kernels need (table above) */
  OCTAVE_ERR_NUM_SPLITS = 7,       /* num_splits outside 1..1024 (decode, reduce), 0..64 (prefill) */
  OCTAVE_ERR_WORKSPACE = 8,        /* partials too small, partial_stride bad, or the size overflows 64 bits */
  OCTAVE_ERR_SLOT_RANGE = 9,       /* slot index >= num_blocks*block_size */
  OCTAVE_ERR_SLOT_DUPLICATE = 10,  /* the same slot twice in one store */
  OCTAVE_ERR_UNSUPPORTED_TIER = 11,/* tier not available on this architecture / not compiled in */
  OCTAVE_ERR_DTYPE = 12,           /* dtype not OCTAVE_DTYPE_F16 or OCTAVE_DTYPE_BF16 */
  OCTAVE_ERR_SCALE = 13,           /* sm_scale not finite and > 0 */
  OCTAVE_ERR_QUERY_GROUP = 14,     /* query_group outside 1..4 */
  OCTAVE_ERR_NO_DEVICE = 15,       /* no device of this runtime, or device index out of range */
  OCTAVE_ERR_UNSUPPORTED_ARCH = 16,/* the device's architecture has no kernels in this library */
  OCTAVE_ERR_RUNTIME = 17,         /* a HIP/CUDA runtime call failed, or an asynchronous error (message names it) */
  OCTAVE_ERR_LAUNCH = 18           /* a kernel launch failed */
};

/* Activation dtypes. */
enum octave_dtype { OCTAVE_DTYPE_F16 = 1, OCTAVE_DTYPE_BF16 = 2 };

/* Tiers. A tier is a family of kernels with one numeric profile per op (docs/kernels.md). Which
 * tiers a device has: octave_tiers. */
enum octave_tier {
  OCTAVE_TIER_PORTABLE = 0, /* decode: dot4-int8q; prefill: prefill-fp32. Every architecture. */
  OCTAVE_TIER_WMMA = 1,     /* decode: wmma-f16q; prefill: int8rowq (prefix) + prefill-chunk-f16
                               (chunk). gfx1100 (the v_wmma instructions, tier name "wmma"); the
                               CPU emulator and CUDA builds run the same kernels on a model of the
                               instructions (tier name "wmma-model"); gfx942: none */
  OCTAVE_TIER_MFMA = 2,     /* decode: int8rowq (its own wave64 reduce inside octave_decode);
                               prefill: int8rowq+chunk-f16. gfx942 (the v_mfma instructions, tier
                               name "mfma"); the CPU emulator and CUDA builds run the same kernels
                               on a model of the instructions (tier name "mfma-model"); gfx1100:
                               none */
  OCTAVE_TIER_MMA = 3       /* sm_90 native: decode (int8rowq) and prefill
                               (int8rowq+chunk-f16) on NVIDIA's mma.sync and wgmma (CUDA
                               builds; the emulator runs them on a model, as "mma-model") */
};

/* Op bits of octave_tier_desc.ops. */
enum octave_op_bits { OCTAVE_OP_DECODE = 1, OCTAVE_OP_PREFILL = 2 };

typedef struct octave_ctx octave_ctx;

/* ---- library, context, device ----------------------------------------------------------------- */
int32_t octave_abi_version(void); /* OCTAVE_ABI_VERSION of the library */
/* The message of the last call on this thread that returned a status other than OCTAVE_OK ("" if
 * none has). Successful calls leave it; nothing resets it (errno-like; see "Status and messages"). */
const char* octave_last_error(void);
const char* octave_status_name(int32_t status); /* "OCTAVE_ERR_FORMAT", ...; "OCTAVE_ERR_UNKNOWN" otherwise */
const char* octave_build_info(void); /* runtime, compiled targets, tiers, ABI version, compiler */

/* Opens device `device` (0-based) and writes a new context to *out (NULL on failure). Fails with
 * NO_DEVICE when there is none (the library loads and answers on machines without a GPU) and with
 * UNSUPPORTED_ARCH when the device's architecture has no kernels in this build. */
int32_t octave_open(int32_t device, octave_ctx** out);

/* Waits for the device (octave_sync), frees every allocation of the context still outstanding
 * (octave_alloc without octave_free: pointers into them dangle afterwards) and releases the
 * context. NULL is fine (OCTAVE_OK). The context is released whatever the status: a failure
 * (RUNTIME: the wait reported an asynchronous error, or a free failed) is reported, and the
 * allocations are freed, all the same. Must be the last call on the context. */
int32_t octave_close(octave_ctx* ctx);

typedef struct octave_device_info {
  uint64_t struct_size;   /* set by the caller: sizeof(octave_device_info) (see "Structs") */
  uint64_t total_memory;  /* bytes (0 on the CPU emulator) */
  int32_t device;         /* index given to octave_open */
  int32_t wave_size;      /* hardware wave/warp size: 32 (gfx1100, sm_90) or 64 (gfx942) */
  int32_t compute_units;  /* CUs (AMD) or SMs (NVIDIA) */
  int32_t logical_wave;   /* 32: the kernels' logical wave */
  char name[256];         /* marketing name, NUL-terminated */
  char arch[64];          /* "gfx1100", "gfx942", "sm_90", "emu" */
  char runtime[16];       /* "HIP", "CUDA", "EMU" */
} octave_device_info; /* 368 bytes */

int32_t octave_device_get_info(octave_ctx* ctx, octave_device_info* info); /* info: host */

typedef struct octave_tier_desc {
  int32_t tier;            /* enum octave_tier */
  int32_t ops;             /* OCTAVE_OP_* bits the tier implements */
  char name[32];           /* "portable", "wmma" (gfx1100), "wmma-model" (emulator, CUDA: the model),
                              "mma" (CUDA), "mma-model" (emulator) */
  char decode_profile[32]; /* "dot4-int8q", "wmma-f16q" */
  char prefill_profile[32];/* "prefill-fp32"; "PREFIX+CHUNK" for two docs/contract.md §5 profiles,
                              "prefill-" left out of a part where the pair would not fit
                              ("int8rowq+chunk-f16"); "" for a tier without prefill */
} octave_tier_desc; /* 104 bytes */

/* Writes up to `cap` tiers available on the context's device into `out` (host) and their number
 * into *count (host; always the full number, which may exceed cap). out may be NULL when cap is 0,
 * to ask only for the count. The portable tier comes first; then the WMMA tier (decode and
 * prefill) on gfx1100, and on the emulator and CUDA builds as "wmma-model": there it runs on a model of the
 * gfx1100 instructions, which is evidence for gfx1100's tier, not a tier of the device's own
 * architecture (docs/kernels.md, "The WMMA tier and its model"); then the MFMA tier (decode and
 * prefill) on gfx942, and on the emulator and CUDA builds as "mfma-model" (a model of the gfx942
 * instructions on waves of 64 lanes: docs/kernels.md, "The mfma tier"); then, on CUDA builds, the
 * mma tier (decode and prefill; "mma-model" on the emulator, which runs it on a model of
 * mma.sync). */
int32_t octave_tiers(octave_ctx* ctx, octave_tier_desc* out, int32_t cap, int32_t* count);

/* ---- memory ------------------------------------------------------------------------------------ */
/* Allocates `bytes` of device memory, 256-byte aligned, owned by ctx (see "Ownership"); 0 bytes
 * gives *out = NULL and OCTAVE_OK. Contents are undefined. */
int32_t octave_alloc(octave_ctx* ctx, uint64_t bytes, void** out);
/* Frees an allocation octave_alloc returned on the same ctx and not yet freed; NULL is fine. Any
 * other pointer is refused (INVALID_ARGUMENT) and nothing is freed. */
int32_t octave_free(octave_ctx* ctx, void* ptr);
/* Copies and memset: `bytes` may be 0 (then the pointers may be NULL); no alignment needed.
 * Synchronisation: see "Execution". byte_value: its low 8 bits are written. */
int32_t octave_copy_h2d(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes); /* dst device, src host */
int32_t octave_copy_d2h(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes); /* dst host, src device */
int32_t octave_copy_d2d(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes); /* both device */
int32_t octave_memset(octave_ctx* ctx, void* dst, int32_t byte_value, uint64_t bytes); /* dst device */
int32_t octave_sync(octave_ctx* ctx); /* waits for the device; reports asynchronous errors */

/* ---- device timing (ABI 3) ------------------------------------------------------------------------
 * The device time between two marks in the queue of ops, as CUDA/HIP events measure it (what
 * torch.cuda.Event measures for a framework's kernels). octave_timer_start enqueues the start mark
 * and returns at once. octave_timer_stop enqueues the stop mark, waits for it, and writes the
 * milliseconds between the two marks in *ms (host, not NULL). A stop with no start since the last
 * stop: INVALID_ARGUMENT, and *ms is not written. One timer per context: a second start before a stop
 * moves the start mark.
 * The time counts everything the device ran or sat idle for between the marks, so a device that
 * waits for the host to enqueue the next op counts that wait too. To time the ops alone, keep the
 * device busy while they are enqueued (e.g., an octave_copy_d2d before the start mark), as a
 * framework's benchmark does with its cache flush.
 * The CPU emulator runs every op at its call, so its marks are the host clock read at each call. */
int32_t octave_timer_start(octave_ctx* ctx);
int32_t octave_timer_stop(octave_ctx* ctx, float* ms);

/* ---- cache_store (docs/contract.md §3.1) -----------------------------------------------------------------
 * For each token t < num_tokens with slot_mapping[t] >= 0 and each KV head h: rotate (K: 64-dim
 * blocks for formats 3 and 4, 256 dims for 19; V: 256 dims), quantize and pack key[t][h] and
 * value[t][h] (unrotated) into slot s = slot_mapping[t]: block s / block_size, offset
 * s % block_size. Writes only code and scale bytes; pad bytes and every other byte are untouched.
 * A negative slot (-1: padding) skips the token. slot_mapping is checked on the host before
 * anything is written: an index >= num_blocks*block_size is SLOT_RANGE, the same slot twice is
 * SLOT_DUPLICATE. Pass slot_mapping_host (a host copy of the same num_tokens values) or leave it
 * NULL and the library copies slot_mapping back from the device (a synchronous copy). The kernel
 * reads the device array and independently skips any index outside [0, num_blocks*block_size).
 * num_tokens == 0: key, value, slot_mapping and slot_mapping_host may be NULL (cache may not). */
typedef struct octave_store_args {
  uint64_t struct_size;
  const void* key;                  /* device, [T][Hkv][256] dtype, 2-byte aligned */
  const void* value;                /* device, [T][Hkv][256] dtype, 2-byte aligned */
  uint8_t* cache;                   /* device, [num_blocks][Hkv][block_size][slot] via strides; 8-byte
                                       aligned (4 for format 19); never NULL */
  const int64_t* slot_mapping;      /* device, [num_tokens], 8-byte aligned */
  const int64_t* slot_mapping_host; /* host copy of slot_mapping, or NULL; 8-byte aligned */
  int64_t key_stride_token, key_stride_head;     /* elements, >= 0 */
  int64_t value_stride_token, value_stride_head; /* elements, >= 0 */
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes, multiples of 8 (4) */
  int32_t fmt;          /* 3 (octave_k3v3), 4 (octave_k3v4), 19 (octave_k3v3_compact) */
  int32_t dtype;        /* OCTAVE_DTYPE_* of key and value */
  int32_t head_size;    /* 256 */
  int32_t num_tokens;   /* n >= 0: entries of slot_mapping, tokens stored (rows of key/value read) */
  int32_t num_kv_heads; /* Hkv >= 1 */
  int32_t num_blocks;   /* >= 1: physical blocks in the cache */
  int32_t block_size;   /* >= 1: tokens per block (any size on the portable tier) */
  int32_t reserved0;    /* 0 */
  uint32_t k_signs[8];  /* bit i of word i/32 set: dim i negated (docs/format.md §2) */
  uint32_t v_signs[8];
} octave_store_args; /* 200 bytes */

int32_t octave_cache_store(octave_ctx* ctx, const octave_store_args* a);

/* ---- rotate (docs/contract.md §3.2): in place ----------------------------------------------------------
 * Forward: signs, then the normalized FWHT over 64-dim blocks (k_layout != 0) or all 256 dims
 * (k_layout == 0). Inverse: the transform, then the signs. Rounded back to dtype (nearest even),
 * bit-exact to docs/format.md §3. num_tokens == 0: x may be NULL.
 *
 * Which k_layout and signs (docs/format.md §3; prefill takes q, k, v rotated and returns out
 * rotated, so a prefill caller rotates them with this op; decode and store rotate internally):
 *
 *   tensor                          fmt 3 (k3v3), 4 (k3v4)   fmt 19 (k3v3_compact)   signs    inverse
 *   query (prefill q)               k_layout 1 (64-dim)      k_layout 0 (256-dim)    k_signs  0
 *   key (prefill k)                 k_layout 1 (64-dim)      k_layout 0 (256-dim)    k_signs  0
 *   value (prefill v)               k_layout 0 (256-dim)     k_layout 0 (256-dim)    v_signs  0
 *   prefill out -> attention out    k_layout 0 (256-dim)     k_layout 0 (256-dim)    v_signs  1
 */
typedef struct octave_rotate_args {
  uint64_t struct_size;
  void* x;                          /* device, [num_tokens][num_heads][256] dtype, 2-byte aligned */
  int64_t stride_token, stride_head;/* elements, >= 0 */
  int32_t dtype, head_size;         /* OCTAVE_DTYPE_*; 256 */
  int32_t num_tokens;               /* >= 0 */
  int32_t num_heads;                /* >= 1 */
  int32_t k_layout;                 /* nonzero: 64-dim blocks (K and query of formats 3, 4); 0: 256 dims */
  int32_t inverse;                  /* nonzero: inverse rotation */
  uint32_t signs[8];
} octave_rotate_args; /* 88 bytes */

int32_t octave_rotate(octave_ctx* ctx, const octave_rotate_args* a);

/* ---- decode (docs/contract.md §3.3), split-KV, followed by the reduce ----------------------------------
 * tier 0 (portable): profile dot4-int8q; tier 1 (wmma, where octave_tiers lists it): profile
 * wmma-f16q; tier 2 (mfma) and tier 3 (mma): profile int8rowq. All take the query unrotated and
 * write out unrotated (they rotate internally). Query row i attends to tokens 0..klen-1 of request r = q_to_req[i], with
 * klen = q_to_klen[i] clamped to [0, max_blocks*block_size]; token t is in physical block
 * block_table[r][t / block_size] at offset t % block_size. A block id outside [0, num_blocks)
 * (num_blocks: the physical blocks in the cache) inside klen is skipped: its tokens contribute
 * nothing and the cache is never read there. A row with r outside [0, num_reqs) or klen <= 0
 * (padding) reads nothing and gets out = +0. Every out row 0..num_q-1 is written.
 * Splits (kv_max = max_blocks*block_size): portable, split_len = ceil(kv_max / num_splits) tokens
 * each; wmma, mfma and mma, upstream's WMMA geometry: min(num_splits, 192) splits of max(ceil(kv_max / ns), 64)
 * tokens rounded up to a multiple of 16, the partials of splits past them written empty (m = -inf).
 * The result does not depend on the geometry beyond rounding. query_group 1..4
 * consecutive query rows of one request share every K/V read (rows of different requests in a
 * group are processed one request at a time). partials is the workspace
 * [num_q][Hq][num_splits][partial_stride] fp32, left holding the split partials (§3.4); floats
 * 258..partial_stride-1 of a row are never written. Its size: octave_decode_workspace_size.
 * num_q == 0: out, query, q_to_req, q_to_klen, partials and block_table may be NULL; block_table
 * may also be NULL when num_reqs or max_blocks is 0. */
typedef struct octave_decode_args {
  uint64_t struct_size;
  void* out;                 /* device, [num_q][Hq][256] dtype, 2-byte aligned */
  const void* query;         /* device, [num_q][Hq][256] dtype (unrotated), 2-byte aligned */
  const uint8_t* cache;      /* device, 8-byte aligned (4 for format 19); never NULL */
  const int32_t* block_table;/* device, [num_reqs][max_blocks] row-major contiguous, 4-byte aligned */
  const int32_t* q_to_req;   /* device, [num_q], 4-byte aligned (docs/contract.md §4) */
  const int32_t* q_to_klen;  /* device, [num_q], 4-byte aligned */
  float* partials;           /* device workspace, 16-byte aligned */
  uint64_t partials_bytes;   /* capacity of partials in bytes: >= octave_decode_workspace_size */
  int64_t out_stride_token, out_stride_head;       /* elements, >= 0 */
  int64_t query_stride_token, query_stride_head;   /* elements, >= 0 */
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes, multiples of 8 (4) */
  int32_t fmt, dtype, head_size, tier; /* 3, 4, 19; OCTAVE_DTYPE_* of query and out; 256; octave_tier */
  int32_t num_q;             /* >= 0: query rows */
  int32_t num_q_heads;       /* Hq = G * Hkv, G in {1, 2, 4, 6, 8} */
  int32_t num_kv_heads;      /* Hkv, 1..65535 */
  int32_t num_reqs;          /* >= 0: rows of block_table */
  int32_t num_blocks;        /* >= 1: physical blocks in the cache (valid block ids 0..num_blocks-1) */
  int32_t block_size;        /* >= 1: tokens per block */
  int32_t max_blocks;        /* >= 0: columns of block_table; klen is clamped to max_blocks*block_size */
  int32_t num_splits;        /* 1..1024 */
  int32_t query_group;       /* 1..4 */
  int32_t partial_stride;    /* floats per partial row: multiple of 4, >= 258; 0 -> 260 */
  float sm_scale;            /* finite, > 0 (vLLM: 1/16) */
  int32_t reserved0;         /* 0 */
  uint32_t k_signs[8];
  uint32_t v_signs[8];
} octave_decode_args; /* 256 bytes */

int32_t octave_decode(octave_ctx* ctx, const octave_decode_args* a);

/* Bytes of partials a decode (or reduce) with these sizes needs, num_q x Hq x num_splits x
 * partial_stride (0 -> 260) x 4, in *bytes (host, not NULL). The same checks as octave_decode:
 * num_q < 0 or num_q_heads < 1 INVALID_ARGUMENT, num_splits NUM_SPLITS, partial_stride or a size
 * that overflows 64 bits WORKSPACE (then *bytes = 0). *bytes = 0 with OCTAVE_OK: an empty decode
 * (num_q == 0), which needs no workspace (partials may be NULL). Added in ABI 2. */
int32_t octave_decode_workspace_size(int32_t num_q, int32_t num_q_heads, int32_t num_splits,
                                     int32_t partial_stride, uint64_t* bytes);

/* The same size without a status (ABI 1): 0 both for bad input and for an empty decode; it writes
 * no message. Use octave_decode_workspace_size to tell the two apart. */
uint64_t octave_decode_workspace_bytes(int32_t num_q, int32_t num_q_heads, int32_t num_splits,
                                       int32_t partial_stride);

/* ---- reduce (docs/contract.md §3.4), callable on hand-made partials ---------------------------------------
 * partials [num_q][Hq][num_splits][partial_stride] fp32: [0..255] o, [256] m (log2 units, -inf
 * empty), [257] l. Splits with m = -inf are skipped and their o is never read. Writes out
 * unrotated (applies the inverse V rotation). num_q == 0: out and partials may be NULL. */
typedef struct octave_reduce_args {
  uint64_t struct_size;
  void* out;                 /* device, [num_q][Hq][256] dtype, 2-byte aligned */
  const float* partials;     /* device, 16-byte aligned */
  uint64_t partials_bytes;   /* capacity of partials in bytes */
  int64_t out_stride_token, out_stride_head; /* elements, >= 0 */
  int32_t dtype, head_size;  /* OCTAVE_DTYPE_* of out; 256 */
  int32_t num_q;             /* >= 0 */
  int32_t num_q_heads;       /* >= 1 */
  int32_t num_splits;        /* 1..1024 */
  int32_t partial_stride;    /* floats: multiple of 4, >= 258; 0 -> 260 */
  uint32_t v_signs[8];
} octave_reduce_args; /* 104 bytes */

int32_t octave_reduce(octave_ctx* ctx, const octave_reduce_args* a);

/* ---- prefill (docs/contract.md §3.5): portable tier, profile prefill-fp32; WMMA tier ------------------
 * Tiers: portable (0) everywhere; WMMA (1) where octave_tiers lists it for prefill (gfx1100, and
 * the model on the emulator and CUDA builds). Sequence s owns query rows cu_seqlens_q[s]..cu_seqlens_q[s+1]-1 (qlen rows; cu_seqlens_q
 * non-decreasing, cu_seqlens_q[num_seqs] <= num_tokens) and a cached prefix of
 * ctx = clamp(seq_lens[s] - qlen, 0, max_blocks*block_size) tokens: prefix token t is in physical
 * block block_table[s][t / block_size]; a block id outside [0, num_blocks) (num_blocks: the
 * physical blocks in the cache) is skipped like in decode. Row j of the sequence attends to the
 * whole prefix (from the packed cache) and to the chunk's rows cu_seqlens_q[s]..j of k and v
 * (exact, causal). q, k, v are taken ROTATED and out is written ROTATED: rotate them with
 * octave_rotate (table there). Rows of out that belong to no sequence are not written.
 * dtype: fp16, and bf16 as an Octant extension of the portable, WMMA, mfma and mma tiers
 * (docs/contract.md §3.5 asks for fp16 only; a tier without bf16 refuses it with OCTAVE_ERR_DTYPE).
 * Portable tier, numeric profile prefill-fp32: q, k, v are converted exactly to float32; the cached prefix is
 * dequantized exactly (codebook x fp16 scale / 64, exact in float32) in the rotated space; scores
 * are float32 dot products (sequential fused multiply-add over the 256 dims) times
 * sm_scale*log2(e); one online softmax in base 2 over prefix and chunk in float32 (exp2 with a few
 * ulp error); P.V in float32 with fused multiply-add; out = O / L rounded to dtype (nearest even).
 * WMMA tier, numeric profiles int8rowq for the prefix and prefill-chunk-f16 for the chunk
 * (docs/contract.md §5): the query row quantized to int8 with one scale per row (qmax =
 * max(1e-8, max|x|), q = rint(x*127/qmax)), an int8 dot per 64-dim K block x the K block scale,
 * P' = fp16(p * V scale * 64) against the V codebook values; the chunk's q.k from fp16 products
 * (bf16: bf16 products) in float32, P = fp16(p) against the exact v; one online softmax in base 2
 * over both; out = O / L rounded to dtype. Any block_size works; docs/format.md §7 promises
 * multiples of 16 for native tiers (docs/kernels.md, "The WMMA tier and its model").
 * num_tokens == 0 or num_seqs == 0: every pointer but cache may be NULL; block_table may also be
 * NULL when max_blocks is 0.
 * Prefix splits (mma tier, fp16): when its grid would leave SMs idle (a few long sequences on few
 * KV heads), the mma tier splits each sequence's prefix into num_splits parts walked by separate
 * workgroups (the chunk goes with the first part), each writing an unnormalized partial (o, running
 * max, sum) to a workspace the context owns, then a merge kernel combines them (docs/kernels.md,
 * "The mma tier: prefill"). The workspace (num_splits x num_tokens x num_q_heads x 1040 bytes) is
 * allocated on first need and kept until octave_close; when the tier chooses (num_splits 0) and the
 * allocation fails, it does not split; an explicit num_splits > 1 whose workspace cannot be
 * allocated is OCTAVE_ERR_RUNTIME. The mma tier's fp16 prefill calls on one context hold its
 * workspace lock while they are checked and enqueued (so that two calls' partials never meet). */
typedef struct octave_prefill_args {
  uint64_t struct_size;
  void* out;                 /* device, [T][Hq][256] dtype, rotated; 2-byte aligned */
  const void* q;             /* device, [T][Hq][256] dtype, K-rotated; 2-byte aligned */
  const void* k;             /* device, [T][Hkv][256] dtype, K-rotated; 2-byte aligned */
  const void* v;             /* device, [T][Hkv][256] dtype, V-rotated; 2-byte aligned */
  const uint8_t* cache;      /* device, 8-byte aligned (4 for format 19); never NULL */
  const int32_t* block_table;/* device, [num_seqs][max_blocks] row-major contiguous, 4-byte aligned */
  const int32_t* cu_seqlens_q;/* device, [num_seqs+1], 4-byte aligned */
  const int32_t* seq_lens;   /* device, [num_seqs]: context + new tokens, 4-byte aligned */
  int64_t out_stride_token, out_stride_head; /* elements, >= 0 (every stride of this block) */
  int64_t q_stride_token, q_stride_head;
  int64_t k_stride_token, k_stride_head;
  int64_t v_stride_token, v_stride_head;
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes, multiples of 8 (4) */
  int32_t fmt, dtype, head_size, tier; /* 3, 4, 19; OCTAVE_DTYPE_* of q, k, v, out; 256; octave_tier */
  int32_t num_tokens;        /* T >= 0: rows of q/k/v/out */
  int32_t num_seqs;          /* >= 0 */
  int32_t num_q_heads;       /* Hq, 1..65535, a multiple of Hkv (any G) */
  int32_t num_kv_heads;      /* Hkv >= 1 */
  int32_t num_blocks;        /* >= 1: physical blocks in the cache */
  int32_t block_size;        /* >= 1 */
  int32_t max_blocks;        /* >= 0: columns of block_table */
  int32_t max_query_len;     /* >= 0; accepted for signature parity, no tier uses it */
  float sm_scale;            /* finite, > 0 */
  int32_t num_splits;        /* 0..64: 0 lets the tier choose; n >= 1 asks the mma tier to split each
                                sequence's prefix into n parts (see above); other tiers ignore it */
} octave_prefill_args; /* 216 bytes */

int32_t octave_prefill(octave_ctx* ctx, const octave_prefill_args* a);

/* ---- query maps (docs/contract.md §4), on the device, no host synchronisation -----------------------------
 * For t < num_q: req = #{ j in 1..num_reqs : qsl[j] <= t } (searchsorted right over qsl[1..]);
 * req == num_reqs (padding) gives klen 0; otherwise
 * klen = seq_lens[req] - (qsl[req+1] - qsl[req]) + (t - qsl[req]) + 1 (int32, wrapping).
 * num_q == 0: every pointer may be NULL; num_reqs == 0: query_start_loc and seq_lens may be NULL. */
typedef struct octave_query_maps_args {
  uint64_t struct_size;
  const int32_t* query_start_loc; /* device, [num_reqs+1], non-decreasing, 4-byte aligned */
  const int32_t* seq_lens;        /* device, [num_reqs], 4-byte aligned */
  int32_t* q_to_req;              /* device, [num_q], 4-byte aligned */
  int32_t* q_to_klen;             /* device, [num_q], 4-byte aligned */
  int32_t num_reqs;               /* 0..INT32_MAX-1 */
  int32_t num_q;                  /* >= 0 */
} octave_query_maps_args; /* 48 bytes */

int32_t octave_query_maps(octave_ctx* ctx, const octave_query_maps_args* a);

#ifdef __cplusplus
}
#endif

#endif /* OCTAVE_CAPI_H */
