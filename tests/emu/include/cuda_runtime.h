// Emulated CUDA target: stands in for the CUDA runtime header (tests/emu/README.md).
#pragma once
#include "../emu_runtime.h"
