"""A test adapter: the reference adapter capi.py over an Octave C library, with one defect planted
by the option defect (the other options are capi.py's):

- none: no defect (the library's ops as they are);
- perturb: decode writes 100 to output element (row 0, head 0, dim DIM) after the library ran
  (option dim, default 5);
- raise: decode raises ValueError("planted defect (marker 3Q)").

    host:/abs/kernels/worker/testdata/defect_adapter.py?lib=/abs/build/liboctave_emu.so&defect=perturb

The Python reproducer's test (conformance/pyrepro_test.go) and the pytest file's
(cmd/octant/pytest_test.go) judge it.
"""
import ctypes

from octant_adapters import capi

DEFECTS = ("none", "perturb", "raise")
_defect = "none"
_dim = 5

store, rotate, reduce, prefill, query_maps, sync, close = (capi.store, capi.rotate, capi.reduce, capi.prefill,
                                                           capi.query_maps, capi.sync, capi.close)


def setup(options):
    global _defect, _dim
    o = dict(options)
    _defect = o.pop("defect", "none")
    _dim = int(o.pop("dim", "5"))
    if _defect not in DEFECTS:
        raise ValueError(f"defect_adapter.py: defect={_defect!r}, expected one of {DEFECTS}")
    if not 0 <= _dim < 256:
        raise ValueError(f"defect_adapter.py: dim={_dim}, expected 0..255")
    d = capi.setup(o)
    d["build_info"] += f"; defect_adapter.py defect={_defect}"
    return d


def decode(a, mem):
    if _defect == "raise":
        raise ValueError("planted defect (marker 3Q)")
    ran = capi.decode(a, mem)
    if _defect == "perturb" and a.num_q > 0:
        capi.sync()
        x = mem.array(a.out + 2 * _dim, ctypes.c_uint16, 1)
        x[0] = 0x42C8 if a.dtype == 2 else 0x5640  # 100 in bf16, fp16
    return ran
