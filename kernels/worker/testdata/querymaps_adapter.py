"""An adapter with one op, query_maps, in plain Python (docs/adapters.md, "A worked example")."""
import ctypes

DECLARATION = {
    "contract": 1,
    "ops": {"query_maps": {}},
    "info": {"name": "query maps in Python", "arch": "host"},
    "build_info": "querymaps_adapter.py, the worked example of docs/adapters.md",
}


def wrap32(x):
    """x as an int32 wraps it (the ABI computes klen in int32)."""
    return (x + 2**31) % 2**32 - 2**31


def query_maps(a, mem):
    """q_to_req[t] = #{j in 1..R : qsl[j] <= t}; q_to_klen[t] = 0 for a padding token (req = R),
    else seq_lens[req] - (qsl[req+1] - qsl[req]) + (t - qsl[req]) + 1 (docs/contract.md §4)."""
    n, r = a.num_q, a.num_reqs
    if n == 0:
        return None  # every pointer may be NULL
    qsl = list(mem.array(a.query_start_loc, ctypes.c_int32, r + 1)) if r else []
    seq = list(mem.array(a.seq_lens, ctypes.c_int32, r)) if r else []
    to_req = mem.array(a.q_to_req, ctypes.c_int32, n)
    to_klen = mem.array(a.q_to_klen, ctypes.c_int32, n)
    for t in range(n):
        req = sum(1 for j in range(1, r + 1) if qsl[j] <= t)
        to_req[t] = req
        to_klen[t] = 0 if req == r else wrap32(seq[req] - (qsl[req + 1] - qsl[req]) + (t - qsl[req]) + 1)
    return "portable"
