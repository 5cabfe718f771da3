"""A broken stand-in for vLLM's extension: its octave_decode lacks use_wmma and its octave_rotate
does not declare x written (Tensor, not Tensor!), so that vllm_ops.py's setup must name both
ops with the expected and the found schema."""
import torch

LIBRARY = torch.library.Library("_C", "DEF")
LIBRARY.define("octave_cache_store(Tensor key, Tensor value, Tensor! cache, Tensor slot_mapping, Tensor k_signs, "
               "Tensor v_signs, int fmt) -> ()")
LIBRARY.define("octave_decode(Tensor! out, Tensor query, Tensor cache, Tensor block_table, Tensor q_to_req, "
               "Tensor q_to_klen, Tensor! mid_o, Tensor k_signs, Tensor v_signs, float sm_scale, int num_kv_splits, "
               "int fmt, int query_group) -> ()")
LIBRARY.define("octave_rotate(Tensor x, Tensor signs, bool k_layout, bool inverse) -> ()")
LIBRARY.define("octave_prefill(Tensor! out, Tensor q, Tensor k, Tensor v, Tensor cache, Tensor block_table, "
               "Tensor cu_seqlens_q, Tensor seq_lens, int max_query_len, float sm_scale, int fmt) -> ()")
