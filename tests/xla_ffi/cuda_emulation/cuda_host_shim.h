// Host stand-ins for the CUDA device built-ins used by xla_ffi/csrc/*_cuda_*.cuh: a model of
// the hardware the kernels rely on, faithful where it matters for correctness.
//
// - A block is blockDim.x std::threads; __syncthreads is a barrier across them that aborts
//   when it cannot complete (a thread exited or waits elsewhere: divergent barrier).
// - Warps are 32 lanes. Shuffles, votes and __syncwarp exchange values only among the lanes
//   of one warp named in the mask, with PTX's shfl.sync semantics: a lane offset keeps only its
//   low five bits (an xor mask of 32 reads the lane itself, never another warp), a source
//   past the segment of `width` lanes reads the caller's own value. What PTX leaves undefined
//   aborts: a caller outside its mask, a source lane outside the mask, lanes that disagree on
//   the mask, a mask naming a lane that exited or never arrives.
// - Each block's dynamic shared memory is its own allocation of exactly the launch's size,
//   filled with NaN bits before the block starts (a read of what another block, or nothing,
//   wrote shows as NaN; AddressSanitizer reports a read past the launch's size).
// - atomicAdd is a relaxed atomic read-modify-write, so it orders nothing (as on hardware) and
//   ThreadSanitizer still sees races on plain accesses around it.
// Not modelled: memory-ordering effects within a warp (a warp exchange orders its lanes'
// memory here, which hardware does not promise), warp scheduling, timing. Never for speed.

#ifndef TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_
#define TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(n)
#define CUDA_DEVICE_HOST_EMULATION 1  // cuda_device_util.cuh takes DynamicShared from here

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline dim3 blockDim;  // one launch at a time: the same for every running block
inline dim3 gridDim;

namespace emu {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Prints "emulate: <message>" and aborts: the kernel did something the hardware leaves
// undefined, or that hangs on it.
[[noreturn]] inline void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fputs("emulate: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::abort();
}

// Seconds a thread waits at a barrier or warp exchange before it is called a deadlock.
inline std::chrono::seconds WaitLimit() {
  const char* text = std::getenv("EMU_DEADLOCK_SECONDS");
  return std::chrono::seconds(text != nullptr ? std::atoi(text) : 120);
}

// The lanes of one warp meeting in a warp-synchronous operation (shuffle, vote, __syncwarp):
// every lane of `mask` must arrive with the same mask; the last one publishes their values.
class Warp {
 public:
  explicit Warp(unsigned present) : exited_(~present) {}

  // The values the lanes of `mask` brought, into out[lane].
  void Exchange(int lane, unsigned mask, uint32_t value, uint32_t* out) {
    if (((mask >> lane) & 1u) == 0) Fail("lane %d runs a warp operation with mask %#x that leaves it out", lane, mask);
    std::unique_lock<std::mutex> lock(m_);
    values_[lane] = value;
    masks_[lane] = mask;
    arrived_ |= 1u << lane;
    const uint64_t round = rounds_[lane];
    if ((arrived_ & mask) == mask) {
      for (int i = 0; i < kWarpSize; ++i) {
        if (((mask >> i) & 1u) == 0) continue;
        if (masks_[i] != mask) Fail("lanes %d and %d meet in a warp operation with masks %#x and %#x", lane, i, mask,
                                    masks_[i]);
        published_[i] = values_[i];
        ++rounds_[i];
      }
      arrived_ &= ~mask;
      cv_.notify_all();
    } else {
      const auto deadline = std::chrono::steady_clock::now() + WaitLimit();
      while (rounds_[lane] == round) {
        if (exited_ & mask) Fail("lane %d waits in a warp operation (mask %#x) for lanes %#x that exited", lane, mask,
                                 exited_ & mask);
        if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && rounds_[lane] == round) {
          Fail("lane %d: lanes %#x of mask %#x never reached the warp operation (divergent code)", lane,
               mask & ~arrived_, mask);
        }
      }
    }
    for (int i = 0; i < kWarpSize; ++i) out[i] = published_[i];
  }

  void Exit(int lane) {
    std::lock_guard<std::mutex> lock(m_);
    exited_ |= 1u << lane;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  unsigned arrived_ = 0, exited_;
  unsigned masks_[kWarpSize] = {};
  uint32_t values_[kWarpSize] = {}, published_[kWarpSize] = {};
  uint64_t rounds_[kWarpSize] = {};
};

// One running thread block: its barrier, warps and shared memory.
class Block {
 public:
  Block(dim3 index, int threads, size_t shared_bytes)
      : index_(index), threads_(threads), shared_((shared_bytes + sizeof(float) - 1) / sizeof(float)) {
    const uint32_t poison = 0x7fbadbadu;  // a NaN: a read of unwritten shared memory shows
    for (float& f : shared_) std::memcpy(&f, &poison, sizeof f);
    for (int w = 0; w * kWarpSize < threads; ++w) {
      const int lanes = std::min(kWarpSize, threads - w * kWarpSize);
      warps_.push_back(std::make_unique<Warp>(lanes == kWarpSize ? kFullMask : (1u << lanes) - 1));
    }
  }

  dim3 index() const { return index_; }
  float* shared() { return shared_.data(); }
  Warp& warp(int tid) { return *warps_[tid / kWarpSize]; }

  // __syncthreads: every thread of the block must arrive.
  void Sync(int tid) {
    std::unique_lock<std::mutex> lock(m_);
    if (exited_ > 0) Fail("thread %d waits at __syncthreads after %d threads of the block exited", tid, exited_);
    const uint64_t round = rounds_;
    if (++waiting_ == threads_) {
      waiting_ = 0;
      ++rounds_;
      cv_.notify_all();
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + WaitLimit();
    while (rounds_ == round) {
      if (exited_ > 0) Fail("thread %d waits at __syncthreads for threads that exited", tid);
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && rounds_ == round) {
        Fail("__syncthreads: %d of %d threads arrived (a barrier in divergent code)", waiting_, threads_);
      }
    }
  }

  void Exit(int tid) {
    warp(tid).Exit(tid % kWarpSize);
    std::lock_guard<std::mutex> lock(m_);
    ++exited_;
    cv_.notify_all();
  }

 private:
  dim3 index_;
  int threads_;
  std::vector<float> shared_;
  std::vector<std::unique_ptr<Warp>> warps_;
  std::mutex m_;
  std::condition_variable cv_;
  int waiting_ = 0, exited_ = 0;
  uint64_t rounds_ = 0;
};

inline thread_local Block* t_block = nullptr;

inline int Lane() { return static_cast<int>(threadIdx.x) % kWarpSize; }

inline uint32_t Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

inline float Float(uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

enum class ShuffleMode { kIndex, kXor, kDown };

// shfl.sync as PTX defines it: b keeps its low five bits; lanes form segments of `width`;
// a source outside the caller's segment returns the caller's value; a source lane outside
// `mask` is undefined (aborts).
inline float Shuffle(unsigned mask, float v, int b, int width, ShuffleMode mode) {
  if (width < 1 || width > kWarpSize || (width & (width - 1)) != 0) Fail("shuffle width %d is not a power of two <= 32", width);
  const int lane = Lane();
  uint32_t values[kWarpSize];
  t_block->warp(static_cast<int>(threadIdx.x)).Exchange(lane, mask, Bits(v), values);
  const int bval = b & 31, segmask = kWarpSize - width, min_lane = lane & segmask;
  const int max_lane = min_lane | (31 & ~segmask);
  int src = lane;
  bool in_range = true;
  switch (mode) {
    case ShuffleMode::kIndex: src = min_lane | (bval & ~segmask); in_range = src <= max_lane; break;
    case ShuffleMode::kXor: src = lane ^ bval; in_range = src <= max_lane; break;
    case ShuffleMode::kDown: src = lane + bval; in_range = src <= max_lane; break;
  }
  if (!in_range) src = lane;
  if (((mask >> src) & 1u) == 0) Fail("lane %d shuffles from lane %d, outside the mask %#x", lane, src, mask);
  return Float(values[src]);
}

// The block's dynamic shared memory, as `extern __shared__` gives it on the device.
inline float* DynamicShared() { return t_block->shared(); }

}  // namespace emu

namespace cuda_device {
using emu::DynamicShared;
}  // namespace cuda_device

inline void __syncthreads() { emu::t_block->Sync(static_cast<int>(threadIdx.x)); }

inline void __syncwarp(unsigned mask = emu::kFullMask) {
  uint32_t values[emu::kWarpSize];
  emu::t_block->warp(static_cast<int>(threadIdx.x)).Exchange(emu::Lane(), mask, 0, values);
}

inline float __shfl_sync(unsigned mask, float v, int src_lane, int width = emu::kWarpSize) {
  return emu::Shuffle(mask, v, src_lane, width, emu::ShuffleMode::kIndex);
}

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = emu::kWarpSize) {
  return emu::Shuffle(mask, v, lane_mask, width, emu::ShuffleMode::kXor);
}

inline float __shfl_down_sync(unsigned mask, float v, unsigned delta, int width = emu::kWarpSize) {
  return emu::Shuffle(mask, v, static_cast<int>(delta), width, emu::ShuffleMode::kDown);
}

// Bit i set for each lane i of `mask` whose predicate is non-zero.
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  uint32_t values[emu::kWarpSize];
  emu::t_block->warp(static_cast<int>(threadIdx.x)).Exchange(emu::Lane(), mask, predicate != 0, values);
  unsigned ballot = 0;
  for (int i = 0; i < emu::kWarpSize; ++i) ballot |= ((mask >> i) & values[i] & 1u) << i;
  return ballot;
}

inline float atomicAdd(float* address, float value) {
  return std::atomic_ref<float>(*address).fetch_add(value, std::memory_order_relaxed);
}

using std::min;

// bfloat16 as stored bits, rounded to nearest even like __float2bfloat16.
struct __nv_bfloat16 {
  uint16_t bits;
};

inline float __bfloat162float(__nv_bfloat16 v) { return emu::Float(static_cast<uint32_t>(v.bits) << 16); }

inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u = emu::Bits(f);
  if (std::isnan(f)) return __nv_bfloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{static_cast<uint16_t>(u >> 16)};
}

#endif  // TESTS_XLA_FFI_CUDA_EMULATION_CUDA_HOST_SHIM_H_
