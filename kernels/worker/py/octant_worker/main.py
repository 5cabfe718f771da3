"""The worker's request loop: python -X faulthandler -c BOOTSTRAP ADAPTER_SPEC [--test-hooks].

ADAPTER_SPEC is MODE ":" ADAPTER: MODE "host" or "torch", ADAPTER the path of a Python source
file to load at hello (adapter.py: the contract), or nothing; op requests run its callables
(bridge.py). Requests are read from fd 3 one at a time, in order; replies
go to fd 4; fd 5 is the shared-memory window. stdout and stderr are not the protocol.
"""
import io
import json
import mmap
import os
import platform
import signal
import sys
import time
import traceback

from . import abi, adapter
from . import protocol as P
from .arena import HostArena, TorchArena, import_torch
from .bridge import Bridge, workspace_request
from .protocol import INVALID_ARGUMENT, RUNTIME, WorkerError

REQ_FD, REP_FD, SHM_FD = 3, 4, 5
TEST_FLAG = "--test-hooks"

# What each request is called in messages, and whether it has a reply (DEBUG: its payload says).
NAMES = {P.HELLO: "hello", P.BYE: "bye", P.H2D: "h2d", P.D2H: "d2h", P.D2D: "d2d", P.MEMSET: "memset",
         P.SYNC: "sync", P.FENCE: "fence", P.OP: "op", P.WORKSPACE: "workspace", P.TIERS: "tiers", P.DEBUG: "debug"}
REPLIES = {P.HELLO, P.BYE, P.D2H, P.SYNC, P.FENCE, P.OP, P.WORKSPACE, P.TIERS}


class Worker:
    def __init__(self, spec, hooks):
        self.spec = spec
        self.mode, _, self.adapter_path = spec.partition(":")
        self.hooks = hooks
        self.arena = None
        self.adapter = None  # the adapter's module
        self.decl = None  # its normalised declaration
        self.bridge = None
        self.shm_bytes = 0
        self.pending = []  # failures of requests without a reply since the last sync
        self.fail_h2d = None  # test hook: the message the next h2d fails with
        self.handlers = {P.HELLO: self.hello, P.BYE: self.bye, P.H2D: self.h2d, P.D2H: self.d2h, P.D2D: self.d2d,
                         P.MEMSET: self.memset, P.SYNC: self.sync, P.FENCE: self.fence, P.OP: self.op,
                         P.WORKSPACE: self.workspace, P.TIERS: self.tiers, P.DEBUG: self.debug}

    def hello(self, payload):
        h = json.loads(payload)
        if h.get("protocol") != P.PROTOCOL:
            raise WorkerError(INVALID_ARGUMENT, f"protocol {h.get('protocol')} asked, this worker speaks {P.PROTOCOL}")
        if self.arena is not None:
            raise WorkerError(INVALID_ARGUMENT, "a second hello")
        if self.mode not in ("host", "torch"):
            raise WorkerError(INVALID_ARGUMENT, f"adapter spec {self.spec!r}: mode {self.mode!r}, expected host or torch")
        self.shm_bytes = h["shm_bytes"]
        shm = mmap.mmap(SHM_FD, self.shm_bytes)
        args = (h["gen"], h["arena_bytes"], h["guard_bytes"], shm)
        if self.mode == "host":
            self.arena = HostArena(*args)
        else:
            self.arena = TorchArena(import_torch(), h.get("device") or "", *args)
        info = self.arena.info()
        build = (f"octant worker, protocol {P.PROTOCOL}; Python {platform.python_version()}; {self.arena.describe()}; "
                 + (f"adapter {self.adapter_path}" if self.adapter_path else "no adapter"))
        tiers = []
        if self.adapter_path:
            self.adapter, self.decl = adapter.load(self.adapter_path, h.get("options") or {})
            self.bridge = Bridge(self.adapter, self.decl, self.arena, self.mode)
            info.update(self.decl["info"])
            if self.decl["build_info"]:
                build += "; " + self.decl["build_info"]
            tiers = self.decl["tiers"]
        return json.dumps({"protocol": P.PROTOCOL, "info": info, "build_info": build, "tiers": tiers,
                           "declaration": self.decl}).encode()

    def ready(self, what):
        if self.arena is None:
            raise WorkerError(INVALID_ARGUMENT, f"{what} before hello")
        return self.arena

    def window(self, what, shm_off, n):
        if shm_off + n > self.shm_bytes:
            raise WorkerError(INVALID_ARGUMENT, f"{what}: [{shm_off}, +{n}) is outside the {self.shm_bytes}-byte window")

    def bye(self, payload):
        close = getattr(self.adapter, "close", None)
        if callable(close):
            close()
        return b""

    def op(self, payload):
        self.ready("op")
        if self.bridge is None:
            code = int.from_bytes(payload[:4], "little") if len(payload) >= 4 else -1
            lay = abi.OPS.get(code)
            raise WorkerError(abi.UNSUPPORTED, f"the worker has no adapter: it does not implement "
                                               f"{abi.ENTRY[lay.op] if lay else f'op code {code}'}")
        return self.bridge.op(payload)

    def workspace(self, payload):
        return workspace_request(payload)

    def tiers(self, payload):
        return json.dumps(self.decl["tiers"] if self.decl else []).encode()

    def h2d(self, payload):
        dst, n, shm_off = P.COPY.unpack(payload)
        a = self.ready("h2d")
        if self.fail_h2d is not None:
            msg, self.fail_h2d = self.fail_h2d, None
            raise WorkerError(RUNTIME, f"h2d of {n} bytes to {dst:#x}: {msg}")
        off = a.offset(dst, n, "h2d")
        self.window("h2d", shm_off, n)
        a.write(off, shm_off, n)

    def d2h(self, payload):
        src, n, shm_off = P.COPY.unpack(payload)
        a = self.ready("d2h")
        off = a.offset(src, n, "d2h")
        self.window("d2h", shm_off, n)
        a.read(off, shm_off, n)
        return b""

    def d2d(self, payload):
        dst, src, n = P.COPY.unpack(payload)
        a = self.ready("d2d")
        a.move(a.offset(dst, n, "d2d"), a.offset(src, n, "d2d"), n)

    def memset(self, payload):
        dst, n, value = P.COPY.unpack(payload)
        a = self.ready("memset")
        a.fill(a.offset(dst, n, "memset"), value & 0xFF, n)

    def fence(self, payload):
        return b""

    def sync(self, payload):
        a = self.ready("sync")
        failures, self.pending = self.pending, []
        try:
            a.wait()
        except Exception as e:
            failures.append(WorkerError(RUNTIME, f"waiting for the device: {type(e).__name__}: {e}", traceback.format_exc()))
        sync = getattr(self.adapter, "sync", None)
        if callable(sync):
            try:
                sync()
            except adapter.OpError as e:
                failures.append(WorkerError(e.status, f"the adapter's sync: {e.message}"))
            except Exception as e:
                failures.append(WorkerError(RUNTIME, f"the adapter's sync raised {type(e).__name__}: {e}",
                                            traceback.format_exc()))
        guards = a.check_guards() + a.check_sidecar()
        if not failures and not guards:
            return b""
        status = failures[0].status if failures else RUNTIME
        msgs = [f.message for f in failures[:3]]
        if len(failures) > 3:
            msgs.append(f"and {len(failures) - 3} more failures of requests without a reply")
        raise WorkerError(status, "; ".join(msgs + guards), "\n".join(f.tb for f in failures[:3] if f.tb))

    def debug(self, payload):
        """Test hooks, honoured only with --test-hooks: flip (an arena byte, guards included),
        sleep, crash (a message on stderr, then SIGSEGV), fail_h2d (the next h2d fails), print."""
        if not self.hooks:
            raise WorkerError(INVALID_ARGUMENT, f"debug messages need the worker started with {TEST_FLAG}")
        d = json.loads(payload)
        op = d.get("op")
        if op == "flip":
            self.ready("debug").flip(d["offset"])
        elif op == "sleep":
            time.sleep(d["seconds"])
        elif op == "crash":
            sys.stderr.write(d.get("stderr", ""))
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        elif op == "fail_h2d":
            self.fail_h2d = d["message"]
        elif op == "print":
            sys.stdout.write(d.get("stdout", ""))
            sys.stderr.write(d.get("stderr", ""))
        else:
            raise WorkerError(INVALID_ARGUMENT, f"debug op {op!r}, expected flip, sleep, crash, fail_h2d or print")
        return b"{}"


def replies(typ, payload):
    if typ == P.DEBUG:
        try:
            return bool(json.loads(payload).get("reply", True))
        except ValueError:
            return True
    return typ in REPLIES


def main(argv):
    if not argv:
        sys.stderr.write(f"usage: python -c BOOTSTRAP MODE:ADAPTER [{TEST_FLAG}] (started by Go's kernels/worker)\n")
        return 2
    w = Worker(argv[0], TEST_FLAG in argv[1:])
    r = io.open(REQ_FD, "rb", buffering=1 << 16)
    while True:
        frame = P.read_frame(r)
        if frame is None:  # Go closed the pipe, or ended
            break
        typ, _, seq, payload = frame
        handler = w.handlers.get(typ)
        out, err = b"", None
        try:
            if handler is None:
                raise WorkerError(INVALID_ARGUMENT, f"a request of type {typ}, expected one of {sorted(NAMES)}")
            out = handler(payload)
        except WorkerError as e:
            err = e
        except Exception as e:
            err = WorkerError(RUNTIME, f"{NAMES.get(typ, typ)}: {type(e).__name__}: {e}", traceback.format_exc())
        if handler is not None and not replies(typ, payload):
            if err is not None:
                w.pending.append(err)
            continue
        if err is not None:
            P.write_frame(REP_FD, typ, seq, P.error_payload(err), P.FLAG_ERROR)
        else:
            P.write_frame(REP_FD, typ, seq, out or b"")
        if typ == P.BYE:
            break
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
