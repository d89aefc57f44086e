// The KernelTable of this build (dsk_simt under g++, dsk_cuda under nvcc): memory
// management through the SIMT runtime (host memory on the CPU, cudaMalloc on the GPU)
// and the launch functions of kernels/*.cu.
#include "common.cuh"

namespace DSK_NS {

void embedding(const void*, dsk::WType, const std::int32_t*, const float*, int, void*, int, int);
void rmsnorm(const void*, const float*, float, void*, int, int, float);
void layernorm(const void*, const float*, const float*, void*, int, int, float);
void gemv(const void*, dsk::WType, const void*, const float*, void*, void*, int, int, int);
void fused_qkv(const void*, const void*, const void*, dsk::WType, const float*, const float*, const float*,
               const void*, void*, void*, void*, int, int, int, int);
void qk_norm(const void*, const void*, const float*, const float*, float, void*, void*, int, int, int, int,
             float);
void rope(void*, void*, int, int, int, int, int, int, float, const float*, bool);
void attention(const void*, const void*, const void*, void*, int, int, int, int, int, int, int, int);
void swiglu(const void*, const void*, const float*, const float*, bool, void*, int, int, int);
void gelu(const void*, void*, int);
void attn_gate(const void*, const void*, void*, int);
void gdn_gates(const void*, const void*, dsk::WType, const float*, const float*, const void*, void*, void*,
               int, int, int);
void l2norm(const void*, int, void*, void*, int, int, int, float);
void gated_rmsnorm(const void*, const void*, const float*, void*, int, int, int, float);
void gdn(const float*, const float*, const float*, const float*, const float*, const float*, float*, float*,
         int, int, int, int, int, int);
void gdn_inplace(const float*, const float*, const float*, const float*, const float*, float*, float*, int,
                 int, int, int, int);
void gdn_inplace_ids(const float*, const float*, const float*, const float*, const float*, float*,
                     const std::int32_t*, int, float*, float*, int, int, int, int, int);
void ssm_conv(const float*, const float*, float*, int, int, int, int, bool);
void ssm_conv_update(const float*, const float*, const float*, float*, float*, int, int, int, bool);
void ssm_conv_update_ids(float*, const std::int32_t*, int, float*, const float*, const float*, float*, int,
                         int, int, bool);
void moe_route(const void*, dsk::WType, const void*, void*, std::int32_t*, void*, int, int, int, int,
               dsk::MoeRule, bool);
void moe_experts(const void*, const void*, const void*, dsk::WType, dsk::WType, const void*,
                 const std::int32_t*, const void*, void*, void*, void*, int, int, int, int, int);
void moe_shexp_gate_add(const void*, dsk::WType, const void*, const void*, const void*, void*, void*, void*,
                        int, int);

namespace {

std::string device_error() { return simt::device_error(); }

void* alloc(std::size_t bytes) { return simt::malloc(bytes == 0 ? 1 : bytes); }
void release(void* p) { simt::free(p); }
void to_device(void* dst, const void* src, std::size_t n) {
  simt::memcpy(dst, src, n, simt::CopyKind::host_to_device);
}
void to_host(void* dst, const void* src, std::size_t n) {
  simt::memcpy(dst, src, n, simt::CopyKind::device_to_host);
}
void device_copy(void* dst, const void* src, std::size_t n) {
  simt::memcpy(dst, src, n, simt::CopyKind::device_to_device);
}
void synchronize() { simt::synchronize(); }

}  // namespace

const dsk::KernelTable& table() {
#if defined(SIMT_BACKEND_CUDA)
  static const char* const backend = "cuda";
#else
  static const char* const backend = "simt";
#endif
  static const dsk::KernelTable t = {backend,
                                     device_error,
                                     alloc,
                                     release,
                                     to_device,
                                     to_host,
                                     device_copy,
                                     synchronize,
                                     embedding,
                                     rmsnorm,
                                     layernorm,
                                     gemv,
                                     fused_qkv,
                                     qk_norm,
                                     rope,
                                     attention,
                                     swiglu,
                                     gelu,
                                     attn_gate,
                                     gdn_gates,
                                     l2norm,
                                     gated_rmsnorm,
                                     gdn,
                                     gdn_inplace,
                                     gdn_inplace_ids,
                                     ssm_conv,
                                     ssm_conv_update,
                                     ssm_conv_update_ids,
                                     moe_route,
                                     moe_experts,
                                     moe_shexp_gate_add};
  return t;
}

}  // namespace DSK_NS
