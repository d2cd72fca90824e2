// Emulated CUDA target: stands in for cuda_bf16.h (tests/emu/README.md).
#pragma once
#include "../emu_half.h"
