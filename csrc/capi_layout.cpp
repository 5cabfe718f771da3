// Pins the byte layout of every ABI struct: the Go binding mirrors these offsets (docs/kernels.md).
#include <stddef.h>

#include "octave_capi.h"

#define OCT_AT(T, f, off) static_assert(offsetof(T, f) == (off), #T "." #f " moved")

static_assert(sizeof(octave_device_info) == 368, "octave_device_info size");
OCT_AT(octave_device_info, total_memory, 8);
OCT_AT(octave_device_info, wave_size, 20);
OCT_AT(octave_device_info, name, 32);
OCT_AT(octave_device_info, arch, 288);
OCT_AT(octave_device_info, runtime, 352);

static_assert(sizeof(octave_tier_desc) == 104, "octave_tier_desc size");
OCT_AT(octave_tier_desc, name, 8);
OCT_AT(octave_tier_desc, decode_profile, 40);
OCT_AT(octave_tier_desc, prefill_profile, 72);

static_assert(sizeof(octave_store_args) == 200, "octave_store_args size");
OCT_AT(octave_store_args, key, 8);
OCT_AT(octave_store_args, slot_mapping_host, 40);
OCT_AT(octave_store_args, key_stride_token, 48);
OCT_AT(octave_store_args, cache_stride_block, 80);
OCT_AT(octave_store_args, fmt, 104);
OCT_AT(octave_store_args, reserved0, 132);
OCT_AT(octave_store_args, k_signs, 136);
OCT_AT(octave_store_args, v_signs, 168);

static_assert(sizeof(octave_rotate_args) == 88, "octave_rotate_args size");
OCT_AT(octave_rotate_args, x, 8);
OCT_AT(octave_rotate_args, stride_token, 16);
OCT_AT(octave_rotate_args, dtype, 32);
OCT_AT(octave_rotate_args, k_layout, 48);
OCT_AT(octave_rotate_args, inverse, 52);
OCT_AT(octave_rotate_args, signs, 56);

static_assert(sizeof(octave_decode_args) == 256, "octave_decode_args size");
OCT_AT(octave_decode_args, out, 8);
OCT_AT(octave_decode_args, partials, 56);
OCT_AT(octave_decode_args, partials_bytes, 64);
OCT_AT(octave_decode_args, out_stride_token, 72);
OCT_AT(octave_decode_args, cache_stride_block, 104);
OCT_AT(octave_decode_args, fmt, 128);
OCT_AT(octave_decode_args, num_q, 144);
OCT_AT(octave_decode_args, num_blocks, 160);
OCT_AT(octave_decode_args, query_group, 176);
OCT_AT(octave_decode_args, partial_stride, 180);
OCT_AT(octave_decode_args, sm_scale, 184);
OCT_AT(octave_decode_args, reserved0, 188);
OCT_AT(octave_decode_args, k_signs, 192);
OCT_AT(octave_decode_args, v_signs, 224);

static_assert(sizeof(octave_reduce_args) == 104, "octave_reduce_args size");
OCT_AT(octave_reduce_args, partials, 16);
OCT_AT(octave_reduce_args, partials_bytes, 24);
OCT_AT(octave_reduce_args, out_stride_token, 32);
OCT_AT(octave_reduce_args, dtype, 48);
OCT_AT(octave_reduce_args, num_splits, 64);
OCT_AT(octave_reduce_args, partial_stride, 68);
OCT_AT(octave_reduce_args, v_signs, 72);

static_assert(sizeof(octave_prefill_args) == 216, "octave_prefill_args size");
OCT_AT(octave_prefill_args, out, 8);
OCT_AT(octave_prefill_args, seq_lens, 64);
OCT_AT(octave_prefill_args, out_stride_token, 72);
OCT_AT(octave_prefill_args, cache_stride_block, 136);
OCT_AT(octave_prefill_args, fmt, 160);
OCT_AT(octave_prefill_args, num_tokens, 176);
OCT_AT(octave_prefill_args, num_blocks, 192);
OCT_AT(octave_prefill_args, max_query_len, 204);
OCT_AT(octave_prefill_args, sm_scale, 208);
OCT_AT(octave_prefill_args, num_splits, 212);

static_assert(sizeof(octave_query_maps_args) == 48, "octave_query_maps_args size");
OCT_AT(octave_query_maps_args, q_to_klen, 32);
OCT_AT(octave_query_maps_args, num_reqs, 40);
OCT_AT(octave_query_maps_args, num_q, 44);
