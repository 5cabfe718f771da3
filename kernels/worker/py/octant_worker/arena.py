"""The worker's device memory: one arena, usable bytes between two guards of a known pattern.

Layout (arena offsets): [0, G) front guard | [G, G+N) usable bytes | [G+N, 2G+N) rear guard |
[2G+N, 2G+N+S) the sidecar | [2G+N+S, 3G+N+S) tail guard.
Go hands out the usable bytes (kernels/worker/alloc.go) and names them by address,
gen << 40 | offset; the worker checks the generation and the bounds of every address it is given.
The sidecar is the worker's own: the inputs an op takes as device tensors that the ABI passes by
value (the sign words), placed there for one op and checked after it (Arena.sidecar).
Host mode keeps the arena in an anonymous memory map; torch mode in one torch.uint8 tensor.
"""
import ctypes
import mmap
import os
import sys

from .protocol import INVALID_ARGUMENT, RUNTIME, WorkerError

GEN_SHIFT = 40
OFFSET_MASK = (1 << GEN_SHIFT) - 1
SIDECAR_BYTES = 256  # two int32[8] sign tensors, 64 bytes apart, and the pattern around them

# The oldest torch the torch mode and the torch adapters are written for: torch.frombuffer,
# Tensor.view(dtype), torch.library.Library(ns, "DEF") and FunctionSchema's alias_info.
MIN_TORCH = (1, 12)


def guard_pattern(n):
    """The guards' bytes: position-dependent, so a shifted copy of them is caught too."""
    return bytes((0x5A ^ (i * 37)) & 0xFF for i in range(n))


class Arena:
    """What both modes share: addresses, guards and their check. A mode supplies write, read,
    move, fill, wait, first_diff, put, flip and snapshot, all on arena offsets."""

    def __init__(self, gen, usable, guard, shm):
        self.gen, self.usable, self.guard = gen, usable, guard
        self.sidecar_off = usable + 2 * guard
        self.total = self.sidecar_off + SIDECAR_BYTES + guard
        self.shm = shm
        self.pattern = guard_pattern(guard)
        self.side_pattern = guard_pattern(SIDECAR_BYTES)
        self.side_expected = None  # the sidecar's bytes as the last op was handed them
        self.side_checks = []  # (what, check) of the ops since the last sync: check() -> [problems]

    def fill_guards(self):
        self.put(0, self.pattern)
        self.put(self.guard + self.usable, self.pattern)
        self.put(self.sidecar_off, self.side_pattern)
        self.put(self.sidecar_off + SIDECAR_BYTES, self.pattern)

    def sidecar(self, names, words):
        """Places up to two lists of 8 sign words (uint32), the inputs names, in the sidecar as
        int32 at sidecar offsets 64 and 128 between the pattern, and returns their arena offsets.
        after_op checks them once the op has run."""
        data = bytearray(self.side_pattern)
        offs = []
        for i, w in enumerate(words):
            off = 64 * (i + 1)
            data[off:off + 32] = b"".join((x & 0xFFFFFFFF).to_bytes(4, "little") for x in w)
            offs.append(self.sidecar_off + off)
        self.put(self.sidecar_off, bytes(data))
        self.side_expected = (bytes(data), list(names), [o - self.sidecar_off for o in offs])
        return offs

    def after_op(self, what):
        """Queues the check that the op (what, for messages) left the sidecar as it was handed
        it; sync reports what differs."""
        if self.side_expected is None:
            return
        data, names, offs = self.side_expected
        self.side_expected = None
        self.side_checks.append((what, names, offs, self.snapshot(data)))

    def check_sidecar(self):
        """Messages for the ops since the last sync that modified a sidecar input or wrote
        around one; the sidecar is restored to its pattern."""
        out = []
        for what, names, offs, diff in self.side_checks:
            changed = diff()
            if not changed:
                continue
            hit = [n for n, o in zip(names, offs) if any(o <= i < o + 32 for i in changed)]
            around = [i for i in changed if not any(o <= i < o + 32 for o in offs)]
            if hit:
                out.append(f"{what}: input {' and '.join(hit)} (int32[8] in the worker's sidecar) was modified")
            if around:
                out.append(f"{what}: a write past a sign tensor: sidecar byte {around[0]} of {SIDECAR_BYTES} "
                           f"({len(around)} bytes around the sign tensors differ from their pattern)")
        self.side_checks = []
        if out:
            self.put(self.sidecar_off, self.side_pattern)
        return out

    def offset(self, addr, n, what):
        """The arena offset of [addr, addr+n), which must be usable bytes of this generation."""
        gen, off = addr >> GEN_SHIFT, addr & OFFSET_MASK
        if gen != self.gen:
            raise WorkerError(INVALID_ARGUMENT,
                              f"{what}: address {addr:#x} is of generation {gen}, this worker is generation {self.gen}")
        if off < self.guard or off + n > self.guard + self.usable:
            raise WorkerError(INVALID_ARGUMENT,
                              f"{what}: [{addr:#x}, +{n}) is not inside the arena's {self.usable} usable bytes")
        return off

    def check_guards(self):
        """Messages for each guard a write reached (each restored, so it is reported once)."""
        out = []
        for side, start in (("before", 0), ("after", self.guard + self.usable)):
            i, got = self.first_diff(start, self.pattern)
            if i < 0:
                continue
            pos = start + i - self.guard  # relative to the first usable byte
            where = f"{self.guard - i} bytes before its start" if side == "before" else f"{i} bytes past its end"
            out.append(f"a write past the arena: the guard {side} it is overwritten at byte offset {pos} of the arena "
                       f"({where}; address {(self.gen << GEN_SHIFT) | (start + i):#x}): {got:#04x}, expected {self.pattern[i]:#04x}")
            self.put(start, self.pattern)
        tail = self.sidecar_off + SIDECAR_BYTES
        i, got = self.first_diff(tail, self.pattern)
        if i >= 0:
            out.append(f"a write past the worker's sidecar (the sign tensors): the guard after it is overwritten "
                       f"{i} bytes past its end: {got:#04x}, expected {self.pattern[i]:#04x}")
            self.put(tail, self.pattern)
        return out


class HostArena(Arena):
    """The arena in an anonymous memory map of this process."""

    def __init__(self, gen, usable, guard, shm):
        super().__init__(gen, usable, guard, shm)
        self.mm = mmap.mmap(-1, self.total)
        self.mv = memoryview(self.mm)
        self.shm_mv = memoryview(shm)
        self.fill_guards()

    def write(self, off, shm_off, n):
        self.mv[off:off + n] = self.shm_mv[shm_off:shm_off + n]

    def read(self, off, shm_off, n):
        self.shm_mv[shm_off:shm_off + n] = self.mv[off:off + n]

    def move(self, dst, src, n):
        self.mm.move(dst, src, n)

    def fill(self, off, value, n):
        chunk = bytes([value]) * min(n, 1 << 20)
        while n:
            k = min(n, len(chunk))
            self.mv[off:off + k] = chunk[:k]
            off += k
            n -= k

    def wait(self):
        pass

    def first_diff(self, start, pattern):
        got = self.mv[start:start + len(pattern)]
        if got == pattern:
            return -1, 0
        for i, (a, b) in enumerate(zip(got.tobytes(), pattern)):
            if a != b:
                return i, a
        return -1, 0

    def put(self, start, data):
        self.mv[start:start + len(data)] = data

    def get(self, start, n):
        """The n bytes at arena offset start."""
        return self.mv[start:start + n].tobytes()

    def snapshot(self, data):
        """The sidecar's differences from data, taken now (a host-mode op has run when it returns)."""
        got = self.mv[self.sidecar_off:self.sidecar_off + len(data)].tobytes()
        changed = [i for i, (a, b) in enumerate(zip(got, data)) if a != b]
        return lambda: changed

    def flip(self, off):
        self.mm[off] ^= 0xFF

    def base_address(self):
        """The process address of arena offset 0."""
        return ctypes.addressof(ctypes.c_char.from_buffer(self.mm))

    def info(self):
        return {"name": "host memory of a Python worker", "arch": "host", "runtime": "Python",
                "wave_size": 32, "logical_wave": 32, "compute_units": os.cpu_count() or 1,
                "total_memory": self.usable}

    def describe(self):
        return f"host arena of {self.usable} bytes"


def import_torch(what="torch mode"):
    """torch, at least MIN_TORCH, or a clear refusal naming the module, the version found and the
    interpreter."""
    try:
        import torch
    except ImportError as e:
        raise WorkerError(RUNTIME, f"{what} needs the Python module torch, which {sys.executable} cannot import "
                                   f"({type(e).__name__}: {e}); install PyTorch for this interpreter "
                                   f"({sys.executable} -m pip install torch, or Debian's python3-torch for "
                                   f"/usr/bin/python3) or name one that has it (OCTANT_PYTHON)") from None
    version = str(getattr(torch, "__version__", "unknown"))
    if torch_version(version) < MIN_TORCH:
        want = ".".join(map(str, MIN_TORCH))
        raise WorkerError(RUNTIME, f"{what} needs torch {want} or later; {sys.executable} imports torch {version} from "
                                   f"{getattr(torch, '__file__', '?')}: upgrade it ({sys.executable} -m pip install "
                                   f"'torch>={want}') or name an interpreter that has a newer one (OCTANT_PYTHON)")
    return torch


def torch_version(v):
    """(major, minor) of a torch version string ("1.13.0a0+git", "2.4.1+cu121"); (0, 0) when it
    has none."""
    parts = []
    for p in v.split("+")[0].split(".")[:2]:
        digits = ""
        for ch in p:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            return (0, 0)
        parts.append(int(digits))
    return tuple(parts) if len(parts) == 2 else (0, 0)


class _Diff:
    """A sidecar comparison queued on the device: ne, its mask; called, the differing offsets."""

    def __init__(self, ne):
        self.ne = ne

    def __call__(self):
        return self.ne.nonzero().flatten().tolist()


class TorchArena(Arena):
    """The arena in one torch.uint8 tensor on a torch device; copies go through a tensor over the
    shared-memory window."""

    def __init__(self, torch, device, gen, usable, guard, shm):
        super().__init__(gen, usable, guard, shm)
        self.torch = torch
        if not device:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.dev = torch.device(device)
        if self.dev.type == "cuda" and self.dev.index is None:
            self.dev = torch.device("cuda", torch.cuda.current_device())
        self.t = torch.empty(self.total, dtype=torch.uint8, device=self.dev)
        self.shm_t = torch.frombuffer(shm, dtype=torch.uint8)
        self.pinned = False
        if self.dev.type == "cuda":
            # Page-locked, the window's copies to and from the device are direct transfers rather
            # than staged through a driver buffer. Where registering fails the copies still work.
            rt = torch.cuda.cudart()
            self.pinned = int(rt.cudaHostRegister(self.shm_t.data_ptr(), self.shm_t.numel(), 0)) == 0
        self.pat_t = torch.frombuffer(bytearray(self.pattern), dtype=torch.uint8).to(self.dev)
        self.fill_guards()
        self.wait()

    def write(self, off, shm_off, n):
        self.t[off:off + n].copy_(self.shm_t[shm_off:shm_off + n])

    def read(self, off, shm_off, n):
        self.shm_t[shm_off:shm_off + n].copy_(self.t[off:off + n])  # waits for the device

    def move(self, dst, src, n):
        s = self.t[src:src + n]
        if abs(dst - src) < n:  # overlapping: through a copy
            s = s.clone()
        self.t[dst:dst + n].copy_(s)

    def fill(self, off, value, n):
        self.t[off:off + n].fill_(value)

    def wait(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize(self.dev)

    def check_guards(self):
        """As Arena.check_guards, with one read from the device when both guards are intact
        (the case of every sync but a defective op's)."""
        g, u = self.guard, self.usable
        hit = (self.t[:g] != self.pat_t).any() | (self.t[g + u:2 * g + u] != self.pat_t).any()
        if not bool(hit):
            return []
        return super().check_guards()

    def check_sidecar(self):
        """As Arena.check_sidecar, with one read from the device when no op since the last sync
        changed the sidecar."""
        if self.side_checks and not bool(self.torch.stack([c[3].ne.any() for c in self.side_checks]).any()):
            self.side_checks = []
            return []
        return super().check_sidecar()

    def first_diff(self, start, pattern):
        region = self.t[start:start + len(pattern)]
        ne = region != self.pat_t
        if not bool(ne.any()):
            return -1, 0
        i = int(ne.nonzero()[0, 0])
        return i, int(region[i])

    def put(self, start, data):
        if isinstance(data, bytes) and data == self.pattern:
            self.t[start:start + len(data)].copy_(self.pat_t)
        else:
            self.t[start:start + len(data)].copy_(self.torch.frombuffer(bytearray(data), dtype=self.torch.uint8))

    def flip(self, off):
        self.t[off:off + 1].bitwise_xor_(0xFF)

    def get(self, start, n):
        """The n bytes at arena offset start (copied to the host)."""
        return bytes(self.t[start:start + n].cpu().tolist())

    def snapshot(self, data):
        """The sidecar's differences from data: compared on the device in stream order (after the
        op, before the next op's sidecar is written), read at the next sync."""
        want = self.torch.frombuffer(bytearray(data), dtype=self.torch.uint8).to(self.dev)
        return _Diff(self.t[self.sidecar_off:self.sidecar_off + len(data)] != want)

    def base_address(self):
        """The device address of arena offset 0."""
        return self.t.data_ptr()

    def info(self):
        torch = self.torch
        if self.dev.type != "cuda":
            return {"name": f"torch {self.dev}", "arch": self.dev.type, "runtime": "torch", "wave_size": 32,
                    "logical_wave": 32, "compute_units": os.cpu_count() or 1, "total_memory": self.usable}
        p = torch.cuda.get_device_properties(self.dev)
        hip = getattr(torch.version, "hip", None)
        arch = getattr(p, "gcnArchName", "").split(":")[0] if hip else f"sm_{p.major}{p.minor}"
        wave = getattr(p, "warp_size", 64 if hip else 32)
        return {"name": p.name, "arch": arch, "runtime": "HIP" if hip else "CUDA", "wave_size": wave,
                "logical_wave": wave, "compute_units": p.multi_processor_count, "total_memory": p.total_memory}

    def describe(self):
        torch = self.torch
        rt = f"HIP {torch.version.hip}" if getattr(torch.version, "hip", None) else f"CUDA {torch.version.cuda}"
        return f"torch {torch.__version__} ({rt}), arena of {self.usable} bytes on {self.dev}"
