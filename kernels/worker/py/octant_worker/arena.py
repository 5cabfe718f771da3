"""The worker's device memory: one arena, usable bytes between two guards of a known pattern.

Layout (arena offsets): [0, G) front guard | [G, G+N) usable bytes | [G+N, 2G+N) rear guard.
Go hands out the usable bytes (kernels/worker/alloc.go) and names them by address,
gen << 40 | offset; the worker checks the generation and the bounds of every address it is given.
Host mode keeps the arena in an anonymous memory map; torch mode in one torch.uint8 tensor.
"""
import ctypes
import mmap
import os
import sys

from .protocol import INVALID_ARGUMENT, RUNTIME, WorkerError

GEN_SHIFT = 40
OFFSET_MASK = (1 << GEN_SHIFT) - 1


def guard_pattern(n):
    """The guards' bytes: position-dependent, so a shifted copy of them is caught too."""
    return bytes((0x5A ^ (i * 37)) & 0xFF for i in range(n))


class Arena:
    """What both modes share: addresses, guards and their check. A mode supplies write, read,
    move, fill, wait, first_diff, put and flip, all on arena offsets."""

    def __init__(self, gen, usable, guard, shm):
        self.gen, self.usable, self.guard = gen, usable, guard
        self.total = usable + 2 * guard
        self.shm = shm
        self.pattern = guard_pattern(guard)

    def fill_guards(self):
        self.put(0, self.pattern)
        self.put(self.guard + self.usable, self.pattern)

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


def import_torch():
    """torch, or a clear refusal naming the module and the interpreter."""
    try:
        import torch
    except ImportError as e:
        raise WorkerError(RUNTIME, f"torch mode needs the Python module torch, which {sys.executable} cannot import "
                                   f"({type(e).__name__}: {e}); install PyTorch for this interpreter, or use host mode") from None
    return torch


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
