// Host emulation of <cuda_runtime.h>: the runtime calls the handlers make (emu_runtime.h).
#include "emu_runtime.h"
