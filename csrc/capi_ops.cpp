// The C ABI's op entry points: validate every argument the contract constrains (docs/contract.md §3 error
// cases), then fill the kernel parameter block and launch. Every error names the op, the field,
// what was expected and what was found.
#include <math.h>
#include <stdlib.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "octave_host.h"
#include "octave_mutant.h"

namespace {

const double kLog2e = 1.4426950408889634;

int check_fmt(const char* op, int32_t fmt) {
  if (fmt == 3 || fmt == 4 || fmt == 19) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_FORMAT,
                  "%s: format id %d is not supported: expected 3 (octave_k3v3), 4 (octave_k3v4) or 19 "
                  "(octave_k3v3_compact)",
                  op, fmt);
}

int check_dtype(const char* op, int32_t dtype) {
  if (dtype == OCTAVE_DTYPE_F16 || dtype == OCTAVE_DTYPE_BF16) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_DTYPE, "%s: dtype %d is not supported: expected %d (fp16) or %d (bf16)", op,
                  dtype, OCTAVE_DTYPE_F16, OCTAVE_DTYPE_BF16);
}

int check_head(const char* op, int32_t head) {
  if (head == 256) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_HEAD_SIZE, "%s: head_size = %d, but the kernels support only 256", op, head);
}

int check_count(const char* op, const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: %s = %lld, expected %lld..%lld", op, name, (long long)v,
                  (long long)lo, (long long)hi);
}

int check_ptr(const char* op, const char* name, const void* p, bool needed) {
  if (p || !needed) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
}

int check_act_strides(const char* op, const char* name, int64_t st, int64_t sh) {
  if (st >= 0 && sh >= 0) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_STRIDE, "%s: %s strides (token %lld, head %lld) must be >= 0 elements", op, name,
                  (long long)st, (long long)sh);
}

#define OCT_TRY(x)              \
  do {                          \
    if (int s_ = (x)) return s_; \
  } while (0)

// Alignment (octave_capi.h, "Alignment"): a non-NULL pointer must be a multiple of what the kernels'
// loads and stores of its elements need. NULL is left to the NULL checks (it is allowed where a count
// is 0). Checked before anything is launched, whatever the counts.
int check_align(const char* op, const char* name, const void* p, uint64_t align, const char* what) {
  const uint64_t r = (uint64_t)(uintptr_t)p % align;
  if (r == 0) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_ALIGNMENT, "%s: %s = %p is misaligned by %llu byte%s: %s need %llu-byte alignment", op,
                  name, p, (unsigned long long)r, r == 1 ? "" : "s", what, (unsigned long long)align);
}
// fp16/bf16 activations: the kernels read and write them as 16-bit elements (8 per lane, one 16-byte
// vector access when the lane's 8 elements happen to be 16-byte aligned, else 8 2-byte accesses).
// Activation strides are in elements, so every row of an aligned base stays aligned.
int check_act(const char* op, const char* name, const void* p) {
  return check_align(op, name, p, 2, "fp16/bf16 elements");
}
// An op's activations (fp16/bf16 tensors with token and head strides): every one's strides first,
// then every one's alignment, so that a call with several faults reports the same one whatever
// the op.
struct Act {
  const char* name;
  const void* p;
  int64_t st, sh;  // strides: token, head (elements)
};
int check_acts(const char* op, std::initializer_list<Act> acts) {
  for (const Act& x : acts) OCT_TRY(check_act_strides(op, x.name, x.st, x.sh));
  for (const Act& x : acts) OCT_TRY(check_act(op, x.name, x.p));
  return OCTAVE_OK;
}
int check_i32(const char* op, const char* name, const void* p) { return check_align(op, name, p, 4, "int32 entries"); }
int check_i64(const char* op, const char* name, const void* p) { return check_align(op, name, p, 8, "int64 entries"); }

// Cache: outer strides multiples of 8 bytes (4 for compact) and >= 0, pointer aligned the same: the
// decode kernel copies slots in 8-byte units (4 for compact), store and prefill access 32- and
// 16-bit words at multiples of 4 inside a slot.
int check_cache(const char* op, int32_t fmt, const uint8_t* cache, int64_t sb, int64_t sh, int64_t st) {
  const int64_t g = fmt == 19 ? 4 : 8;
  const int64_t s[3] = {sb, sh, st};
  const char* n[3] = {"cache_stride_block", "cache_stride_head", "cache_stride_token"};
  for (int i = 0; i < 3; i++)
    if (s[i] < 0 || s[i] % g)
      return oct_fail(OCTAVE_ERR_STRIDE,
                      "%s: %s = %lld bytes, expected a non-negative multiple of %lld for format %d (so that every "
                      "slot stays %lld-byte aligned)",
                      op, n[i], (long long)s[i], (long long)g, fmt, (long long)g);
  if (!cache) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: cache is NULL", op);
  return check_align(op, "cache", cache, (uint64_t)g, fmt == 19 ? "format 19 slots" : "format 3 and 4 slots");
}

int check_scale(const char* op, float s) {
  if (isfinite(s) && s > 0.0f) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_SCALE, "%s: sm_scale = %g, expected a finite value > 0", op, (double)s);
}

// The tiers of an op on the context's device (octave_tiers lists the same): portable everywhere;
// wmma (decode and prefill) where oct_wmma_on says so (gfx1100, or the model on emulator and CUDA
// builds); mfma (decode and prefill) where oct_mfma_on says so (gfx942, or the model on emulator
// and CUDA builds); mma (decode and prefill) where oct_mma_on says so (CUDA, or the model on the
// emulator).
int check_tier(const char* op, octave_ctx* ctx, int32_t tier) {
  if (tier == OCTAVE_TIER_PORTABLE) return OCTAVE_OK;
  if (tier == OCTAVE_TIER_WMMA && oct_wmma_on(ctx)) return OCTAVE_OK;
  if (tier == OCTAVE_TIER_MFMA && oct_mfma_on(ctx)) return OCTAVE_OK;
  if (tier == OCTAVE_TIER_MMA && oct_mma_on()) return OCTAVE_OK;
  const char* name = tier == OCTAVE_TIER_WMMA ? "wmma" : tier == OCTAVE_TIER_MFMA ? "mfma"
                     : tier == OCTAVE_TIER_MMA ? "mma" : "unknown";
  char offered[160] = "the portable tier (0)";
  if (oct_wmma_on(ctx)) strncat(offered, ", the " OCT_WMMA_TIER_NAME " tier (1)", sizeof offered - strlen(offered) - 1);
  if (oct_mfma_on(ctx)) strncat(offered, ", the " OCT_MFMA_TIER_NAME " tier (2)", sizeof offered - strlen(offered) - 1);
  if (oct_mma_on()) strncat(offered, ", the " OCT_MMA_TIER_NAME " tier (3)", sizeof offered - strlen(offered) - 1);
  return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER, "%s: tier %d (%s) is not available on %s: this library offers %s there",
                  op, tier, name, ctx->arch, offered);
}

// num_splits within lo..hi: decode and reduce 1..1024, prefill 0 (the tier chooses)..64.
int check_splits(const char* op, int32_t ns, int32_t lo = 1, int32_t hi = 1024) {
  if (ns >= lo && ns <= hi) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_NUM_SPLITS, "%s: num_splits = %d, expected %d..%d", op, ns, lo, hi);
}

// The workspace of a decode: num_q x hq x ns x pstride x 4 bytes. False when the product does not fit
// in 64 bits.
bool workspace_need(int32_t num_q, int32_t hq, int32_t ns, int32_t pstride, uint64_t& need) {
  uint64_t n = 4;
  const uint64_t f[4] = {(uint64_t)num_q, (uint64_t)hq, (uint64_t)ns, (uint64_t)pstride};
  for (uint64_t x : f) {  // portable overflow test (nvcc's front end parses this file too)
    if (x != 0 && n > UINT64_MAX / x) return false;
    n *= x;
  }
  need = n;
  return true;
}

int check_pstride(const char* op, int32_t& pstride) {
  if (pstride == 0) pstride = 260;
  if (pstride >= 258 && pstride % 4 == 0) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_WORKSPACE,
                  "%s: partial_stride = %d floats, expected a multiple of 4 (16 bytes, so that every partial row "
                  "stays 16-byte aligned) that is >= 258",
                  op, pstride);
}

int check_need(const char* op, int32_t num_q, int32_t hq, int32_t ns, int32_t pstride, uint64_t& need) {
  if (workspace_need(num_q, hq, ns, pstride, need)) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_WORKSPACE,
                  "%s: the partials size num_q %d x Hq %d x num_splits %d x partial_stride %d x 4 bytes overflows 64 bits",
                  op, num_q, hq, ns, pstride);
}

// Partial row stride (0 -> 260) and workspace size and alignment: rows are read and written with
// 16-byte vector accesses, so partials must be 16-byte aligned and the row stride a multiple of 4.
int check_partials(const char* op, const void* partials, uint64_t bytes, int32_t num_q, int32_t hq, int32_t ns,
                   int32_t& pstride) {
  OCT_TRY(check_pstride(op, pstride));
  OCT_TRY(check_align(op, "partials", partials, 16, "partial rows (16-byte vector loads and stores)"));
  uint64_t need = 0;
  OCT_TRY(check_need(op, num_q, hq, ns, pstride, need));
  if (need == 0) return OCTAVE_OK;
  if (!partials) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: partials is NULL", op);
  if (bytes < need)
    return oct_fail(OCTAVE_ERR_WORKSPACE,
                    "%s: partials_bytes = %llu, but num_q %d x Hq %d x num_splits %d x partial_stride %d x 4 = %llu "
                    "bytes are needed",
                    op, (unsigned long long)bytes, num_q, hq, ns, pstride, (unsigned long long)need);
  return OCTAVE_OK;
}

int check_reserved(const char* op, int32_t reserved) {
  if (reserved == 0) return OCTAVE_OK;
  return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: reserved0 = %d, expected 0", op, reserved);
}

// Reads slot_mapping on the host (the caller's copy, or a copy from the device) and refuses an
// index past the cache or a slot given twice.
int check_slots(const char* op, const octave_store_args& a, int64_t num_slots) {
  const int64_t n = a.num_tokens;
  std::vector<int64_t> copy;
  const int64_t* s = a.slot_mapping_host;
  if (!s) {
    copy.resize((size_t)n);
    OCT_RT(op, hipMemcpy(copy.data(), a.slot_mapping, (size_t)n * 8, hipMemcpyDeviceToHost));
    s = copy.data();
  }
  std::vector<std::pair<int64_t, int64_t>> live;
  live.reserve((size_t)n);
  for (int64_t t = 0; t < n; t++) {
    if (s[t] < 0) continue;
    if (s[t] >= num_slots)
      return oct_fail(OCTAVE_ERR_SLOT_RANGE,
                      "%s: slot_mapping[%lld] = %lld is outside the cache: num_blocks*block_size = %lld", op,
                      (long long)t, (long long)s[t], (long long)num_slots);
    live.emplace_back(s[t], t);
  }
  std::sort(live.begin(), live.end());
  for (size_t i = 1; i < live.size(); i++)
    if (live[i].first == live[i - 1].first)
      return oct_fail(OCTAVE_ERR_SLOT_DUPLICATE, "%s: slot %lld appears twice: slot_mapping[%lld] and slot_mapping[%lld]",
                      op, (long long)live[i].first, (long long)live[i - 1].second, (long long)live[i].second);
  return OCTAVE_OK;
}

const int64_t kMaxGridX = 2147483647;

}  // namespace

extern "C" {

int32_t octave_cache_store(octave_ctx* ctx, const octave_store_args* in) {
  const char* op = "cache_store";
  octave_store_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_fmt(op, a.fmt));
  OCT_TRY(check_dtype(op, a.dtype));
  OCT_TRY(check_head(op, a.head_size));
  OCT_TRY(check_reserved(op, a.reserved0));
  OCT_TRY(check_count(op, "num_tokens", a.num_tokens, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_kv_heads", a.num_kv_heads, 1, INT32_MAX));
  OCT_TRY(check_count(op, "num_blocks", a.num_blocks, 1, INT32_MAX));
  OCT_TRY(check_count(op, "block_size", a.block_size, 1, INT32_MAX));
  OCT_TRY(check_acts(op, {{"key", a.key, a.key_stride_token, a.key_stride_head},
                          {"value", a.value, a.value_stride_token, a.value_stride_head}}));
  OCT_TRY(check_i64(op, "slot_mapping", a.slot_mapping));
  OCT_TRY(check_i64(op, "slot_mapping_host", a.slot_mapping_host));
  OCT_TRY(check_cache(op, a.fmt, a.cache, a.cache_stride_block, a.cache_stride_head, a.cache_stride_token));
  if (a.num_tokens == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "key", a.key, true));
  OCT_TRY(check_ptr(op, "value", a.value, true));
  OCT_TRY(check_ptr(op, "slot_mapping", a.slot_mapping, true));
  const int64_t waves = (int64_t)a.num_tokens * a.num_kv_heads;
  if ((waves + OCT_WAVES - 1) / OCT_WAVES > kMaxGridX)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: num_tokens x num_kv_heads = %lld is too large", op,
                    (long long)waves);
  const int64_t num_slots = (int64_t)a.num_blocks * a.block_size;
  OCT_TRY(check_slots(op, a, num_slots));

  OctStoreParams p;
  memset(&p, 0, sizeof p);
  p.key = (const uint16_t*)a.key, p.value = (const uint16_t*)a.value;
  p.cache = a.cache, p.slot_mapping = a.slot_mapping;
  p.k_st = a.key_stride_token, p.k_sh = a.key_stride_head;
  p.v_st = a.value_stride_token, p.v_sh = a.value_stride_head;
  p.c_sb = a.cache_stride_block, p.c_sh = a.cache_stride_head, p.c_st = a.cache_stride_token;
  p.num_slots = num_slots;
  p.fmt = a.fmt, p.dtype = a.dtype, p.n = a.num_tokens, p.hkv = a.num_kv_heads, p.block_size = a.block_size;
  memcpy(p.k_signs, a.k_signs, 32);
  memcpy(p.v_signs, a.v_signs, 32);
  OCT_LAUNCHED(op, "octave_store_kernel", oct_launch_store(p));
  return OCTAVE_OK;
}

int32_t octave_rotate(octave_ctx* ctx, const octave_rotate_args* in) {
  const char* op = "rotate";
  octave_rotate_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_dtype(op, a.dtype));
  OCT_TRY(check_head(op, a.head_size));
  OCT_TRY(check_count(op, "num_tokens", a.num_tokens, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_heads", a.num_heads, 1, INT32_MAX));
  OCT_TRY(check_acts(op, {{"x", a.x, a.stride_token, a.stride_head}}));
  if (a.num_tokens == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "x", a.x, true));
  const int64_t waves = (int64_t)a.num_tokens * a.num_heads;
  if ((waves + OCT_WAVES - 1) / OCT_WAVES > kMaxGridX)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: num_tokens x num_heads = %lld is too large", op, (long long)waves);
  OctRotateParams p;
  memset(&p, 0, sizeof p);
  p.x = (uint16_t*)a.x, p.st = a.stride_token, p.sh = a.stride_head;
  p.dtype = a.dtype, p.rows = a.num_tokens, p.heads = a.num_heads;
  p.block64 = a.k_layout != 0, p.inverse = a.inverse != 0;
  memcpy(p.signs, a.signs, 32);
  OCT_LAUNCHED(op, "octave_rotate_kernel", oct_launch_rotate(p));
  return OCTAVE_OK;
}

uint64_t octave_decode_workspace_bytes(int32_t num_q, int32_t hq, int32_t ns, int32_t pstride) {
  // No status and no message: 0 for bad input as for an empty decode (octave_decode_workspace_size
  // tells the two apart).
  if (pstride == 0) pstride = 260;
  uint64_t need = 0;
  if (num_q < 0 || hq < 1 || ns < 1 || ns > 1024 || pstride < 258 || pstride % 4 ||
      !workspace_need(num_q, hq, ns, pstride, need))
    return 0;
  return need;
}

int32_t octave_decode_workspace_size(int32_t num_q, int32_t hq, int32_t ns, int32_t pstride, uint64_t* bytes) {
  const char* op = "decode_workspace_size";
  if (!bytes) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: bytes is NULL", op);
  *bytes = 0;
  OCT_TRY(check_count(op, "num_q", num_q, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_q_heads", hq, 1, INT32_MAX));
  OCT_TRY(check_splits(op, ns));
  OCT_TRY(check_pstride(op, pstride));
  uint64_t need = 0;
  OCT_TRY(check_need(op, num_q, hq, ns, pstride, need));
  *bytes = need;
  return OCTAVE_OK;
}

static int oct_reduce_launch(const char* op, void* out, const float* partials, int64_t o_st, int64_t o_sh,
                             int32_t dtype, int32_t num_q, int32_t hq, int32_t ns, int32_t pstride,
                             const uint32_t v_signs[8], bool mfma = false) {
  OctReduceParams p;
  memset(&p, 0, sizeof p);
  p.out = (uint16_t*)out, p.partials = partials, p.o_st = o_st, p.o_sh = o_sh;
  p.dtype = dtype, p.num_q = num_q, p.hq = hq, p.num_splits = ns, p.pstride = pstride;
  memcpy(p.v_signs, v_signs, 32);
  const int64_t groups = (int64_t)num_q * hq;  // one workgroup per (row, head)
  if (groups > kMaxGridX)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: num_q x num_q_heads = %lld is too large (the reduce's grid holds %lld)",
                    op, (long long)groups, (long long)kMaxGridX);
  if (mfma) OCT_LAUNCHED(op, "octave_reduce_mfma_kernel", oct_launch_reduce_mfma(p));
  else OCT_LAUNCHED(op, "octave_reduce_kernel", oct_launch_reduce(p));
  return OCTAVE_OK;
}

int32_t octave_decode(octave_ctx* ctx, const octave_decode_args* in) {
  const char* op = "decode";
  octave_decode_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_tier(op, ctx, a.tier));
  OCT_TRY(check_fmt(op, a.fmt));
  OCT_TRY(check_dtype(op, a.dtype));
  OCT_TRY(check_head(op, a.head_size));
  OCT_TRY(check_reserved(op, a.reserved0));
  OCT_TRY(check_count(op, "num_q", a.num_q, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_kv_heads", a.num_kv_heads, 1, 65535));
  OCT_TRY(check_count(op, "num_q_heads", a.num_q_heads, 1, INT32_MAX));
  const int32_t g = a.num_q_heads / a.num_kv_heads;
  if (a.num_q_heads % a.num_kv_heads || !(g == 1 || g == 2 || g == 4 || g == 6 || g == 8))
    return oct_fail(OCTAVE_ERR_GQA,
                    "%s: num_q_heads %d / num_kv_heads %d is not a GQA group G in {1, 2, 4, 6, 8}", op,
                    a.num_q_heads, a.num_kv_heads);
  if (a.query_group < 1 || a.query_group > 4)
    return oct_fail(OCTAVE_ERR_QUERY_GROUP, "%s: query_group = %d, expected 1..4", op, a.query_group);
  OCT_TRY(check_splits(op, a.num_splits));
  OCT_TRY(check_scale(op, a.sm_scale));
  OCT_TRY(check_count(op, "num_reqs", a.num_reqs, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_blocks", a.num_blocks, 1, INT32_MAX));
  OCT_TRY(check_count(op, "block_size", a.block_size, 1, INT32_MAX));
  OCT_TRY(check_count(op, "max_blocks", a.max_blocks, 0, INT32_MAX));
  OCT_TRY(check_acts(op, {{"out", a.out, a.out_stride_token, a.out_stride_head},
                          {"query", a.query, a.query_stride_token, a.query_stride_head}}));
  OCT_TRY(check_i32(op, "block_table", a.block_table));
  OCT_TRY(check_i32(op, "q_to_req", a.q_to_req));
  OCT_TRY(check_i32(op, "q_to_klen", a.q_to_klen));
  OCT_TRY(check_cache(op, a.fmt, a.cache, a.cache_stride_block, a.cache_stride_head, a.cache_stride_token));
  int32_t pstride = a.partial_stride;
  OCT_TRY(check_partials(op, a.partials, a.partials_bytes, a.num_q, a.num_q_heads, a.num_splits, pstride));
  if (a.num_q == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "out", a.out, true));
  OCT_TRY(check_ptr(op, "query", a.query, true));
  OCT_TRY(check_ptr(op, "q_to_req", a.q_to_req, true));
  OCT_TRY(check_ptr(op, "q_to_klen", a.q_to_klen, true));
  OCT_TRY(check_ptr(op, "block_table", a.block_table, a.num_reqs > 0 && a.max_blocks > 0));

  OctDecodeParams p;
  memset(&p, 0, sizeof p);
  p.query = (const uint16_t*)a.query, p.cache = a.cache, p.block_table = a.block_table;
  p.q_to_req = a.q_to_req, p.q_to_klen = a.q_to_klen, p.partials = a.partials;
  p.q_st = a.query_stride_token, p.q_sh = a.query_stride_head;
  p.c_sb = a.cache_stride_block, p.c_sh = a.cache_stride_head, p.c_st = a.cache_stride_token;
  p.kv_max = (int64_t)a.max_blocks * a.block_size;
  p.split_len = OCT_MUTANT(OCT_MUT_DECODE_SPLIT_FLOOR) ? p.kv_max / a.num_splits  // mutant: floor
                                                       : (p.kv_max + a.num_splits - 1) / a.num_splits;
  if (a.tier == OCTAVE_TIER_WMMA || a.tier == OCTAVE_TIER_MMA || a.tier == OCTAVE_TIER_MFMA) {
    // Upstream's WMMA geometry (the mma and mfma tiers' too: the same 16-token tiles) (oracle.WMMAGeometry): min(num_splits, 192) splits of
    // max(ceil(kv_max / ns), 64) tokens rounded up to a multiple of 16; splits past them are empty.
    const int64_t ns = a.num_splits < 192 ? a.num_splits : 192;
    int64_t per = (p.kv_max + ns - 1) / ns;
    per = per > 64 ? per : 64;
    p.split_len = (per + 15) / 16 * 16;
  }
  p.fmt = a.fmt, p.dtype = a.dtype, p.num_q = a.num_q, p.hq = a.num_q_heads, p.hkv = a.num_kv_heads, p.g = g;
  p.g_mul = ((1u << 20) + (uint32_t)g - 1) / (uint32_t)g;
  oct_bs_magic(a.block_size, p.bs_mul, p.bs_sh);  // (block_size >= 1: validated above)
  p.num_reqs = a.num_reqs, p.num_blocks = a.num_blocks, p.block_size = a.block_size, p.max_blocks = a.max_blocks;
  p.num_splits = a.num_splits, p.qgroup = a.query_group, p.pstride = pstride, p.sms = ctx->props.multiProcessorCount;
  const double log2e = OCT_MUTANT(OCT_MUT_DECODE_NO_LOG2E) ? 1.0 : kLog2e;  // mutant: natural-log scale
  p.score_scale = (float)((double)a.sm_scale * log2e / 64.0);
  memcpy(p.k_signs, a.k_signs, 32);
  if (a.tier == OCTAVE_TIER_WMMA) OCT_LAUNCHED(op, "octave_decode_wmma_kernel", oct_launch_decode_wmma(p));
  else if (a.tier == OCTAVE_TIER_MMA) OCT_LAUNCHED(op, "octave_decode_mma_kernel", oct_launch_decode_mma(p));
  else if (a.tier == OCTAVE_TIER_MFMA) OCT_LAUNCHED(op, "octave_decode_mfma_kernel", oct_launch_decode_mfma(p));
  else OCT_LAUNCHED(op, "octave_decode_dot4_kernel", oct_launch_decode(p));
  // The mfma tier merges its splits with its own wave64 reduce (docs/contract.md §3.4), the others
  // with the portable one: the ABI's octave_reduce is the portable reduce on every tier.
  return oct_reduce_launch(op, a.out, a.partials, a.out_stride_token, a.out_stride_head, a.dtype, a.num_q,
                           a.num_q_heads, a.num_splits, pstride, a.v_signs, a.tier == OCTAVE_TIER_MFMA);
}

int32_t octave_reduce(octave_ctx* ctx, const octave_reduce_args* in) {
  const char* op = "reduce";
  octave_reduce_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_dtype(op, a.dtype));
  OCT_TRY(check_head(op, a.head_size));
  OCT_TRY(check_count(op, "num_q", a.num_q, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_q_heads", a.num_q_heads, 1, INT32_MAX));
  OCT_TRY(check_splits(op, a.num_splits));
  OCT_TRY(check_acts(op, {{"out", a.out, a.out_stride_token, a.out_stride_head}}));
  int32_t pstride = a.partial_stride;
  OCT_TRY(check_partials(op, a.partials, a.partials_bytes, a.num_q, a.num_q_heads, a.num_splits, pstride));
  if (a.num_q == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "out", a.out, true));
  return oct_reduce_launch(op, a.out, a.partials, a.out_stride_token, a.out_stride_head, a.dtype, a.num_q,
                           a.num_q_heads, a.num_splits, pstride, a.v_signs);
}

// The mma prefill's prefix splits when the caller leaves them to the tier: none while the grid
// (wgs workgroups, one per SM at a time) fills the sms SMs or the prefix bound kv_max is short;
// else the count that makes the fewest waves of split work, S·wgs at most 4 waves and each split
// at least 4096 tokens of kv_max (docs/kernels.md, "The mma tier: prefill").
static int oct_pm_auto_splits(int64_t wgs, int sms, int64_t kv_max) {
  if (sms <= 0 || wgs >= sms) return 1;
  int best = 1;
  double best_t = 1.0;  // time in units of one unsplit workgroup: ceil(waves) / S
  for (int s = 2; s <= OCT_PM_MAX_SPLITS && s * wgs <= 4 * (int64_t)sms && (int64_t)s * 4096 <= kv_max; s++) {
    const double t = (double)((s * wgs + sms - 1) / sms) / s;
    if (t < best_t - 1e-9) best = s, best_t = t;
  }
  return best;
}

// Makes ctx's prefill workspace at least bytes long (ctx->pm_mu held). A failed allocation is an
// error when the caller asked for the splits (required), else the call runs without them.
static int oct_pm_workspace(octave_ctx* ctx, uint64_t bytes, const char* op, bool required) {
  if (ctx->pm_ws_bytes >= bytes) return OCTAVE_OK;
  if (ctx->pm_ws) {
    const hipError_t f = hipFree(ctx->pm_ws);  // (waits for the device: no launch still reads it)
    ctx->pm_ws = nullptr, ctx->pm_ws_bytes = 0;
    if (f != hipSuccess)
      return oct_fail(OCTAVE_ERR_RUNTIME, "%s: hipFree(prefill workspace) failed: %s (%s, %d)", op, hipGetErrorString(f),
                      hipGetErrorName(f), (int)f);
  }
  void* w = nullptr;
  const hipError_t e = hipMalloc(&w, (size_t)bytes);
  if (e != hipSuccess) {
    (void)hipGetLastError();  // not sticky: keep it from being reported against the next launch
    if (!required) return OCTAVE_OK;
    return oct_fail(OCTAVE_ERR_RUNTIME, "%s: the split workspace: hipMalloc(%llu bytes) failed: %s (%s)", op,
                    (unsigned long long)bytes, hipGetErrorString(e), hipGetErrorName(e));
  }
  ctx->pm_ws = w, ctx->pm_ws_bytes = bytes;
  return OCTAVE_OK;
}

int32_t octave_prefill(octave_ctx* ctx, const octave_prefill_args* in) {
  const char* op = "prefill";
  octave_prefill_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_tier(op, ctx, a.tier));
  OCT_TRY(check_fmt(op, a.fmt));
  OCT_TRY(check_dtype(op, a.dtype));
  OCT_TRY(check_head(op, a.head_size));
  OCT_TRY(check_splits(op, a.num_splits, 0, OCT_PM_MAX_SPLITS));
  OCT_TRY(check_scale(op, a.sm_scale));
  OCT_TRY(check_count(op, "num_tokens", a.num_tokens, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_seqs", a.num_seqs, 0, INT32_MAX));
  OCT_TRY(check_count(op, "num_kv_heads", a.num_kv_heads, 1, INT32_MAX));
  OCT_TRY(check_count(op, "num_q_heads", a.num_q_heads, 1, 65535));
  if (a.num_q_heads % a.num_kv_heads)
    return oct_fail(OCTAVE_ERR_GQA, "%s: num_q_heads %d is not a multiple of num_kv_heads %d", op, a.num_q_heads,
                    a.num_kv_heads);
  OCT_TRY(check_count(op, "num_blocks", a.num_blocks, 1, INT32_MAX));
  OCT_TRY(check_count(op, "block_size", a.block_size, 1, INT32_MAX));
  OCT_TRY(check_count(op, "max_blocks", a.max_blocks, 0, INT32_MAX));
  OCT_TRY(check_count(op, "max_query_len", a.max_query_len, 0, INT32_MAX));
  OCT_TRY(check_acts(op, {{"out", a.out, a.out_stride_token, a.out_stride_head},
                          {"q", a.q, a.q_stride_token, a.q_stride_head},
                          {"k", a.k, a.k_stride_token, a.k_stride_head},
                          {"v", a.v, a.v_stride_token, a.v_stride_head}}));
  OCT_TRY(check_i32(op, "block_table", a.block_table));
  OCT_TRY(check_i32(op, "cu_seqlens_q", a.cu_seqlens_q));
  OCT_TRY(check_i32(op, "seq_lens", a.seq_lens));
  OCT_TRY(check_cache(op, a.fmt, a.cache, a.cache_stride_block, a.cache_stride_head, a.cache_stride_token));
  if (a.num_tokens == 0 || a.num_seqs == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "out", a.out, true));
  OCT_TRY(check_ptr(op, "q", a.q, true));
  OCT_TRY(check_ptr(op, "k", a.k, true));
  OCT_TRY(check_ptr(op, "v", a.v, true));
  OCT_TRY(check_ptr(op, "cu_seqlens_q", a.cu_seqlens_q, true));
  OCT_TRY(check_ptr(op, "seq_lens", a.seq_lens, true));
  OCT_TRY(check_ptr(op, "block_table", a.block_table, a.max_blocks > 0));
  // The mma tier's grid: one workgroup per OCT_PM_PAIRS (row, query head) pairs of a KV head.
  const int32_t group = a.num_q_heads / a.num_kv_heads;
  const int64_t pm_tiles = ((int64_t)a.num_tokens * group + OCT_PM_PAIRS - 1) / OCT_PM_PAIRS;  // per KV head
  if (a.tier == OCTAVE_TIER_MMA && a.dtype == OCTAVE_DTYPE_F16 && pm_tiles > INT32_MAX)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: grid too large: num_tokens %d x G %d = %lld (row, head) pairs make more than 2^31 - 1 "
                    "workgroups of %d on the mma tier",
                    op, a.num_tokens, group, (long long)a.num_tokens * group, (int)OCT_PM_PAIRS);

  OctPrefillParams p;
  memset(&p, 0, sizeof p);
  p.out = (uint16_t*)a.out, p.q = (const uint16_t*)a.q, p.k = (const uint16_t*)a.k, p.v = (const uint16_t*)a.v;
  p.cache = a.cache, p.block_table = a.block_table, p.cu_seqlens = a.cu_seqlens_q, p.seq_lens = a.seq_lens;
  p.o_st = a.out_stride_token, p.o_sh = a.out_stride_head, p.q_st = a.q_stride_token, p.q_sh = a.q_stride_head;
  p.k_st = a.k_stride_token, p.k_sh = a.k_stride_head, p.v_st = a.v_stride_token, p.v_sh = a.v_stride_head;
  p.c_sb = a.cache_stride_block, p.c_sh = a.cache_stride_head, p.c_st = a.cache_stride_token;
  p.kv_max = (int64_t)a.max_blocks * a.block_size;
  p.fmt = a.fmt, p.dtype = a.dtype, p.rows = a.num_tokens, p.num_seqs = a.num_seqs;
  p.hq = a.num_q_heads, p.hkv = a.num_kv_heads, p.g = group;
  p.num_blocks = a.num_blocks, p.block_size = a.block_size, p.max_blocks = a.max_blocks;
  oct_bs_magic(a.block_size, p.bs_mul, p.bs_sh);  // (block_size >= 1: validated above)
  p.score_scale = (float)((double)a.sm_scale * kLog2e);
  p.splits = 1;
  if (a.tier == OCTAVE_TIER_MMA && a.dtype == OCTAVE_DTYPE_F16) {
    const int splits = a.num_splits > 0 ? a.num_splits
                                         : oct_pm_auto_splits(pm_tiles * a.num_kv_heads, ctx->props.multiProcessorCount, p.kv_max);
    std::lock_guard<std::mutex> lock(ctx->pm_mu);  // the workspace: from its sizing through the merge's launch
    if (splits > 1) {
      const uint64_t bytes = (uint64_t)splits * (uint64_t)a.num_tokens * (uint64_t)a.num_q_heads * OCT_PM_PSTRIDE * 4;
      const int st = oct_pm_workspace(ctx, bytes, op, a.num_splits > 0);
      if (st != OCTAVE_OK) return st;
      if (ctx->pm_ws_bytes >= bytes) p.splits = splits, p.ws = (float*)ctx->pm_ws;
    }
    OCT_LAUNCHED(op, "octave_prefill_mma_kernel", oct_launch_prefill_mma(p));
    return OCTAVE_OK;
  }
  if (a.tier == OCTAVE_TIER_WMMA) OCT_LAUNCHED(op, "octave_prefill_wmma_kernel", oct_launch_prefill_wmma(p));
  else if (a.tier == OCTAVE_TIER_MFMA) OCT_LAUNCHED(op, "octave_prefill_mfma_kernel", oct_launch_prefill_mfma(p));
  else if (a.tier == OCTAVE_TIER_MMA) OCT_LAUNCHED(op, "octave_prefill_mma_kernel", oct_launch_prefill_mma(p));
  else OCT_LAUNCHED(op, "octave_prefill_fp32_kernel", oct_launch_prefill(p));
  return OCTAVE_OK;
}

int32_t octave_query_maps(octave_ctx* ctx, const octave_query_maps_args* in) {
  const char* op = "query_maps";
  octave_query_maps_args a;
  OCT_TRY(oct_args(in, a, op));
  OCT_TRY(oct_enter(ctx, op));
  OCT_TRY(check_count(op, "num_reqs", a.num_reqs, 0, INT32_MAX - 1));
  OCT_TRY(check_count(op, "num_q", a.num_q, 0, INT32_MAX));
  OCT_TRY(check_i32(op, "query_start_loc", a.query_start_loc));
  OCT_TRY(check_i32(op, "seq_lens", a.seq_lens));
  OCT_TRY(check_i32(op, "q_to_req", a.q_to_req));
  OCT_TRY(check_i32(op, "q_to_klen", a.q_to_klen));
  if (a.num_q == 0) return OCTAVE_OK;
  OCT_TRY(check_ptr(op, "query_start_loc", a.query_start_loc, a.num_reqs > 0));
  OCT_TRY(check_ptr(op, "seq_lens", a.seq_lens, a.num_reqs > 0));
  OCT_TRY(check_ptr(op, "q_to_req", a.q_to_req, true));
  OCT_TRY(check_ptr(op, "q_to_klen", a.q_to_klen, true));
  OctQueryMapsParams p;
  p.qsl = a.query_start_loc, p.seq_lens = a.seq_lens, p.q_to_req = a.q_to_req, p.q_to_klen = a.q_to_klen;
  p.num_reqs = a.num_reqs, p.num_q = a.num_q;
  OCT_LAUNCHED(op, "octave_query_maps_kernel", oct_launch_query_maps(p));
  return OCTAVE_OK;
}

}  // extern "C"
