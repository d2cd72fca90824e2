// CPU noise benchmark (CPU replay speed): the library's
// own paths, timed on this machine.
//
//   make bench-cpu && build/noise_bench [N_UPDATE]   (or NO_CUDA=1 BUILD=build-cpu: build-cpu/noise_bench)
//
//   generator noise_z8 alone into a buffer, one thread (spec-v2 headers only)
//   generate  cpu_read_param of a 2^24-element fp32 tensor of zeros with scale 1 and a dense
//             mask on ONE thread: out = fma(1, z, 0) = z, i.e. the generator as the CPU backend
//             runs it (normals per second, per noise kind)
//   update    CpuBackend::update of an N_UPDATE-element tensor (default 100M) with one thread
//             and with all of them (OMP_NUM_THREADS), dense and with an R-MeZO random mask
//   path      (where src/cpu/noise_path.h exists) each noise path this CPU runs (scalar, avx2,
//             avx512), one thread: generate as above, the probe pair (cpu_read_param_pair of
//             the 2^24 zeros, dense) and the update of 2^24 elements dense and R-MeZO, per kind;
//             rates per second of the thread's CPU time (per core, on a shared machine too).
//             `build/noise_bench --paths` runs this section alone.
//
// For an instruction count per normal: OMP_NUM_THREADS=1 valgrind --tool=callgrind
// build-cpu/noise_bench --gen-only 1048576 [KIND] (inclusive Ir of cpu_read_param / 2^20), or
// --generator-only 1048576 KIND (inclusive Ir of generate / 2^20). Compiles against spec-v1 headers too (no noise kinds:
// only the one Gaussian; common/stopwatch.h copied beside them), so the same file measures the
// code before and after. Timing: common/stopwatch.h.
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/noise_spec.h"
#include "common/stopwatch.h"
#include "cpu/cpu_backend.h"

#if __has_include("smezo/noise.h")
#define NOISE_BENCH_KINDS 1
#endif
#if __has_include("cpu/noise_path.h")
#include "cpu/noise_path.h"
#define NOISE_BENCH_PATHS 1
#endif

using namespace smezo;

namespace {

struct Kind {
  const char* name;
  int kind;  // NoiseKind when NOISE_BENCH_KINDS
};

#ifdef NOISE_BENCH_KINDS
const Kind kKinds[] = {{"gaussian", NOISE_GAUSSIAN},
                       {"gaussian-v1", NOISE_GAUSSIAN_V1},
                       {"rademacher", NOISE_RADEMACHER},
                       {"sign", NOISE_SIGN}};  // spec v3 (against spec-v2 headers, drop this row)
#else
const Kind kKinds[] = {{"gaussian (spec v1)", 0}};
#endif

Param make_param(CpuBackend& be, int64_t n, int kind, MaskKind mask) {
  Param p;
  p.w = be.alloc(1, n, DTYPE_F32);
  std::memset(p.w.data, 0, static_cast<size_t>(n) * sizeof(float));
  p.info.name = "bench.weight";
  p.info.tensor_id = 3;
  p.info.mask = mask;
  p.info.keep_prob = 0.25f;
  p.info.mask_seed = 99;
#ifdef NOISE_BENCH_KINDS
  p.info.noise = static_cast<NoiseKind>(kind);
#else
  (void)kind;
#endif
  return p;
}

#ifdef NOISE_BENCH_KINDS
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NOISE_BENCH_CLONES __attribute__((flatten, target_clones("fma", "default")))
#else
#define NOISE_BENCH_CLONES
#endif
// The generator alone (no parameter, mask or element rule): z of elements [0, n) into out,
// one noise_z8 per group, compiled like the CPU backend's loops (FMA hardware when present).
NOISE_BENCH_CLONES
void generate(NoiseKind kind, uint64_t seed, int64_t n, float* out) {
  for (int64_t g = 0; 8 * g < n; ++g) noise_z8(kind, seed, 3, g, out + 8 * g);
}
#endif

#ifdef NOISE_BENCH_PATHS
// CPU seconds of the calling thread: the rate per core, even where other processes share it.
double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Best of 3 of fn(rep)'s thread CPU seconds (the work runs on this thread: one OpenMP thread).
template <typename Fn>
double best_of_3(Fn fn) {
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = thread_cpu_seconds();
    fn(rep);
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return best;
}

// Each noise path this CPU runs, one thread, on 2^24 elements: generate, pair, update; rates per
// second of the thread's CPU time.
void bench_paths(CpuBackend& be) {
  const int64_t n = int64_t(1) << 24;
  std::vector<float> out(n), out2(n);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const NoisePath active = noise_path_active();
  for (int pi = 0; pi < NOISE_PATH_COUNT; ++pi) {
    const NoisePath path = static_cast<NoisePath>(pi);
    if (noise_path_fns(path) == nullptr) {
      std::printf("path %-7s not run by this CPU\n", noise_path_name(path));
      continue;
    }
    noise_path_set(path);
    for (const Kind& k : kKinds) {
      Param p = make_param(be, n, k.kind, MASK_DENSE);
      cpu_read_param(p, Probe{1.0f, 1}, 0, 1 << 16, out.data());  // warm-up
      const double gen = best_of_3([&](int rep) {
        cpu_read_param(p, Probe{1.0f, 7 + static_cast<uint64_t>(rep)}, 0, n, out.data());
      });
      const double pair = best_of_3([&](int rep) {
        cpu_read_param_pair(p, Probe{1.0f, 9 + static_cast<uint64_t>(rep)}, 0, n, out.data(), out2.data());
      });
      const double upd = best_of_3([&](int rep) { be.update(p, 1e-3f, 0.0f, 42 + static_cast<uint64_t>(rep)); });
      p.info.mask = MASK_RANDOM;
      const double upd_r = best_of_3([&](int rep) { be.update(p, 1e-3f, 0.0f, 52 + static_cast<uint64_t>(rep)); });
      std::printf("path %-7s %-12s 1 thread (CPU time): generate %7.1f M normals/s, pair %7.1f M elem/s, "
                  "update dense %7.1f M/s, rmezo %7.1f M/s\n",
                  noise_path_name(path), k.name, n / gen / 1e6, n / pair / 1e6, n / upd / 1e6, n / upd_r / 1e6);
    }
  }
  noise_path_set(active);
  omp_set_num_threads(threads);
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef NOISE_BENCH_KINDS
  if (argc >= 4 && std::string(argv[1]) == "--generator-only") {  // for callgrind
    const int64_t n = std::atoll(argv[2]) / 8 * 8;
    std::vector<float> out(n);
    for (const Kind& k : kKinds)
      if (std::string(argv[3]) == k.name) generate(static_cast<NoiseKind>(k.kind), 5, n, out.data());
    std::printf("z[0] = %g\n", out[0]);
    return 0;
  }
#endif
  if (argc >= 3 && std::string(argv[1]) == "--gen-only") {  // for callgrind
    const int64_t n = std::atoll(argv[2]);
    CpuBackend be;
    omp_set_num_threads(1);
    for (const Kind& k : kKinds) {
      if (argc >= 4 && std::string(argv[3]) != k.name) continue;
      Param p = make_param(be, n, k.kind, MASK_DENSE);
      std::vector<float> out(n);
      cpu_read_param(p, Probe{1.0f, 12345}, 0, n, out.data());
      std::printf("%s: z[0] = %g\n", k.name, out[0]);
    }
    return 0;
  }
#ifdef NOISE_BENCH_PATHS
  if (argc >= 2 && std::string(argv[1]) == "--paths") {
    CpuBackend be;
    bench_paths(be);
    return 0;
  }
#endif
  const int64_t n_update = argc >= 2 ? std::atoll(argv[1]) : 100000000;
  const int max_threads = omp_get_max_threads();
  CpuBackend be;
  std::printf("noise_bench: %d threads available\n", max_threads);

  const int64_t n_gen = int64_t(1) << 24;
  std::vector<float> out(n_gen);
#ifdef NOISE_BENCH_KINDS
  for (const Kind& k : kKinds) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const Stopwatch watch;
      generate(static_cast<NoiseKind>(k.kind), 11 + static_cast<uint64_t>(rep), n_gen, out.data());
      best = std::min(best, watch.seconds());
    }
    std::printf("generator %-19s 1 thread : %8.1f M normals/s (noise_z8 alone)\n", k.name,
                n_gen / best / 1e6);
  }
#endif
  for (const Kind& k : kKinds) {
    Param p = make_param(be, n_gen, k.kind, MASK_DENSE);
    omp_set_num_threads(1);
    cpu_read_param(p, Probe{1.0f, 1}, 0, 1 << 16, out.data());  // warm-up
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const Stopwatch watch;
      cpu_read_param(p, Probe{1.0f, 7 + static_cast<uint64_t>(rep)}, 0, n_gen, out.data());
      best = std::min(best, watch.seconds());
    }
    std::printf("generate %-20s 1 thread : %8.1f M normals/s (%.3f s for 2^24)\n", k.name,
                n_gen / best / 1e6, best);
  }
  omp_set_num_threads(max_threads);
#ifdef NOISE_BENCH_PATHS
  bench_paths(be);
#endif

  for (const Kind& k : kKinds) {
    for (MaskKind mask : {MASK_DENSE, MASK_RANDOM}) {
      CpuBackend local;  // frees the tensor at the end of the iteration
      Param p = make_param(local, n_update, k.kind, mask);
      for (int threads : {1, max_threads}) {
        omp_set_num_threads(threads);
        const Stopwatch watch;
        be.update(p, 1e-3f, 0.0f, 42);
        const double dt = watch.seconds();
        std::printf("update   %-20s %-6s %2d thread(s): %7.3f s for %lld elements (%7.1f M/s)\n",
                    k.name, mask == MASK_DENSE ? "dense" : "rmezo", threads, dt,
                    (long long)n_update, n_update / dt / 1e6);
        if (threads == max_threads) break;
      }
      omp_set_num_threads(max_threads);
    }
  }
  return 0;
}
