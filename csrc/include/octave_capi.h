/* The C ABI of the Octave KV kernels (liboctave_hip.so, liboctave_cuda.so, liboctave_emu.so).
 *
 * One ABI for every build. Go loads it with purego (no cgo), so everything is a plain C function
 * taking pointers and scalars, returning an int status (OCTAVE_OK = 0). On failure the status says
 * what kind of error it was and octave_last_error() returns a message for the calling thread that
 * says what was expected and what was found (written by failing calls only: successful calls leave
 * it, errno-like). Nothing in this library aborts the process.
 *
 * Semantics: docs/contract.md (operations) and docs/format.md (bytes); the choices this library
 * makes where the spec is silent are in docs/kernels.md ("Octant decision").
 *
 * Conventions
 *  - Op arguments are a struct whose first field is struct_size = sizeof(the struct) as the caller
 *    compiled it. A smaller struct_size is refused; a larger one is accepted when the extra bytes
 *    are zero (a newer caller that does not use newer fields), refused otherwise, and refused as
 *    implausible when it exceeds this library's size by more than OCTAVE_STRUCT_SIZE_SLACK.
 *  - Output structs (octave_device_info) lead with struct_size too, and the caller sets it before
 *    the call (0 is refused), within the same limits. The library writes its struct, zeroes the
 *    bytes from its size up to struct_size, and sets struct_size to its own size.
 *  - "device pointer": memory from octave_alloc (or any device allocation of the same runtime).
 *  - Activation strides are in elements, cache strides in bytes. Innermost strides are 1.
 *  - Alignment: every non-NULL pointer of an op's args must be aligned for the kernel's accesses
 *    (OCTAVE_ERR_ALIGNMENT otherwise, checked before anything is launched): fp16/bf16 activations
 *    2 bytes, int32 arrays (block_table, maps, cu_seqlens_q, seq_lens) 4, slot_mapping and
 *    slot_mapping_host 8, the cache 8 (4 for format 19), partials 16.
 *  - Ops are enqueued on the device's default stream in call order and return before the device
 *    finishes; octave_sync waits and reports asynchronous errors. Copies and memset are synchronous.
 *  - Layouts are fixed: every field is naturally aligned, 8-byte fields first, no implicit padding
 *    (static_asserts in capi_layout.cpp pin every offset; docs/kernels.md lists them).
 */
#ifndef OCTAVE_CAPI_H
#define OCTAVE_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1: the first ABI. 2: adds octave_decode_workspace_size; octave_last_error errno-like; every
 * pointer checked for alignment; octave_free/octave_close own the context's allocations;
 * OCTAVE_STRUCT_SIZE_SLACK for output structs too. */
#define OCTAVE_ABI_VERSION 2

/* A struct_size may exceed this library's struct by at most this many bytes (input and output
 * structs alike); more is refused as implausible (INVALID_ARGUMENT). */
#define OCTAVE_STRUCT_SIZE_SLACK 4096

/* ---- status codes ------------------------------------------------------------------------------ */
enum octave_status {
  OCTAVE_OK = 0,
  OCTAVE_ERR_INVALID_ARGUMENT = 1, /* null pointer, negative size, bad flag, bad struct_size, free of a
                                      pointer that is not an outstanding allocation of the context */
  OCTAVE_ERR_FORMAT = 2,           /* format id not 3, 4 or 19 */
  OCTAVE_ERR_GQA = 3,              /* G = Hq/Hkv not an integer in {1,2,4,6,8} (decode), or Hq % Hkv (prefill) */
  OCTAVE_ERR_HEAD_SIZE = 4,        /* head_size != 256 */
  OCTAVE_ERR_STRIDE = 5,           /* cache stride not a multiple of 8 (4 for compact), or negative */
  OCTAVE_ERR_ALIGNMENT = 6,        /* a pointer not aligned as its kernel needs: fp16/bf16 activations 2,
                                      int32 arrays 4, slot_mapping 8, cache 8 (4 for compact), partials 16 */
  OCTAVE_ERR_NUM_SPLITS = 7,       /* num_splits outside 1..1024 */
  OCTAVE_ERR_WORKSPACE = 8,        /* partials too small, partial_stride bad, or the size overflows 64 bits */
  OCTAVE_ERR_SLOT_RANGE = 9,       /* slot index >= num_blocks*block_size */
  OCTAVE_ERR_SLOT_DUPLICATE = 10,  /* the same slot twice in one store */
  OCTAVE_ERR_UNSUPPORTED_TIER = 11,/* tier not available on this architecture / not compiled in */
  OCTAVE_ERR_DTYPE = 12,           /* dtype not OCTAVE_DTYPE_F16 or OCTAVE_DTYPE_BF16 */
  OCTAVE_ERR_SCALE = 13,           /* sm_scale not finite and > 0 */
  OCTAVE_ERR_QUERY_GROUP = 14,     /* query_group outside 1..4 */
  OCTAVE_ERR_NO_DEVICE = 15,       /* no device of this runtime, or device index out of range */
  OCTAVE_ERR_UNSUPPORTED_ARCH = 16,/* the device's architecture has no kernels in this library */
  OCTAVE_ERR_RUNTIME = 17,         /* a HIP/CUDA runtime call failed (message names it) */
  OCTAVE_ERR_LAUNCH = 18           /* a kernel launch failed */
};

/* Activation dtypes. */
enum octave_dtype { OCTAVE_DTYPE_F16 = 1, OCTAVE_DTYPE_BF16 = 2 };

/* Tiers. A tier is a family of kernels with one numeric profile per op (docs/kernels.md). */
enum octave_tier {
  OCTAVE_TIER_PORTABLE = 0, /* decode: dot4-int8q; prefill: prefill-fp32. Every architecture. */
  OCTAVE_TIER_WMMA = 1,     /* gfx1100 native (not in this build) */
  OCTAVE_TIER_MFMA = 2,     /* gfx942 native (not in this build) */
  OCTAVE_TIER_MMA = 3       /* sm_90 native (not in this build) */
};

/* Op bits of octave_tier_desc.ops. */
enum octave_op_bits { OCTAVE_OP_DECODE = 1, OCTAVE_OP_PREFILL = 2 };

typedef struct octave_ctx octave_ctx;

/* ---- library, context, device ----------------------------------------------------------------- */
int32_t octave_abi_version(void); /* OCTAVE_ABI_VERSION of the library */
/* The message of the last call on this thread that returned a status other than OCTAVE_OK ("" if
 * none has). Successful calls leave it; nothing resets it (errno-like): read it right after a call
 * that failed. */
const char* octave_last_error(void);
const char* octave_status_name(int32_t status); /* "OCTAVE_ERR_FORMAT", ... */
const char* octave_build_info(void); /* runtime, compiled targets, compiler */

/* Opens device `device` (0-based). Fails with NO_DEVICE when there is none (the library loads and
 * answers on machines without a GPU) and with UNSUPPORTED_ARCH when the device's architecture has
 * no kernels in this build. */
int32_t octave_open(int32_t device, octave_ctx** out);
/* Waits for the device, frees every allocation of the context still outstanding (octave_alloc
 * without octave_free: pointers into them dangle afterwards) and releases the context. NULL is
 * fine. The context is released whatever the status (RUNTIME: the wait or a free failed). */
int32_t octave_close(octave_ctx* ctx);

typedef struct octave_device_info {
  uint64_t struct_size;   /* set by the caller: sizeof(octave_device_info) */
  uint64_t total_memory;  /* bytes */
  int32_t device;         /* index given to octave_open */
  int32_t wave_size;      /* hardware wave/warp size: 32 (gfx1100, sm_90) or 64 (gfx942) */
  int32_t compute_units;  /* CUs (AMD) or SMs (NVIDIA) */
  int32_t logical_wave;   /* 32: the kernels' logical wave */
  char name[256];         /* marketing name */
  char arch[64];          /* "gfx1100", "gfx942", "sm_90", "emu" */
  char runtime[16];       /* "HIP", "CUDA", "EMU" */
} octave_device_info; /* 368 bytes */

int32_t octave_device_get_info(octave_ctx* ctx, octave_device_info* info);

typedef struct octave_tier_desc {
  int32_t tier;            /* enum octave_tier */
  int32_t ops;             /* OCTAVE_OP_* bits the tier implements */
  char name[32];           /* "portable" */
  char decode_profile[32]; /* "dot4-int8q" */
  char prefill_profile[32];/* "prefill-fp32" */
} octave_tier_desc; /* 104 bytes */

/* Writes up to `cap` tiers available on the context's device into `out` and their number into
 * *count (out may be NULL with cap 0 to ask only for the count). */
int32_t octave_tiers(octave_ctx* ctx, octave_tier_desc* out, int32_t cap, int32_t* count);

/* ---- memory ------------------------------------------------------------------------------------ */
int32_t octave_alloc(octave_ctx* ctx, uint64_t bytes, void** out); /* 256-byte aligned; 0 bytes -> NULL */
/* Frees an allocation octave_alloc returned on the same ctx and not yet freed; NULL is fine. Any
 * other pointer (a second free, an interior pointer, another context's) is refused with
 * INVALID_ARGUMENT and nothing is freed. */
int32_t octave_free(octave_ctx* ctx, void* ptr);
int32_t octave_copy_h2d(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes);
int32_t octave_copy_d2h(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes);
int32_t octave_copy_d2d(octave_ctx* ctx, void* dst, const void* src, uint64_t bytes);
int32_t octave_memset(octave_ctx* ctx, void* dst, int32_t byte_value, uint64_t bytes);
int32_t octave_sync(octave_ctx* ctx); /* waits for the device; reports asynchronous errors */

/* ---- cache_store (docs/contract.md §3.1) -----------------------------------------------------------------
 * For each token t < num_tokens with slot_mapping[t] >= 0 and each KV head h: rotate, quantize and
 * pack key[t][h] and value[t][h] into slot s = slot_mapping[t] (block s / block_size, offset
 * s % block_size). Writes only code and scale bytes; pad bytes and every other byte are untouched.
 * slot_mapping is read on the host before anything is written (range and duplicates): pass
 * slot_mapping_host (a host copy of the same num_tokens values) or leave it NULL and the library
 * copies slot_mapping back from the device (a synchronous copy). The kernel reads the device
 * array and independently skips any index outside [0, num_blocks*block_size). */
typedef struct octave_store_args {
  uint64_t struct_size;
  const void* key;                  /* device, [T][Hkv][256] dtype */
  const void* value;                /* device, [T][Hkv][256] dtype */
  uint8_t* cache;                   /* device, [num_blocks][Hkv][block_size][slot] via strides */
  const int64_t* slot_mapping;      /* device, [num_tokens] */
  const int64_t* slot_mapping_host; /* host copy, or NULL */
  int64_t key_stride_token, key_stride_head;     /* elements */
  int64_t value_stride_token, value_stride_head; /* elements */
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes */
  int32_t fmt;          /* 3, 4, 19 */
  int32_t dtype;        /* OCTAVE_DTYPE_* of key and value */
  int32_t head_size;    /* 256 */
  int32_t num_tokens;   /* n: entries of slot_mapping (n <= T) */
  int32_t num_kv_heads;
  int32_t num_blocks;
  int32_t block_size;
  int32_t reserved0;    /* 0 */
  uint32_t k_signs[8];  /* bit i of word i/32 set: dim i negated (docs/format.md §2) */
  uint32_t v_signs[8];
} octave_store_args; /* 200 bytes */

int32_t octave_cache_store(octave_ctx* ctx, const octave_store_args* a);

/* ---- rotate (docs/contract.md §3.2): in place ----------------------------------------------------------
 * Forward: signs, then the normalized FWHT over 64-dim blocks (k_layout != 0) or all 256 dims.
 * Inverse: the transform, then the signs. Rounded back to dtype (nearest even). */
typedef struct octave_rotate_args {
  uint64_t struct_size;
  void* x;                          /* device, [num_tokens][num_heads][256] dtype */
  int64_t stride_token, stride_head;/* elements */
  int32_t dtype, head_size, num_tokens, num_heads;
  int32_t k_layout;                 /* nonzero: 64-dim blocks (block-K K/query); 0: 256 dims */
  int32_t inverse;                  /* nonzero: inverse rotation */
  uint32_t signs[8];
} octave_rotate_args; /* 88 bytes */

int32_t octave_rotate(octave_ctx* ctx, const octave_rotate_args* a);

/* ---- decode (docs/contract.md §3.3), split-KV, followed by the reduce ----------------------------------
 * Portable tier: profile dot4-int8q. Splits: split_len = ceil(max_blocks*block_size / num_splits)
 * tokens each. query_group 1..4 consecutive query rows of one request share every K/V read (rows
 * of different requests in a group are processed one request at a time). partials is the
 * workspace [num_q][Hq][num_splits][partial_stride] fp32, left holding the split partials (§3.4). */
typedef struct octave_decode_args {
  uint64_t struct_size;
  void* out;                 /* device, [num_q][Hq][256] dtype */
  const void* query;         /* device, [num_q][Hq][256] dtype (unrotated) */
  const uint8_t* cache;      /* device */
  const int32_t* block_table;/* device, [num_reqs][max_blocks] row-major contiguous */
  const int32_t* q_to_req;   /* device, [num_q] */
  const int32_t* q_to_klen;  /* device, [num_q] */
  float* partials;           /* device workspace, 16-byte aligned */
  uint64_t partials_bytes;   /* capacity of partials */
  int64_t out_stride_token, out_stride_head;       /* elements */
  int64_t query_stride_token, query_stride_head;   /* elements */
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes */
  int32_t fmt, dtype, head_size, tier;
  int32_t num_q, num_q_heads, num_kv_heads, num_reqs;
  int32_t num_blocks, block_size, max_blocks, num_splits;
  int32_t query_group;       /* 1..4 */
  int32_t partial_stride;    /* floats per partial row: multiple of 4, >= 258; 0 -> 260 */
  float sm_scale;            /* finite, > 0 */
  int32_t reserved0;         /* 0 */
  uint32_t k_signs[8];
  uint32_t v_signs[8];
} octave_decode_args; /* 256 bytes */

int32_t octave_decode(octave_ctx* ctx, const octave_decode_args* a);

/* Bytes of partials a decode (or reduce) with these sizes needs, num_q x Hq x num_splits x
 * partial_stride (0 -> 260) x 4, in *bytes (host, not NULL). The same checks as octave_decode:
 * num_q < 0 or num_q_heads < 1 INVALID_ARGUMENT, num_splits NUM_SPLITS, partial_stride or a size
 * that overflows 64 bits WORKSPACE (then *bytes = 0). *bytes = 0 with OCTAVE_OK: an empty decode
 * (num_q == 0), which needs no workspace. Added in ABI 2. */
int32_t octave_decode_workspace_size(int32_t num_q, int32_t num_q_heads, int32_t num_splits,
                                     int32_t partial_stride, uint64_t* bytes);

/* The same size without a status (ABI 1): 0 both for bad input and for an empty decode; it writes
 * no message. Use octave_decode_workspace_size to tell the two apart. */
uint64_t octave_decode_workspace_bytes(int32_t num_q, int32_t num_q_heads, int32_t num_splits,
                                       int32_t partial_stride);

/* ---- reduce (docs/contract.md §3.4), callable on hand-made partials ---------------------------------------
 * partials [num_q][Hq][num_splits][partial_stride] fp32: [0..255] o, [256] m (log2 units, -inf
 * empty), [257] l. Splits with m = -inf are skipped and their o is never read. */
typedef struct octave_reduce_args {
  uint64_t struct_size;
  void* out;                 /* device, [num_q][Hq][256] dtype */
  const float* partials;     /* device, 16-byte aligned */
  uint64_t partials_bytes;
  int64_t out_stride_token, out_stride_head; /* elements */
  int32_t dtype, head_size, num_q, num_q_heads;
  int32_t num_splits;        /* 1..1024 */
  int32_t partial_stride;    /* multiple of 4, >= 258; 0 -> 260 */
  uint32_t v_signs[8];
} octave_reduce_args; /* 104 bytes */

int32_t octave_reduce(octave_ctx* ctx, const octave_reduce_args* a);

/* ---- prefill (docs/contract.md §3.5), portable tier: profile prefill-fp32 --------------------------------
 * Numeric profile prefill-fp32: q, k, v (already rotated) are converted exactly to float32; the
 * cached prefix is dequantized exactly (codebook x fp16 scale / 64, exact in float32) in the
 * rotated space; scores are float32 dot products (sequential fused multiply-add over the 256
 * dims) times sm_scale*log2(e); one online softmax in base 2 over prefix and chunk in float32
 * (exp2 with a few ulp error); P.V in float32 with fused multiply-add; out = O / L rounded to
 * dtype (nearest even), still rotated. Rows of out that belong to no sequence are not written.
 * dtype: fp16, and bf16 as an Octant extension of the portable tier (docs/contract.md §3.5 asks
 * for fp16 only; a tier without bf16 refuses it with OCTAVE_ERR_DTYPE). */
typedef struct octave_prefill_args {
  uint64_t struct_size;
  void* out;                 /* device, [T][Hq][256] dtype */
  const void* q;             /* device, [T][Hq][256] dtype, K-rotated */
  const void* k;             /* device, [T][Hkv][256] dtype, K-rotated */
  const void* v;             /* device, [T][Hkv][256] dtype, V-rotated */
  const uint8_t* cache;      /* device */
  const int32_t* block_table;/* device, [num_seqs][max_blocks] */
  const int32_t* cu_seqlens_q;/* device, [num_seqs+1] */
  const int32_t* seq_lens;   /* device, [num_seqs]: context + new tokens */
  int64_t out_stride_token, out_stride_head;
  int64_t q_stride_token, q_stride_head;
  int64_t k_stride_token, k_stride_head;
  int64_t v_stride_token, v_stride_head;
  int64_t cache_stride_block, cache_stride_head, cache_stride_token; /* bytes */
  int32_t fmt, dtype, head_size, tier;
  int32_t num_tokens;        /* T: rows of q/k/v/out */
  int32_t num_seqs, num_q_heads, num_kv_heads;
  int32_t num_blocks, block_size, max_blocks;
  int32_t max_query_len;     /* accepted for signature parity; the portable tier does not need it */
  float sm_scale;
  int32_t reserved0;
} octave_prefill_args; /* 216 bytes */

int32_t octave_prefill(octave_ctx* ctx, const octave_prefill_args* a);

/* ---- query maps (docs/contract.md §4), on the device, no host synchronisation -----------------------------
 * For t < num_q: req = #{ j in 1..num_reqs : qsl[j] <= t } (searchsorted right over qsl[1..]);
 * req == num_reqs (padding) gives klen 0; otherwise
 * klen = seq_lens[req] - (qsl[req+1] - qsl[req]) + (t - qsl[req]) + 1 (int32, wrapping). */
typedef struct octave_query_maps_args {
  uint64_t struct_size;
  const int32_t* query_start_loc; /* device, [num_reqs+1], non-decreasing */
  const int32_t* seq_lens;        /* device, [num_reqs] */
  int32_t* q_to_req;              /* device, [num_q] */
  int32_t* q_to_klen;             /* device, [num_q] */
  int32_t num_reqs, num_q;
} octave_query_maps_args; /* 48 bytes */

int32_t octave_query_maps(octave_ctx* ctx, const octave_query_maps_args* a);

#ifdef __cplusplus
}
#endif

#endif /* OCTAVE_CAPI_H */
