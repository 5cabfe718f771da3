"""Octant's conformance battery as pytest items: one item per (op, tier) unit of `octant conform`
for a library or adapter spec, sharded with the rest of a pytest run (docs/conformance.md,
"Running the battery under pytest").

    python3 -m pytest OCTANT/contrib/pytest --octant OCTANT/bin/octant --lib SPEC \
        [--shard-id I --num-shards N] [--octant-args "--budget 2m --fixed 12"] [--octant-out DIR]

Collection lists the units (`octant conform --lib SPEC --list-units`) and makes one item per unit,
test_unit[op/tier]. With --num-shards N, the units are sorted by name and shard I keeps the units
whose index in that order is I modulo N (a rule that depends only on the unit list, so N shards
cover every unit exactly once). The first item that runs runs conform once for every unit still
selected (`--units`, a partial certificate), and each item then passes or fails with its unit's
verdict: Pass and QualityWarning pass (a warning says so), NotSupported skips with the reason, Fail
fails with the failing cases' messages and the commands that replay them. Where the pytest-shard
plugin already defines --shard-id and --num-shards, its sharding applies instead.
"""
import json
import os
import shlex
import subprocess

import pytest

UNIT_PARAM = "octant_unit"


def pytest_addoption(parser):
    g = parser.getgroup("octant", "Octant's conformance battery (contrib/pytest)")
    g.addoption("--octant", default="octant", help="the octant command line (bin/octant; default: octant on PATH)")
    g.addoption("--lib", default=None, help="the library path or adapter spec (host:/abs/adapter.py?k=v) to judge")
    g.addoption("--octant-args", default="", help="more options of octant conform, as one shell-quoted string "
                                                  "(e.g. \"--budget 2m --fixed 12 --tiers portable\")")
    g.addoption("--octant-out", default=None, help="the directory of conform's certificate and reproducers "
                                                   "(default: a temporary directory of the pytest run)")
    for name, hlp in (("--shard-id", "this shard's index, 0..num-shards-1"), ("--num-shards", "how many shards")):
        try:
            g.addoption(name, type=int, default=None, help=hlp + " (Octant's units)")
        except ValueError:
            pass  # pytest-shard defines it: its sharding applies


def _conform_args(config):
    return shlex.split(config.getoption("--octant-args") or "")


def _octant(config):
    return config.getoption("--octant")


def _lib(config):
    lib = config.getoption("--lib")
    if not lib:
        raise pytest.UsageError("contrib/pytest: --lib is required: the library path or adapter spec to judge")
    return lib


def _list_units(config):
    """The plan's unit names, from octant conform --list-units (once per pytest run)."""
    cached = getattr(config, "_octant_units", None)
    if cached is not None:
        return cached
    cmd = [_octant(config), "conform", "--lib", _lib(config), "--list-units", *_conform_args(config)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise pytest.UsageError(f"contrib/pytest: running {shlex.join(cmd)}: {e}; expected --octant to name bin/octant") from None
    if p.returncode != 0:
        raise pytest.UsageError(f"contrib/pytest: {shlex.join(cmd)} exited {p.returncode}:\n{p.stderr.strip()}")
    try:
        units = [u["unit"] for u in json.loads(p.stdout)["units"]]
    except (ValueError, KeyError, TypeError) as e:
        raise pytest.UsageError(f"contrib/pytest: {shlex.join(cmd)} printed no unit list ({e}):\n{p.stdout[:2000]}") from None
    config._octant_units = units
    return units


def _shard(config):
    """(shard id, number of shards), or None when this plugin does not shard."""
    try:
        sid, n = config.getoption("--shard-id"), config.getoption("--num-shards")
    except ValueError:
        return None
    if getattr(config, "pluginmanager", None) and config.pluginmanager.hasplugin("pytest_shard"):
        return None
    if n is None and sid is None:
        return None
    if n is None or sid is None or n < 1 or not 0 <= sid < n:
        raise pytest.UsageError(f"contrib/pytest: --shard-id {sid} --num-shards {n}: expected both, with 0 <= shard-id < num-shards")
    return sid, n


def shard_units(units, shard_id, num_shards):
    """The units of shard shard_id of num_shards: sorted by name, every num_shards-th from shard_id."""
    return [u for i, u in enumerate(sorted(units)) if i % num_shards == shard_id]


def pytest_generate_tests(metafunc):
    if UNIT_PARAM in metafunc.fixturenames:
        units = _list_units(metafunc.config)
        metafunc.parametrize(UNIT_PARAM, units, ids=units)


def _unit_of(item):
    cs = getattr(item, "callspec", None)
    return cs.params.get(UNIT_PARAM) if cs is not None else None


def pytest_collection_modifyitems(session, config, items):
    sh = _shard(config)
    if sh is None:
        return
    units = [u for u in (_unit_of(i) for i in items) if u is not None]
    mine = set(shard_units(units, *sh))
    keep, drop = [], []
    for i in items:
        u = _unit_of(i)
        (keep if u is None or u in mine else drop).append(i)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class Run:
    """One conform run over the selected units: each unit's verdict and message."""

    def __init__(self, config, units, out):
        self.units, self.out = units, out
        cmd = [_octant(config), "conform", "--lib", _lib(config), "--units", ",".join(units), "--out", out,
               *_conform_args(config)]
        self.cmd = shlex.join(cmd)
        p = subprocess.run(cmd, capture_output=True, text=True)
        self.code, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
        self.cert = None
        path = os.path.join(out, "certificate.json")
        if p.returncode in (0, 1) and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                self.cert = json.load(f)

    def verdict(self, unit):
        """(status, message) of the unit."""
        if self.cert is None:
            tail = "\n".join((self.stderr or self.stdout).strip().splitlines()[-30:])
            return "Fail", f"{self.cmd} exited {self.code} without a certificate:\n{tail}"
        status = next((s["status"] for s in self.cert.get("summary") or [] if s.get("node") == unit), None)
        cases = [c for c in self.cert.get("cases") or [] if c.get("path", "").startswith(unit + "/")]
        if status is None:
            return "Fail", (f"no case of {unit} ran ({self.cmd}; raise --budget or --fixed in --octant-args); "
                            f"certificate: {os.path.join(self.out, 'certificate.json')}")
        lines = []
        for c in cases:
            if c.get("status") == status and status != "Pass":
                lines.append(f"{c['path']}: {c.get('message', '')}")
                for k, what in (("replay", "replay"), ("python", "without Go")):
                    if c.get(k):
                        lines.append(f"  {what}: {c[k]}")
        n = len(lines)
        if len(lines) > 40:
            lines = lines[:40] + [f"... (certificate: {os.path.join(self.out, 'certificate.json')})"]
        head = f"{unit}: {status} over {len(cases)} case(s) ({self.cmd})"
        return status, head + ("\n" + "\n".join(lines) if n else "")


@pytest.fixture(scope="session")
def octant_run(request, tmp_path_factory):
    """The pytest run's one conform run over every unit still selected (after -k, shards, deselection)."""
    units = [u for u in (_unit_of(i) for i in request.session.items) if u is not None]
    out = request.config.getoption("--octant-out") or str(tmp_path_factory.mktemp("octant-conform"))
    return Run(request.config, sorted(set(units), key=units.index), out)


@pytest.fixture
def octant_verdict(octant_run, octant_unit):
    """The unit's (status, message) from the pytest run's conform run."""
    return octant_run.verdict(octant_unit)

