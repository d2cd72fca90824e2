// Emulated CUDA: kernel launches. The build rewrites `kernel<<<grid, block, smem, stream>>>(args)`
// into `::emu::make_launch(kernel, "kernel", __FILE__, __LINE__, ::emu::LaunchConfig(grid,
// block, smem, stream))(args)` (tools: tests/emu/launch_rewrite.cpp), so the .cu sources stay
// unchanged. The arguments are converted to the kernel's parameter types once, as CUDA copies
// them to parameter memory, and every emulated thread calls the kernel with its own copy.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "emu_types.h"

namespace emu {

struct LaunchConfig {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  LaunchConfig(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr)
      : grid(g), block(b), smem(s), stream(st) {}
};

// One launch, type-erased for the executor (exec.cpp).
struct KernelLaunch {
  const void* fn;          // the kernel's address (key of cudaFuncSetAttribute)
  const char* name;        // its expression at the launch site
  const char* file;        // the launch site
  int line;
  LaunchConfig cfg;
  void (*invoke)(const void* state);  // runs the kernel body for the current emulated thread
  const void* state;
};
void launch_kernel(const KernelLaunch& k);

template <class... P>
struct Launcher {
  void (*fn)(P...);
  const char* name;
  const char* file;
  int line;
  LaunchConfig cfg;

  template <class... A>
  void operator()(A&&... a) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
    using Args = std::tuple<std::decay_t<P>...>;
    struct State {
      void (*fn)(P...);
      Args args;
    };
    const State s{fn, Args(std::forward<A>(a)...)};
    const KernelLaunch k{reinterpret_cast<const void*>(fn), name, file, line, cfg,
                         [](const void* p) {
                           const State* st = static_cast<const State*>(p);
                           std::apply(st->fn, st->args);
                         },
                         &s};
    launch_kernel(k);
  }
};

template <class... P>
Launcher<P...> make_launch(void (*fn)(P...), const char* name, const char* file, int line,
                           LaunchConfig cfg) {
  return Launcher<P...>{fn, name, file, line, cfg};
}

}  // namespace emu
