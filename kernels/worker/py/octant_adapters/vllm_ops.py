"""Octant's adapter for vLLM's Octave ops: any extension that registers the four op schemas of
vLLM's Octave KV cache on torch.ops (docs/adapters.md, "The vLLM-schema adapter").

    torch:/abs/kernels/worker/py/octant_adapters/vllm_ops.py?ext=/abs/ext.so[&namespace=_C]
        [&tiers=portable,wmma][&prefill=wmma][&arch=NAME][&name=TEXT]

Options:
- ext: the extension: a shared library (.so, loaded with torch.ops.load_library) or a Python
  source file (.py, imported) that registers the ops; required.
- namespace: the torch.ops namespace of the ops (default _C, vLLM's).
- tiers: the decode tiers to declare, comma-separated, of portable (use_wmma=False) and wmma or
  wmma-model (use_wmma=True) (default portable,wmma).
- prefill: the tier name the prefill is declared as: the op has no tier argument (default wmma,
  vLLM's ROCm prefill; wmma-model for a model of it, portable for a float32 one).
- arch, name: the device as the judges see it, over the arena's torch device ("emu" makes the
  judges treat it as the CPU emulator).
- lib: an Octave C library for an extension that forwards to one (Octant's
  kernels/worker/testdata/octave_torch_ext.cpp): passed to its op octave_ext_init(lib, 0) after the
  load, so that one extension serves any library (octant mutate --through names each mutant so).

The four ops and their schemas are checked at setup: a missing op or another schema fails the
open with the expected and the found schema. The declaration says what vLLM's ops are: decode
with its reduce inside (reduce_in_decode; no reduce or query-map op), mid_o rows of 258 floats
(partial_stride), no tier report (the ops return nothing: a silent use_wmma fallback shows only
where the two profiles' bounds tell them apart), fp16 only for prefill, and the input classes the
ops do not validate (excludes).
"""
import os

from octant_worker import abi
from octant_worker.arena import import_torch
from octant_adapters import tensors

OPTIONS = ("ext", "namespace", "tiers", "prefill", "arch", "name", "lib")

# What vLLM registers (csrc/torch_bindings.cpp of a vLLM build with the Octave ops), each
# returning nothing. Tensor! is written Tensor(a!) by torch's printer; the check compares the
# arguments' names, types and whether each is written.
SCHEMAS = {
    "store": "octave_cache_store(Tensor key, Tensor value, Tensor! cache, Tensor slot_mapping, Tensor k_signs, "
             "Tensor v_signs, int fmt) -> ()",
    "decode": "octave_decode(Tensor! out, Tensor query, Tensor cache, Tensor block_table, Tensor q_to_req, "
              "Tensor q_to_klen, Tensor! mid_o, Tensor k_signs, Tensor v_signs, float sm_scale, int num_kv_splits, "
              "int fmt, int query_group, bool use_wmma) -> ()",
    "rotate": "octave_rotate(Tensor! x, Tensor signs, bool k_layout, bool inverse) -> ()",
    "prefill": "octave_prefill(Tensor! out, Tensor q, Tensor k, Tensor v, Tensor cache, Tensor block_table, "
               "Tensor cu_seqlens_q, Tensor seq_lens, int max_query_len, float sm_scale, int fmt) -> ()",
}

# The numeric profiles of the tiers the ops can run (arch registry; docs/contract.md).
DECODE_PROFILES = {"portable": "dot4-int8q", "wmma": "wmma-f16q", "wmma-model": "wmma-f16q"}
PREFILL_PROFILES = {"portable": "prefill-fp32", "wmma": "int8rowq+chunk-f16", "wmma-model": "int8rowq+chunk-f16"}

# The input classes vLLM's ops do not validate (the judges skip those cases).
EXCLUDES = ["invalid-block-ids", "slot-out-of-range", "duplicate-slots"]
PARTIAL_STRIDE = 258

_ops = {}  # op name -> the torch op (its overload packet)
_extensions = []  # the imported .py extensions: a torch.library.Library unregisters its ops when freed


class SetupError(Exception):
    """A setup failure whose message says what is missing and how to get it."""


def expected_schema(op, namespace):
    """The expected schema of op as torch parses it (a FunctionSchema)."""
    torch = import_torch("the vLLM-schema adapter")
    return torch._C.parse_schema(f"{namespace}::{SCHEMAS[op]}")


def signature(schema):
    """What the check compares: (name, type, written) of every argument, and the returns."""
    args = [(a.name, str(a.type), bool(a.alias_info is not None and a.alias_info.is_write)) for a in schema.arguments]
    return args, [str(r.type) for r in schema.returns]


def show(schema):
    """A schema as vLLM spells it: Tensor! for a written tensor."""
    args = ", ".join(f"{t}{'!' if w else ''} {n}" for n, t, w in signature(schema)[0])
    rets = signature(schema)[1]
    return f"{schema.name}({args}) -> ({', '.join(rets)})"


def init_library(namespace, lib):
    """Hands lib to the extension's octave_ext_init(path, device) (device 0: the worker's device
    is the one the process sees first; select it with CUDA_VISIBLE_DEVICES)."""
    torch = import_torch("the vLLM-schema adapter")
    if not os.path.isabs(lib) or not os.path.isfile(lib):
        raise SetupError(f"vllm_ops.py: lib={lib!r}: expected the absolute path of an Octave C library")
    try:
        init = getattr(getattr(torch.ops, namespace), "octave_ext_init")
    except (AttributeError, RuntimeError):
        raise SetupError(f"vllm_ops.py: lib={lib}: the extension registers no torch.ops.{namespace}.octave_ext_init"
                         f"(str path, int device) to take it (option lib is for Octant's octave_torch_ext.cpp)") from None
    init(lib, 0)


def load_extension(path):
    torch = import_torch("the vLLM-schema adapter")
    if not os.path.isabs(path):
        raise SetupError(f"vllm_ops.py: ext={path!r}: expected an absolute path of the extension (.so or .py)")
    if not os.path.isfile(path):
        raise SetupError(f"vllm_ops.py: ext={path}: no such file; expected the vLLM extension that registers the "
                         f"Octave ops (vllm/_C*.so, or a .py that registers them)")
    if path.endswith(".py"):
        import importlib.util
        spec = importlib.util.spec_from_file_location("octant_vllm_ext", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _extensions.append(mod)
    else:
        torch.ops.load_library(path)


def find_ops(namespace):
    """The four ops on torch.ops.<namespace>, each with its schema checked."""
    torch = import_torch("the vLLM-schema adapter")
    ns = getattr(torch.ops, namespace)
    found, problems = {}, []
    for op, text in SCHEMAS.items():
        name = text.split("(", 1)[0]
        want = expected_schema(op, namespace)
        try:
            packet = getattr(ns, name)
            schema = packet.default._schema
        except (AttributeError, RuntimeError):
            problems.append(f"op torch.ops.{namespace}.{name} is missing: expected {show(want)}")
            continue
        if signature(schema) != signature(want):
            problems.append(f"op torch.ops.{namespace}.{name} has the wrong schema: expected {show(want)}, "
                            f"found {show(schema)}")
            continue
        found[op] = packet
    return found, problems


def setup(options):
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SetupError(f"vllm_ops.py: unknown options {unknown}, expected some of {list(OPTIONS)}")
    ext = options.get("ext")
    if not ext:
        raise SetupError("vllm_ops.py: option ext is missing: expected ext=/abs/path of the extension that registers "
                         "the Octave ops (torch:vllm_ops.py?ext=/abs/vllm/_C.abi3.so)")
    namespace = options.get("namespace", "_C")
    tiers = [t for t in options.get("tiers", "portable,wmma").split(",") if t]
    for t in tiers:
        if t not in DECODE_PROFILES:
            raise SetupError(f"vllm_ops.py: tiers={options['tiers']!r}: tier {t!r}, expected some of "
                             f"{sorted(DECODE_PROFILES)} (use_wmma False: portable; True: wmma or wmma-model)")
    if not tiers or len({abi.tier_id(t) for t in tiers}) != len(tiers):
        raise SetupError(f"vllm_ops.py: tiers={options.get('tiers')!r}: expected one or two decode tiers, one per "
                         f"use_wmma value")
    prefill = options.get("prefill", "wmma")
    if prefill not in PREFILL_PROFILES:
        raise SetupError(f"vllm_ops.py: prefill={prefill!r}: expected one of {sorted(PREFILL_PROFILES)}")
    load_extension(ext)
    found, problems = find_ops(namespace)
    if problems:
        raise SetupError(f"vllm_ops.py: {ext} does not register vLLM's Octave ops as expected: " + "; ".join(problems))
    _ops.clear()
    _ops.update(found)
    if options.get("lib"):
        init_library(namespace, options["lib"])
    info = {k: options[k] for k in ("arch", "name") if k in options}
    torch = import_torch("the vLLM-schema adapter")
    return {
        "contract": 1,
        "ops": {
            "store": {"dtypes": ["fp16", "bf16"]},
            "rotate": {"dtypes": ["fp16", "bf16"]},
            "decode": {"tiers": {t: DECODE_PROFILES[t] for t in tiers}, "dtypes": ["fp16", "bf16"],
                       "partial_stride": PARTIAL_STRIDE, "reports_tier": False},
            "prefill": {"tiers": {prefill: PREFILL_PROFILES[prefill]}, "dtypes": ["fp16"], "reports_tier": False},
        },
        "formats": sorted(abi.SLOT_BYTES),
        "excludes": list(EXCLUDES),
        "reduce_in_decode": True,
        "info": info,
        "build_info": f"vLLM Octave ops torch.ops.{namespace} from {ext} through vllm_ops.py (torch {torch.__version__})",
    }


def store(a, mem):
    _ops["store"](*tensors.store(a, mem))


def rotate(a, mem):
    _ops["rotate"](*tensors.rotate(a, mem))


def decode(a, mem):
    use_wmma = abi.tier_id(a.tier_name) == abi.TIER_IDS["wmma"]
    _ops["decode"](*tensors.decode(a, mem, PARTIAL_STRIDE), use_wmma)


def prefill(a, mem):
    _ops["prefill"](*tensors.prefill(a, mem))

