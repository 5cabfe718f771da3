"""Octant's adapter for plain Python callables with the tensor signatures of vLLM's Octave ops
(docs/adapters.md, "Plain Python callables").

    torch:/abs/kernels/worker/py/octant_adapters/callables.py?module=/abs/impl.py

The module (a Python source file) holds a DECLARATION dict, as an adapter's (docs/adapters.md,
"DECLARATION"; SUPPORTS is taken under that name too), and one function per op it declares, of
store, rotate, decode and prefill, each taking the tensors and values of the vLLM op of that
name (vllm_ops.SCHEMAS), views of the worker's arena made by tensors.py:

    store(key, value, cache, slot_mapping, k_signs, v_signs, fmt)
    rotate(x, signs, k_layout, inverse)
    decode(out, query, cache, block_table, q_to_req, q_to_klen, mid_o, k_signs, v_signs, sm_scale,
           num_kv_splits, fmt, query_group, use_wmma)
    prefill(out, q, k, v, cache, block_table, cu_seqlens_q, seq_lens, max_query_len, sm_scale, fmt)

A function that has a parameter named tier (or **kwargs) is also given tier=the declared name of
the tier asked; it may return the name of the tier that ran (None: not reported), which the
worker holds to the one asked. Decode writes out, its reduce included (reduce_in_decode defaults
to true), and mid_o has rows of the declared partial_stride floats (default the C ABI's 260). The
tensors live wherever the worker's arena does: torch mode's device, or host memory in host mode
(torch needed all the same).
"""
import importlib.util
import inspect
import os

from octant_worker import abi
from octant_worker.adapter import OpError
from octant_adapters import tensors

OPTIONS = ("module",)

_fns = {}  # op -> (the module's function, whether it takes tier)
_partial_stride = None


class SetupError(Exception):
    """A setup failure whose message says what is wrong and what was expected."""


def takes_tier(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "tier" or p.kind == inspect.Parameter.VAR_KEYWORD for p in params)


def setup(options):
    global _partial_stride
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SetupError(f"callables.py: unknown options {unknown}, expected some of {list(OPTIONS)}")
    path = options.get("module")
    if not path:
        raise SetupError("callables.py: option module is missing: expected module=/abs/path of a Python source file "
                         "with a DECLARATION and the op functions (torch:callables.py?module=/abs/impl.py)")
    if not os.path.isabs(path) or not os.path.isfile(path):
        raise SetupError(f"callables.py: module={path!r}: expected the absolute path of an existing Python source file")
    spec = importlib.util.spec_from_file_location("octant_callables", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    decl = getattr(mod, "DECLARATION", None)
    if decl is None:
        decl = getattr(mod, "SUPPORTS", None)
    if not isinstance(decl, dict):
        raise SetupError(f"callables.py: {path} has no DECLARATION dict (or SUPPORTS): expected one saying which ops, "
                         f"tiers, dtypes and formats its functions support (docs/adapters.md)")
    decl = dict(decl)
    ops = decl.get("ops")
    names = list(ops) if isinstance(ops, (dict, list, tuple)) else []
    _fns.clear()
    for op in names:
        if op not in tensors.OPS:
            raise SetupError(f"callables.py: {path} declares op {op!r}: expected some of {list(tensors.OPS)} (the ops "
                             f"vLLM's Octave schemas have)")
        fn = getattr(mod, op, None)
        if not callable(fn):
            raise SetupError(f"callables.py: {path} declares op {op!r} but has no function {op}")
        _fns[op] = (fn, takes_tier(fn))
    if "decode" in names:
        decl.setdefault("reduce_in_decode", True)
        if isinstance(ops, dict):
            _partial_stride = (ops["decode"] or {}).get("partial_stride")
    decl["build_info"] = f"{path} through callables.py" + (f": {decl['build_info']}" if decl.get("build_info") else "")
    return decl


def _run(op, a, mem, extra=()):
    fn, tier = _fns[op]
    args = tensors.OPS[op](a, mem, _partial_stride) if op == "decode" else tensors.OPS[op](a, mem)
    ran = fn(*args, *extra, tier=a.tier_name) if tier else fn(*args, *extra)
    if ran is not None and not isinstance(ran, str):
        raise OpError(abi.RUNTIME, f"{abi.MSG_NAME[op]}: {fn.__name__} returned {ran!r}: expected the name of the tier "
                                   f"that ran, or None")
    return ran


def store(a, mem):
    return _run("store", a, mem)


def rotate(a, mem):
    return _run("rotate", a, mem)


def decode(a, mem):
    return _run("decode", a, mem, (abi.tier_id(a.tier_name) == abi.TIER_IDS["wmma"],))


def prefill(a, mem):
    return _run("prefill", a, mem)
