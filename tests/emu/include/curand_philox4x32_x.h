// Emulated CUDA target: stands in for cuRAND's device Philox (tests/emu/README.md).
#pragma once
#include "../emu_curand.h"
