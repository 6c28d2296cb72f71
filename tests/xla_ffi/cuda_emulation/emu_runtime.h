// Host stand-ins for the CUDA runtime calls the handlers in xla_ffi/csrc/*_cuda.cu make, so
// that their host code (guards, scratch sizes, memsets, copies, attribute calls, launch
// configuration) runs as written: launches run the kernel on the emulated device
// (cuda_host_shim.h), synchronously, in stream order.
//
// The device is an sm_90 (H100) as the libraries target: at most 1024 threads a block, 48 KiB
// of dynamic shared memory a block unless the kernel opted in with cudaFuncSetAttribute(...,
// cudaFuncAttributeMaxDynamicSharedMemorySize, n), n at most 227 KiB. A launch past a limit
// fails as on the device (the error is returned and kept for cudaGetLastError), it never runs.
// EMU_BLOCKS_AT_ONCE=n runs n blocks concurrently (default 1), so that ThreadSanitizer sees
// inter-block races. Every runtime call is appended to emu::g_log_path when set.

#ifndef TESTS_XLA_FFI_CUDA_EMULATION_EMU_RUNTIME_H_
#define TESTS_XLA_FFI_CUDA_EMULATION_EMU_RUNTIME_H_

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_host_shim.h"

struct EmuStream;
using cudaStream_t = EmuStream*;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorInvalidConfiguration = 9,
};
enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };

namespace emu {

constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kDefaultSharedBytes = 48 << 10;   // without opting in
constexpr int kOptInSharedBytes = 227 << 10;    // sm_90's cudaDevAttrMaxSharedMemoryPerBlockOptin

inline cudaError_t g_last_error = cudaSuccess;
inline std::map<const void*, int> g_max_dynamic_shared;  // per kernel, set by cudaFuncSetAttribute
inline std::string g_log_path;

inline void Log(const char* format, ...) {
  if (g_log_path.empty()) return;
  std::FILE* f = std::fopen(g_log_path.c_str(), "a");
  if (f == nullptr) Fail("cannot append to %s", g_log_path.c_str());
  va_list args;
  va_start(args, format);
  std::vfprintf(f, format, args);
  va_end(args);
  std::fputc('\n', f);
  std::fclose(f);
}

inline cudaError_t Error(cudaError_t err) {
  g_last_error = err;
  return err;
}

inline int BlocksAtOnce() {
  const char* text = std::getenv("EMU_BLOCKS_AT_ONCE");
  const int n = text != nullptr ? std::atoi(text) : 1;
  return n < 1 ? 1 : n;
}

// Runs body() as every thread of every block of the grid, EMU_BLOCKS_AT_ONCE blocks at a time.
template <typename Body>
void RunGrid(dim3 grid, dim3 block, size_t shared_bytes, Body body) {
  gridDim = grid;
  blockDim = block;
  const int threads = static_cast<int>(block.x);
  const int64_t total = int64_t{grid.x} * grid.y * grid.z;
  const int64_t at_once = BlocksAtOnce();
  for (int64_t first = 0; first < total; first += at_once) {
    std::vector<std::unique_ptr<Block>> blocks;
    std::vector<std::thread> pool;
    for (int64_t i = first; i < std::min(total, first + at_once); ++i) {
      const dim3 index(static_cast<unsigned>(i % grid.x), static_cast<unsigned>(i / grid.x % grid.y),
                       static_cast<unsigned>(i / (int64_t{grid.x} * grid.y)));
      blocks.push_back(std::make_unique<Block>(index, threads, shared_bytes));
    }
    for (auto& b : blocks) {
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([t, blk = b.get(), &body] {
          threadIdx = dim3(static_cast<unsigned>(t));
          blockIdx = blk->index();
          t_block = blk;
          body();
          blk->Exit(t);
        });
      }
    }
    for (auto& th : pool) th.join();
  }
}

template <typename... P, size_t... I>
void RunKernel(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, void** args, std::index_sequence<I...>) {
  const std::tuple<P...> params{*static_cast<P*>(args[I])...};  // copied at launch, as the device does
  RunGrid(grid, block, shared, [&] { std::apply(kernel, params); });
}

}  // namespace emu

inline const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  }
  return "unknown error";
}

inline cudaError_t cudaGetLastError() { return std::exchange(emu::g_last_error, cudaSuccess); }

inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (attr != cudaDevAttrMaxSharedMemoryPerBlockOptin || device != 0) return emu::Error(cudaErrorInvalidValue);
  *value = emu::kOptInSharedBytes;
  return cudaSuccess;
}

inline cudaError_t cudaMemsetAsync(void* data, int value, size_t bytes, cudaStream_t) {
  emu::Log("memset %zu", bytes);
  std::memset(data, value, bytes);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  emu::Log("memcpy %zu", bytes);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

template <typename... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  emu::Log("attribute max_dynamic_shared %d", value);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > emu::kOptInSharedBytes) {
    return emu::Error(cudaErrorInvalidValue);
  }
  emu::g_max_dynamic_shared[reinterpret_cast<const void*>(kernel)] = value;
  return cudaSuccess;
}

// Checks the launch against the device's limits, then runs it to completion.
template <typename... P>
cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t) {
  emu::Log("launch grid %u %u %u block %u shared %zu", grid.x, grid.y, grid.z, block.x, shared);
  const auto limit = emu::g_max_dynamic_shared.find(reinterpret_cast<const void*>(kernel));
  const size_t max_shared = limit == emu::g_max_dynamic_shared.end() ? emu::kDefaultSharedBytes : limit->second;
  if (shared > max_shared) return emu::Error(cudaErrorInvalidValue);
  if (block.x == 0 || block.x > emu::kMaxThreadsPerBlock || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    return emu::Error(cudaErrorInvalidConfiguration);
  }
  if (block.y != 1 || block.z != 1) emu::Fail("multi-dimensional blocks are not modelled");
  emu::RunKernel(kernel, grid, block, shared, args, std::index_sequence_for<P...>{});
  return cudaSuccess;
}

#endif  // TESTS_XLA_FFI_CUDA_EMULATION_EMU_RUNTIME_H_
