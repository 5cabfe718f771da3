"""A test adapter (ops_test.go): rotate inverts every byte of x in place, and misbehaves on
request (by its number of heads: 2 writes past x, 3 raises, 4 crashes, 5 hangs); decode declares
two tiers and always reports the portable one; nothing else."""
import os
import signal
import sys
import time

DECLARATION = {
    "contract": 1,
    "ops": {"rotate": {"dtypes": ["fp16"]},
            "decode": {"tiers": {"portable": "dot4-int8q", "wmma": "wmma-f16q"}}},
    "formats": [4],
    "info": {"name": "ops test adapter", "arch": "test"},
    "build_info": "ops_adapter.py",
}


def rotate(a, mem):
    n = mem.extents["x"]
    if a.num_heads == 3:
        raise ValueError("rotate refuses three heads (marker 5Z)")
    if a.num_heads == 4:
        sys.stderr.write("rotate crashes on four heads (marker 8K)\n")
        os.kill(os.getpid(), signal.SIGSEGV)
    if a.num_heads == 5:
        time.sleep(3600)
    over = 16 if a.num_heads == 2 else 0  # two heads: 16 bytes past the end of x
    buf = mem.buffer(a.x, n + over)
    for i in range(n):
        buf[i] ^= 0xFF
    buf[n:n + over] = b"\xaa" * over
    return "portable"


def decode(a, mem):
    return "portable"
