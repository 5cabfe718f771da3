"""A broken stand-in for vLLM's extension: it registers three of the four Octave op schemas
(octave_prefill is missing), so that vllm_ops.py's setup must name the missing op."""
import torch

LIBRARY = torch.library.Library("_C", "DEF")
LIBRARY.define("octave_cache_store(Tensor key, Tensor value, Tensor! cache, Tensor slot_mapping, Tensor k_signs, "
               "Tensor v_signs, int fmt) -> ()")
LIBRARY.define("octave_decode(Tensor! out, Tensor query, Tensor cache, Tensor block_table, Tensor q_to_req, "
               "Tensor q_to_klen, Tensor! mid_o, Tensor k_signs, Tensor v_signs, float sm_scale, int num_kv_splits, "
               "int fmt, int query_group, bool use_wmma) -> ()")
LIBRARY.define("octave_rotate(Tensor! x, Tensor signs, bool k_layout, bool inverse) -> ()")
