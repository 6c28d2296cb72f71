#!/usr/bin/env bash
# The one prepared GPU check of every custom call: selective scan, delta rule, GRU (see
# BUILD.md, "GPU check").
#
# For a machine with a CUDA GPU and no network, Python 3.12 with jax 0.11.2 and
# jax-cuda13-plugin, CMake, scikit-build-core, pytest, absl, tqdm installed. Run from the
# repository root:
#     OUT=/tmp/gpu_out bash experiments/gpu_check.sh
# In order of importance, each step with its own time limit and all of them within 570 s (a
# step that would start past that is skipped; a failing step does not stop the later ones):
# builds the package with every CUDA library required; runs the gpu-marked tests of all
# kernels (the emulator's edge shapes included: delta rule at d_v = 1, 2 and d_k = 256 with
# d_v = 16, the budget paths, bf16 everywhere); runs one small shape of each kernel, forward
# and backward, under compute-sanitizer memcheck, racecheck and synccheck; runs the
# selective-scan benchmark at 1,512,768,16 and 8,2048,1536,16 for float32 and bfloat16 with
# the device copy bandwidth measured in the same process (the "half of copy bandwidth"
# target); runs the kernels benchmark (delta rule at 8,2048,8,64,64, GRU-256 at batch 256
# and its batch-1 step, each against its pure-JAX references); then, if time is left, times
# the selective scan's ffi path under each states-per-thread layout and profiles the
# selective-scan and delta-rule kernels once with Nsight Compute. Everything lands in $OUT:
#   env.txt            GPU, driver, nvcc, Python and JAX versions
#   build.log          pip install output and the registered handler platforms
#   pytest_gpu.log     the gpu-marked tests
#   sanitize_*.log     compute-sanitizer per tool (its ERROR SUMMARY line says the count)
#   bench.log          the selective-scan benchmark's table and target figures
#   bench.json         its results (copy_gb_per_s, fraction_of_copy_bw per row)
#   bench_kernels.log  the kernels benchmark's table and the GPU targets (each kernel >= 2x)
#   bench_kernels.json its results
#   sweep.log          ffi fwd and fwd+bwd times per states-per-thread layout (1, 2, 4, 8)
#   ncu.txt            Nsight Compute: speed of light, occupancy, launch and memory sections
#   steps.log          each step's exit status and duration
# Run it with the device tool's timeout_s=600.

set -uo pipefail
OUT=${OUT:-$PWD/gpu_check_out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

DEADLINE=${DEADLINE:-570}  # seconds of the whole script

step() {  # step NAME LIMIT_S LOG COMMAND...: run within LIMIT_S and the deadline, record status and time
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((DEADLINE - SECONDS))
  if ((left < 15)); then
    echo "$name: skipped, ${left} s left of the ${DEADLINE} s budget" | tee -a "$OUT/steps.log"
    return 124
  fi
  ((limit > left)) && limit=$left
  local start=$SECONDS
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s (log: $(basename "$log"))" | tee -a "$OUT/steps.log"
  return $rc
}

{
  date -u
  nvidia-smi || true
  nvcc --version || true
  cmake --version | head -1 || true
  "$PY" -c "import sys, jax, jaxlib; print(sys.version); print('jax', jax.__version__, 'jaxlib', \
jaxlib.__version__); print(jax.devices())"
} >"$OUT/env.txt" 2>&1

# 1. Build: XLA_FFI_CUDA=ON makes a failing CUDA build fail the install. No network:
#    no build isolation (the installed scikit-build-core and jaxlib headers are used; they
#    are jaxlib 0.11.2's, which this machine runs) and no dependency resolution.
step build 150 "$OUT/build.log" \
  env XLA_FFI_CUDA=ON "$PY" -m pip install -e . --no-build-isolation --no-deps -v
step registered 30 "$OUT/build.log" "$PY" -c "import xla_ffi; from xla_ffi import ffi; \
print('registered (every kernel):', xla_ffi.registered_platforms()); \
[print(k, 'cuda library:', ffi.library_path('cuda', k)) for k in ffi.KERNELS]"

# 2. The gpu-marked tests (the same value and gradient checks as on the CPU, on CUDA).
#    Only tests/xla_ffi: other areas import packages this machine may not have.
step pytest_gpu 120 "$OUT/pytest_gpu.log" \
  "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider tests/xla_ffi

# 2b. One small shape per kernel, forward and backward, under each compute-sanitizer tool.
#     Every buffer its own allocation (XLA's pool would hide overruns from memcheck).
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
SAN_PY="import jax, jax.numpy as jnp
from xla_ffi import delta_rule, gru_recurrence, selective_scan
from xla_ffi.reference import random_inputs
from xla_ffi.delta_rule_reference import random_delta_inputs
from xla_ffi.gru_reference import random_gru_inputs
def run(fn, x, **kw):
    jax.block_until_ready(jax.grad(lambda x: jnp.sum(fn(**x, impl='ffi', **kw).astype(jnp.float32)))(x))
run(selective_scan, random_inputs(0, (2, 70, 40, 16), 'float32'), delta_softplus=True)
run(delta_rule, random_delta_inputs(0, (2, 70, 2, 16, 12), 'float32'))
run(delta_rule, random_delta_inputs(0, (1, 20, 1, 40, 1), 'bfloat16'))
run(gru_recurrence, random_gru_inputs(0, (9, 5, 40), 'float32'))
print('every kernel ran forward and backward')"
if [ -n "$SAN" ]; then
  for tool in memcheck racecheck synccheck; do
    step "sanitize_$tool" 80 "$OUT/sanitize_$tool.log" env XLA_PYTHON_CLIENT_ALLOCATOR=platform \
      "$SAN" --tool "$tool" --error-exitcode 3 "$PY" -c "$SAN_PY"
  done
else
  echo "compute-sanitizer: not found" | tee -a "$OUT/steps.log"
fi

# 3. Benchmark, and the copy bandwidth measured in the same process.
step bench 90 "$OUT/bench.log" \
  "$PY" -m experiments.bench_kernels --preset=scan_gpu --platform=cuda --json_out="$OUT/bench.json"

# 3b. The delta rule and the GRU against their references at the GPU target shapes (no
#     memory-only shape: the length-4096 memory target is a CPU one).
step bench_kernels 90 "$OUT/bench_kernels.log" \
  "$PY" -m experiments.bench_kernels --platform=cuda --kernels=delta_rule,gru \
  --delta_shapes=8,2048,8,64,64 --delta_memory_shapes= --gru_shapes='256,64,256;1,1,256' \
  --dtypes=float32 --rounds=2 --repeats=5 --min_seconds=0.2 --json_out="$OUT/bench_kernels.json"

# 4. If time is left: the ffi path under each states-per-thread layout (the default is 4 for N=16).
for k in 1 2 4 8; do
  echo "== XLA_FFI_SCAN_CUDA_STATES_PER_THREAD=$k" >>"$OUT/sweep.log"
  step "sweep_k$k" 30 "$OUT/sweep.log" env XLA_FFI_SCAN_CUDA_STATES_PER_THREAD=$k \
    "$PY" -m experiments.bench_kernels --preset=scan_gpu --platform=cuda --dtypes=float32 --impls=ffi \
    --copy_mb=0
done

# 5. If time is left: one profile of the forward and backward kernels at the large shape.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  step ncu 90 "$OUT/ncu.txt" "$NCU" --target-processes all -k regex:'SelectiveScan|DeltaRule' --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats \
    "$PY" -c "import jax, jax.numpy as jnp; from xla_ffi import delta_rule, selective_scan; \
from xla_ffi.reference import random_inputs; from xla_ffi.delta_rule_reference import random_delta_inputs; \
s = random_inputs(0, (8, 2048, 1536, 16), 'float32'); d = random_delta_inputs(0, (8, 2048, 8, 64, 64), 'float32'); \
jax.block_until_ready(jax.grad(lambda x: jnp.sum(selective_scan(**x, delta_softplus=True, impl='ffi')))(s)); \
jax.block_until_ready(jax.grad(lambda x: jnp.sum(delta_rule(**x, impl='ffi')))(d))"
else
  echo "ncu: not found" | tee -a "$OUT/steps.log"
fi

cat "$OUT/steps.log"
