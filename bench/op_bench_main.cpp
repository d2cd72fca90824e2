// build/op_bench: the op benchmark (bench/op_bench.h) as a program of its own (a main, not part
// of libsmezo_bench.a; make bench-cpu builds it).
//
//   ./build/op_bench [--device cpu|cuda] [--reps 20] [--warmup 2]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "bench/op_bench.h"
#include "setup/model_setup.h"

namespace {

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    smezo::OpBenchOptions o;
    o.reps = std::atoi(arg(argc, argv, "--reps", "20").c_str());
    o.warmup = std::atoi(arg(argc, argv, "--warmup", "2").c_str());
    std::unique_ptr<smezo::Backend> backend = smezo::make_backend(arg(argc, argv, "--device", "cpu"));
    smezo::run_op_bench(*backend, o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "op_bench: %s\n", e.what());
    return 1;
  }
}
