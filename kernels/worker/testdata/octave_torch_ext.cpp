// A torch extension registering vLLM's four Octave op schemas on torch.ops._C for the CUDA and CPU
// dispatch keys, each forwarding to an Octave C library (octave_capi.h) opened with dlopen: the
// path given to torch.ops._C.octave_ext_init(path, device), or else OCTANT_TORCH_EXT_LIB at the
// first call. It stands in for vLLM's extension on a GPU machine, where the library is
// build/liboctave_cuda.so (docs/adapters.md, "The vLLM-schema adapter"); on the CPU, with the
// emulator, it does what fake_vllm_ext.py does. Build it with torch.utils.cpp_extension:
//
//   python3 -c "from torch.utils.cpp_extension import load; load('octave_torch_ext',
//     ['kernels/worker/testdata/octave_torch_ext.cpp'], extra_include_paths=['csrc/include'],
//     build_directory='build/torch_ext', is_python_module=False)"
//
// then judge it with torch:vllm_ops.py?ext=/abs/build/torch_ext/octave_torch_ext.so. As vLLM's
// ops, sizes come from the tensors' shapes and nothing is returned; a status other than OK
// throws with the library's message. use_wmma picks the library's WMMA tier (id 1) when it lists
// one, else the portable tier; prefill runs the WMMA tier when listed. Decode runs in a workspace
// of partial_stride 260 of its own and copies the 258 floats of every row into mid_o.
#include <torch/library.h>
#include <ATen/ATen.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "octave_capi.h"

namespace {

struct Library {
  void* handle = nullptr;
  octave_ctx* ctx = nullptr;
  bool wmma = false;
  decltype(&octave_cache_store) store = nullptr;
  decltype(&octave_decode) decode = nullptr;
  decltype(&octave_rotate) rotate = nullptr;
  decltype(&octave_prefill) prefill = nullptr;
  decltype(&octave_last_error) last_error = nullptr;
};

std::mutex mu;
Library lib;

template <typename F>
F sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) throw std::runtime_error(std::string("octave_torch_ext: the library has no ") + name);
  return reinterpret_cast<F>(p);
}

void open_library(const std::string& path, int64_t device) {
  std::lock_guard<std::mutex> g(mu);
  if (lib.handle) return;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error("octave_torch_ext: dlopen " + path + ": " + dlerror());
  Library l;
  l.handle = h;
  l.store = sym<decltype(&octave_cache_store)>(h, "octave_cache_store");
  l.decode = sym<decltype(&octave_decode)>(h, "octave_decode");
  l.rotate = sym<decltype(&octave_rotate)>(h, "octave_rotate");
  l.prefill = sym<decltype(&octave_prefill)>(h, "octave_prefill");
  l.last_error = sym<decltype(&octave_last_error)>(h, "octave_last_error");
  auto open = sym<decltype(&octave_open)>(h, "octave_open");
  if (open(static_cast<int32_t>(device), &l.ctx) != OCTAVE_OK)
    throw std::runtime_error("octave_torch_ext: octave_open: " + std::string(l.last_error()));
  auto tiers = sym<decltype(&octave_tiers)>(h, "octave_tiers");
  octave_tier_desc d[16];
  int32_t n = 0;
  if (tiers(l.ctx, d, 16, &n) == OCTAVE_OK)
    for (int32_t i = 0; i < n && i < 16; i++) l.wmma = l.wmma || d[i].tier == 1;
  lib = l;
}

Library& get() {
  if (!lib.handle) {
    const char* p = std::getenv("OCTANT_TORCH_EXT_LIB");
    if (!p) throw std::runtime_error("octave_torch_ext: no library: call torch.ops._C.octave_ext_init(path, device) "
                                     "or set OCTANT_TORCH_EXT_LIB to an Octave C library");
    open_library(p, 0);
  }
  return lib;
}

void check(const Library& l, int32_t status, const char* op) {
  if (status != OCTAVE_OK) throw std::runtime_error(std::string(op) + ": " + l.last_error());
}

int32_t dtype_of(const at::Tensor& t) {
  if (t.scalar_type() == at::kHalf) return OCTAVE_DTYPE_F16;
  if (t.scalar_type() == at::kBFloat16) return OCTAVE_DTYPE_BF16;
  throw std::runtime_error("octave_torch_ext: activations must be fp16 or bf16");
}

void words(const at::Tensor& s, uint32_t out[8]) {
  auto c = s.to(at::kCPU).contiguous();
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint32_t>(c.data_ptr<int32_t>()[i]);
}

void cache_store(const at::Tensor& key, const at::Tensor& value, at::Tensor& cache, const at::Tensor& slot_mapping,
                 const at::Tensor& k_signs, const at::Tensor& v_signs, int64_t fmt) {
  Library& l = get();
  octave_store_args a{};
  a.struct_size = sizeof a;
  a.key = key.data_ptr();
  a.value = value.data_ptr();
  a.cache = static_cast<uint8_t*>(cache.data_ptr());
  a.slot_mapping = slot_mapping.data_ptr<int64_t>();
  a.key_stride_token = key.stride(0), a.key_stride_head = key.stride(1);
  a.value_stride_token = value.stride(0), a.value_stride_head = value.stride(1);
  a.cache_stride_block = cache.stride(0), a.cache_stride_head = cache.stride(1), a.cache_stride_token = cache.stride(2);
  a.fmt = static_cast<int32_t>(fmt), a.dtype = dtype_of(key), a.head_size = static_cast<int32_t>(key.size(2));
  a.num_tokens = static_cast<int32_t>(key.size(0)), a.num_kv_heads = static_cast<int32_t>(key.size(1));
  a.num_blocks = static_cast<int32_t>(cache.size(0)), a.block_size = static_cast<int32_t>(cache.size(2));
  words(k_signs, a.k_signs);
  words(v_signs, a.v_signs);
  check(l, l.store(l.ctx, &a), "octave_cache_store");
}

void decode(at::Tensor& out, const at::Tensor& query, const at::Tensor& cache, const at::Tensor& block_table,
            const at::Tensor& q_to_req, const at::Tensor& q_to_klen, at::Tensor& mid_o, const at::Tensor& k_signs,
            const at::Tensor& v_signs, double sm_scale, int64_t num_kv_splits, int64_t fmt, int64_t query_group,
            bool use_wmma) {
  Library& l = get();
  const int64_t nq = query.size(0), hq = query.size(1), stride = 260;
  auto ws = at::empty({std::max<int64_t>(nq * hq * num_kv_splits * stride, 1)}, query.options().dtype(at::kFloat));
  octave_decode_args a{};
  a.struct_size = sizeof a;
  a.out = out.data_ptr(), a.query = query.data_ptr(), a.cache = static_cast<const uint8_t*>(cache.data_ptr());
  a.block_table = block_table.data_ptr<int32_t>();
  a.q_to_req = q_to_req.data_ptr<int32_t>(), a.q_to_klen = q_to_klen.data_ptr<int32_t>();
  a.partials = ws.data_ptr<float>(), a.partials_bytes = static_cast<uint64_t>(ws.numel()) * 4;
  a.out_stride_token = out.stride(0), a.out_stride_head = out.stride(1);
  a.query_stride_token = query.stride(0), a.query_stride_head = query.stride(1);
  a.cache_stride_block = cache.stride(0), a.cache_stride_head = cache.stride(1), a.cache_stride_token = cache.stride(2);
  a.fmt = static_cast<int32_t>(fmt), a.dtype = dtype_of(query), a.head_size = static_cast<int32_t>(query.size(2));
  a.tier = use_wmma && l.wmma ? 1 : 0;
  a.num_q = static_cast<int32_t>(nq), a.num_q_heads = static_cast<int32_t>(hq);
  a.num_kv_heads = static_cast<int32_t>(cache.size(1)), a.num_reqs = static_cast<int32_t>(block_table.size(0));
  a.num_blocks = static_cast<int32_t>(cache.size(0)), a.block_size = static_cast<int32_t>(cache.size(2));
  a.max_blocks = static_cast<int32_t>(block_table.size(1)), a.num_splits = static_cast<int32_t>(num_kv_splits);
  a.query_group = static_cast<int32_t>(query_group), a.partial_stride = static_cast<int32_t>(stride);
  a.sm_scale = static_cast<float>(sm_scale);
  words(k_signs, a.k_signs);
  words(v_signs, a.v_signs);
  check(l, l.decode(l.ctx, &a), "octave_decode");
  if (nq)
    mid_o.copy_(ws.narrow(0, 0, nq * hq * num_kv_splits * stride).view({nq, hq, num_kv_splits, stride})
                    .narrow(3, 0, mid_o.size(3)));
}

void rotate(at::Tensor& x, const at::Tensor& signs, bool k_layout, bool inverse) {
  Library& l = get();
  octave_rotate_args a{};
  a.struct_size = sizeof a;
  a.x = x.data_ptr(), a.stride_token = x.stride(0), a.stride_head = x.stride(1);
  a.dtype = dtype_of(x), a.head_size = static_cast<int32_t>(x.size(2));
  a.num_tokens = static_cast<int32_t>(x.size(0)), a.num_heads = static_cast<int32_t>(x.size(1));
  a.k_layout = k_layout, a.inverse = inverse;
  words(signs, a.signs);
  check(l, l.rotate(l.ctx, &a), "octave_rotate");
}

void prefill(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& cache,
             const at::Tensor& block_table, const at::Tensor& cu_seqlens_q, const at::Tensor& seq_lens,
             int64_t max_query_len, double sm_scale, int64_t fmt) {
  Library& l = get();
  octave_prefill_args a{};
  a.struct_size = sizeof a;
  a.out = out.data_ptr(), a.q = q.data_ptr(), a.k = k.data_ptr(), a.v = v.data_ptr();
  a.cache = static_cast<const uint8_t*>(cache.data_ptr()), a.block_table = block_table.data_ptr<int32_t>();
  a.cu_seqlens_q = cu_seqlens_q.data_ptr<int32_t>(), a.seq_lens = seq_lens.data_ptr<int32_t>();
  a.out_stride_token = out.stride(0), a.out_stride_head = out.stride(1);
  a.q_stride_token = q.stride(0), a.q_stride_head = q.stride(1);
  a.k_stride_token = k.stride(0), a.k_stride_head = k.stride(1);
  a.v_stride_token = v.stride(0), a.v_stride_head = v.stride(1);
  a.cache_stride_block = cache.stride(0), a.cache_stride_head = cache.stride(1), a.cache_stride_token = cache.stride(2);
  a.fmt = static_cast<int32_t>(fmt), a.dtype = dtype_of(q), a.head_size = static_cast<int32_t>(q.size(2));
  a.tier = l.wmma ? 1 : 0;
  a.num_tokens = static_cast<int32_t>(q.size(0)), a.num_seqs = static_cast<int32_t>(seq_lens.size(0));
  a.num_q_heads = static_cast<int32_t>(q.size(1)), a.num_kv_heads = static_cast<int32_t>(k.size(1));
  a.num_blocks = static_cast<int32_t>(cache.size(0)), a.block_size = static_cast<int32_t>(cache.size(2));
  a.max_blocks = static_cast<int32_t>(block_table.size(1)), a.max_query_len = static_cast<int32_t>(max_query_len);
  a.sm_scale = static_cast<float>(sm_scale);
  check(l, l.prefill(l.ctx, &a), "octave_prefill");
}

void ext_init(const std::string& path, int64_t device) { open_library(path, device); }

}  // namespace

TORCH_LIBRARY(_C, m) {
  m.def("octave_cache_store(Tensor key, Tensor value, Tensor! cache, Tensor slot_mapping, Tensor k_signs, "
        "Tensor v_signs, int fmt) -> ()");
  m.def("octave_decode(Tensor! out, Tensor query, Tensor cache, Tensor block_table, Tensor q_to_req, "
        "Tensor q_to_klen, Tensor! mid_o, Tensor k_signs, Tensor v_signs, float sm_scale, int num_kv_splits, "
        "int fmt, int query_group, bool use_wmma) -> ()");
  m.def("octave_rotate(Tensor! x, Tensor signs, bool k_layout, bool inverse) -> ()");
  m.def("octave_prefill(Tensor! out, Tensor q, Tensor k, Tensor v, Tensor cache, Tensor block_table, "
        "Tensor cu_seqlens_q, Tensor seq_lens, int max_query_len, float sm_scale, int fmt) -> ()");
  m.def("octave_ext_init(str path, int device) -> ()", &ext_init);
}

TORCH_LIBRARY_IMPL(_C, CPU, m) {
  m.impl("octave_cache_store", &cache_store);
  m.impl("octave_decode", &decode);
  m.impl("octave_rotate", &rotate);
  m.impl("octave_prefill", &prefill);
}

TORCH_LIBRARY_IMPL(_C, CUDA, m) {
  m.impl("octave_cache_store", &cache_store);
  m.impl("octave_decode", &decode);
  m.impl("octave_rotate", &rotate);
  m.impl("octave_prefill", &prefill);
}
