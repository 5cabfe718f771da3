"""A standalone replay of one judged library call through an adapter, in this process and without
Go (docs/adapters.md, "A Python reproducer").

Octant writes it when a call it judges through an adapter fails: a script NAME.py beside the JSON
reproducer NAME.json, and its data NAME.pydata.gz (gzip'd JSON, format FORMAT below): the adapter
spec, the op's ABI struct, every buffer of the call with its bytes before the op ran, whether the
judge runs the call twice, and the judge's expectation of the output, taken from the oracle. The
script puts its sources directory on sys.path and calls main.

The replay loads the adapter as the worker does (adapter.load), places every buffer in a fresh
arena between canaries, runs the op through the worker's bridge (the same checks, address
translation and callable), syncs as the worker does (sync_error), and then judges what it can
without Go, in the judge's order: the op's status, the canaries, the inputs unchanged, the gaps
after output rows untouched, the same bits on a second run where the judge requires it, then the
output against the expectation (bound: every element within its bound of the model, padding rows
exactly zero, unwritten rows untouched, the contract's relative L2 rule; bits: equal bit for bit;
slots: the oracle's slot bytes, every other byte unchanged).

Exit status: 0 when the call passes (the failure no longer reproduces), 1 when it fails (what
failed is printed, in the judge's words), 2 when the replay cannot run (unreadable data, an
adapter that does not load).
"""
import base64
import gzip
import json
import math
import mmap
import struct
import sys
import urllib.parse

from . import abi, adapter
from .arena import GEN_SHIFT, HostArena, TorchArena, import_torch
from .bridge import OP_HEADER, Bridge, sync_error
from .protocol import WorkerError

FORMAT = 1  # the data file's format
GUARD = 64 << 10  # the arena's guards, as the worker's
CANARY = 256  # canary bytes before and after every buffer, as kernels.CanaryBytes
ALIGN = 256  # buffer alignment in the arena, as the worker's allocator
GEN = 1
USAGE = "usage: python3 NAME.py [--spec MODE:ADAPTER.py[?k=v&...]] [--sources DIR] [-q]"


def canary(n):
    """The canary pattern of kernels.canary: position-dependent, so a shifted write shows."""
    return bytes((0xC5 ^ (i * 31)) & 0xFF for i in range(n))


class Failure(Exception):
    """The call failed: the judge's message."""


class Unrunnable(Exception):
    """The replay cannot run: what is missing or malformed."""


def parse_spec(spec):
    """MODE:ADAPTER.py[?k=v&...] as harness.OpenWith reads it: mode, adapter path, options."""
    mode, sep, rest = spec.partition(":")
    if not sep or mode not in ("host", "torch"):
        raise Unrunnable(f"spec {spec!r}: expected host:ADAPTER.py[?k=v&...] or torch:ADAPTER.py[?k=v&...]")
    path, _, query = rest.partition("?")
    if not path:
        raise Unrunnable(f"spec {spec!r}: expected the path of an adapter after {mode + ':'!r}")
    opts = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if k in opts:
            raise Unrunnable(f"spec {spec!r}: option {k!r} given twice, expected once")
        opts[k] = v
    return mode, path, opts


def b64(s):
    return base64.b64decode(s) if s else b""


def floats(s):
    """Little-endian float64s (the data file's encoding of float arrays: NaN and ±Inf included)."""
    b = b64(s)
    return list(struct.unpack(f"<{len(b) // 8}d", b))


def load(path):
    """The data file, its byte and float fields decoded."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise Unrunnable(f"{path}: {type(e).__name__}: {e}; expected the gzip'd JSON data of a Python reproducer") from None
    if d.get("format") != FORMAT:
        raise Unrunnable(f"{path}: format {d.get('format')!r}, this replay reads format {FORMAT}")
    for k in ("op", "impl", "struct", "buffers", "expect"):
        if k not in d:
            raise Unrunnable(f"{path}: no field {k!r}")
    if d["op"] not in abi.LAYOUTS:
        raise Unrunnable(f"{path}: op {d['op']!r}, expected one of {sorted(abi.LAYOUTS)}")
    d["struct"] = b64(d["struct"])
    for b in d["buffers"]:
        b["data"] = b64(b.get("data"))
    e = d["expect"]
    for k in ("model", "bound", "exact"):
        e[k] = floats(e.get(k))
    for k in ("want_cache",):
        e[k] = b64(e.get(k))
    e["want"] = list(struct.unpack(f"<{len(b64(e.get('want'))) // 2}H", b64(e.get("want"))))
    e["judged"] = [c == "1" for c in e.get("judged") or ""]
    return d


# fp16 and bf16 bits as floats.
def f16(h):
    return struct.unpack("<e", struct.pack("<H", h))[0]


def bf16(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def rel_l2(got, want):
    num = sum((g - w) ** 2 for g, w in zip(got, want))
    den = sum(w * w for w in want)
    return math.sqrt(num) if den == 0 else math.sqrt(num / den)


def norm2(x):
    return math.sqrt(sum(v * v for v in x))


class Replay:
    """One recorded call, ready to run on an adapter (mode, adapter path, options)."""

    def __init__(self, data, mode, path, options):
        self.d, self.mode = data, mode
        self.layout = abi.LAYOUTS[data["op"]]
        self.bufs = data["buffers"]
        off = GUARD
        for b in self.bufs:
            b["off"] = off + CANARY  # arena offset of the first data byte
            off += (2 * CANARY + len(b["data"]) + ALIGN - 1) // ALIGN * ALIGN
        usable = max(off - GUARD, ALIGN)
        shm = mmap.mmap(-1, mmap.PAGESIZE)  # no window: nothing is copied through one here
        try:
            if mode == "host":
                self.arena = HostArena(GEN, usable, GUARD, shm)
            else:
                self.arena = TorchArena(import_torch(), "", GEN, usable, GUARD, shm)
            self.mod, self.decl = adapter.load(path, options)
        except WorkerError as e:
            raise Unrunnable(f"{abi.STATUS_NAMES.get(e.status, e.status)}: {e.message}\n{e.tb}".rstrip()) from None
        self.bridge = Bridge(self.mod, self.decl, self.arena, mode)
        self.payload = OP_HEADER.pack(next(c for c, l in abi.OPS.items() if l is self.layout), 0) + self.translate()
        tier = data["impl"]
        self.what = f"{abi.MSG_NAME[data['op']]} (tier {tier})" if data["op"] in abi.OP_BITS else abi.MSG_NAME[data["op"]]

    def translate(self):
        """The struct with every pointer moved to its buffer's place in this arena (as a worker
        address, gen << 40 | offset); slot_mapping_host is 0, as a worker receives it."""
        a = self.layout.unpack(self.d["struct"])
        for field in self.layout.pointers:
            p = a[field]
            if field == "slot_mapping_host" or p == 0:
                a[field] = 0
                continue
            for b in self.bufs:
                if b["addr"] <= p <= b["addr"] + len(b["data"]):
                    a[field] = (GEN << GEN_SHIFT) | (b["off"] + p - b["addr"])
                    break
            else:
                raise Unrunnable(f"{self.d['op']}: {field} = {p:#x} lies in no recorded buffer "
                                 f"({', '.join(b['name'] for b in self.bufs)})")
        return self.layout.pack(a)

    def place(self):
        c = canary(CANARY)
        for b in self.bufs:
            self.arena.put(b["off"] - CANARY, c + b["data"] + c)

    def buffer(self, name):
        for b in self.bufs:
            if b["name"] == name:
                return b
        raise Unrunnable(f"the expectation names buffer {name!r}, which the recording does not hold")

    def run(self):
        """One run of the op on freshly placed buffers; the output buffer's bytes after it."""
        self.place()
        try:
            self.bridge.op(self.payload)
        except WorkerError as e:
            raise Failure(f"{self.what}: {abi.STATUS_NAMES.get(e.status, e.status)}: {e.message}"
                          + (f"\n{e.tb.rstrip()}" if e.tb else "")) from None
        err = sync_error(self.arena, self.mod)
        if err is not None:
            raise Failure(f"sync after {self.what}: {abi.STATUS_NAMES.get(err.status, err.status)}: {err.message}")
        self.verify()
        b = self.buffer(self.d["expect"]["buffer"])
        return self.arena.get(b["off"], len(b["data"]))

    def verify(self):
        """Every buffer's canaries intact and every input unchanged (kernels.BufferSet.Verify)."""
        c = canary(CANARY)
        errs = []
        for b in self.bufs:
            n = len(b["data"])
            img = self.arena.get(b["off"] - CANARY, n + 2 * CANARY)
            for side, got in (("before", img[:CANARY]), ("after", img[CANARY + n:])):
                if got != c:
                    i = next(i for i in range(CANARY) if got[i] != c[i])
                    where = f"{CANARY - i} bytes before its start" if side == "before" else f"{i} bytes past its end"
                    errs.append(f"after {self.what}: {b['name']}: the canary {side} it is overwritten ({where}): "
                                f"{got[i]:#04x}, expected {c[i]:#04x}")
            body = img[CANARY:CANARY + n]
            if b["input"] and body != b["data"]:
                diff = [i for i in range(n) if body[i] != b["data"][i]]
                i = diff[0]
                errs.append(f"after {self.what}: input {b['name']} was modified: byte {i} is {body[i]:#04x}, "
                            f"uploaded {b['data'][i]:#04x} ({len(diff)} bytes differ)")
        if errs:
            raise Failure("\n".join(errs))


class Judge:
    """The judge's rules for one expectation (harness.Expectation), on the output's bytes."""

    def __init__(self, data, what):
        self.d, self.e = data, data["expect"]
        self.op, self.what = abi.MSG_NAME[data["op"]], what
        e = self.e
        self.conv = bf16 if e.get("dtype") == "bf16" else f16

    def name(self, i):
        """Flat element i of a [rows][heads][256] output."""
        e = self.e
        heads = max(e.get("heads") or 1, 1)
        return f"row {i // (heads * 256)} head {i // 256 % heads} dim {i % 256}"

    def elements(self, out):
        """The output as 16-bit elements."""
        return list(struct.unpack(f"<{len(out) // 2}H", out[:len(out) // 2 * 2]))

    def rows(self, raw, init):
        """The Rows × RowElems elements, packed; a written gap after a row fails (UnpackRows)."""
        e = self.e
        rows, n, stride = e["rows"], e["row_elems"], e["stride"]
        got = []
        for i in range(rows):
            for j in range(stride):
                k = i * stride + j
                if j >= n:
                    if raw[k] != init[k]:
                        raise Failure(f"{self.what}: element {j - n} of the {stride - n}-element gap after row {i} "
                                      f"(row stride {stride} > {n}) was written: {raw[k]:#06x}")
                    continue
                got.append(raw[k])
        return got

    def same_bits(self, first, second, name):
        for i, (a, b) in enumerate(zip(first, second)):
            if a != b:
                raise Failure(f"nondeterministic {self.op} (a race?): {name(i)} is {a:#x} after one run, {b:#x} after another")

    def check(self, out, init):
        kind = self.e["kind"]
        if kind == "bound":
            return self.bound(self.rows(self.elements(out), self.elements(init)))
        if kind == "bits":
            return self.bits(self.elements(out))
        if kind == "slots":
            return self.slots(out, init)
        raise Unrunnable(f"expectation kind {kind!r}, expected bound, bits or slots")

    def bound(self, raw):
        e = self.e
        model, bnd, judged = e["model"], e["bound"], e["judged"]
        if len(model) != len(raw) or len(bnd) != len(raw):
            raise Unrunnable(f"the expectation has {len(model)} model values and {len(bnd)} bounds for {len(raw)} elements")
        row_len = e["row_elems"]
        for r in e.get("zero_rows") or []:
            for k in range(r * row_len, (r + 1) * row_len):
                if raw[k] & 0x7FFF:
                    raise Failure(f"padding row {r} is not exactly zero: {self.name(k)} = {raw[k]:#06x} "
                                  f"({self.conv(raw[k])}); bound 0 (docs/contract.md §3.3: rows that attend to nothing "
                                  f"are written as exact zeros)")
        got = []
        for k, h in enumerate(raw):
            if judged and not judged[k]:
                if h != 0xFFFF:
                    raise Failure(f"row {k // row_len} belongs to no sequence but {self.name(k)} was written: "
                                  f"{h:#06x} (docs/contract.md §3.5: rows past a sequence's query length are not written)")
                got.append(math.nan)
                continue
            got.append(float(self.conv(h)))
        if e.get("nan_fails"):
            return self.first_outside(raw, got)
        worst, ratio = self.worst(got)
        if ratio > 1:
            k = worst
            err = abs(got[k] - model[k])
            rl2 = self.rel_l2_claimed(got, ratio)[0]
            where = "within" if rl2 < e["contract_rel_l2"] else "outside"
            raise Failure(f"(profile {e['profile']}): {self.name(k)} = {got[k]:.9g}, model {model[k]:.9g} "
                          f"± bound {bnd[k]:.3g}: |error| {err:.3g} is {ratio:.3g} × the bound (bound: {e['bound_why']}); "
                          f"relative L2 from exact attention {rl2:.3g}, {where} the contract's {e['contract_rel_l2']:g}")
        self.contract(got, ratio)
        return sum(1 for k, b in enumerate(bnd) if (not judged or judged[k]) and not math.isinf(b) and not math.isnan(b))

    def first_outside(self, raw, got):
        """Reduce's rule: the first element with |error| > bound, or a NaN error."""
        model, bnd = self.e["model"], self.e["bound"]
        for k, x in enumerate(got):
            err = abs(x - model[k])
            if err > bnd[k] or math.isnan(err):
                raise Failure(f"{self.op} {self.name(k)} = {x:.9g} ({raw[k]:#06x}), exact merge {model[k]:.9g} "
                              f"± bound {bnd[k]:.3g} ({self.e['bound_why']})")
        return len(got)

    def worst(self, got):
        """oracle.ProfileResult.Check: the element of the largest |error| / bound, and that ratio."""
        model, bnd, ov = self.e["model"], self.e["bound"], self.e.get("overflow") or 0
        worst, ratio = 0, 0.0
        for k, g in enumerate(got):
            b = bnd[k]
            if b == math.inf or (math.isnan(b) and math.isnan(model[k])):
                continue
            if math.isinf(g) and ov > 0 and abs(model[k]) + b >= ov and (g > 0) == (model[k] > 0):
                continue
            err = abs(g - model[k])
            if err == 0:
                q = 0.0
            elif b == 0 or math.isnan(err):
                q = math.inf
            else:
                q = err / b
            if q > ratio:
                worst, ratio = k, q
        return worst, ratio

    def claimed(self, got, ratio):
        model, bnd, judged = self.e["model"], self.e["bound"], self.e["judged"]
        idx = []
        for k, g in enumerate(got):
            if judged and not judged[k]:
                continue
            b = bnd[k]
            if b == math.inf or math.isnan(b) or (math.isinf(g) and not math.isinf(model[k]) and ratio <= 1):
                continue
            idx.append(k)
        return idx

    def rel_l2_claimed(self, got, ratio):
        exact = self.e["exact"]
        idx = self.claimed(got, ratio)
        if not exact or not idx:
            return math.nan, idx
        return rel_l2([got[k] for k in idx], [exact[k] for k in idx]), idx

    def contract(self, got, ratio):
        """judgeAttention's Fail within the bounds: the output outside the contract's relative L2 of
        exact attention while the profile's model is inside it, farther than the contract from
        that model, and the dtype's rounding cannot explain it."""
        e = self.e
        if not e["exact"]:
            return
        c = e["contract_rel_l2"]
        rl2, idx = self.rel_l2_claimed(got, ratio)
        if not idx or rl2 < c:
            return
        g = [got[k] for k in idx]
        x = [e["exact"][k] for k in idx]
        m = [e["model"][k] for k in idx]
        model_rl2 = rel_l2(m, x)
        if model_rl2 >= c:
            return  # the profile's own arithmetic misses the contract: a warning, not a failure
        dev = rel_l2(g, m)
        n = norm2(x)
        room = math.inf if n == 0 else norm2([e["round_u"] * abs(v) + e["round_abs"] for v in x]) / n
        if dev >= c and room < c / 2:
            raise Failure(f"(profile {e['profile']}): relative L2 from exact attention {rl2:.3g}, outside the "
                          f"contract's {c:g}, while the profile's own model is {model_rl2:.3g} from it: the output is "
                          f"{dev:.3g} (relative L2) from the model of its declared arithmetic, which neither the profile "
                          f"nor the {e['dtype']} output's rounding (at most {room:.3g}) explains. Every element is within "
                          f"the bound (worst {ratio:.3g} × it)")

    def bits(self, got):
        e = self.e
        want, st, sh = e["want"], e["stride"], e["head_stride"]
        for i, w in enumerate(want):
            g = got[i]
            if g == w or (math.isnan(self.conv(g)) and math.isnan(self.conv(w))):
                continue
            within = i % st
            if within >= e["heads"] * sh or within % sh >= 256:
                raise Failure(f"{self.op} wrote element {i} in a gap (stride_token {st}, stride_head {sh}): {g:#06x}, "
                              f"was {w:#06x}")
            raise Failure(f"{self.op} row {i // st} head {within // sh} dim {within % sh} = {g:#06x} ({self.conv(g)}), "
                          f"expected {w:#06x} ({self.conv(w)}): {e['bound_why']}")
        return e["rows"] * e["heads"] * 256

    def slots(self, after, before):
        e = self.e
        want = e["want_cache"]
        mine = bytearray(len(after))
        for s in e["slots"]:
            o, n, sb = s["offset"], s["data_bytes"], s["slot_bytes"]
            mine[o:o + sb] = b"\x01" * sb
            if after[o:o + n] != want[o:o + n]:
                raise Failure(f"{s['name']}: stored slot differs from the oracle's (expected: {e['bound_why']}; "
                              f"a difference §10 explains fails here too: replay the JSON reproducer with octant replay "
                              f"for the judge's rule)\n  stored {after[o:o + n].hex()}\n  oracle {want[o:o + n].hex()}")
            for i in range(n, sb):
                if after[o + i] != before[o + i]:
                    raise Failure(f"{s['name']}: pad byte {i} written ({after[o + i]:#04x}, was "
                                  f"{before[o + i]:#04x}): the store must leave pad bytes untouched")
        changed = [i for i in range(len(after)) if not mine[i] and after[i] != before[i]]
        if changed:
            i = changed[0]
            raise Failure(f"{len(changed)} cache bytes outside every mapped slot changed, first at byte {i} "
                          f"({after[i]:#04x}, was {before[i]:#04x})")
        return len(e["slots"])


def replay(data, spec):
    """Runs the recorded call on the adapter spec names and judges it: the number of elements (or
    slots) judged, or a Failure."""
    mode, path, opts = parse_spec(spec)
    r = Replay(data, mode, path, opts)
    j = Judge(data, r.what)
    init = r.buffer(data["expect"]["buffer"])["data"]
    first = r.run()
    if data.get("repeat"):
        second = r.run()
        if data["expect"]["kind"] == "slots":
            j.same_bits(first, second, lambda i: f"cache byte {i}")
        else:
            j.same_bits(j.elements(first), j.elements(second), j.name if data["expect"]["kind"] == "bound" else str)
    close = getattr(r.mod, "close", None)
    if callable(close):
        close()
    return j.check(first, init)


def main(data_path, argv):
    """The script's entry point: python3 NAME.py [--spec SPEC] [-q] (--sources is the script's)."""
    spec, quiet = None, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--spec" and args:
            spec = args.pop(0)
        elif a.startswith("--spec="):
            spec = a[len("--spec="):]
        elif a == "--sources" and args:
            args.pop(0)
        elif a.startswith("--sources="):
            pass
        elif a in ("-q", "--quiet"):
            quiet = True
        else:
            print(f"{USAGE}\n(unknown argument {a!r})", file=sys.stderr)
            return 2
    try:
        data = load(data_path)
        spec = spec or data.get("spec")
        if not spec:
            raise Unrunnable("no adapter spec: the data records none; pass --spec MODE:ADAPTER.py[?k=v&...]")
        what = f"{data['op']} {data['impl']} on {spec}"
        if not quiet:
            print(f"replaying {what} (recorded: {data.get('message', '').splitlines()[0] if data.get('message') else '?'})")
        n = replay(data, spec)
    except Unrunnable as e:
        print(f"cannot replay: {e}", file=sys.stderr)
        return 2
    except Failure as e:
        print(f"FAIL {what}: {data['impl']}: {e}")
        return 1
    print(f"ok {what}: the failure does not reproduce ({n} {'slots' if data['expect']['kind'] == 'slots' else 'elements'} judged)")
    return 0
