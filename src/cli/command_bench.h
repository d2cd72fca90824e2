// smezo bench: kernel benchmarks on the GPU (see src/cli/command_bench.cpp).
#pragma once

namespace smezo {

// main's argv (argv[1] == "bench"); returns the exit code (1 when a validation failed).
int command_bench(int argc, char** argv);

}  // namespace smezo
