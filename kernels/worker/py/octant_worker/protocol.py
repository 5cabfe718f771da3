"""Framing of the worker's pipes: u32 length | u16 type | u16 flags | u64 seq | payload, little-endian.

Requests come on fd 3, replies go to fd 4. The numbers below are the Go side's too
(kernels/worker/proc.go; TestProtocolConstants compares them).
"""
import json
import os
import struct

from .abi import STATUS_NAMES

PROTOCOL = 2

# Message types.
HELLO = 1
BYE = 2
H2D = 3
D2H = 4
D2D = 5
MEMSET = 6
SYNC = 7
FENCE = 8
OP = 9
WORKSPACE = 10
TIERS = 11
DEBUG = 100

# Reply flags.
FLAG_ERROR = 1

# Statuses of error replies (enum octave_status; abi.py has them all).
INVALID_ARGUMENT = 1
RUNTIME = 17

HEADER = struct.Struct("<IHHQ")
# The payload of h2d (dst, n, shm_off), d2h (src, n, shm_off), d2d (dst, src, n) and memset
# (dst, n, value).
COPY = struct.Struct("<QQQ")

# The largest request payload read (requests are JSON, three u64 or an op's struct).
MAX_REQUEST = 1 << 20


class WorkerError(Exception):
    """A failure with an ABI status, replied to Go as an error."""

    def __init__(self, status, message, tb=""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.tb = tb


def read_frame(r):
    """The next request (type, flags, seq, payload), or None at the end of the pipe."""
    h = r.read(HEADER.size)
    if len(h) < HEADER.size:
        return None
    n, typ, flags, seq = HEADER.unpack(h)
    if n > MAX_REQUEST:
        raise WorkerError(INVALID_ARGUMENT, f"a request of {n} bytes, expected at most {MAX_REQUEST}")
    payload = r.read(n) if n else b""
    if len(payload) < n:
        return None
    return typ, flags, seq, payload


def write_frame(fd, typ, seq, payload=b"", flags=0):
    """Writes one reply whole."""
    mv = memoryview(HEADER.pack(len(payload), typ, flags, seq) + payload)
    while mv:
        k = os.write(fd, mv)
        mv = mv[k:]


def error_payload(e):
    """The JSON payload of an error reply."""
    return json.dumps({"status": e.status, "name": STATUS_NAMES.get(e.status, "OCTAVE_ERR_RUNTIME"),
                       "message": e.message, "traceback": e.tb}).encode()
