#!/usr/bin/env python3
"""Compares two conformance certificates case for case: one of a library judged directly
(octant conform --lib PATH), one of the same library judged through an adapter (--lib SPEC), run
with the same seeds (docs/certify.md; docs/performance.md records
the GPU run).

    python3 scripts/certcompare.py DIRECT/certificate.json ADAPTER/certificate.json

Every case of either certificate is one of:
- same: in both, the same status;
- outside: NotSupported through the adapter with "outside declared domain" (the adapter's
  declaration leaves it out), judged directly;
- differ: in both, another status (anything else);
- direct only / adapter only: run by one of them alone (a unit the adapter does not run, such as
  a reduce inside its decode, or random cases past the other run's budget).
It prints the counts per unit and every differing case, and exits 1 when any case differs, 0
otherwise (2 on a bad file).
"""
import collections
import json
import sys


def load(path):
    try:
        with open(path) as f:
            c = json.load(f)
        return {x["path"]: x for x in c["cases"]}, c
    except (OSError, ValueError, KeyError) as e:
        print(f"certcompare: {path}: {e}", file=sys.stderr)
        sys.exit(2)


def unit(path):
    """The case's unit, op/tier; the static checks of code objects (isa/...) as one."""
    if path.startswith("isa/"):
        return "isa"
    return "/".join(path.split("/")[:2])


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    direct, dc = load(argv[1])
    adapter, ac = load(argv[2])
    counts = collections.defaultdict(collections.Counter)
    differ = []
    for p in sorted(set(direct) | set(adapter)):
        d, a = direct.get(p), adapter.get(p)
        if d is None:
            kind = "adapter only"
        elif a is None:
            kind = "direct only"
        elif d["status"] == a["status"]:
            kind = "same"
        elif a["status"] == "NotSupported" and "outside declared domain" in a.get("message", ""):
            kind = "outside"
        else:
            kind = "differ"
            differ.append(f"  {p}: {d['status']} directly ({d.get('message', '')[:160]}), "
                          f"{a['status']} through the adapter ({a.get('message', '')[:160]})")
        counts[unit(p)][kind] += 1
    print(f"direct:  {dc.get('library')}: {dc.get('verdict')}")
    print(f"adapter: {ac.get('library')}: {ac.get('verdict')}")
    kinds = ("same", "outside", "differ", "direct only", "adapter only")
    print(f"{'unit':24} " + " ".join(f"{k:>12}" for k in kinds))
    total = collections.Counter()
    for u in sorted(counts):
        total.update(counts[u])
        print(f"{u:24} " + " ".join(f"{counts[u][k]:12d}" for k in kinds))
    print(f"{'all':24} " + " ".join(f"{total[k]:12d}" for k in kinds))
    if differ:
        print(f"certcompare: {len(differ)} cases differ:")
        print("\n".join(differ))
        return 1
    print(f"certcompare: the same verdicts on the {total['same']} cases both ran "
          f"({total['outside']} outside the adapter's declared domain)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
