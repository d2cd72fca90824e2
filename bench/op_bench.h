// The op benchmark: every case of bench/op_cases.h (the list the backend conformance test,
// tests/test_backend_ops.cu, checks) timed on one backend, one line per case:
//
//   make bench-cpu && ./build/op_bench [--device cpu|cuda] [--reps 20] [--warmup 2]
//
// Each case is set up by the op case harness (bench/op_case.h), as the conformance test sets
// it up: the same inputs (the test's seeds at the default SMEZO_TEST_SEED), parameters stored
// in the case's dtype (fp32 on the CPU, which stores nothing else). Each call is timed by
// TimingBackend (bench/timing_backend.h, the benchmarks' one timing wrapper: wall time of the
// op plus a one-float download that waits for the device), so on CUDA a time includes ~10 us
// of synchronisation: it ranks cases and shows how an op scales with its shape; `smezo bench
// --kernel` and Nsight are for kernel work. A case's call is what the test checks (an
// abs_quantile case asks for every level of abs_quantile_levels()). In-place operands are
// uploaded again before every call (not timed), so every call sees the same values.
// tests/test_op_bench.cpp runs it once per backend.
#pragma once

#include <cstdint>
#include <cstdio>

#include "backend/backend.h"

namespace smezo {

struct OpBenchOptions {
  int reps = 20;              // timed calls per case (the mean is reported)
  int warmup = 2;             // untimed calls first
  std::FILE* out = stdout;    // one line per case
};

// Times every case on `backend`; returns how many lines (cases) it printed. Throws
// smezo::Error for bad options or a failing op.
int64_t run_op_bench(Backend& backend, const OpBenchOptions& options);

}  // namespace smezo
