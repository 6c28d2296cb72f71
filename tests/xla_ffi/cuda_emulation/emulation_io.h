// Host-side plumbing of the kernel emulators: raw float32 files in and out (bfloat16 runs
// round the inputs first, as the Python wrappers would), NaN-filled outputs so that a missed
// write shows, and a grid runner (see cuda_host_shim.h).

#ifndef TESTS_XLA_FFI_CUDA_EMULATION_EMULATION_IO_H_
#define TESTS_XLA_FFI_CUDA_EMULATION_EMULATION_IO_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cuda_host_shim.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EMU_POISON(addr, size) ASAN_POISON_MEMORY_REGION(addr, size)
#define EMU_UNPOISON(addr, size) ASAN_UNPOISON_MEMORY_REGION(addr, size)
#else
#define EMU_POISON(addr, size) ((void)(addr), (void)(size))
#define EMU_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

namespace emu {

inline std::string g_dir;  // the folder of the raw files

inline std::vector<float> Read(const std::string& name, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(g_dir + "/" + name + ".bin", std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (static_cast<size_t>(f.gcount()) != count * sizeof(float)) {
    std::fprintf(stderr, "emulate: %s.bin: expected %zu floats\n", name.c_str(), count);
    std::exit(2);
  }
  return v;
}

inline void Write(const std::string& name, const std::vector<float>& v) {
  std::ofstream f(g_dir + "/" + name + ".bin", std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

template <typename T>
T Cast(float v);
template <>
inline float Cast<float>(float v) { return v; }
template <>
inline __nv_bfloat16 Cast<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

inline float Back(float v) { return v; }
inline float Back(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
std::vector<T> ReadAs(const std::string& name, size_t count) {
  std::vector<float> f = Read(name, count);
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = Cast<T>(f[i]);
  return out;
}

template <typename T>
void WriteFrom(const std::string& name, const std::vector<T>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = Back(v[i]);
  Write(name, f);
}

template <typename T>
std::vector<T> NaNs(size_t count) {
  return std::vector<T>(count, Cast<T>(std::numeric_limits<float>::quiet_NaN()));
}

// Runs `kernel` on every block of a grid_x by grid_y grid, one block at a time, `threads`
// threads each; `smem` (`smem_bytes` long) is the kernels' shared memory, of which the launch
// asks for `shared_bytes` (the rest is poisoned under AddressSanitizer).
template <typename Kernel>
void RunGrid(int64_t grid_x, int64_t grid_y, int threads, size_t shared_bytes, float* smem, size_t smem_bytes,
             Kernel kernel) {
  if (shared_bytes > smem_bytes) {
    std::fprintf(stderr, "emulate: %zu bytes of shared memory requested\n", shared_bytes);
    std::exit(3);
  }
  EMU_POISON(reinterpret_cast<char*>(smem) + shared_bytes, smem_bytes - shared_bytes);
  std::barrier<> barrier(threads);
  emu_barrier = &barrier;
  gridDim.x = static_cast<unsigned>(grid_x);
  gridDim.y = static_cast<unsigned>(grid_y);
  blockDim.x = static_cast<unsigned>(threads);
  for (int64_t by = 0; by < grid_y; ++by) {
    for (int64_t bx = 0; bx < grid_x; ++bx) {
      blockIdx.x = static_cast<unsigned>(bx);
      blockIdx.y = static_cast<unsigned>(by);
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([t, &kernel] {
          threadIdx.x = static_cast<unsigned>(t);
          kernel();
        });
      }
      for (auto& th : pool) th.join();
    }
  }
  EMU_UNPOISON(smem, smem_bytes);
}

}  // namespace emu

#endif  // TESTS_XLA_FFI_CUDA_EMULATION_EMULATION_IO_H_
