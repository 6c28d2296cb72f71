// Device helpers shared by the CUDA kernels: the block's dynamic shared memory, float32
// conversions of the storage types, the sigmoid, and warp-shuffle sums over aligned lane
// groups. CUDA language only (no runtime API), so the test suite can compile the kernels for
// the host (tests/xla_ffi/cuda_emulation/), whose shim supplies DynamicShared per emulated block.
#ifndef XLA_FFI_CSRC_CUDA_DEVICE_UTIL_CUH_
#define XLA_FFI_CSRC_CUDA_DEVICE_UTIL_CUH_

namespace cuda_device {

#ifndef CUDA_DEVICE_HOST_EMULATION
// The block's dynamic shared memory (the launch's third parameter sizes it).
__device__ __forceinline__ float* DynamicShared() {
  extern __shared__ float dynamic_shared[];
  return dynamic_shared;
}
#endif

__device__ __forceinline__ float ToF(float v) { return v; }
__device__ __forceinline__ float ToF(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromF(float v);
template <>
__device__ __forceinline__ float FromF<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

__device__ __forceinline__ float Sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// Sum of v over the `lanes` neighbouring threads of a group; every lane gets the sum.
// All 32 threads of the warp must call it (lanes divides 32, groups are aligned: a shuffle
// never leaves its warp, an offset of 32 or more reads the lane itself).
__device__ __forceinline__ float LaneSum(float v, int lanes) {
  for (int offset = lanes >> 1; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Sum of v over the warp's lanes that share lane % stride (stride a power of two dividing 32);
// every lane gets the sum of its class.
__device__ __forceinline__ float StridedSum(float v, int stride) {
  for (int offset = stride; offset < 32; offset <<= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

}  // namespace cuda_device

#endif  // XLA_FFI_CSRC_CUDA_DEVICE_UTIL_CUH_
