"""A test adapter: the reference adapter capi.py (any Octave C library) with a narrowed
declaration, so that the judges' handling of a declared domain (docs/adapters.md, "Input classes";
docs/conformance.md, "Narrowed certificates") is tested on a real library. Options: capi.py's
(lib=, device=), and
  drop=OP,OP          ops not declared (store, rotate, decode, reduce, prefill, query_maps)
  excludes=C,C        input classes declared not handled (the vocabulary of docs/adapters.md)
  block_sizes=N,N     the block sizes declared (default: any)
  dtypes=D,D          the dtypes every op declares (default: fp16, bf16)
  reduce_in_decode=1  reduce declared inside decode (and not declared as an op)
  no_tier=OP,OP       ops whose callable returns None (reports_tier false)
The ops run the library unchanged: only what is declared differs from capi.py's."""
from octant_adapters import capi

NARROWING = ("drop", "excludes", "block_sizes", "dtypes", "reduce_in_decode", "no_tier")


def _list(v):
    return [x for x in v.split(",") if x]


def _silent(fn):
    def op(a, mem):
        fn(a, mem)
        return None
    op.__name__ = fn.__name__
    return op


def setup(options):
    """capi.setup on the library, then the declaration narrowed as the options say."""
    narrow = {k: options.pop(k) for k in NARROWING if k in options}
    decl = capi.setup(options)
    ops = decl["ops"]
    drop = _list(narrow.get("drop", ""))
    if narrow.get("reduce_in_decode") == "1":
        decl["reduce_in_decode"] = True
        drop.append("reduce")
    for op in drop:
        ops.pop(op, None)
    if "excludes" in narrow:
        decl["excludes"] = _list(narrow["excludes"])
    if "block_sizes" in narrow:
        decl["block_sizes"] = [int(b) for b in _list(narrow["block_sizes"])]
    if "dtypes" in narrow:
        decl["dtypes"] = _list(narrow["dtypes"])
    no_tier = _list(narrow.get("no_tier", ""))
    for op in ops:
        fn = getattr(capi, op)
        if op in no_tier:
            ops[op]["reports_tier"] = False
            fn = _silent(fn)
        globals()[op] = fn
    globals()["sync"], globals()["close"] = capi.sync, capi.close
    return decl
