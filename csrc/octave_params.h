// Kernel parameter blocks (passed by value) and the host launch wrappers each kernel file defines.
// These are internal: the public ABI is include/octave_capi.h; capi_ops.cpp validates the ABI
// structs and fills these.
#pragma once

#include "octave_compat.h"
#include "octave_format.h"
#include "octave_mutant.h"

enum { OCT_THREADS = 128, OCT_WAVES = 4 };  // every kernel: 4 logical waves per workgroup

// The mma prefill's warps per workgroup (prefill_mma.hip), each holding 16 (row, query head) pairs:
// the host's grid check uses the same count. 8 warps share each decoded tile (on the H200
// q2ks100k-pf takes 10.80 ms with 8, 11.21 with 4).
// With prefix splits (octave_prefill's num_splits) each split writes one partial of
// OCT_PM_PSTRIDE floats per (row, query head): o[256] unnormalized, m in log2 units, l.
// The wgmma self-test's per-problem B words (mma_selftest.hip): a header, then the shared image.
enum { OCT_WG_HEADER = 4, OCT_WG_IMAGE = 8192 };
enum { OCT_PM_WARPS = 8, OCT_PM_PAIRS = 16 * OCT_PM_WARPS, OCT_PM_MAX_SPLITS = 64, OCT_PM_PSTRIDE = 260 };

struct OctStoreParams {
  const uint16_t* key;
  const uint16_t* value;
  uint8_t* cache;
  const int64_t* slot_mapping;
  int64_t k_st, k_sh, v_st, v_sh;  // elements
  int64_t c_sb, c_sh, c_st;        // bytes
  int64_t num_slots;               // num_blocks * block_size
  int32_t fmt, dtype, n, hkv, block_size, pad;
  uint32_t k_signs[8], v_signs[8];
};

struct OctRotateParams {
  uint16_t* x;
  int64_t st, sh;
  int32_t dtype, rows, heads, block64, inverse, pad;
  uint32_t signs[8];
};

struct OctDecodeParams {
  const uint16_t* query;
  const uint8_t* cache;
  const int32_t* block_table;
  const int32_t* q_to_req;
  const int32_t* q_to_klen;
  float* partials;
  int64_t q_st, q_sh;
  int64_t c_sb, c_sh, c_st;
  int64_t kv_max;     // max_blocks * block_size: the clamp of klen and the split geometry
  int64_t split_len;  // ceil(kv_max / num_splits)
  int32_t fmt, dtype, num_q, hq, hkv, g, num_reqs, num_blocks, block_size, max_blocks, num_splits,
      qgroup, pstride,
      wpc,            // mma tier: workgroups per row chunk, which share its passes (the launcher sets it)
      sms;            // the device's SMs (CUs): the mma decode's warp count depends on it
  uint32_t g_mul;     // ⌈2^20 / g⌉: q / g = (q · g_mul) >> 20 for 0 <= q < 4096 (the mma decode's query index)
  uint32_t bs_mul;    // oct_bs_magic's multiplier and shift: t / block_size = oct_bs_div(t, bs_mul, bs_sh)
  int32_t bs_sh;      // for 0 <= t < 2^31 (the mma decode's block index)
  float score_scale;  // sm_scale * log2(e) / 64
  uint32_t k_signs[8];
};

// The block index t / bs (0 <= t < 2^31, 1 <= bs <= INT32_MAX) as a multiply and a shift:
// oct_bs_magic (host) gives sh = 31 + s, s = ⌈log2 bs⌉, and mul = ⌈2^sh / bs⌉ < 2^32;
// oct_bs_div(t, mul, sh) = (t · mul) >> sh. Exact: mul = (2^sh + e) / bs with 0 <= e < bs, so
// t·mul / 2^sh exceeds t / bs by t·e / (bs·2^sh) < 2^31·2^s / 2^(31+s) / bs = 1 / bs, too little to
// reach the next integer. octave_blockdiv_selftest checks it (grids/blockdiv_test.go).
// (mutant OCT_MUT_DECODE_MMA_BLOCK_DIV: mul rounded down, exact only for powers of two)
OCT_HD void oct_bs_magic(int32_t bs, uint32_t& mul, int32_t& sh) {
  int s = 0;
  while ((int64_t)1 << s < (int64_t)bs) s++;
  sh = 31 + s;
  const uint64_t up = OCT_MUTANT(OCT_MUT_DECODE_MMA_BLOCK_DIV) ? 0 : (uint64_t)bs - 1;
  mul = (uint32_t)((((uint64_t)1 << sh) + up) / (uint64_t)bs);
}
OCT_HD uint32_t oct_bs_div(uint32_t t, uint32_t mul, int32_t sh) { return (uint32_t)(((uint64_t)t * mul) >> sh); }

struct OctReduceParams {
  uint16_t* out;
  const float* partials;
  int64_t o_st, o_sh;
  int32_t dtype, num_q, hq, num_splits, pstride, pad;
  uint32_t v_signs[8];
};

struct OctPrefillParams {
  uint16_t* out;
  const uint16_t* q;
  const uint16_t* k;
  const uint16_t* v;
  const uint8_t* cache;
  const int32_t* block_table;
  const int32_t* cu_seqlens;
  const int32_t* seq_lens;
  int64_t o_st, o_sh, q_st, q_sh, k_st, k_sh, v_st, v_sh;
  int64_t c_sb, c_sh, c_st;
  int64_t kv_max;
  int32_t fmt, dtype, rows, num_seqs, hq, hkv, g, num_blocks, block_size, max_blocks;
  float score_scale;  // sm_scale * log2(e)
  int32_t splits;     // mma tier: prefix splits (grid z); > 1: partials to ws, then the merge
  float* ws;          // [rows][hq][splits][OCT_PM_PSTRIDE] floats: o[256], m (log2 units), l
  uint32_t bs_mul;    // oct_bs_magic's multiplier and shift: the block index of a prefix token,
  int32_t bs_sh;      // oct_bs_div(t, bs_mul, bs_sh) = t / block_size for 0 <= t < 2^31
};

struct OctQueryMapsParams {
  const int32_t* qsl;
  const int32_t* seq_lens;
  int32_t* q_to_req;
  int32_t* q_to_klen;
  int32_t num_reqs, num_q;
};

// octave_wmma_selftest (octave_selftest.h, tests only): raw per-lane registers in and out.
struct OctWmmaSelftestParams {
  const uint32_t* a;
  const uint32_t* b;
  const uint32_t* c;
  uint32_t* d;
  int32_t form, flags, n, pad;
};

// octave_mfma_selftest (octave_selftest.h, tests only): raw per-lane registers in and out.
struct OctMfmaSelftestParams {
  const uint32_t* a;
  const uint32_t* b;
  const uint32_t* c;
  uint32_t* d;
  int32_t form, n;
};

// octave_mma_selftest (octave_selftest.h, tests only): raw per-lane registers in and out.
struct OctMmaSelftestParams {
  const uint32_t* a;
  const uint32_t* b;
  const uint32_t* c;
  uint32_t* d;
  int32_t form, n;
};

// Launch wrappers: enqueue the kernel and return the runtime's launch status.
hipError_t oct_launch_store(const OctStoreParams& p);
hipError_t oct_launch_rotate(const OctRotateParams& p);
hipError_t oct_launch_decode(const OctDecodeParams& p);
hipError_t oct_launch_decode_wmma(const OctDecodeParams& p);  // split_len: the WMMA tier's geometry
// The mma decode's numeric profile (csrc/decode_mma.h): OCT_DM_INT8K 1 (default) computes
// int8rowq (the query in int8 with one scale per row, the K codebook bytes straight into
// m16n8k32.s8, P' with the factor 64); 0 computes wmma-f16q (fp16 query and K codebook values,
// m16n8k16), the WMMA tier's decode profile. The int8-K decode has no fp16 spreading of K: big
// 0.4587 ms against 0.4819 at 66 splits, q1s100k and q4s100k equal. The tier declares what it
// computes; `make emu-test` also runs the fp16 build (the emulator variants f16k and f16kq).
#ifndef OCT_DM_INT8K
#define OCT_DM_INT8K 1
#endif
#define OCT_MMA_DECODE_PROFILE (OCT_DM_INT8K ? "int8rowq" : "wmma-f16q")
hipError_t oct_launch_decode_mma(const OctDecodeParams& p);   // split_len: the WMMA tier's geometry
hipError_t oct_launch_decode_mfma(const OctDecodeParams& p);  // split_len: the WMMA tier's geometry (decode_mfma.hip)
hipError_t oct_launch_wmma_selftest(const OctWmmaSelftestParams& p);
hipError_t oct_launch_mma_selftest(const OctMmaSelftestParams& p);
hipError_t oct_launch_mfma_selftest(const OctMfmaSelftestParams& p);
hipError_t oct_launch_reduce(const OctReduceParams& p);
hipError_t oct_launch_reduce_mfma(const OctReduceParams& p);  // the mfma tier's reduce (reduce_mfma.hip)
hipError_t oct_launch_prefill(const OctPrefillParams& p);
hipError_t oct_launch_prefill_wmma(const OctPrefillParams& p);  // the WMMA tier (prefill_wmma.hip)
hipError_t oct_launch_prefill_mma(const OctPrefillParams& p);   // the mma tier (prefill_mma.hip)
hipError_t oct_launch_prefill_mfma(const OctPrefillParams& p);  // the mfma tier (prefill_mfma.hip)
hipError_t oct_launch_prefill_mma_merge(const OctPrefillParams& p);  // its split merge (prefill_mma_merge.hip)
hipError_t oct_launch_query_maps(const OctQueryMapsParams& p);

// After OCT_LAUNCH: the launch status (hipGetLastError, cudaGetLastError, or the emulator's).
inline hipError_t oct_launch_status() { return hipGetLastError(); }
