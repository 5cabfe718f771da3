#!/usr/bin/env python3
"""fp16 attention baseline for `octant bench`: the same batch shapes through
torch.nn.functional.scaled_dot_product_attention with fp16 K/V caches.

Shapes (head size 256, G = Hq/Hkv = 6, fp16; "100k" = 100000 tokens, "2k" = 2048 queries):
  q1s100k   1 decode query over a 100000-token sequence; Hkv 1, Hq 6
  q4s100k   MTP: 4 query tokens of one request, causal (klens 99997..100000); Hkv 1, Hq 6
  q2ks100k  a 2048-token chunk ending a 100000-token sequence, causal (klens 97953..100000); Hkv 1, Hq 6
  big       8 requests x 131072 tokens, one decode query each; Hkv 4, Hq 24
  tiny      1 decode query over 2048 tokens (a quick check)

query [B, Hq, L, 256], K/V [B, Hkv, S, 256]. GQA: enable_gqa=True where torch has it ("native"),
otherwise, for decode (L = 1), the G query heads of a KV head folded into the query length
("fold", the same attention without copying K/V), otherwise K/V repeated G times ("expand").
Multi-query shapes use a lower-right (bottom-aligned) causal mask: torch.nn.attention.bias.
causal_lower_right where available (flash/efficient kernels), else an explicit boolean mask.

Timing: --warmup calls, then --reps calls each timed with CUDA events around the attention call
alone, the L2 flushed before each (zeroing a --flush-bytes buffer, untimed) unless --no-flush-l2;
median and min reported. bytes = fp16 K/V read = 2 x S x Hkv x 256 x 2 per request; GB/s = bytes /
median; HBM = device-to-device copy bandwidth of --copy-bytes (read + write counted), measured in
the same run. Each --backends entry is run (auto = torch's own choice); a backend that refuses a
shape, or a shape that does not fit in memory, is reported and skipped, never fatal.

Exit status: 0 when every spec got at least one measurement; 1 when some spec got none (out of
memory, no backend); 2 usage or environment error (no torch, no CUDA device).
"""

import argparse
import datetime
import json
import math
import statistics
import sys
import warnings

HEAD = 256

SPECS = {
    # name: (requests B, sequence length S, queries per request L, Hkv, G)
    "q1s100k": (1, 100000, 1, 1, 6),
    "q4s100k": (1, 100000, 4, 1, 6),
    "q2ks100k": (1, 100000, 2048, 1, 6),
    "big": (8, 131072, 1, 4, 6),
    "tiny": (1, 2048, 1, 1, 6),
}
DEFAULT_SPECS = "q1s100k,q4s100k,q2ks100k,big"
BACKENDS = ("auto", "flash", "efficient", "cudnn", "math")


def shape_of(name):
    b, s, l, hkv, g = SPECS[name]
    return {"spec": name, "num_reqs": b, "seq_len": s, "queries_per_req": l, "num_kv_heads": hkv,
            "gqa_group": g, "num_q_heads": g * hkv}


def fp16_kv_bytes(sh):
    """K and V of every request: 2 x S x Hkv x 256 x 2 bytes each."""
    return sh["num_reqs"] * 2 * sh["seq_len"] * sh["num_kv_heads"] * HEAD * 2


def human(n):
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m:
            return "%.2f %s" % (n / m, unit)
    return "%d B" % n


def parse_size(s):
    t = s.strip()
    for suffix, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("GB", 10**9), ("MB", 10**6), ("B", 1)):
        if t.endswith(suffix):
            return int(t[: -len(suffix)].strip()) * m
    return int(t)


def log(msg):
    print("sdpa: " + msg, file=sys.stderr, flush=True)


def is_oom(e):
    import torch
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e).lower()


def backend_context(torch, name):
    """A context manager that restricts SDPA to one backend (a no-op for auto)."""
    import contextlib
    if name == "auto":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        enum = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION",
                "math": "MATH"}[name]
        if not hasattr(SDPBackend, enum):
            raise RuntimeError("this torch has no SDPBackend.%s" % enum)
        return sdpa_kernel(getattr(SDPBackend, enum))
    except ImportError:
        pass
    if name == "cudnn":
        raise RuntimeError("this torch has no cuDNN SDPA backend")
    flags = {"enable_flash": name == "flash", "enable_mem_efficient": name == "efficient", "enable_math": name == "math"}
    return torch.backends.cuda.sdp_kernel(**flags)


def causal_lower_right_bias(torch, L, S, device):
    """A bottom-aligned causal mask for L queries over S keys: query j sees keys 0..S-L+j."""
    try:
        from torch.nn.attention.bias import causal_lower_right
        return causal_lower_right(L, S), "causal_lower_right"
    except ImportError:
        pass
    rows = torch.arange(L, device=device).unsqueeze(1) + (S - L)
    cols = torch.arange(S, device=device).unsqueeze(0)
    return cols <= rows, "bool[%d,%d]" % (L, S)


def make_call(torch, q, k, v, mask, mode, G):
    """The attention call for one GQA mode: (callable, description), or raise."""
    F = torch.nn.functional
    B, Hq, L, D = q.shape
    Hkv = k.shape[1]
    kw = {}
    if mask is not None:
        kw["attn_mask"] = mask
    if mode == "native":
        kw["enable_gqa"] = True
        return lambda: F.scaled_dot_product_attention(q, k, v, **kw)
    if mode == "fold":
        if L != 1:
            raise RuntimeError("fold needs one query per request")
        qf = q.view(B, Hkv, G, D)  # query head h = kv * G + g uses KV head h // G
        return lambda: F.scaled_dot_product_attention(qf, k, v, **kw).view(B, Hq, 1, D)
    if mode == "expand":
        ke = k.repeat_interleave(G, dim=1)
        ve = v.repeat_interleave(G, dim=1)
        return lambda: F.scaled_dot_product_attention(q, ke, ve, **kw)
    raise ValueError(mode)


def time_call(torch, fn, reps, warmup, flush_buf):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush_buf is not None:
            flush_buf.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def measure_copy(torch, n, reps, device):
    """Device-to-device copy bandwidth (read + write), halving n when it does not fit."""
    note = None
    while True:
        try:
            src = torch.full((n,), 0x5A, dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            break
        except RuntimeError as e:
            if not is_oom(e) or n // 2 < (64 << 20):
                raise
            torch.cuda.empty_cache()
            note = "two buffers of %s did not fit; used %s" % (human(n), human(n // 2))
            n //= 2
    ms = time_call(torch, lambda: dst.copy_(src), reps, 3, None)
    del src, dst
    torch.cuda.empty_cache()
    med = statistics.median(ms)
    return {"copy_bytes": n, "moved_bytes": 2 * n, "median_ms": med, "min_ms": min(ms), "gbps": 2 * n / (med * 1e6),
            "note": note}


def run_spec(torch, name, args, device, flush_buf, hbm_gbps, gqa_native):
    sh = shape_of(name)
    B, S, L, Hkv, G = SPECS[name]
    Hq = G * Hkv
    kvb = fp16_kv_bytes(sh)
    rows = []
    base = dict(sh, fp16_kv_bytes=kvb)
    log("%s: B %d, L %d, S %d, Hq %d, Hkv %d; fp16 K/V %s" % (name, B, L, S, Hq, Hkv, human(kvb)))
    try:
        gen = torch.Generator(device=device)
        gen.manual_seed(args.seed)
        q = torch.randn((B, Hq, L, HEAD), dtype=torch.float16, device=device, generator=gen)
        k = torch.randn((B, Hkv, S, HEAD), dtype=torch.float16, device=device, generator=gen)
        v = torch.randn((B, Hkv, S, HEAD), dtype=torch.float16, device=device, generator=gen)
        mask, mask_kind = (None, "none") if L == 1 else causal_lower_right_bias(torch, L, S, device)
    except RuntimeError as e:
        if not is_oom(e):
            raise
        msg = "out of memory allocating query + K/V (%s of fp16 K/V, B %d x Hkv %d x S %d x 256 x 2): %s" % (
            human(kvb), B, Hkv, S, str(e).splitlines()[0])
        log("%s: %s" % (name, msg))
        torch.cuda.empty_cache()
        return [dict(base, backend="-", error=msg)]

    if args.gqa != "auto":
        modes = [args.gqa]
    else:
        modes = (["native"] if gqa_native else []) + (["fold"] if L == 1 else ["expand"])
    ref = None
    for backend in args.backends.split(","):
        backend = backend.strip()
        row = dict(base, backend=backend, mask=mask_kind)
        errors = []
        for mode in modes:
            fn, caught = None, []
            try:
                with backend_context(torch, backend):
                    fn = make_call(torch, q, k, v, mask, mode, G)
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        out = fn()
                        torch.cuda.synchronize()
                    ms = time_call(torch, fn, args.reps, args.warmup, flush_buf)
            except Exception as e:  # a backend refusing a shape, or out of memory: report, go on
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                if is_oom(e):
                    why = "out of memory (fp16 K/V %s, mode %s): %s" % (human(kvb), mode, why)
                hints = [str(w.message).splitlines()[0] for w in caught if str(w.message)][:2]
                errors.append("%s: %s%s" % (mode, why, (" [" + "; ".join(hints) + "]") if hints else ""))
                fn = out = None
                torch.cuda.empty_cache()
                continue
            med = statistics.median(ms)
            row.update(gqa=mode, median_ms=med, min_ms=min(ms), samples_ms=ms, gbps=kvb / (med * 1e6))
            if hbm_gbps:
                row["hbm_fraction"] = row["gbps"] / hbm_gbps
            if ref is None:
                ref, row["check"] = out.float(), "reference"
            else:
                d = (out.float() - ref)
                rel = (d.norm() / ref.norm()).item()
                row["rel_l2_vs_first"] = rel
                row["check"] = "rel L2 %.1e" % rel
            log("%s: %s (%s): median %.4f ms, min %.4f ms, %.1f GB/s" % (name, backend, mode, med, min(ms), row["gbps"]))
            break
        else:
            row["error"] = " | ".join(errors) if errors else "no GQA mode to try"
            log("%s: %s: failed: %s" % (name, backend, row["error"]))
        rows.append(row)
        out = fn = None
    del q, k, v, mask, ref
    torch.cuda.empty_cache()
    return rows


def print_table(rows, hbm):
    head = ["spec", "backend", "gqa", "mask", "B x L", "S", "Hq/Hkv", "MB fp16 KV", "median ms", "min ms", "GB/s",
            "% HBM", "check"]
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append([r["spec"], r["backend"], "-", r.get("mask", "-"), "%dx%d" % (r["num_reqs"], r["queries_per_req"]),
                          str(r["seq_len"]), "%d/%d" % (r["num_q_heads"], r["num_kv_heads"]),
                          "%.1f" % (r["fp16_kv_bytes"] / 1e6), "FAILED", "-", "-", "-", "-"])
            continue
        frac = "%.1f" % (100 * r["hbm_fraction"]) if "hbm_fraction" in r else "-"
        lines.append([r["spec"], r["backend"], r["gqa"], r["mask"], "%dx%d" % (r["num_reqs"], r["queries_per_req"]),
                      str(r["seq_len"]), "%d/%d" % (r["num_q_heads"], r["num_kv_heads"]),
                      "%.1f" % (r["fp16_kv_bytes"] / 1e6), "%.4f" % r["median_ms"], "%.4f" % r["min_ms"],
                      "%.1f" % r["gbps"], frac, r.get("check", "")])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(c.rjust(w) for c, w in zip(l, widths)))
    for r in rows:
        if "error" in r:
            print("%s %s: %s" % (r["spec"], r["backend"], r["error"]))
    if hbm:
        print("HBM (d2d copy of %s, read+write): %.1f GB/s (median %.3f ms)" % (human(hbm["copy_bytes"]), hbm["gbps"],
                                                                          hbm["median_ms"]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--specs", default=DEFAULT_SPECS, help="comma-separated specs (default %(default)s; also: tiny)")
    p.add_argument("--reps", type=int, default=50, help="timed calls per spec and backend (default %(default)s)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first (default %(default)s)")
    p.add_argument("--backends", default="auto,flash,efficient,cudnn",
                   help="comma-separated SDPA backends from %s (default %%(default)s)" % ",".join(BACKENDS))
    p.add_argument("--gqa", default="auto", choices=["auto", "native", "fold", "expand"],
                   help="how K/V heads are shared: auto = native enable_gqa when torch has it, else fold (decode) or "
                        "expand (default %(default)s)")
    p.add_argument("--copy-bytes", default="4GiB", help="d2d copy size for the HBM bandwidth, 0 to skip (default %(default)s)")
    p.add_argument("--copy-reps", type=int, default=20)
    p.add_argument("--flush-bytes", default="256MiB", help="L2 flush buffer zeroed before each timed call (default %(default)s)")
    p.add_argument("--no-flush-l2", action="store_true", help="do not flush the L2 between timed calls")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", metavar="FILE", help="write all numbers as JSON")
    p.add_argument("--dry-run", action="store_true", help="print the shapes and bytes, run nothing (no torch needed)")
    args = p.parse_args(argv)

    names = [s.strip() for s in args.specs.split(",") if s.strip()]
    bad = [s for s in names if s not in SPECS]
    if bad or not names:
        p.error("unknown spec(s) %s (known: %s)" % (", ".join(bad) or "(none given)", ", ".join(SPECS)))
    bad = [b for b in args.backends.split(",") if b.strip() not in BACKENDS]
    if bad:
        p.error("unknown backend(s) %s (known: %s)" % (", ".join(bad), ", ".join(BACKENDS)))
    if args.reps < 1 or args.warmup < 0 or args.copy_reps < 1:
        p.error("--reps and --copy-reps must be >= 1, --warmup >= 0")
    try:
        copy_bytes, flush_bytes = parse_size(args.copy_bytes), parse_size(args.flush_bytes)
    except ValueError as e:
        p.error("bad byte size: %s" % e)

    if args.dry_run:
        for n in names:
            sh = shape_of(n)
            print("%-9s B %d x L %d, S %d, Hq %d, Hkv %d: fp16 K/V %d bytes (%s)" % (
                n, sh["num_reqs"], sh["queries_per_req"], sh["seq_len"], sh["num_q_heads"], sh["num_kv_heads"],
                fp16_kv_bytes(sh), human(fp16_kv_bytes(sh))))
        return 0

    try:
        import torch
    except ImportError as e:
        print("bench_sdpa: cannot import torch: %s" % e, file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or torch.cuda.device_count() <= args.device:
        print("bench_sdpa: no CUDA device %d (torch %s, CUDA %s, %d device(s))" % (
            args.device, torch.__version__, torch.version.cuda, torch.cuda.device_count() if torch.cuda.is_available() else 0),
            file=sys.stderr)
        return 2
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        print("bench_sdpa: torch %s has no scaled_dot_product_attention (needs 2.0+)" % torch.__version__, file=sys.stderr)
        return 2
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    log("torch %s, CUDA %s, device %d: %s (sm_%d%d, %d SMs, %s)" % (
        torch.__version__, torch.version.cuda, args.device, props.name, props.major, props.minor,
        props.multi_processor_count, human(props.total_memory)))

    # Does this torch take enable_gqa? (2.5+)
    gqa_native = True
    try:
        t = torch.zeros((1, 2, 1, 8), dtype=torch.float16, device=device)
        u = torch.zeros((1, 1, 4, 8), dtype=torch.float16, device=device)
        torch.nn.functional.scaled_dot_product_attention(t, u, u, enable_gqa=True)
    except TypeError:
        gqa_native = False
        log("this torch has no enable_gqa: decode folds the G query heads, multi-query shapes expand K/V")
    except RuntimeError:
        pass

    report = {"tool": "scripts/bench_sdpa.py", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
              "device": {"index": args.device, "name": props.name, "capability": "sm_%d%d" % (props.major, props.minor),
                         "sms": props.multi_processor_count, "total_memory": props.total_memory},
              "settings": {"dtype": "fp16", "head_size": HEAD, "scale": 1 / math.sqrt(HEAD), "reps": args.reps,
                           "warmup": args.warmup, "backends": args.backends, "gqa": args.gqa, "enable_gqa": gqa_native,
                           "flush_l2": not args.no_flush_l2, "flush_bytes": flush_bytes, "seed": args.seed,
                           "timing": "CUDA events around each attention call; L2 flushed before each unless disabled"},
              "hbm": None, "results": []}

    hbm = None
    if copy_bytes > 0:
        try:
            hbm = measure_copy(torch, copy_bytes, args.copy_reps, device)
            log("HBM: d2d copy of %s: %.3f ms median, %.1f GB/s (read+write)%s" % (
                human(hbm["copy_bytes"]), hbm["median_ms"], hbm["gbps"], "; " + hbm["note"] if hbm["note"] else ""))
        except RuntimeError as e:
            log("HBM: copy bandwidth not measured: %s" % str(e).splitlines()[0])
            torch.cuda.empty_cache()
    report["hbm"] = hbm
    flush_buf = None
    if not args.no_flush_l2 and flush_bytes > 0:
        flush_buf = torch.empty((flush_bytes,), dtype=torch.uint8, device=device)

    rows, failed_specs = [], []
    for n in names:
        try:
            r = run_spec(torch, n, args, device, flush_buf, hbm["gbps"] if hbm else None, gqa_native)
        except Exception as e:  # never let one spec end the run
            r = [dict(shape_of(n), fp16_kv_bytes=fp16_kv_bytes(shape_of(n)), backend="-",
                      error="%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))]
            log("%s: %s" % (n, r[0]["error"]))
            torch.cuda.empty_cache()
        if all("error" in x for x in r):
            failed_specs.append(n)
        rows.extend(r)
    report["results"] = rows
    print_table(rows, hbm)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        log("wrote %s" % args.json)
    if failed_specs:
        log("no measurement for: %s" % ", ".join(failed_specs))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
