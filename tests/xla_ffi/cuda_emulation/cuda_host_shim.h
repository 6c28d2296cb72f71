// Host stand-ins for the CUDA built-ins used by the kernels in xla_ffi/csrc/*_cuda_*.cuh.
//
// One thread block runs at a time as kThreads std::threads; __syncthreads is a barrier
// across them, a warp shuffle is a write-barrier-read-barrier exchange through a shared
// array (the kernels call shuffles in block-uniform control flow, so a block-wide
// barrier is equivalent), atomicAdd takes a mutex. Only meant to check indexing and
// arithmetic of the kernels on a machine without a GPU, never for speed.

#ifndef TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_
#define TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(n)

struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline thread_local EmuDim3 threadIdx;
inline EmuDim3 blockIdx;
inline EmuDim3 blockDim;
inline EmuDim3 gridDim;

inline std::barrier<>* emu_barrier = nullptr;
inline std::mutex emu_atomic_mutex;
inline float emu_shuffle_slots[1024];

inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned /*mask*/, float v, int lane_mask) {
  emu_shuffle_slots[threadIdx.x] = v;
  __syncthreads();
  const float other = emu_shuffle_slots[threadIdx.x ^ static_cast<unsigned>(lane_mask)];
  __syncthreads();
  return other;
}

inline float atomicAdd(float* address, float value) {
  std::lock_guard<std::mutex> lock(emu_atomic_mutex);
  const float old = *address;
  *address = old + value;
  return old;
}

using std::min;

// bfloat16 as stored bits, rounded to nearest even like __float2bfloat16.
struct __nv_bfloat16 {
  uint16_t bits;
};

inline float __bfloat162float(__nv_bfloat16 v) {
  const uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (std::isnan(f)) return __nv_bfloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{static_cast<uint16_t>(u >> 16)};
}

#endif  // TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_
