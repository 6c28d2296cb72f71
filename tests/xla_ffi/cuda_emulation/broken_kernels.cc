// Small kernels, most of them deliberately wrong, that the emulated device must catch: the
// checks of the checker (tests/xla_ffi/test_cuda_emulator.py says what each one proves).
//
// Usage: broken_kernels NAME DIR; writes DIR/out.bin (float32) where the kernel has an output
// and prints the status of each runtime call as "NAME: <cudaGetErrorString>".

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "cuda_device_util.cuh"

namespace {

constexpr int kThreads = 128;

// Sums lane ids over groups of 64 lanes: a group wider than a warp (the d_v <= 2 defect).
__global__ void CrossWarpSum(float* out) {
  out[threadIdx.x] = cuda_device::LaneSum(static_cast<float>(threadIdx.x), 64);
}

// Reads a neighbour's shared slot: `sync` false omits the barrier between write and read.
__global__ void NeighbourRead(float* out, bool sync) {
  float* s = cuda_device::DynamicShared();
  s[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (sync) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

// Block 0 writes shared memory; every block reads it, as if it outlived block 0.
__global__ void StaleShared(float* out) {
  float* s = cuda_device::DynamicShared();
  if (blockIdx.x == 0 && threadIdx.x == 0) s[0] = 42.f;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// Every block adds one to out[0]: plainly (`atomic` false, a race between blocks) or atomically.
__global__ void CountBlocks(float* out, bool atomic) {
  if (threadIdx.x != 0) return;
  if (atomic) {
    atomicAdd(out, 1.f);
  } else {
    out[0] += 1.f;
  }
}

// Only the first half of the block reaches the barrier.
__global__ void DivergentBarrier(float* out) {
  if (threadIdx.x < blockDim.x / 2) __syncthreads();
  out[threadIdx.x] = 1.f;
}

// Lanes 0-15 shuffle with a full mask; lanes 16-31 never do.
__global__ void DivergentShuffle(float* out) {
  float v = 1.f;
  if (threadIdx.x % 32 < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

// Each half-warp shuffles with its own mask, reading across to the other half.
__global__ void ShuffleOutsideMask(float* out) {
  const unsigned half = threadIdx.x % 32 < 16 ? 0x0000ffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_xor_sync(half, static_cast<float>(threadIdx.x), 16);
}

// Each half-warp sums its lanes with its own mask (a correct partial-mask kernel), and ballots.
__global__ void HalfWarpSums(float* out) {
  const unsigned half = threadIdx.x % 32 < 16 ? 0x0000ffffu : 0xffff0000u;
  float v = static_cast<float>(threadIdx.x);
  for (int offset = 8; offset > 0; offset >>= 1) v += __shfl_xor_sync(half, v, offset);
  const unsigned odd = __ballot_sync(0xffffffffu, threadIdx.x % 2);
  out[threadIdx.x] = v + (odd == 0xaaaaaaaau ? 0.f : 1e6f);
}

// Does nothing: only the shared-memory sizes of its launches matter.
__global__ void FillShared(float* out) {
  (void)out;
}

void Print(const char* what, cudaError_t err) { std::printf("%s: %s\n", what, cudaGetErrorString(err)); }

template <typename... P, typename... A>
void Launch(void (*kernel)(P...), unsigned blocks, size_t shared, A... args) {
  void* pointers[] = {static_cast<void*>(&args)...};
  Print("launch", cudaLaunchKernel(kernel, dim3(blocks), dim3(kThreads), pointers, shared, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NAME DIR\n", argv[0]);
    return 1;
  }
  const std::string name = argv[1];
  const int blocks = 4;
  std::vector<float> out(blocks * kThreads, 0.f);
  float* o = out.data();
  const size_t bytes = sizeof(float) * kThreads;
  const std::map<std::string, std::function<void()>> cases = {
      {"cross_warp_sum", [&] { Launch(&CrossWarpSum, 1, 0, o); }},
      {"missing_barrier", [&] { Launch(&NeighbourRead, blocks, bytes, o, false); }},
      {"with_barrier", [&] { Launch(&NeighbourRead, blocks, bytes, o, true); }},
      {"stale_shared", [&] { Launch(&StaleShared, blocks, bytes, o); }},
      {"block_race", [&] { Launch(&CountBlocks, blocks, 0, o, false); }},
      {"block_atomic", [&] { Launch(&CountBlocks, blocks, 0, o, true); }},
      {"divergent_barrier", [&] { Launch(&DivergentBarrier, 1, 0, o); }},
      {"divergent_shuffle", [&] { Launch(&DivergentShuffle, 1, 0, o); }},
      {"shuffle_outside_mask", [&] { Launch(&ShuffleOutsideMask, 1, 0, o); }},
      {"half_warp_sums", [&] { Launch(&HalfWarpSums, 1, 0, o); }},
      {"shared_limits", [&] {
         Launch(&FillShared, 1, 48 << 10, o);            // the default limit: runs
         Launch(&FillShared, 1, (48 << 10) + 4, o);      // past it without opting in: fails
         Print("opt in", cudaFuncSetAttribute(&FillShared, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000));
         Launch(&FillShared, 1, 100000, o);               // opted in: runs
         Launch(&FillShared, 1, 100004, o);               // past the opt-in: fails
         Print("opt in", cudaFuncSetAttribute(&FillShared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (227 << 10) + 4));  // past sm_90's limit: fails
       }},
  };
  const auto found = cases.find(name);
  if (found == cases.end()) {
    std::fprintf(stderr, "unknown kernel %s\n", name.c_str());
    return 1;
  }
  found->second();
  std::ofstream(std::string(argv[2]) + "/out.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(sizeof(float) * out.size()));
  return 0;
}
