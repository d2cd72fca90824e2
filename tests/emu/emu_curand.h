// Emulated cuRAND device Philox: curand_Philox4x32_10(counter, key), Philox4x32 with 10
// rounds as defined by Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11),
// written here from the paper (multipliers 0xD2511F53 / 0xCD9E8D57, key increments
// 0x9E3779B9 / 0xBB67AE85), not from cuRAND's sources. The known-answer vector
// (counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8) pins it: tests/emu/.
#pragma once

#include <cstdint>

#include "emu_types.h"

inline uint4 curand_Philox4x32_10(uint4 c, uint2 k) {
  uint32_t x0 = c.x, x1 = c.y, x2 = c.z, x3 = c.w, k0 = k.x, k1 = k.y;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * x0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * x2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    x0 = hi1 ^ x1 ^ k0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ k1;
    x3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return uint4{x0, x1, x2, x3};
}
