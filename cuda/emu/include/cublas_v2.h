// Emulated CUDA target: stands in for cuBLAS (cuda/emu/README.md).
#pragma once
#include "../emu_cublas.h"
