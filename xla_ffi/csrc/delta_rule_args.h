// The delta rule's operands and results as typed pointers (T: the storage type, float or
// bfloat16), shared by the CPU and CUDA kernels' arguments. No XLA or CUDA dependency, so the
// CUDA kernels can also be compiled for the host (tests/xla_ffi/cuda_emulation/).
#ifndef XLA_FFI_CSRC_DELTA_RULE_ARGS_H_
#define XLA_FFI_CSRC_DELTA_RULE_ARGS_H_

namespace delta_rule {

template <typename T>
struct FwdPointers {
  const T *q, *k, *v, *beta;   // [B, L, H, K] (q, k), [B, L, H, V], [B, L, H]
  const float* h0;             // [B, H, K, V]
  T* o;                        // [B, L, H, V]
  float *last, *chunk_states;  // [B, H, K, V], [B, nchunks, H, K, V]
};

template <typename T>
struct BwdPointers {
  const T *q, *k, *v, *beta;
  const float* chunk_states;  // [B, nchunks, H, K, V]
  const T* dout;              // [B, L, H, V]
  const float* dlast;         // [B, H, K, V]
  T *dq, *dk, *dv, *dbeta;
  float* dh0;  // [B, H, K, V]
};

}  // namespace delta_rule

#endif  // XLA_FFI_CSRC_DELTA_RULE_ARGS_H_
