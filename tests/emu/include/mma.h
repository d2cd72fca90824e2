// Emulated CUDA target: stands in for the wmma API of mma.h (tests/emu/README.md).
#pragma once
#include "../emu_wmma.h"
