// Host emulation of <cuda_bf16.h>: __nv_bfloat16 and its conversions (cuda_host_shim.h).
#include "cuda_host_shim.h"
