// Emulated CUDA target: stands in for cuRAND's device Philox (cuda/emu/README.md).
#pragma once
#include "../emu_curand.h"
