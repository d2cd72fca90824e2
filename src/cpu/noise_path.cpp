// Which build of the CPU noise loops runs (see noise_path.h).
#include "cpu/noise_path.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/check.h"

namespace smezo {

namespace {

const char* const kNames[NOISE_PATH_COUNT] = {"scalar", "avx2", "avx512"};

// Whether this CPU (and its operating system, which must save the wider registers) runs the path.
bool cpu_runs(NoisePath path) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (path) {
    case NOISE_PATH_AVX512:
      return __builtin_cpu_supports("avx512f");
    case NOISE_PATH_AVX2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default:
      return true;
  }
#else
  return path == NOISE_PATH_SCALAR;
#endif
}

NoisePath fastest_path() {
  for (NoisePath p : {NOISE_PATH_AVX512, NOISE_PATH_AVX2})
    if (noise_path_fns(p) != nullptr) return p;
  return NOISE_PATH_SCALAR;
}

NoisePath path_from_env() {
  const char* v = std::getenv("SMEZO_NOISE_PATH");
  if (v == nullptr || *v == '\0') return fastest_path();
  for (int p = 0; p < NOISE_PATH_COUNT; ++p) {
    if (std::strcmp(v, kNames[p]) != 0) continue;
    SMEZO_REQUIRE(noise_path_fns(static_cast<NoisePath>(p)) != nullptr,
                  "SMEZO_NOISE_PATH=%s: this build or this CPU cannot run it (unset it to use the "
                  "fastest path the CPU runs)", v);
    return static_cast<NoisePath>(p);
  }
  throw_error("SMEZO_NOISE_PATH=%s is not a noise path: use scalar, avx2 or avx512", v);
}

std::atomic<int> g_active{-1};  // -1: not chosen yet

}  // namespace

const char* noise_path_name(NoisePath path) {
  return path >= 0 && path < NOISE_PATH_COUNT ? kNames[path] : "unknown";
}

const NoiseRangeFns* noise_path_fns(NoisePath path) {
  const NoiseRangeFns* fns = path == NOISE_PATH_AVX512 ? noise_range_avx512()
                             : path == NOISE_PATH_AVX2 ? noise_range_avx2()
                                                       : noise_range_scalar();
  return fns != nullptr && cpu_runs(path) ? fns : nullptr;
}

NoisePath noise_path_active() {
  int p = g_active.load(std::memory_order_relaxed);
  if (p < 0) {
    p = path_from_env();
    g_active.store(p, std::memory_order_relaxed);
  }
  return static_cast<NoisePath>(p);
}

void noise_path_set(NoisePath path) {
  SMEZO_REQUIRE(noise_path_fns(path) != nullptr, "noise path %s: this build or this CPU cannot run it",
                noise_path_name(path));
  g_active.store(path, std::memory_order_relaxed);
}

}  // namespace smezo
