// Threading and instruction-set selection shared by the CPU kernels.
//
// Tasks are pulled from a shared counter by the caller and up to workers - 1 threads of
// XLA's intra-op pool (std::thread when the pool reports none); the caller waits only for
// claimed tasks, so a pool thread that starts late finds no work and cannot deadlock.
// Each kernel compiles its task function twice, for AVX2+FMA and for the x86-64 baseline
// (FFI_ISA_VARIANTS), and picks one at run time (FFI_ISA_PICK).
#ifndef XLA_FFI_CSRC_CPU_PARALLEL_H_
#define XLA_FFI_CSRC_CPU_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace cpu_parallel {

namespace ffi = xla::ffi;

// True when the AVX2+FMA variants may run (XLA_FFI_CPU_ISA=baseline forces the baseline).
inline bool UseAvx2() {
  static const bool use = [] {
    const char* env = std::getenv("XLA_FFI_CPU_ISA");
    if (env != nullptr && std::string(env) == "baseline") return false;
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }();
  return use;
}

inline int NumWorkers(ffi::ThreadPool& pool, int64_t tasks) {
  int64_t threads = pool.num_threads();
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return int(std::max<int64_t>(1, std::min(threads, tasks)));
}

inline void ParallelFor(ffi::ThreadPool& pool, int64_t tasks, int workers,
                        std::function<void(int64_t task, int worker)> fn) {
  struct Shared {
    std::atomic<int64_t> next{0}, done{0};
    int64_t tasks = 0;
    std::function<void(int64_t, int)> fn;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  shared->tasks = tasks;
  shared->fn = std::move(fn);
  auto work = [](Shared& sh, int worker) {
    int64_t finished = 0;
    for (int64_t i; (i = sh.next.fetch_add(1)) < sh.tasks; ++finished) sh.fn(i, worker);
    if (finished > 0 && sh.done.fetch_add(finished) + finished == sh.tasks) {
      std::lock_guard<std::mutex> lock(sh.mu);
      sh.cv.notify_all();
    }
  };
  const bool have_pool = pool.num_threads() > 0;
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) {
    if (have_pool) {
      pool.Schedule([shared, w, work] { work(*shared, w); });
    } else {
      threads.emplace_back([shared, w, work] { work(*shared, w); });
    }
  }
  work(*shared, 0);
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->done.load() == shared->tasks; });
  }
  for (auto& t : threads) t.join();
}

// Runs body(task, scratch) for every task in [0, tasks) over up to the pool's workers, each
// worker with its own scratch from make_scratch() (sized once per call).
template <typename Make, typename Body>
void RunTasks(ffi::ThreadPool& pool, int64_t tasks, Make&& make_scratch, Body&& body) {
  if (tasks <= 0) return;
  const int workers = NumWorkers(pool, tasks);
  std::vector<decltype(make_scratch())> scratch;
  for (int w = 0; w < workers; ++w) scratch.push_back(make_scratch());
  ParallelFor(pool, tasks, workers, [&](int64_t task, int w) { body(task, scratch[w]); });
}

}  // namespace cpu_parallel

// FFI_ISA_VARIANTS(Name, Body, (PARAMS), (ARGS)) defines NameBase<T> (x86-64 baseline) and, on
// x86-64, NameAvx2<T> (AVX2+FMA): two instantiations of the always-inlined function template
// Body<T>, taking PARAMS and calling Body<T>(ARGS). FFI_ISA_PICK(Name, T) is the one to call on
// this CPU (chosen once per process).
#if defined(__x86_64__)
#define FFI_ISA_VARIANTS(Name, Body, PARAMS, ARGS)                                \
  template <typename T>                                                            \
  void Name##Base PARAMS { Body<T> ARGS; }                                         \
  template <typename T>                                                            \
  __attribute__((target("avx2,fma"))) void Name##Avx2 PARAMS { Body<T> ARGS; }
#define FFI_ISA_PICK(Name, T) (::cpu_parallel::UseAvx2() ? &Name##Avx2<T> : &Name##Base<T>)
#else
#define FFI_ISA_VARIANTS(Name, Body, PARAMS, ARGS) \
  template <typename T>                             \
  void Name##Base PARAMS { Body<T> ARGS; }
#define FFI_ISA_PICK(Name, T) (&Name##Base<T>)
#endif

#endif  // XLA_FFI_CSRC_CPU_PARALLEL_H_
