// Emulated CUDA: stands in for cuda_profiler_api.h (cudaProfilerStart/Stop; tests/emu/README.md).
#pragma once
#include "../emu_runtime.h"
