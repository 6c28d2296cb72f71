// CPU GRU recurrence: what the forward (gru_cpu_fwd.cc) and backward (gru_cpu_bwd.cc) files
// share; gru_cpu.cc holds the handlers.
//
// One task is a block of batch rows run through the whole sequence (rows are independent,
// so tasks never wait on each other). Per step the recurrent matmul h W (forward) or
// dgh W^T (backward) goes column block by column block of eight hidden units, the weights'
// block held across the task's row blocks of up to four rows (the row block's accumulators
// in registers), and the gate math for those eight units follows at once. dW and db are not
// computed here: the backward returns dgh per step and XLA sums h_{t-1}^T dgh_t over all
// steps in one large matmul.
#ifndef XLA_FFI_CSRC_GRU_CPU_H_
#define XLA_FFI_CSRC_GRU_CPU_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_parallel.h"
#include "cpu_simd.h"
#include "gru_common.h"

namespace gru::cpu {

using namespace cpu_simd;  // NOLINT(build/namespaces): the kernels are written in its vocabulary

constexpr int kRows = 4;  // batch rows per register block

template <typename T>
struct FwdArgs {
  GruDims d;
  const T* gx;      // [B, L, 3H]
  const float* h0;  // [B, H]
  const float* W;   // [H, 3H]
  const float* b;   // [3H]
  T* y;             // [B, L, H]
  float* last;      // [B, H]
  float* gates;     // [B, L, 4H]: r, z, n, gh_n (null when not saved)
};

template <typename T>
struct BwdArgs {
  GruDims d;
  const float* Wt;     // [3H, H]
  const float* h0;     // [B, H]
  const T* y;          // [B, L, H]
  const float* gates;  // [B, L, 4H]
  const T* dy;         // [B, L, H]
  const float* dlast;  // [B, H]
  T* dgx;              // [B, L, 3H]
  float* dgh;          // [B, L, 3H]
  float* dh0;          // [B, H]
};

FFI_INLINE int64_t RoundUp8(int64_t n) { return (n + kV - 1) / kV * kV; }

// A row-major weight matrix read as column panels: panel p holds, for each row k, `width`
// vectors of eight columns (vector v starts at column v * gate_stride + 8p) back to back.
// Contiguous panels matter: read in place, a panel's rows lie a whole matrix row apart, so at
// power-of-two-ish strides they share a few L1 sets and evict each other between row blocks.
// A panel is packed into a contiguous copy when it will be read more than once per call (length
// > 1) or when the columns are not whole vectors (the copy is zero-padded); else it is read in
// place.
class Panels {
 public:
  Panels(const float* src, int64_t rows, int64_t ld, int64_t cols, int width, int64_t gate_stride, bool pack) {
    if (!pack && cols % kV == 0) {
      data_ = src;
      panel_stride_ = kV;
      row_stride_ = ld;
      vector_stride_ = gate_stride;
      return;
    }
    const int64_t panels = RoundUp8(cols) / kV;
    row_stride_ = width * kV;
    panel_stride_ = rows * row_stride_;
    vector_stride_ = kV;
    copy_.assign(size_t(panels * panel_stride_), 0.0f);
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t lanes = std::min<int64_t>(kV, cols - p * kV);
      for (int64_t k = 0; k < rows; ++k) {
        for (int v = 0; v < width; ++v) {
          const float* from = src + k * ld + v * gate_stride + p * kV;
          std::copy(from, from + lanes, copy_.data() + p * panel_stride_ + k * row_stride_ + v * kV);
        }
      }
    }
    data_ = copy_.data();
  }
  // Vector v of row k of the panel holding columns [c0, c0 + 8) (c0 a multiple of eight).
  FFI_INLINE const float* At(int64_t c0, int64_t k, int v = 0) const {
    return data_ + (c0 / kV) * panel_stride_ + k * row_stride_ + v * vector_stride_;
  }

 private:
  std::vector<float> copy_;
  const float* data_;
  int64_t panel_stride_, row_stride_, vector_stride_;
};

// Rows per task: about two tasks per worker, in whole register blocks (a task reuses each
// weight block over all its rows, so fewer, larger tasks read the weights less often). Tasks
// are whole sequences of their rows, so the workers never wait on each other between steps:
// on a shared machine a step-synchronised split (of the hidden units, at small batch) stalls
// whenever one of its threads is descheduled.
inline int64_t RowsPerTask(int64_t batch, int workers) {
  const int64_t per = (batch + 2 * workers - 1) / (2 * workers);
  return std::max<int64_t>(kRows, (per + kRows - 1) / kRows * kRows);
}

// Runs body(b0, rows, scratch) for every task of RowsPerTask batch rows [b0, b0 + rows), each
// worker with its own make_scratch(rows per task).
template <typename Make, typename Body>
void RunRowTasks(ffi::ThreadPool& pool, int64_t batch, Make&& make_scratch, Body&& body) {
  const int64_t per_task = RowsPerTask(batch, cpu_parallel::NumWorkers(pool, batch));
  cpu_parallel::RunTasks(pool, (batch + per_task - 1) / per_task, [&] { return make_scratch(per_task); },
                         [&](int64_t task, auto& s) {
                           body(task * per_task, std::min(per_task, batch - task * per_task), s);
                         });
}

// Calls f(std::integral_constant<int, R>) for R = rows in 1..kRows.
template <typename F>
FFI_INLINE void WithRows(int64_t rows, F&& f) {
  switch (rows) {
    case 4: return f(std::integral_constant<int, 4>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 2: return f(std::integral_constant<int, 2>{});
    default: return f(std::integral_constant<int, 1>{});
  }
}

// The forward and backward passes over a whole call, instantiated for T = float and Bf16.
template <typename T> ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a);
template <typename T> ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a);

}  // namespace gru::cpu

#endif  // XLA_FFI_CSRC_GRU_CPU_H_
