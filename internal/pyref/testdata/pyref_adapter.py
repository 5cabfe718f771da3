"""pyref: a second, independent implementation of the Octave ops store, rotate, decode, reduce
and query_maps in Python and numpy, written from docs/format.md and docs/contract.md, as a
subject for Octant's judges (docs/adapters.md, "A pure-Python implementation as a test subject").

    host:/abs/path/internal/pyref/testdata/pyref_adapter.py[?defect=NAME]

It runs in a worker in host mode (OCTANT_PYTHON: an interpreter with numpy) and reads and writes
the arena through numpy views that honour every stride of the call. Decode offers two tiers: the
portable tier (profile dot4-int8q, docs/contract.md §5) and wmma-model (profile wmma-f16q, the
WMMA tier's split geometry); both write the split partials of docs/contract.md §3.4 and merge them
with the reduce the reduce op runs. Arithmetic is float32 where the format fixes it bit for bit
(rotation, quantization, query quantization) and float64 where the profiles leave the order free
(scores, softmax, P·V, the merge), rounded once to the output dtype through float32.

The option defect=NAME plants one realistic defect (DEFECTS below); without it the implementation
is meant to be correct. The declared device is arch "emu": the registry's CPU architecture, whose
requirements (portable store, rotate, reduce, decode, prefill) are those a CPU implementation is
certified against, and which tells the judges that launches run one at a time (no races to look
for). Prefill is not implemented and not declared.
"""
import math

import numpy as np

from octant_worker import abi
from octant_worker.adapter import OpError

OPTIONS = ("defect",)

# The planted defects, each the kind of slip a kernel engineer makes, and where it lives.
DEFECTS = {
    "scale-rounding": "store: the fp16 scale is converted by dropping the low mantissa bits (round toward zero) instead of "
                      "rounding to nearest even",
    "causal-off-by-one": "decode: a row attends to tokens 0..klen (an inclusive bound), one key past its causal length",
    "gqa-mapping": "decode: query head h reads KV head h % Hkv instead of h // G",
    "stale-workspace": "decode: a split past the row's klen returns without writing its partial row (m = -inf, l = 0), "
                       "and the merge reads whatever the workspace held",
    "tier-fallback": "decode: asked wmma-model, runs the portable arithmetic and reports portable",
    "tier-fallback-silent": "decode: asked wmma-model, runs the portable arithmetic and reports nothing (None)",
    "raise-on-valid": "store and decode: the slot index math uses shifts and masks and raises on a block size that is "
                      "not a power of two",
}

DECLARATION = {
    "contract": 1,
    "ops": {
        "store": {},
        "rotate": {},
        "decode": {"tiers": {"portable": "dot4-int8q", "wmma-model": "wmma-f16q"}},
        "reduce": {},
        "query_maps": {},
    },
    "formats": [3, 4, 19],
    "dtypes": ["fp16", "bf16"],
    "info": {"name": "pyref: the Octave ops in Python and numpy", "arch": "emu", "runtime": "python+numpy",
             "wave_size": 32, "logical_wave": 32, "compute_units": 1},
    "build_info": "internal/pyref/testdata/pyref_adapter.py",
}

_defect = None

D = 256
LUT_ONE = 64.0
LUT_MULT = {3: np.float32(59.0), 4: np.float32(46.0)}
LUT = {3: np.array([-127, -79, -45, -14, 14, 45, 79, 127], dtype=np.int8),
       4: np.array([-126, -95, -74, -58, -43, -30, -18, -6, 6, 18, 30, 43, 58, 74, 95, 126], dtype=np.int8)}
THRESHOLDS = {b: ((LUT[b][:-1].astype(np.float32) + LUT[b][1:].astype(np.float32)) / np.float32(2)) for b in (3, 4)}
LOG2E = 1.4426950408889634
WMMA_MAX_SPLITS = 192


def setup(options):
    """Takes defect=NAME (one of DEFECTS) and returns the declaration."""
    global _defect
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"pyref: unknown options {unknown}, expected some of {list(OPTIONS)}")
    d = options.get("defect", "") or None
    if d is not None and d not in DEFECTS:
        raise ValueError(f"pyref: defect={d!r}, expected one of {sorted(DEFECTS)} (or no defect option)")
    _defect = d
    decl = dict(DECLARATION)
    decl["build_info"] = DECLARATION["build_info"] + (f" with the planted defect {d}" if d else " (no planted defect)")
    return decl


# ---- format (docs/format.md §5) ----

class Fmt:
    """A format id's layout at head 256, rope 64."""

    def __init__(self, fid):
        self.id = fid
        self.compact = fid == 19
        self.v_bits = 4 if fid == 4 else 3
        kw = 0 if self.compact else 64
        self.kw = kw
        self.off_k_nope = kw * 4 // 8
        self.off_v = self.off_k_nope + (D - kw) * 3 // 8
        self.off_scales = self.off_v + D * self.v_bits // 8
        self.num_k_scales = 1 if self.compact else D // 64
        self.num_scales = self.num_k_scales + 1
        self.written = self.off_scales + 2 * self.num_scales  # code and scale bytes: the pad is never written
        self.slot_bytes = abi.SLOT_BYTES[fid]
        self.k_block = D if self.compact else 64
        self.align = 4 if self.compact else 8


# ---- dtype conversion ----

def f32_to_f16_bits(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def f32_to_bf16_bits(x):
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((b >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), r)


def bits_to_f32(u16, dtype):
    if dtype == 1:
        return u16.view(np.float16).astype(np.float32)
    return (u16.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bits(x, dtype):
    """An output's bits. A NaN is written as the one positive quiet NaN: numpy's loops pick a NaN
    operand's payload and sign (inf - inf gives the negative default NaN on x86) by path and
    memory alignment, and two runs on the same inputs must be bit-identical."""
    x = np.where(np.isnan(x), np.float32("nan"), x).astype(np.float32)
    return f32_to_f16_bits(x) if dtype == 1 else f32_to_bf16_bits(x)


def f16_trunc_bits(x):
    """fp16 bits of float32 x rounded toward zero (the scale-rounding defect's conversion)."""
    h = np.asarray(x, dtype=np.float32).astype(np.float16)
    over = np.isfinite(x) & (np.abs(h.astype(np.float32)) > np.abs(x))
    bits = h.view(np.uint16).copy()
    bits[over] -= np.uint16(1)  # one fp16 ulp toward zero (the magnitude bits are ordered)
    return bits


# ---- memory views ----

def byte_view(mem, addr, n):
    if n == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(mem.buffer(addr, n), dtype=np.uint8)


def act_view(mem, addr, n, rows, heads, st, sh):
    """[rows][heads][256] uint16 elements at element strides st, sh (a writable view)."""
    buf = byte_view(mem, addr, n)
    return np.lib.stride_tricks.as_strided(buf.view(np.uint16), shape=(rows, heads, D), strides=(2 * st, 2 * sh, 2))


def cache_view(mem, a, hkv, f):
    buf = byte_view(mem, a.cache, mem.extents["cache"])
    return np.lib.stride_tricks.as_strided(buf, shape=(a.num_blocks, hkv, a.block_size, f.slot_bytes),
                                           strides=(a.cache_stride_block, a.cache_stride_head, a.cache_stride_token, 1))


def i32_array(mem, addr, n):
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    return np.frombuffer(mem.buffer(addr, 4 * n), dtype=np.int32)


# ---- checks the worker leaves to the adapter (docs/adapters.md) ----

def check_align(op, name, addr, align, what):
    r = addr % align
    if addr and r:
        raise OpError(abi.ALIGNMENT, f"{op}: {name} = {addr:#x} is misaligned by {r} byte{'s' if r > 1 else ''}: {what} "
                                     f"need {align}-byte alignment")


def check_cache(op, a, f):
    for s in ("cache_stride_block", "cache_stride_head", "cache_stride_token"):
        if a[s] % f.align:
            raise OpError(abi.STRIDE, f"{op}: {s} = {a[s]} bytes, expected a non-negative multiple of {f.align} for "
                                      f"format {f.id} (so that every slot stays {f.align}-byte aligned)")
    check_align(op, "cache", a.cache, f.align, "format 19 slots" if f.compact else "format 3 and 4 slots")


def check_reserved(op, a):
    if a.reserved0:
        raise OpError(abi.INVALID_ARGUMENT, f"{op}: reserved0 = {a.reserved0}, expected 0")


def block_index(op, block_size):
    """How a flat position splits into (block, offset): divmod; with the raise-on-valid defect,
    shifts and masks that assume a power-of-two block size."""
    if _defect != "raise-on-valid":
        return lambda p: (p // block_size, p % block_size)
    shift = block_size.bit_length() - 1
    if (1 << shift) != block_size:
        raise ValueError(f"{op}: block_size {block_size} is not a power of two")
    mask = block_size - 1
    return lambda p: (p >> shift, p & mask)


# ---- signs, rotation (docs/format.md §2, §3) ----

def signs(words):
    w = np.array(words, dtype=np.uint32)
    bits = (w[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & np.uint32(1)
    return np.where(bits.reshape(D) == 1, np.float32(-1), np.float32(1)).astype(np.float32)


def fwht(x, block):
    """The normalised FWHT of float32 x (..., 256) in blocks of `block`: butterfly stages h = 1, 2,
    4, ... in float32, then x 1/sqrt(block) (exact)."""
    shape = x.shape
    y = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, D // block, block)
    h = 1
    while h < block:
        y = y.reshape(y.shape[0], D // block, block // (2 * h), 2, h)
        a, b = y[:, :, :, 0, :], y[:, :, :, 1, :]
        y = np.stack((a + b, a - b), axis=3)
        h *= 2
    return (y.reshape(shape) * np.float32(1.0 / math.sqrt(block))).astype(np.float32)


def rotate_f32(x, sg, block):
    return fwht(x * sg, block)


def unrotate_f32(y, sg, block):
    return fwht(y, block) * sg


# ---- quantization and packing (docs/format.md §4, §5) ----

def quantize(x, bits, fp16_scale):
    """Codes (uint8) and fp16 scale bits of float32 groups x (N, n)."""
    n = x.shape[1]
    finite = np.isfinite(x).all(axis=1)
    x = np.where(finite[:, None], x, np.float32(0))
    ss = (x * x).astype(np.float64).sum(axis=1).astype(np.float32)
    rms = np.maximum(np.sqrt(ss / np.float32(n)), np.float32(1e-12)).astype(np.float32)
    y = (x / rms[:, None]) * LUT_MULT[bits]
    codes = np.searchsorted(THRESHOLDS[bits], y, side="left").astype(np.uint8)
    dot = (x * LUT[bits][codes].astype(np.float32)).astype(np.float64).sum(axis=1).astype(np.float32)
    safe = np.where(dot > 0, dot, np.float32(1))
    scale = np.where(dot > 0, np.float32(LUT_ONE) * (ss / safe), np.float32(0)).astype(np.float32)
    return codes, fp16_scale(scale)


def pack4(c):
    """Dims 8w..8w+7 in bytes 4w..4w+3: byte j holds dim j (low nibble) and dim j+4 (high)."""
    w = c.reshape(c.shape[0], -1, 8)
    return (w[:, :, :4] | (w[:, :, 4:] << 4)).reshape(c.shape[0], -1).astype(np.uint8)


def pack3(c):
    """The 2-bit plane (lo of dim d in byte 4(d/16) + d%4 at bit 2((d%16)/4)), then the 1-bit plane
    (hi of dim d in byte 4(d/32) + d%4 at bit (d%32)/4)."""
    N, n = c.shape
    lo = (c & 3).reshape(N, n // 16, 4, 4).astype(np.uint8)  # [group][i][j]: dim 16g + 4i + j
    hi = (c >> 2).reshape(N, n // 32, 8, 4).astype(np.uint8)
    p2 = np.zeros((N, n // 16, 4), dtype=np.uint8)
    for i in range(4):
        p2 |= lo[:, :, i, :] << (2 * i)
    p1 = np.zeros((N, n // 32, 4), dtype=np.uint8)
    for i in range(8):
        p1 |= hi[:, :, i, :] << i
    return np.concatenate((p2.reshape(N, -1), p1.reshape(N, -1)), axis=1)


def unpack4(b):
    N = b.shape[0]
    w = b.reshape(N, -1, 4)
    return np.concatenate((w & 15, w >> 4), axis=2).reshape(N, -1)


def unpack3(b, n):
    N = b.shape[0]
    p2 = b[:, :n // 4].reshape(N, n // 16, 1, 4)
    p1 = b[:, n // 4:n // 4 + n // 8].reshape(N, n // 32, 1, 4)
    lo = (p2 >> (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]) & 3
    hi = (p1 >> np.arange(8, dtype=np.uint8)[None, None, :, None]) & 1
    return lo.reshape(N, n) + 4 * hi.reshape(N, n)


def slot_bytes(f, kr, vr, fp16_scale):
    """The written bytes (N, f.written) of the slots of rotated K and V rows (N, 256)."""
    N = kr.shape[0]
    parts, scales = [], []
    if f.compact:
        kc, ks = quantize(kr, 3, fp16_scale)
        parts.append(pack3(kc))
        scales.append(ks[:, None])
    else:
        blocks = kr.reshape(N * 4, 64)
        rope_c, rope_s = quantize(kr[:, :64], 4, fp16_scale)
        nope_c, nope_s = quantize(blocks.reshape(N, 4, 64)[:, 1:, :].reshape(N * 3, 64), 3, fp16_scale)
        parts.append(pack4(rope_c))
        parts.append(pack3(nope_c.reshape(N, 192)))
        scales.append(rope_s[:, None])
        scales.append(nope_s.reshape(N, 3))
    vc, vs = quantize(vr, f.v_bits, fp16_scale)
    parts.append(pack4(vc) if f.v_bits == 4 else pack3(vc))
    scales.append(vs[:, None])
    sc = np.ascontiguousarray(np.concatenate(scales, axis=1).astype("<u2")).view(np.uint8).reshape(N, -1)
    out = np.concatenate(parts + [sc], axis=1)
    assert out.shape[1] == f.written
    return out


def unpack_slots(f, raw):
    """Slots (N, slot_bytes) -> K codebook values (N, 256), K block scales (N, 4), V codebook values
    (N, 256), V scales (N,), scales as float32 (the stored fp16 values)."""
    N = raw.shape[0]
    sc = np.ascontiguousarray(raw[:, f.off_scales:f.off_scales + 2 * f.num_scales]).view("<f2").astype(np.float32)
    if f.compact:
        kc = unpack3(raw[:, :f.off_v], D)
        kl = LUT[3][kc]
        ks = np.repeat(sc[:, :1], 4, axis=1)
    else:
        rope = unpack4(raw[:, :f.off_k_nope])
        nope = unpack3(raw[:, f.off_k_nope:f.off_v], D - 64)
        kl = np.concatenate((LUT[4][rope], LUT[3][nope]), axis=1)
        ks = sc[:, :4]
    vb = raw[:, f.off_v:f.off_scales]
    vc = unpack4(vb) if f.v_bits == 4 else unpack3(vb, D)
    return kl, ks, LUT[f.v_bits][vc], sc[:, -1]


# ---- store (docs/contract.md §3.1) ----

def store(a, mem):
    op = "cache_store"
    f = Fmt(a.fmt)
    check_reserved(op, a)
    check_align(op, "key", a.key, 2, "fp16/bf16 elements")
    check_align(op, "value", a.value, 2, "fp16/bf16 elements")
    check_align(op, "slot_mapping", a.slot_mapping, 8, "int64 entries")
    check_cache(op, a, f)
    n = a.num_tokens
    if n == 0:
        return "portable"
    smap = np.frombuffer(mem.buffer(a.slot_mapping, 8 * n), dtype=np.int64).copy()
    num_slots = a.num_blocks * a.block_size
    for t in np.nonzero(smap >= num_slots)[0][:1]:
        raise OpError(abi.SLOT_RANGE, f"{op}: slot_mapping[{t}] = {smap[t]} is outside the cache: "
                                      f"num_blocks*block_size = {num_slots}")
    live = np.nonzero(smap >= 0)[0]
    order = np.argsort(smap[live], kind="stable")
    s_sorted = smap[live][order]
    dup = np.nonzero(s_sorted[1:] == s_sorted[:-1])[0]
    if dup.size:
        i = dup[0]
        raise OpError(abi.SLOT_DUPLICATE, f"{op}: slot {s_sorted[i]} appears twice: slot_mapping[{live[order][i]}] "
                                          f"and slot_mapping[{live[order][i + 1]}]")
    split = block_index(op, a.block_size)
    if live.size == 0:
        return "portable"
    hkv = a.num_kv_heads
    key = act_view(mem, a.key, mem.extents["key"], n, hkv, a.key_stride_token, a.key_stride_head)
    val = act_view(mem, a.value, mem.extents["value"], n, hkv, a.value_stride_token, a.value_stride_head)
    k = bits_to_f32(key[live].reshape(-1, D), a.dtype)
    v = bits_to_f32(val[live].reshape(-1, D), a.dtype)
    kr = rotate_f32(k, signs(a.k_signs), f.k_block)
    vr = rotate_f32(v, signs(a.v_signs), D)
    fp16_scale = f16_trunc_bits if _defect == "scale-rounding" else f32_to_f16_bits
    with np.errstate(all="ignore"):
        sb = slot_bytes(f, kr, vr, fp16_scale)
    blk, off = split(smap[live])
    cache = cache_view(mem, a, hkv, f)
    heads = np.tile(np.arange(hkv), live.size)
    cache[np.repeat(blk, hkv), heads, np.repeat(off, hkv), :f.written] = sb
    return "portable"


# ---- rotate (docs/contract.md §3.2) ----

def rotate(a, mem):
    check_align("rotate", "x", a.x, 2, "fp16/bf16 elements")
    if a.num_tokens == 0:
        return "portable"
    x = act_view(mem, a.x, mem.extents["x"], a.num_tokens, a.num_heads, a.stride_token, a.stride_head)
    v = bits_to_f32(x.reshape(-1, D), a.dtype)
    sg, block = signs(a.signs), (64 if a.k_layout else D)
    with np.errstate(all="ignore"):
        y = unrotate_f32(v, sg, block) if a.inverse else rotate_f32(v, sg, block)
    x[...] = f32_to_bits(y, a.dtype).reshape(x.shape)
    return "portable"


# ---- decode and reduce (docs/contract.md §3.3, §3.4, §5) ----

def quantize_query_int8(qr):
    """dot4-int8q: per 64-dim block s = fl32(max(amax, 1e-20)/127), q = round-half-even(fl32(x/s))
    clamped to +-127. qr (N, 256) float32 rotated -> q (N, 4, 64) float64, s (N, 4) float64."""
    b = qr.reshape(-1, 4, 64)
    amax = np.abs(b).max(axis=2)
    s = (np.maximum(amax, np.float32(1e-20)) / np.float32(127)).astype(np.float32)
    q = np.clip(np.rint((b / s[:, :, None]).astype(np.float32)), -127, 127)
    return q.astype(np.float64), s.astype(np.float64)


def split_length(tier, kv_max, ns):
    """Tokens per split and the number of splits that may hold tokens (the rest are empty)."""
    if tier == "wmma-model":
        used = min(ns, WMMA_MAX_SPLITS)
        per = max(-(-kv_max // used), 64)
        return (per + 15) // 16 * 16, used
    return max(1, -(-kv_max // ns)), ns


def decode(a, mem):
    op = "decode"
    f = Fmt(a.fmt)
    check_reserved(op, a)
    if not 1 <= a.query_group <= 4:
        raise OpError(abi.QUERY_GROUP, f"{op}: query_group = {a.query_group}, expected 1..4")
    if not (math.isfinite(a.sm_scale) and a.sm_scale > 0):
        raise OpError(abi.SCALE, f"{op}: sm_scale = {a.sm_scale:g}, expected a finite value > 0")
    for name in ("out", "query"):
        check_align(op, name, a[name], 2, "fp16/bf16 elements")
    for name in ("block_table", "q_to_req", "q_to_klen"):
        check_align(op, name, a[name], 4, "int32 entries")
    check_cache(op, a, f)
    check_align(op, "partials", a.partials, 16, "partial rows")
    nq = a.num_q
    if nq == 0:
        return a.tier_name
    split = block_index(op, a.block_size)
    tier = a.tier_name
    arith = "portable" if _defect in ("tier-fallback", "tier-fallback-silent") else tier
    hq, hkv = a.num_q_heads, a.num_kv_heads
    G = hq // hkv
    kv_max = a.max_blocks * a.block_size
    ns, P = a.num_splits, a.partial_stride or 260
    per, used = split_length(arith, kv_max, ns)
    parts = np.frombuffer(mem.buffer(a.partials, mem.extents["partials"]), dtype=np.float32).reshape(nq, hq, ns, P)
    q_req = i32_array(mem, a.q_to_req, nq)
    q_klen = i32_array(mem, a.q_to_klen, nq)
    table = i32_array(mem, a.block_table, a.num_reqs * a.max_blocks).reshape(a.num_reqs, a.max_blocks)
    query = act_view(mem, a.query, mem.extents["query"], nq, hq, a.query_stride_token, a.query_stride_head)
    cache = cache_view(mem, a, hkv, f)
    kvh_of = (np.arange(hq) % hkv) if _defect == "gqa-mapping" else (np.arange(hq) // G)
    c = float(np.float32(a.sm_scale)) * LOG2E
    slots = {}  # physical block -> its unpacked slots (only blocks some row attends to are read)
    with np.errstate(all="ignore"):
        for i in range(nq):
            r, klen = int(q_req[i]), int(q_klen[i])
            if not (0 <= r < a.num_reqs) or klen <= 0:
                if _defect != "stale-workspace":
                    write_empty(parts[i])
                continue
            if _defect == "causal-off-by-one":
                klen += 1
            klen = min(klen, kv_max)
            pos = np.arange(klen)
            lb, off = split(pos)
            blk = table[r][lb].astype(np.int64)
            ok = (blk >= 0) & (blk < a.num_blocks)
            pos, blk, off = pos[ok], blk[ok], off[ok]
            for b in np.unique(blk):
                if b not in slots:
                    raw = np.ascontiguousarray(cache[b]).reshape(hkv * a.block_size, f.slot_bytes)
                    kl, ks, vl, vs = unpack_slots(f, raw)
                    slots[b] = (kl.reshape(hkv, a.block_size, D), ks.reshape(hkv, a.block_size, 4),
                                vl.reshape(hkv, a.block_size, D), vs.reshape(hkv, a.block_size))
            q = bits_to_f32(query[i], a.dtype)
            qr = rotate_f32(q, signs(a.k_signs), f.k_block)
            row_partials(arith, parts[i], qr, slots, pos, blk, off, kvh_of, c, per, used, ns, hkv)
        reduce_rows(parts.reshape(nq * hq, ns, P), out_rows(mem, a, nq, hq), signs(a.v_signs), a.dtype)
    return None if _defect == "tier-fallback-silent" else arith


def write_empty(p):
    """An empty split's partial row: o = 0, m = -inf, l = 0 (floats 258.. are not written)."""
    p[..., :D] = 0
    p[..., D] = -np.inf
    p[..., D + 1] = 0


def row_partials(arith, p, qr, slots, pos, blk, off, kvh_of, c, per, used, ns, hkv):
    """The partial rows p (Hq, ns, P) of one query row: split s holds tokens [s*per, (s+1)*per)."""
    hq, n = qr.shape[0], pos.size
    kl, ks = np.empty((hkv, n, D)), np.empty((hkv, n, 4))
    vl, vs = np.empty((hkv, n, D)), np.empty((hkv, n))
    for b in np.unique(blk):
        sel = blk == b
        K, KS, V, VS = slots[b]
        kl[:, sel], ks[:, sel] = K[:, off[sel]], KS[:, off[sel]]
        vl[:, sel], vs[:, sel] = V[:, off[sel]], VS[:, off[sel]]
    if arith == "wmma-model":
        qv = qr.astype(np.float16).astype(np.float64).reshape(hq, 4, 64)
        qs = np.ones((hq, 4))
    else:
        qv, qs = quantize_query_int8(qr)
    scores = np.empty((hq, n))
    for kvh in np.unique(kvh_of):
        heads = np.nonzero(kvh_of == kvh)[0]
        # per-block dots (4, g, n): exact integer (or fp16 x int8) products summed in float64
        dots = np.matmul(qv[heads].transpose(1, 0, 2), kl[kvh].reshape(n, 4, 64).transpose(1, 2, 0))
        scores[heads] = c * np.einsum("gb,bgt,tb->gt", qs[heads], dots, ks[kvh]) / LUT_ONE
    sp = pos // per  # the split of each token
    write_empty(p[:, used:])
    for s in range(used):
        sel = sp == s
        if not sel.any():
            if _defect != "stale-workspace":
                write_empty(p[:, s])
            continue
        sc = scores[:, sel]
        m = sc.max(axis=1)
        w = np.exp2(sc - m[:, None])
        for kvh in np.unique(kvh_of):
            heads = np.nonzero(kvh_of == kvh)[0]
            V, VS = vl[kvh][sel], vs[kvh][sel]
            if arith == "wmma-model":
                # P' = fp16(p * V scale * 256), then x codebook / (256 * 64); the denominator is sum p.
                pw = (w[heads] * VS[None, :] * 256.0).astype(np.float16).astype(np.float64)
                p[heads, s, :D] = (pw @ V) / (256.0 * LUT_ONE)
            else:
                p[heads, s, :D] = ((w[heads] * (VS / LUT_ONE)[None, :]) @ V)
        p[:, s, D] = m
        p[:, s, D + 1] = w.sum(axis=1)


def out_rows(mem, a, nq, hq):
    return act_view(mem, a.out, mem.extents["out"], nq, hq, a.out_stride_token, a.out_stride_head)


def reduce_rows(parts, out, vsg, dtype):
    """docs/contract.md §3.4 on rows (R, ns, P): M the NaN-ignoring max of m_s; a split with m_s =
    -inf is skipped (its o never read); a NaN m_s poisons L and the output; out = inverse V rotation
    of O, / L, or +0 when L = 0."""
    m = parts[:, :, D].astype(np.float64)
    l = parts[:, :, D + 1].astype(np.float64)
    skip = m == -np.inf
    M = np.where(np.isnan(m), -np.inf, m).max(axis=1)
    w = np.where(skip, 0.0, np.exp2(m - M[:, None]))
    L = (w * np.where(skip, 0.0, l)).sum(axis=1)
    O = np.einsum("rs,rsd->rd", w, np.where(skip[:, :, None], 0.0, parts[:, :, :D].astype(np.float64)))
    y = fwht(O.astype(np.float32), D).astype(np.float64) * vsg
    res = np.where((L == 0)[:, None], 0.0, y / np.where(L == 0, 1.0, L)[:, None]).astype(np.float32)
    out[...] = f32_to_bits(res, dtype).reshape(out.shape)


def reduce(a, mem):
    check_align("reduce", "out", a.out, 2, "fp16/bf16 elements")
    check_align("reduce", "partials", a.partials, 16, "partial rows")
    nq, hq, ns, P = a.num_q, a.num_q_heads, a.num_splits, a.partial_stride or 260
    if nq == 0:
        return "portable"
    parts = np.frombuffer(mem.buffer(a.partials, mem.extents["partials"]), dtype=np.float32).reshape(nq * hq, ns, P)
    with np.errstate(all="ignore"):
        reduce_rows(parts, out_rows(mem, a, nq, hq), signs(a.v_signs), a.dtype)
    return "portable"


# ---- query maps (docs/contract.md §4) ----

def query_maps(a, mem):
    for name in ("query_start_loc", "seq_lens", "q_to_req", "q_to_klen"):
        check_align("query_maps", name, a[name], 4, "int32 entries")
    n, r = a.num_q, a.num_reqs
    if n == 0:
        return "portable"
    qsl = i32_array(mem, a.query_start_loc, r + 1 if r else 0).astype(np.int64)
    seq = i32_array(mem, a.seq_lens, r).astype(np.int64)
    t = np.arange(n, dtype=np.int64)
    req = (qsl[1:][None, :] <= t[:, None]).sum(axis=1) if r else np.zeros(n, dtype=np.int64)
    live = req < r
    rr = np.where(live, req, 0)
    if r:
        k = seq[rr] - (qsl[rr + 1] - qsl[rr]) + (t - qsl[rr]) + 1
    else:
        k = np.zeros(n, dtype=np.int64)
    klen = np.where(live, k, 0).astype(np.uint64).astype(np.uint32).view(np.int32)
    i32_array(mem, a.q_to_req, n)[:] = req.astype(np.int32)
    i32_array(mem, a.q_to_klen, n)[:] = klen
    return "portable"
