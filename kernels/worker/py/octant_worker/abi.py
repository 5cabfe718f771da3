"""The C ABI's argument structs (csrc/include/octave_capi.h) as struct layouts, and its statuses.

Go sends an op's struct bytes verbatim (kernels/abi.go); unpack turns them into an Args (a dict
whose keys are the C field names, also readable as attributes) and pack turns an Args back into
the bytes a C library takes. TestStructLayouts (kernels/worker) compares every offset and size
here with the Go structs'.
"""
import struct

# Statuses (enum octave_status), and the worker's status of an op an adapter does not implement
# (kernels.ErrUnsupported: not a status of the C ABI).
OK = 0
INVALID_ARGUMENT = 1
FORMAT = 2
GQA = 3
HEAD_SIZE = 4
STRIDE = 5
ALIGNMENT = 6
NUM_SPLITS = 7
WORKSPACE = 8
SLOT_RANGE = 9
SLOT_DUPLICATE = 10
UNSUPPORTED_TIER = 11
DTYPE = 12
SCALE = 13
QUERY_GROUP = 14
NO_DEVICE = 15
UNSUPPORTED_ARCH = 16
RUNTIME = 17
LAUNCH = 18
UNSUPPORTED = -1

STATUS_NAMES = {
    INVALID_ARGUMENT: "OCTAVE_ERR_INVALID_ARGUMENT", FORMAT: "OCTAVE_ERR_FORMAT", GQA: "OCTAVE_ERR_GQA",
    HEAD_SIZE: "OCTAVE_ERR_HEAD_SIZE", STRIDE: "OCTAVE_ERR_STRIDE", ALIGNMENT: "OCTAVE_ERR_ALIGNMENT",
    NUM_SPLITS: "OCTAVE_ERR_NUM_SPLITS", WORKSPACE: "OCTAVE_ERR_WORKSPACE", SLOT_RANGE: "OCTAVE_ERR_SLOT_RANGE",
    SLOT_DUPLICATE: "OCTAVE_ERR_SLOT_DUPLICATE", UNSUPPORTED_TIER: "OCTAVE_ERR_UNSUPPORTED_TIER",
    DTYPE: "OCTAVE_ERR_DTYPE", SCALE: "OCTAVE_ERR_SCALE", QUERY_GROUP: "OCTAVE_ERR_QUERY_GROUP",
    NO_DEVICE: "OCTAVE_ERR_NO_DEVICE", UNSUPPORTED_ARCH: "OCTAVE_ERR_UNSUPPORTED_ARCH", RUNTIME: "OCTAVE_ERR_RUNTIME",
    LAUNCH: "OCTAVE_ERR_LAUNCH", UNSUPPORTED: "OCTANT_ERR_UNSUPPORTED",
}

# Activation dtypes (enum octave_dtype) by the names a declaration uses.
DTYPES = {"fp16": 1, "bf16": 2}

# Tier ids (enum octave_tier) of the registered tiers; "<tier>-model" has its tier's id.
TIER_IDS = {"portable": 0, "wmma": 1, "mfma": 2, "mma": 3}

# The ABI's op bits of octave_tier_desc.ops.
OP_BITS = {"decode": 1, "prefill": 2}

# Slot bytes of the formats (csrc/octave_format.h, docs/format.md).
SLOT_BYTES = {3: 216, 4: 248, 19: 196}

HEAD = 256  # head_size: the only one the ABI has


def tier_id(name):
    """The ABI tier id of a registry tier name ("wmma-model": 1), or None."""
    base = name[:-len("-model")] if name.endswith("-model") else name
    return TIER_IDS.get(base)


class Args(dict):
    """An op's arguments: C field name -> value (pointers and counts ints, sm_scale a float, the
    sign words a list of 8 ints), also readable and writable as attributes."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None

    def __setattr__(self, k, v):
        self[k] = v


class Layout:
    """One C struct: its fields in order, each (name, code): a struct module code, "P" for a
    pointer (8 bytes), "8I" for the 8 sign words."""

    def __init__(self, op, cname, fields):
        self.op, self.cname, self.fields = op, cname, fields
        codes = "".join("Q" if c == "P" else c for _, c in fields)
        self.st = struct.Struct("<" + codes)
        self.size = self.st.size
        self.pointers = [n for n, c in fields if c == "P"]

    def offsets(self):
        """[(name, offset, size)] of every field, for the layout check."""
        out, off = [], 0
        for n, c in self.fields:
            k = struct.calcsize("<" + ("Q" if c == "P" else c))
            out.append((n, off, k))
            off += k
        return out

    def unpack(self, b):
        vals = list(self.st.unpack(b))
        a = Args()
        for n, c in self.fields:
            if c == "8I":
                a[n] = vals[:8]
                del vals[:8]
            else:
                a[n] = vals.pop(0)
        return a

    def pack(self, a):
        vals = []
        for n, c in self.fields:
            if c == "8I":
                vals.extend(a[n])
            else:
                vals.append(a[n])
        return self.st.pack(*vals)


def _f(names, code):
    return [(n, code) for n in names.split()]


STORE = Layout("store", "octave_store_args",
               _f("struct_size", "Q") + _f("key value cache slot_mapping slot_mapping_host", "P")
               + _f("key_stride_token key_stride_head value_stride_token value_stride_head "
                    "cache_stride_block cache_stride_head cache_stride_token", "q")
               + _f("fmt dtype head_size num_tokens num_kv_heads num_blocks block_size reserved0", "i")
               + _f("k_signs v_signs", "8I"))

ROTATE = Layout("rotate", "octave_rotate_args",
                _f("struct_size", "Q") + _f("x", "P") + _f("stride_token stride_head", "q")
                + _f("dtype head_size num_tokens num_heads k_layout inverse", "i") + _f("signs", "8I"))

DECODE = Layout("decode", "octave_decode_args",
                _f("struct_size", "Q") + _f("out query cache block_table q_to_req q_to_klen partials", "P")
                + _f("partials_bytes", "Q")
                + _f("out_stride_token out_stride_head query_stride_token query_stride_head "
                     "cache_stride_block cache_stride_head cache_stride_token", "q")
                + _f("fmt dtype head_size tier num_q num_q_heads num_kv_heads num_reqs num_blocks block_size "
                     "max_blocks num_splits query_group partial_stride", "i")
                + _f("sm_scale", "f") + _f("reserved0", "i") + _f("k_signs v_signs", "8I"))

REDUCE = Layout("reduce", "octave_reduce_args",
                _f("struct_size", "Q") + _f("out partials", "P") + _f("partials_bytes", "Q")
                + _f("out_stride_token out_stride_head", "q")
                + _f("dtype head_size num_q num_q_heads num_splits partial_stride", "i") + _f("v_signs", "8I"))

PREFILL = Layout("prefill", "octave_prefill_args",
                 _f("struct_size", "Q") + _f("out q k v cache block_table cu_seqlens_q seq_lens", "P")
                 + _f("out_stride_token out_stride_head q_stride_token q_stride_head k_stride_token k_stride_head "
                      "v_stride_token v_stride_head cache_stride_block cache_stride_head cache_stride_token", "q")
                 + _f("fmt dtype head_size tier num_tokens num_seqs num_q_heads num_kv_heads num_blocks block_size "
                      "max_blocks max_query_len", "i")
                 + _f("sm_scale", "f") + _f("num_splits", "i"))

QUERY_MAPS = Layout("query_maps", "octave_query_maps_args",
                    _f("struct_size", "Q") + _f("query_start_loc seq_lens q_to_req q_to_klen", "P")
                    + _f("num_reqs num_q", "i"))

# Op codes of the op request (kernels/worker/ops.go holds the same numbers).
OPS = {1: STORE, 2: ROTATE, 3: DECODE, 4: REDUCE, 5: PREFILL, 6: QUERY_MAPS}
LAYOUTS = {l.op: l for l in OPS.values()}

# The C ABI's name of each op's entry point.
ENTRY = {"store": "octave_cache_store", "rotate": "octave_rotate", "decode": "octave_decode",
         "reduce": "octave_reduce", "prefill": "octave_prefill", "query_maps": "octave_query_maps"}
# The op's name in the C library's messages.
MSG_NAME = {"store": "cache_store", "rotate": "rotate", "decode": "decode", "reduce": "reduce",
            "prefill": "prefill", "query_maps": "query_maps"}
