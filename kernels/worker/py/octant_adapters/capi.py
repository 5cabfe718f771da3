"""Octant's reference adapter: any Octave C library (csrc/include/octave_capi.h), called through
ctypes from a worker (docs/adapters.md).

    host:kernels/worker/py/octant_adapters/capi.py?lib=/abs/path/liboctave_emu.so[&device=0]

At setup it loads the library, checks its ABI version, opens the device, and declares every op,
the tiers octave_tiers lists (with their numeric profiles) and the device octave_device_get_info
describes. Each op packs its arguments back into the C struct, with the arena's real addresses,
and calls the library: the library's status and message come back as the op's (OpError), and the
tier that ran is the one asked (the library refuses a tier it does not have). In host mode this
needs a library whose device memory is host memory: the CPU emulator (build/liboctave_emu.so).
"""
import ctypes

from octant_worker import abi
from octant_worker.adapter import OpError

ABI_VERSION = 3
OPTIONS = ("lib", "device")

_lib = None
_ctx = ctypes.c_void_p()


class DeviceInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint64), ("total_memory", ctypes.c_uint64), ("device", ctypes.c_int32),
                ("wave_size", ctypes.c_int32), ("compute_units", ctypes.c_int32), ("logical_wave", ctypes.c_int32),
                ("name", ctypes.c_char * 256), ("arch", ctypes.c_char * 64), ("runtime", ctypes.c_char * 16)]


class TierDesc(ctypes.Structure):
    _fields_ = [("tier", ctypes.c_int32), ("ops", ctypes.c_int32), ("name", ctypes.c_char * 32),
                ("decode_profile", ctypes.c_char * 32), ("prefill_profile", ctypes.c_char * 32)]


def _bind(lib):
    lib.octave_abi_version.restype = ctypes.c_int32
    lib.octave_last_error.restype = ctypes.c_char_p
    lib.octave_status_name.restype = ctypes.c_char_p
    lib.octave_status_name.argtypes = [ctypes.c_int32]
    lib.octave_build_info.restype = ctypes.c_char_p
    lib.octave_open.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    for name in ("octave_open", "octave_close", "octave_sync", "octave_device_get_info", "octave_tiers",
                 *abi.ENTRY.values()):
        getattr(lib, name).restype = ctypes.c_int32
    for name in ("octave_close", "octave_sync"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.octave_device_get_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(DeviceInfo)]
    lib.octave_tiers.argtypes = [ctypes.c_void_p, ctypes.POINTER(TierDesc), ctypes.c_int32,
                                 ctypes.POINTER(ctypes.c_int32)]
    for name in abi.ENTRY.values():
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p]


def _check(what, status):
    if status:
        name = _lib.octave_status_name(status).decode()
        raise RuntimeError(f"capi.py: {what}: {name}: {_lib.octave_last_error().decode()}")


def setup(options):
    """Loads options["lib"], opens device options["device"] (default 0) and returns the
    declaration: every op, the library's tiers and its device."""
    global _lib
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"capi.py: unknown options {unknown}, expected some of {list(OPTIONS)}")
    path = options.get("lib")
    if not path:
        raise ValueError("capi.py: option lib is missing: expected lib=PATH of an Octave C library "
                         "(host:capi.py?lib=/abs/path/liboctave_emu.so)")
    device = int(options.get("device", "0"))
    lib = ctypes.CDLL(path)
    _bind(lib)
    _lib = lib
    v = lib.octave_abi_version()
    if v != ABI_VERSION:
        raise ValueError(f"capi.py: {path} has ABI version {v}, expected {ABI_VERSION}")
    _check(f"octave_open({device})", lib.octave_open(device, ctypes.byref(_ctx)))
    info = DeviceInfo(struct_size=ctypes.sizeof(DeviceInfo))
    _check("octave_device_get_info", lib.octave_device_get_info(_ctx, ctypes.byref(info)))
    n = ctypes.c_int32()
    _check("octave_tiers", lib.octave_tiers(_ctx, None, 0, ctypes.byref(n)))
    descs = (TierDesc * n.value)()
    _check("octave_tiers", lib.octave_tiers(_ctx, descs, n.value, ctypes.byref(n)))
    ops = {"store": {}, "rotate": {}, "decode": {"tiers": {}}, "reduce": {}, "prefill": {"tiers": {}},
           "query_maps": {}}
    for d in descs:
        name = d.name.decode()
        if d.ops & abi.OP_BITS["decode"]:
            ops["decode"]["tiers"][name] = d.decode_profile.decode()
        if d.ops & abi.OP_BITS["prefill"]:
            ops["prefill"]["tiers"][name] = d.prefill_profile.decode()
    for op in ("decode", "prefill"):
        if not ops[op]["tiers"]:
            del ops[op]
    return {"contract": 1, "ops": ops, "formats": sorted(abi.SLOT_BYTES), "dtypes": list(abi.DTYPES),
            "info": {"name": info.name.decode(), "arch": info.arch.decode(), "runtime": info.runtime.decode(),
                     "wave_size": info.wave_size, "logical_wave": info.logical_wave,
                     "compute_units": info.compute_units, "total_memory": info.total_memory},
            "build_info": f"C library {path} through capi.py: {lib.octave_build_info().decode()}"}


def _call(op, a):
    """Calls the library's entry point of op with a's struct; the library's status is the op's."""
    buf = ctypes.create_string_buffer(abi.LAYOUTS[op].pack(a))
    status = getattr(_lib, abi.ENTRY[op])(_ctx, buf)
    if status:
        raise OpError(status, _lib.octave_last_error().decode())
    return a.tier_name


def _forwarder(op):
    def forward(a, mem):
        return _call(op, a)
    forward.__name__ = forward.__qualname__ = op
    forward.__doc__ = f"Runs the library's {abi.ENTRY[op]} on a."
    return forward


# One callable per op, each forwarding to the library's entry point.
store, rotate, decode, reduce, prefill, query_maps = (_forwarder(op) for op in abi.ENTRY)


def sync():
    """octave_sync: the library's asynchronous errors."""
    status = _lib.octave_sync(_ctx)
    if status:
        raise OpError(status, _lib.octave_last_error().decode())


def close():
    if _lib is not None and _ctx.value:
        _lib.octave_close(_ctx)
        _ctx.value = None
