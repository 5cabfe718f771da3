"""A stand-in for vLLM's extension in CI (docs/adapters.md, "The vLLM-schema adapter"): it registers
vLLM's four Octave op schemas on torch.ops._C for the CPU dispatch key, each forwarding to an
Octave C library through ctypes with the tensors' data_ptr()s. The library is the CPU emulator,
OCTANT_FAKE_VLLM_LIB or else build/liboctave_emu.so of the repository this file is in.

As vLLM's ops do, it takes every size from the tensors' shapes, returns nothing, and raises a
RuntimeError where the library refuses a call. use_wmma picks the library's WMMA tier (id 1) when
it lists one and silently runs the portable tier otherwise; prefill runs the WMMA tier (vLLM's
has no tier argument). Its decode runs in a workspace of its own (partial_stride 260, the C ABI's
multiple of 4) and copies the 258 floats of every partial row into mid_o [num_q, Hq, splits, 258],
as vLLM's mid_o is laid out.
"""
import ctypes
import os

import torch

from octant_worker import abi

NAMESPACE = "_C"
SCHEMAS = [
    "octave_cache_store(Tensor key, Tensor value, Tensor! cache, Tensor slot_mapping, Tensor k_signs, "
    "Tensor v_signs, int fmt) -> ()",
    "octave_decode(Tensor! out, Tensor query, Tensor cache, Tensor block_table, Tensor q_to_req, Tensor q_to_klen, "
    "Tensor! mid_o, Tensor k_signs, Tensor v_signs, float sm_scale, int num_kv_splits, int fmt, int query_group, "
    "bool use_wmma) -> ()",
    "octave_rotate(Tensor! x, Tensor signs, bool k_layout, bool inverse) -> ()",
    "octave_prefill(Tensor! out, Tensor q, Tensor k, Tensor v, Tensor cache, Tensor block_table, Tensor cu_seqlens_q, "
    "Tensor seq_lens, int max_query_len, float sm_scale, int fmt) -> ()",
]
WS_STRIDE = 260

_here = os.path.dirname(os.path.abspath(__file__))
LIB_PATH = os.environ.get("OCTANT_FAKE_VLLM_LIB") or os.path.join(_here, "..", "..", "..", "build", "liboctave_emu.so")

_lib = ctypes.CDLL(LIB_PATH)
_lib.octave_last_error.restype = ctypes.c_char_p
_lib.octave_status_name.restype = ctypes.c_char_p
_lib.octave_status_name.argtypes = [ctypes.c_int32]
_lib.octave_open.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
_ctx = ctypes.c_void_p()
if _lib.octave_open(0, ctypes.byref(_ctx)):
    raise RuntimeError(f"fake_vllm_ext: octave_open of {LIB_PATH}: {_lib.octave_last_error().decode()}")
_n = ctypes.c_int32()
_lib.octave_tiers(_ctx, None, 0, ctypes.byref(_n))
_tiers = (ctypes.c_int32 * 48 * max(_n.value, 1))()  # octave_tier_desc is 4+4+32+32+32 = 104 bytes; ids first
_lib.octave_tiers(_ctx, ctypes.cast(_tiers, ctypes.c_void_p), _n.value, ctypes.byref(_n))
_raw = bytes(_tiers)
HAS_WMMA = any(int.from_bytes(_raw[104 * i:104 * i + 4], "little") == 1 for i in range(_n.value))

DTYPES = {torch.float16: 1, torch.bfloat16: 2}


def _call(op, **fields):
    layout = abi.LAYOUTS[op]
    args = abi.Args({name: 0 for name, _ in layout.fields})
    for name, code in layout.fields:
        if code == "8I":
            args[name] = [0] * 8
    args.update(fields)
    args.struct_size = layout.size
    buf = ctypes.create_string_buffer(layout.pack(args))
    status = getattr(_lib, abi.ENTRY[op])(_ctx, buf)
    if status:
        raise RuntimeError(f"{abi.ENTRY[op]}: {_lib.octave_status_name(status).decode()}: "
                           f"{_lib.octave_last_error().decode()}")


def _words(signs):
    return [int(x) & 0xFFFFFFFF for x in signs.tolist()]


def _act(prefix, t):
    return {prefix: t.data_ptr(), prefix + "_stride_token": t.stride(0), prefix + "_stride_head": t.stride(1)}


def _cache(c):
    return {"cache": c.data_ptr(), "cache_stride_block": c.stride(0), "cache_stride_head": c.stride(1),
            "cache_stride_token": c.stride(2), "num_blocks": c.shape[0], "block_size": c.shape[2]}


def cache_store(key, value, cache, slot_mapping, k_signs, v_signs, fmt):
    _call("store", **_act("key", key), **_act("value", value), **_cache(cache), slot_mapping=slot_mapping.data_ptr(),
          fmt=fmt, dtype=DTYPES[key.dtype], head_size=key.shape[2], num_tokens=key.shape[0],
          num_kv_heads=key.shape[1], k_signs=_words(k_signs), v_signs=_words(v_signs))


def decode(out, query, cache, block_table, q_to_req, q_to_klen, mid_o, k_signs, v_signs, sm_scale, num_kv_splits,
           fmt, query_group, use_wmma):
    nq, hq = query.shape[0], query.shape[1]
    ws = torch.empty(max(nq * hq * num_kv_splits * WS_STRIDE, 1), dtype=torch.float32)
    _call("decode", **_act("out", out), **_act("query", query), **_cache(cache), block_table=block_table.data_ptr(),
          q_to_req=q_to_req.data_ptr(), q_to_klen=q_to_klen.data_ptr(), partials=ws.data_ptr(),
          partials_bytes=4 * ws.numel(), fmt=fmt, dtype=DTYPES[query.dtype], head_size=query.shape[2],
          tier=1 if use_wmma and HAS_WMMA else 0, num_q=nq, num_q_heads=hq, num_kv_heads=cache.shape[1],
          num_reqs=block_table.shape[0], max_blocks=block_table.shape[1], num_splits=num_kv_splits,
          query_group=query_group, partial_stride=WS_STRIDE, sm_scale=sm_scale,
          k_signs=_words(k_signs), v_signs=_words(v_signs))
    if nq:
        mid_o.copy_(ws[:nq * hq * num_kv_splits * WS_STRIDE].view(nq, hq, num_kv_splits, WS_STRIDE)[..., :mid_o.shape[3]])


def rotate(x, signs, k_layout, inverse):
    _call("rotate", x=x.data_ptr(), stride_token=x.stride(0), stride_head=x.stride(1), dtype=DTYPES[x.dtype],
          head_size=x.shape[2], num_tokens=x.shape[0], num_heads=x.shape[1], k_layout=int(k_layout),
          inverse=int(inverse), signs=_words(signs))


def prefill(out, q, k, v, cache, block_table, cu_seqlens_q, seq_lens, max_query_len, sm_scale, fmt):
    _call("prefill", **_act("out", out), **_act("q", q), **_act("k", k), **_act("v", v), **_cache(cache),
          block_table=block_table.data_ptr(), cu_seqlens_q=cu_seqlens_q.data_ptr(), seq_lens=seq_lens.data_ptr(),
          fmt=fmt, dtype=DTYPES[q.dtype], head_size=q.shape[2], tier=1 if HAS_WMMA else 0, num_tokens=q.shape[0],
          num_seqs=seq_lens.shape[0], num_q_heads=q.shape[1], num_kv_heads=k.shape[1],
          max_blocks=block_table.shape[1], max_query_len=max_query_len, sm_scale=sm_scale)


# The library object must live as long as the ops: it is kept in the module.
LIBRARY = torch.library.Library(NAMESPACE, "DEF")
for _schema, _fn in zip(SCHEMAS, (cache_store, decode, rotate, prefill)):
    LIBRARY.define(_schema)
    LIBRARY.impl(_schema.split("(", 1)[0], _fn, "CPU")
