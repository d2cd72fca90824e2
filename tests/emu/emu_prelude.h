// Force-included (g++ -include) before every .cu file of the emulated build, as nvcc
// includes cuda_runtime.h: device code compiles as host C++ against tests/emu/. __CUDA_ARCH__
// is 900 (an H100), so __CUDA_ARCH__ branches take their device side, run on the CPU.
#pragma once
#define __CUDACC__ 1
#define __CUDA_ARCH__ 900
#include "emu_runtime.h"
