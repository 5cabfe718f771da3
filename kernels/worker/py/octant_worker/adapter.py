"""The adapter contract (docs/adapters.md): what a Python module offers the worker, checked here.

An adapter is a Python source file with a DECLARATION dict and one callable per op it implements
(store, rotate, decode, reduce, prefill, query_maps), each called as fn(args, mem): args the op's
arguments (abi.Args, pointers already real addresses of the arena), mem a Memory. A callable
returns the name of the tier that ran, or None; it raises OpError to refuse a call with an ABI
status, and any other exception is a runtime failure of the op. Optional: setup(options), called
once after the import with the spec's options (a dict of strings), which may return the
declaration; close(), called when the worker says bye.
"""
import ctypes
import importlib.util
import os
import sys
import traceback

from . import abi
from .arena import import_torch
from .protocol import INVALID_ARGUMENT, RUNTIME, WorkerError

CONTRACT = 1


class OpError(Exception):
    """Raised by an adapter's op to refuse the call with an ABI status (abi.FORMAT, ...) and a
    message that names the field, what was expected and what was found."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class Memory:
    """The arena as an adapter sees it. Every address in args is already real: in host mode an
    address of this process (ctypes takes it as is), in torch mode a device address of the
    arena's tensor. buffer and array read and write host memory: host mode only."""

    def __init__(self, arena, mode):
        self.arena, self.mode = arena, mode
        self.base = arena.base_address()
        self.size = arena.total
        self.extents = {}  # field -> the bytes the bridge checked for this call
        self._tensor = None

    @property
    def device(self):
        """The torch device of the arena ("cpu", "cuda:0"): torch mode's tensor's, host mode's
        "cpu"."""
        return str(self.arena.dev) if self.mode == "torch" else "cpu"

    def tensor(self):
        """The whole arena as one torch.uint8 tensor (guards included): torch mode's own tensor,
        in host mode a tensor over the memory map (torch needed in both)."""
        if self._tensor is None:
            if self.mode == "torch":
                self._tensor = self.arena.t
            else:
                torch = import_torch("a torch view of the host arena")
                self._tensor = torch.frombuffer(self.arena.mm, dtype=torch.uint8)
        return self._tensor

    def sidecar(self, names, words):
        """Places the sign words of the inputs names (lists of 8 uint32) in the worker's sidecar, a
        guarded region of the arena that Go never hands out, and returns their real addresses,
        each of 32 bytes (int32[8]). The worker checks after the op that it left them and the
        bytes around them unchanged (reported at the next sync)."""
        return [self.base + off for off in self.arena.sidecar(names, words)]

    def _host(self, addr, nbytes, what):
        if self.mode != "host":
            raise WorkerError(INVALID_ARGUMENT, f"Memory.{what}: host memory access needs host mode, this worker is {self.mode}")
        if addr < self.base or addr + nbytes > self.base + self.size or nbytes < 0:
            raise WorkerError(INVALID_ARGUMENT, f"Memory.{what}: [{addr:#x}, +{nbytes}) is not inside the arena "
                                                f"[{self.base:#x}, +{self.size})")

    def buffer(self, addr, nbytes):
        """A writable memoryview of nbytes bytes at addr (host mode)."""
        self._host(addr, nbytes, "buffer")
        return memoryview((ctypes.c_char * nbytes).from_address(addr)).cast("B")

    def array(self, addr, ctype, count):
        """A ctypes array of count elements of ctype at addr (host mode): mem.array(a.q_to_req,
        ctypes.c_int32, a.num_q)."""
        self._host(addr, ctypes.sizeof(ctype) * count, "array")
        return (ctype * count).from_address(addr)


def load(path, options):
    """Imports the adapter's source file as module octant_adapter, runs its setup and returns the
    module and its normalised declaration."""
    if not os.path.isfile(path):
        raise WorkerError(INVALID_ARGUMENT, f"adapter {path}: no such file; expected the path of a Python source file")
    spec = importlib.util.spec_from_file_location("octant_adapter", path)
    if spec is None or spec.loader is None:
        raise WorkerError(INVALID_ARGUMENT, f"adapter {path}: not importable; expected a Python source file (.py)")
    mod = importlib.util.module_from_spec(spec)
    decl = None
    what = "failed to import"
    try:
        spec.loader.exec_module(mod)
        if callable(getattr(mod, "setup", None)):
            what = "setup(options) raised"
            decl = mod.setup(dict(options))
        elif options:
            raise WorkerError(INVALID_ARGUMENT, f"adapter {path}: options {sorted(options)} given, but the adapter has "
                                                f"no setup(options) to take them")
    except WorkerError:
        raise
    except ModuleNotFoundError as e:
        raise WorkerError(RUNTIME, f"adapter {path} {what}: ModuleNotFoundError: {e}: the Python module {e.name!r} is "
                                   f"not installed for {sys.executable}; install it ({sys.executable} -m pip install "
                                   f"{(e.name or '').split('.')[0]}) or name an interpreter that has it (OCTANT_PYTHON)",
                          traceback.format_exc()) from None
    except BaseException as e:  # SystemExit too: an adapter must not end the worker by loading it
        raise WorkerError(RUNTIME, f"adapter {path} {what}: {type(e).__name__}: {e}",
                          traceback.format_exc()) from None
    if decl is None:
        decl = getattr(mod, "DECLARATION", None)
    return mod, normalise(path, mod, decl)


def _refuse(path, msg):
    raise WorkerError(INVALID_ARGUMENT, f"adapter {path}: DECLARATION: {msg}")


def normalise(path, mod, decl):
    """The declaration with its defaults, checked against the module: a dict {contract, ops: {op:
    {dtypes, tiers, reports_tier}}, formats, block_sizes, excludes, reduce_in_decode, info,
    build_info, tiers: [the tier list Go reads]}. The types of block_sizes, excludes,
    reduce_in_decode and reports_tier are checked here; the input-class names of excludes are
    checked by Go (harness, ParseDeclaration), which owns their vocabulary (docs/adapters.md)."""
    if not isinstance(decl, dict):
        _refuse(path, f"expected a dict (module-level DECLARATION, or returned by setup), found {type(decl).__name__}")
    contract = decl.get("contract", CONTRACT)
    if contract != CONTRACT:
        _refuse(path, f"contract {contract!r}, this worker implements contract {CONTRACT}")
    known = {"contract", "ops", "formats", "dtypes", "info", "build_info", "block_sizes", "excludes",
             "reduce_in_decode"}
    extra = sorted(set(decl) - known)
    if extra:
        _refuse(path, f"unknown keys {extra}, expected some of {sorted(known)}")
    formats = list(decl.get("formats", sorted(abi.SLOT_BYTES)))
    for f in formats:
        if f not in abi.SLOT_BYTES:
            _refuse(path, f"format {f!r}, expected some of {sorted(abi.SLOT_BYTES)}")
    dtypes = _dtypes(path, "DECLARATION", decl.get("dtypes", list(abi.DTYPES)))
    ops = decl.get("ops")
    if isinstance(ops, (list, tuple)):
        ops = {o: {} for o in ops}
    if not isinstance(ops, dict) or not ops:
        _refuse(path, "ops: expected a non-empty dict of op name -> {dtypes, tiers} (or a list of op names)")
    out_ops = {}
    for op, d in ops.items():
        if op not in abi.ENTRY:
            _refuse(path, f"op {op!r}, expected some of {list(abi.ENTRY)}")
        if not callable(getattr(mod, op, None)):
            _refuse(path, f"op {op!r} is declared but the module has no callable {op}(args, mem)")
        d = dict(d or {})
        o = {"dtypes": _dtypes(path, op, d.get("dtypes", dtypes))}
        tiers = d.get("tiers")
        if op in abi.OP_BITS:
            if not isinstance(tiers, dict) or not tiers:
                _refuse(path, f"{op}: tiers: expected a dict of tier name -> numeric profile, such as "
                              f"{{\"portable\": \"dot4-int8q\"}}")
            ids = {}
            for name, profile in tiers.items():
                tid = abi.tier_id(name)
                if tid is None:
                    _refuse(path, f"{op}: tier {name!r}, expected a registry name: {sorted(abi.TIER_IDS)} or one of them "
                                  f"with -model")
                if tid in ids:
                    _refuse(path, f"{op}: tiers {ids[tid]!r} and {name!r} have the same ABI id {tid}")
                if not isinstance(profile, str):
                    _refuse(path, f"{op}: tier {name!r}: profile {profile!r}, expected a string")
                ids[tid] = name
            o["tiers"] = dict(tiers)
        elif tiers not in (None, {}, ["portable"], {"portable": ""}):
            _refuse(path, f"{op}: tiers {tiers!r}: {op} is not tiered (the ABI tiers only decode and prefill)")
        reports = d.get("reports_tier", True)
        if not isinstance(reports, bool):
            _refuse(path, f"{op}: reports_tier {reports!r}, expected true or false")
        o["reports_tier"] = reports
        if "partial_stride" in d:
            ps = d["partial_stride"]
            if op != "decode" or not isinstance(ps, int) or isinstance(ps, bool) or ps < 258:
                _refuse(path, f"{op}: partial_stride {ps!r}: expected on decode only, an int >= 258 (the floats of "
                              f"one partial row the op writes in its mid_o)")
            o["partial_stride"] = ps
        extra = sorted(set(d) - {"dtypes", "tiers", "reports_tier", "partial_stride"})
        if extra:
            _refuse(path, f"{op}: unknown keys {extra}, expected dtypes, tiers, reports_tier or partial_stride")
        out_ops[op] = o
    info = decl.get("info", {})
    if not isinstance(info, dict):
        _refuse(path, f"info: expected a dict, found {type(info).__name__}")
    block_sizes = decl.get("block_sizes", "any")
    if block_sizes != "any":
        if not isinstance(block_sizes, (list, tuple)) or not block_sizes or not all(
                type(b) is int and b > 0 for b in block_sizes):
            _refuse(path, f"block_sizes {block_sizes!r}, expected \"any\" or a non-empty list of positive ints")
        block_sizes = sorted(set(block_sizes))
    excludes = decl.get("excludes", [])
    if not isinstance(excludes, (list, tuple)) or not all(isinstance(x, str) for x in excludes):
        _refuse(path, f"excludes {excludes!r}, expected a list of input-class names (strings)")
    reduce_in_decode = decl.get("reduce_in_decode", False)
    if not isinstance(reduce_in_decode, bool):
        _refuse(path, f"reduce_in_decode {reduce_in_decode!r}, expected true or false")
    if reduce_in_decode and "reduce" in out_ops:
        _refuse(path, "reduce_in_decode is true and ops declares reduce: a reduce inside decode has no op of its own")
    return {"contract": CONTRACT, "ops": out_ops, "formats": formats, "info": dict(info),
            "build_info": str(decl.get("build_info", "")), "tiers": tier_list(out_ops),
            "block_sizes": block_sizes, "excludes": list(excludes), "reduce_in_decode": reduce_in_decode}


def _dtypes(path, where, names):
    for n in names:
        if n not in abi.DTYPES:
            _refuse(path, f"{where}: dtype {n!r}, expected some of {list(abi.DTYPES)}")
    return list(names)


def tier_list(ops):
    """The tiers as Go reads them (kernels.TierDesc): in order of first appearance, decode first."""
    out = {}
    for op in ("decode", "prefill"):
        for name, profile in ops.get(op, {}).get("tiers", {}).items():
            t = out.setdefault(name, {"tier": abi.tier_id(name), "ops": 0, "name": name,
                                      "decode_profile": "", "prefill_profile": ""})
            t["ops"] |= abi.OP_BITS[op]
            t[op + "_profile"] = profile
    return list(out.values())
