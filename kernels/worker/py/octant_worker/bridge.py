"""The op bridge: an op request's struct is decoded, checked, its addresses translated, and the
adapter's callable for the op runs on it (docs/worker.md, "Ops").

The bridge checks what it needs to bound every buffer the counts and strides imply, with the
C library's statuses and wording and in its order: the op declared, the tier (decode, prefill),
the format and dtype declared, head_size, the counts' lower bounds, the GQA group of a decode
(Hq sizes its workspace), non-negative strides, the decode and reduce workspace (num_splits,
partial_stride, its size, partials_bytes), a NULL pointer where bytes are read or written, and
every extent inside the arena's usable bytes (INVALID_ARGUMENT naming the field). Every other
check of the ABI (alignment, sm_scale, query_group, the prefill GQA, cache stride multiples, slot
ranges and duplicates, grid sizes, reserved fields) is the adapter's.
"""
import struct
import traceback

from . import abi
from .adapter import Memory, OpError
from .arena import GEN_SHIFT, OFFSET_MASK
from .protocol import WorkerError

I32_MAX = 2**31 - 1
OP_HEADER = struct.Struct("<II")  # op code, reserved (0)
WORKSPACE_ARGS = struct.Struct("<iiii")  # num_q, num_q_heads, num_splits, partial_stride
U64 = struct.Struct("<Q")


def fail(status, msg):
    raise WorkerError(status, msg)


class Checks:
    """The bridge's checks of one call, in the C library's words (csrc/capi_ops.cpp)."""

    def __init__(self, op, a, decl):
        self.op, self.a, self.decl = op, a, decl
        self.name = abi.MSG_NAME[op]

    def fmt(self):
        f = self.a.fmt
        if f not in abi.SLOT_BYTES:
            fail(abi.FORMAT, f"{self.name}: format id {f} is not supported: expected 3 (octave_k3v3), 4 (octave_k3v4) "
                             f"or 19 (octave_k3v3_compact)")
        if f not in self.decl["formats"]:
            fail(abi.FORMAT, f"{self.name}: format id {f} is not supported: the adapter declares formats "
                             f"{self.decl['formats']}")

    def dtype(self):
        d = self.a.dtype
        names = self.decl["ops"][self.op]["dtypes"]
        if d not in [abi.DTYPES[n] for n in names]:
            want = " or ".join(f"{abi.DTYPES[n]} ({n})" for n in names)
            fail(abi.DTYPE, f"{self.name}: dtype {d} is not supported: expected {want}")

    def head(self):
        if self.a.head_size != abi.HEAD:
            fail(abi.HEAD_SIZE, f"{self.name}: head_size = {self.a.head_size}, but the kernels support only 256")

    def count(self, field, lo, hi=I32_MAX):
        v = self.a[field]
        if not lo <= v <= hi:
            fail(abi.INVALID_ARGUMENT, f"{self.name}: {field} = {v}, expected {lo}..{hi}")

    def acts(self, *names):
        for n in names:
            st, sh = self.a[n + "_stride_token"], self.a[n + "_stride_head"]
            if st < 0 or sh < 0:
                fail(abi.STRIDE, f"{self.name}: {n} strides (token {st}, head {sh}) must be >= 0 elements")

    def cache_strides(self):
        for s in ("cache_stride_block", "cache_stride_head", "cache_stride_token"):
            if self.a[s] < 0:
                fail(abi.STRIDE, f"{self.name}: {s} = {self.a[s]} bytes, expected a non-negative multiple of "
                                 f"{4 if self.a.fmt == 19 else 8} for format {self.a.fmt}")

    def splits(self, lo=1, hi=1024):
        ns = self.a.num_splits
        if not lo <= ns <= hi:
            fail(abi.NUM_SPLITS, f"{self.name}: num_splits = {ns}, expected {lo}..{hi}")

    def tier(self):
        """The declared name of the call's tier, or UNSUPPORTED_TIER."""
        tiers = self.decl["ops"][self.op]["tiers"]
        for name in tiers:
            if abi.tier_id(name) == self.a.tier:
                return name
        fail(abi.UNSUPPORTED_TIER, f"{self.name}: tier {self.a.tier} is not available on this adapter: it declares "
                                   f"{', '.join(f'{n} ({abi.tier_id(n)})' for n in tiers)} for {self.op}")

    def partials(self):
        """The workspace's bytes, after the checks of octave_decode's and octave_reduce's."""
        a = self.a
        need = workspace(self.name, a.num_q, a.num_q_heads, a.num_splits, a.partial_stride)
        if need and not a.partials:
            fail(abi.INVALID_ARGUMENT, f"{self.name}: partials is NULL")
        if a.partials_bytes < need:
            ps = a.partial_stride or 260
            fail(abi.WORKSPACE, f"{self.name}: partials_bytes = {a.partials_bytes}, but num_q {a.num_q} x Hq "
                                f"{a.num_q_heads} x num_splits {a.num_splits} x partial_stride {ps} x 4 = {need} "
                                f"bytes are needed")
        return need


def workspace(name, num_q, hq, ns, pstride):
    """octave_decode_workspace_size's bytes, or its status and message."""
    for field, v, lo in (("num_q", num_q, 0), ("num_q_heads", hq, 1)):
        if not lo <= v <= I32_MAX:
            fail(abi.INVALID_ARGUMENT, f"{name}: {field} = {v}, expected {lo}..{I32_MAX}")
    if not 1 <= ns <= 1024:
        fail(abi.NUM_SPLITS, f"{name}: num_splits = {ns}, expected 1..1024")
    ps = pstride or 260
    if ps < 258 or ps % 4:
        fail(abi.WORKSPACE, f"{name}: partial_stride = {ps} floats, expected a multiple of 4 (16 bytes, so that every "
                            f"partial row stays 16-byte aligned) that is >= 258")
    need = num_q * hq * ns * ps * 4
    if need >= 1 << 64:
        fail(abi.WORKSPACE, f"{name}: the partials size num_q {num_q} x Hq {hq} x num_splits {ns} x partial_stride {ps} "
                            f"x 4 bytes overflows 64 bits")
    return need


def act_bytes(rows, heads, st, sh):
    """The bytes of [rows][heads][256] 2-byte elements at element strides st, sh."""
    if rows <= 0 or heads <= 0:
        return 0
    return 2 * ((rows - 1) * st + (heads - 1) * sh + abi.HEAD)


def cache_bytes(a, hkv):
    if a.num_blocks <= 0 or hkv <= 0 or a.block_size <= 0:
        return 0
    return ((a.num_blocks - 1) * a.cache_stride_block + (hkv - 1) * a.cache_stride_head
            + (a.block_size - 1) * a.cache_stride_token + abi.SLOT_BYTES[a.fmt])


# Each op's checks, in the C library's order, and its extents: [(field, bytes)], bytes 0 where
# the call reads nothing there (the pointer may then be NULL). The asked tier's name is returned
# for decode and prefill, "portable" for the untiered ops.

def store(c):
    a = c.a
    c.fmt(), c.dtype(), c.head()
    c.count("num_tokens", 0), c.count("num_kv_heads", 1), c.count("num_blocks", 1), c.count("block_size", 1)
    c.acts("key", "value")
    c.cache_strides()
    n = a.num_tokens
    return "portable", [("key", act_bytes(n, a.num_kv_heads, a.key_stride_token, a.key_stride_head)),
                        ("value", act_bytes(n, a.num_kv_heads, a.value_stride_token, a.value_stride_head)),
                        ("slot_mapping", 8 * n), ("cache", cache_bytes(a, a.num_kv_heads))]


def rotate(c):
    a = c.a
    c.dtype(), c.head()
    c.count("num_tokens", 0), c.count("num_heads", 1)
    if a.stride_token < 0 or a.stride_head < 0:
        fail(abi.STRIDE, f"rotate: x strides (token {a.stride_token}, head {a.stride_head}) must be >= 0 elements")
    return "portable", [("x", act_bytes(a.num_tokens, a.num_heads, a.stride_token, a.stride_head))]


def decode(c):
    a = c.a
    tier = c.tier()
    c.fmt(), c.dtype(), c.head()
    c.count("num_q", 0), c.count("num_kv_heads", 1, 65535), c.count("num_q_heads", 1)
    g = a.num_q_heads // a.num_kv_heads
    if a.num_q_heads % a.num_kv_heads or g not in (1, 2, 4, 6, 8):
        fail(abi.GQA, f"decode: num_q_heads {a.num_q_heads} / num_kv_heads {a.num_kv_heads} is not a GQA group G in "
                      f"{{1, 2, 4, 6, 8}}")
    c.splits()
    c.count("num_reqs", 0), c.count("num_blocks", 1), c.count("block_size", 1), c.count("max_blocks", 0)
    c.acts("out", "query")
    c.cache_strides()
    need = c.partials()
    nq = a.num_q
    return tier, [("out", act_bytes(nq, a.num_q_heads, a.out_stride_token, a.out_stride_head)),
                  ("query", act_bytes(nq, a.num_q_heads, a.query_stride_token, a.query_stride_head)),
                  ("cache", cache_bytes(a, a.num_kv_heads)),
                  ("block_table", 4 * a.num_reqs * a.max_blocks if nq else 0),
                  ("q_to_req", 4 * nq), ("q_to_klen", 4 * nq), ("partials", need)]


def reduce(c):
    a = c.a
    c.dtype(), c.head()
    c.count("num_q", 0), c.count("num_q_heads", 1)
    c.splits()
    c.acts("out")
    need = c.partials()
    return "portable", [("out", act_bytes(a.num_q, a.num_q_heads, a.out_stride_token, a.out_stride_head)),
                        ("partials", need)]


def prefill(c):
    a = c.a
    tier = c.tier()
    c.fmt(), c.dtype(), c.head()
    c.count("num_tokens", 0), c.count("num_seqs", 0), c.count("num_kv_heads", 1), c.count("num_q_heads", 1, 65535)
    c.count("num_blocks", 1), c.count("block_size", 1), c.count("max_blocks", 0)
    c.acts("out", "q", "k", "v")
    c.cache_strides()
    live = a.num_tokens > 0 and a.num_seqs > 0
    t = a.num_tokens if live else 0
    s = a.num_seqs if live else 0
    return tier, [("out", act_bytes(t, a.num_q_heads, a.out_stride_token, a.out_stride_head)),
                  ("q", act_bytes(t, a.num_q_heads, a.q_stride_token, a.q_stride_head)),
                  ("k", act_bytes(t, a.num_kv_heads, a.k_stride_token, a.k_stride_head)),
                  ("v", act_bytes(t, a.num_kv_heads, a.v_stride_token, a.v_stride_head)),
                  ("cache", cache_bytes(a, a.num_kv_heads)),
                  ("block_table", 4 * s * a.max_blocks), ("cu_seqlens_q", 4 * (s + 1) if s else 0),
                  ("seq_lens", 4 * s)]


def query_maps(c):
    a = c.a
    c.count("num_reqs", 0, I32_MAX - 1), c.count("num_q", 0)
    nq = a.num_q
    r = a.num_reqs if nq else 0
    return "portable", [("query_start_loc", 4 * (r + 1) if r else 0), ("seq_lens", 4 * r),
                        ("q_to_req", 4 * nq), ("q_to_klen", 4 * nq)]


CHECKS = {"store": store, "rotate": rotate, "decode": decode, "reduce": reduce, "prefill": prefill,
          "query_maps": query_maps}


def translate(name, arena, base, field, addr, n):
    """The real address of a synthetic one whose n bytes the call reads or writes (n = 0: an
    address the call does not use, kept inside the arena all the same)."""
    if addr == 0:
        if n:
            fail(abi.INVALID_ARGUMENT, f"{name}: {field} is NULL")
        return 0
    gen, off = addr >> GEN_SHIFT, addr & OFFSET_MASK
    if gen != arena.gen:
        fail(abi.INVALID_ARGUMENT, f"{name}: {field} = {addr:#x} is an address of worker generation {gen}, "
                                   f"this worker is generation {arena.gen}")
    lo, hi = arena.guard, arena.guard + arena.usable
    if off < lo or off + n > hi:
        fail(abi.INVALID_ARGUMENT, f"{name}: {field} = {addr:#x}: its {n} bytes [{addr:#x}, +{n}) that the counts and "
                                   f"strides imply are not inside the arena's {arena.usable} usable bytes "
                                   f"[{(arena.gen << GEN_SHIFT) | lo:#x}, +{arena.usable})")
    return base + off


class Bridge:
    """Runs op requests against one adapter (mod, its normalised declaration)."""

    def __init__(self, mod, decl, arena, mode):
        self.mod, self.decl, self.arena, self.mode = mod, decl, arena, mode
        self.mem = Memory(arena, mode)

    def op(self, payload):
        if len(payload) < OP_HEADER.size:
            fail(abi.INVALID_ARGUMENT, f"op: a payload of {len(payload)} bytes, expected at least {OP_HEADER.size}")
        code, _ = OP_HEADER.unpack_from(payload)
        layout = abi.OPS.get(code)
        if layout is None:
            fail(abi.INVALID_ARGUMENT, f"op: op code {code}, expected one of {sorted(abi.OPS)}")
        body = payload[OP_HEADER.size:]
        op, entry = layout.op, abi.ENTRY[layout.op]
        if len(body) != layout.size:
            fail(abi.INVALID_ARGUMENT, f"{entry}: {len(body)} bytes of {layout.cname}, expected {layout.size}")
        if op not in self.decl["ops"]:
            fail(abi.UNSUPPORTED, f"the adapter does not implement {entry} (its declaration offers "
                                  f"{', '.join(self.decl['ops'])})")
        a = layout.unpack(body)
        c = Checks(op, a, self.decl)
        asked, extents = CHECKS[op](c)
        self.mem.extents = {}
        for field, n in extents:
            a[field] = translate(c.name, self.arena, self.mem.base, field, a[field], n)
            self.mem.extents[field] = n
        for field in layout.pointers:
            if field == "slot_mapping_host":
                a[field] = 0  # a pointer into the caller's process: never one of this worker's
            elif field not in self.mem.extents:
                a[field] = translate(c.name, self.arena, self.mem.base, field, a[field], 0)
        a.tier_name = asked
        where = f"{c.name} (tier {asked})" if op in abi.OP_BITS else c.name
        try:
            ran = getattr(self.mod, op)(a, self.mem)
        except OpError as e:
            raise WorkerError(e.status, e.message) from None
        except WorkerError:
            raise
        except BaseException as e:  # SystemExit too: the op failed, the worker goes on
            raise WorkerError(abi.RUNTIME, f"{where}: the adapter raised {type(e).__name__}: {e}",
                              traceback.format_exc()) from None
        finally:
            self.arena.after_op(where)
        if ran is not None and ran != asked:
            fail(abi.UNSUPPORTED_TIER, f"{c.name}: asked {asked}, the adapter reports {ran} ran (silent fallback)")
        return b""


def sync_error(arena, mod, failures=()):
    """What a sync reports, or None when it is clean: it waits for the device, calls the adapter
    module's sync() when it has one, and checks the arena's guards (each one a write reached is
    restored) and the sign sidecar; failures are those of requests without a reply since the last sync (the worker's;
    a standalone replay has none). The first three failures, how many more, then the guards, in
    one WorkerError with the first failure's status (RUNTIME for guards alone)."""
    failures = list(failures)
    try:
        arena.wait()
    except Exception as e:
        failures.append(WorkerError(abi.RUNTIME, f"waiting for the device: {type(e).__name__}: {e}", traceback.format_exc()))
    sync = getattr(mod, "sync", None)
    if callable(sync):
        try:
            sync()
        except OpError as e:
            failures.append(WorkerError(e.status, f"the adapter's sync: {e.message}"))
        except Exception as e:
            failures.append(WorkerError(abi.RUNTIME, f"the adapter's sync raised {type(e).__name__}: {e}",
                                        traceback.format_exc()))
    guards = arena.check_guards() + arena.check_sidecar()
    if not failures and not guards:
        return None
    status = failures[0].status if failures else abi.RUNTIME
    msgs = [f.message for f in failures[:3]]
    if len(failures) > 3:
        msgs.append(f"and {len(failures) - 3} more failures of requests without a reply")
    return WorkerError(status, "; ".join(msgs + guards), "\n".join(f.tb for f in failures[:3] if f.tb))


def workspace_request(payload):
    """The reply to a workspace request: u64 bytes of octave_decode_workspace_size."""
    if len(payload) != WORKSPACE_ARGS.size:
        fail(abi.INVALID_ARGUMENT, f"workspace: a payload of {len(payload)} bytes, expected {WORKSPACE_ARGS.size}")
    return U64.pack(workspace("decode_workspace_size", *WORKSPACE_ARGS.unpack(payload)))
