"""A reference adapter (capi.py) with one fault planted in decode, for the isolation tests of the
judges (conformance/isolation_test.go): what an implementation does wrong, and what Octant must
make of it (a failing case with a reproducer, and the next case judged as usual).

    host:faulty_adapter.py?lib=/abs/liboctave_emu.so&fault=NAME&mark=/abs/fired

The fault fires on the first decode call only, across worker restarts: the first call creates
the file mark, and a call that finds it runs clean. Faults:

    segv           the process dies of SIGSEGV inside the call
    exit           the process exits (os._exit(3)) inside the call
    hang           the call never returns
    raise          the call raises ValueError
    past-out       16 bytes written just past the output buffer's end
    past-arena     8 bytes written over the arena's front guard
    modify-input   one byte of the query changed
    wrong-tier     the call reports a tier other than the one asked
    nondeterministic  one output element's low bit flipped on every other call
    noisy          every call prints to stdout and stderr (no fault: the judges must not mind)
"""
import ctypes
import os
import sys
import time

from octant_adapters import capi

FAULTS = ("segv", "exit", "hang", "raise", "past-out", "past-arena", "modify-input", "wrong-tier",
          "nondeterministic", "noisy")

_fault = None
_mark = None
_calls = 0


def setup(options):
    global _fault, _mark
    opts = dict(options)
    _fault, _mark = opts.pop("fault", None), opts.pop("mark", None)
    if _fault not in FAULTS:
        raise ValueError(f"faulty_adapter.py: fault={_fault!r}, expected one of {FAULTS}")
    if not _mark:
        raise ValueError("faulty_adapter.py: option mark (a file path) is missing")
    decl = capi.setup(opts)
    if _fault == "nondeterministic":
        # The judges run only small launches twice on the emulator (arch "emu"); as any other
        # device, every call runs twice.
        decl["info"]["arch"] = "host"
    return decl


def _fire():
    """Whether the fault fires on this call: the first decode call only, whatever restarts."""
    if _fault in ("noisy", "nondeterministic"):
        return True
    if os.path.exists(_mark):
        return False
    with open(_mark, "w") as f:
        f.write(_fault)
    return True


def decode(a, mem):
    global _calls
    _calls += 1
    fire = _fire()
    if fire and _fault == "noisy":
        print(f"faulty_adapter: decode call {_calls} (stdout)")
        print(f"faulty_adapter: decode call {_calls} (stderr)", file=sys.stderr)
    if fire and _fault == "modify-input":
        q = mem.buffer(a.query, 2)
        q[1] ^= 0x40
    tier = capi.decode(a, mem)
    if not fire:
        return tier
    if _fault == "segv":
        ctypes.string_at(0)
    elif _fault == "exit":
        os._exit(3)
    elif _fault == "hang":
        time.sleep(3600)
    elif _fault == "raise":
        raise ValueError("planted: decode refuses this valid input")
    elif _fault == "past-out":
        end = a.out + mem.extents["out"]
        ctypes.memset(end, 0x33, 16)
    elif _fault == "past-arena":
        ctypes.memset(mem.base + 8, 0x33, 8)
    elif _fault == "wrong-tier":
        return "wmma" if tier != "wmma" else "portable"
    elif _fault == "nondeterministic" and _calls % 2 == 0:
        out = mem.buffer(a.out, 2)
        out[0] ^= 0x01
    return tier


store, rotate, reduce, prefill, query_maps, sync, close = (
    capi.store, capi.rotate, capi.reduce, capi.prefill, capi.query_maps, capi.sync, capi.close)
