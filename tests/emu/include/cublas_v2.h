// Emulated CUDA target: stands in for cuBLAS (tests/emu/README.md).
#pragma once
#include "../emu_cublas.h"
