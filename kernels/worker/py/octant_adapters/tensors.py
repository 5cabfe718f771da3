"""An op's ABI arguments as the torch tensors of vLLM's Octave op schemas (docs/adapters.md,
"The vLLM-schema adapter"), shared by vllm_ops.py and callables.py.

Every tensor is a view of the worker's arena (Memory.tensor) made with as_strided and the exact
strides of the ABI struct, so that an op writes nothing the bridge did not bound and the judges'
canaries and the arena's guards see every write; nothing here allocates device memory:

    cache        uint8 [num_blocks, Hkv, block_size, slot bytes], strides the three byte strides, 1
    activations  fp16/bf16 [rows, heads, 256], strides (stride_token, stride_head, 1) elements
    block_table  int32 [rows, max_blocks] contiguous; maps, cu_seqlens_q, seq_lens int32 [n]
    slot_mapping int64 [num_tokens]
    signs        int32 [8] in the worker's sidecar (Memory.sidecar), checked unchanged after the op
    mid_o        fp32 [num_q, Hq, num_splits, P] contiguous over the start of the partials buffer,
                 P the declared partial_stride (vLLM's 258; the ABI's own stride when none is
                 declared): it fits, since the ABI's stride is at least 258

Each of store, rotate, decode and prefill returns the positional arguments of its vLLM op, in
schema order, up to its last argument that the ABI fixes (decode: query_group; use_wmma is the
caller's, from the tier).
"""
from octant_worker import abi
from octant_worker.adapter import OpError

HEAD = abi.HEAD


class Views:
    """Typed views of one Memory's arena tensor."""

    def __init__(self, mem):
        self.mem = mem
        self.u8 = mem.tensor()
        import torch
        self.torch = torch
        self.dtypes = {1: torch.float16, 2: torch.bfloat16}
        self.typed = {}

    def of(self, dtype):
        t = self.typed.get(dtype)
        if t is None:
            t = self.typed[dtype] = self.u8.view(dtype)
        return t

    def view(self, name, field, addr, dtype, shape, strides):
        """A view of the arena at real address addr (0 for a buffer the call does not touch: then
        an empty one) with the given shape and element strides."""
        torch = self.torch
        size = torch.tensor([], dtype=dtype).element_size()
        empty = any(s == 0 for s in shape)
        if addr == 0:
            if not empty:
                raise OpError(abi.INVALID_ARGUMENT, f"{name}: {field} is NULL")
            off = self.mem.arena.guard  # any offset inside the arena: the view has no element
        else:
            off = addr - self.mem.base
        if off % size:
            raise OpError(abi.ALIGNMENT, f"{name}: {field} = {addr:#x} is not {size}-byte aligned "
                                         f"(a {dtype} tensor needs its element size)")
        return torch.as_strided(self.of(dtype), shape, strides, off // size)

    def act(self, name, a, field, rows, heads):
        st, sh = a[field + "_stride_token"], a[field + "_stride_head"]
        return self.view(name, field, a[field], self.dtypes[a.dtype], (rows, heads, HEAD), (st, sh, 1))

    def ints(self, name, a, field, n, dtype=None):
        return self.view(name, field, a[field], dtype or self.torch.int32, (n,), (1,))

    def cache(self, name, a, hkv):
        return self.view(name, "cache", a.cache, self.torch.uint8,
                         (a.num_blocks, hkv, a.block_size, abi.SLOT_BYTES[a.fmt]),
                         (a.cache_stride_block, a.cache_stride_head, a.cache_stride_token, 1))

    def signs(self, names, words):
        """int32[8] tensors of the sign words, in the worker's sidecar."""
        addrs = self.mem.sidecar(names, words)
        return [self.view("signs", n, p, self.torch.int32, (8,), (1,)) for n, p in zip(names, addrs)]


def views(mem):
    """The Views of mem, made once."""
    v = getattr(mem, "_octant_views", None)
    if v is None:
        v = Views(mem)
        mem._octant_views = v
    return v


def store(a, mem):
    """octave_cache_store(key, value, cache!, slot_mapping, k_signs, v_signs, fmt)."""
    v = views(mem)
    n, h = a.num_tokens, a.num_kv_heads
    ks, vs = v.signs(("k_signs", "v_signs"), (a.k_signs, a.v_signs))
    return (v.act("cache_store", a, "key", n, h), v.act("cache_store", a, "value", n, h),
            v.cache("cache_store", a, h), v.ints("cache_store", a, "slot_mapping", n, v.torch.int64), ks, vs, a.fmt)


def rotate(a, mem):
    """octave_rotate(x!, signs, k_layout, inverse)."""
    v = views(mem)
    x = v.view("rotate", "x", a.x, v.dtypes[a.dtype], (a.num_tokens, a.num_heads, HEAD),
               (a.stride_token, a.stride_head, 1))
    (signs,) = v.signs(("signs",), (a.signs,))
    return x, signs, bool(a.k_layout), bool(a.inverse)


def decode(a, mem, partial_stride=None):
    """octave_decode(out!, query, cache, block_table, q_to_req, q_to_klen, mid_o!, k_signs,
    v_signs, sm_scale, num_kv_splits, fmt, query_group); partial_stride is the floats of a mid_o
    row the op writes (None: the ABI's own)."""
    v = views(mem)
    nq, hq = a.num_q, a.num_q_heads
    ps = partial_stride or a.partial_stride or 260
    need = 4 * nq * hq * a.num_splits * ps
    if need > mem.extents.get("partials", 0):
        raise OpError(abi.WORKSPACE, f"decode: mid_o [num_q {nq}, Hq {hq}, num_splits {a.num_splits}, {ps}] fp32 needs "
                                     f"{need} bytes, but the partials buffer has {mem.extents.get('partials', 0)}")
    shape = (nq, hq, a.num_splits, ps)
    mid_o = v.view("decode", "partials", a.partials if need else 0, v.torch.float32, shape,
                   (hq * a.num_splits * ps, a.num_splits * ps, ps, 1))
    ks, vs = v.signs(("k_signs", "v_signs"), (a.k_signs, a.v_signs))
    reqs = a.num_reqs if nq else 0
    table = v.view("decode", "block_table", a.block_table if reqs * a.max_blocks else 0, v.torch.int32,
                   (reqs, a.max_blocks), (a.max_blocks, 1))
    return (v.act("decode", a, "out", nq, hq), v.act("decode", a, "query", nq, hq), v.cache("decode", a, a.num_kv_heads),
            table, v.ints("decode", a, "q_to_req", nq), v.ints("decode", a, "q_to_klen", nq), mid_o, ks, vs,
            float(a.sm_scale), a.num_splits, a.fmt, a.query_group)


def prefill(a, mem):
    """octave_prefill(out!, q, k, v, cache, block_table, cu_seqlens_q, seq_lens, max_query_len,
    sm_scale, fmt). The op has no num_splits: a call that asks the mma tier for prefix splits
    (num_splits >= 1; other tiers ignore it) is refused as unsupported."""
    if abi.tier_id(a.tier_name) == abi.TIER_IDS["mma"] and a.num_splits:
        raise OpError(abi.UNSUPPORTED, f"prefill: num_splits = {a.num_splits} asks the mma tier to split each prefix; "
                                       f"the vLLM op schema has no num_splits (it chooses): only num_splits 0 is supported")
    v = views(mem)
    live = a.num_tokens > 0 and a.num_seqs > 0
    t = a.num_tokens if live else 0
    s = a.num_seqs if live else 0
    table = v.view("prefill", "block_table", a.block_table if s * a.max_blocks else 0, v.torch.int32,
                   (s, a.max_blocks), (a.max_blocks, 1))
    cu = v.view("prefill", "cu_seqlens_q", a.cu_seqlens_q if s else 0, v.torch.int32, (s + 1 if s else 0,), (1,))
    return (v.act("prefill", a, "out", t, a.num_q_heads), v.act("prefill", a, "q", t, a.num_q_heads),
            v.act("prefill", a, "k", t, a.num_kv_heads), v.act("prefill", a, "v", t, a.num_kv_heads),
            v.cache("prefill", a, a.num_kv_heads), table, cu, v.ints("prefill", a, "seq_lens", s),
            a.max_query_len, float(a.sm_scale), a.fmt)


OPS = {"store": store, "rotate": rotate, "decode": decode, "prefill": prefill}
