// Emulated CUDA: kernel launches. The build rewrites `kernel<<<grid, block, smem, stream>>>(args)`
// into `::emu::make_launch(kernel, "kernel", __FILE__, __LINE__, ::emu::LaunchConfig(grid,
// block, smem, stream))(args)` (tools: tests/emu/launch_rewrite.cpp), so the .cu sources stay
// unchanged. The arguments are converted to the kernel's parameter types once, as CUDA copies
// them to parameter memory, and every emulated thread calls the kernel with its own copy. A
// launch into a capturing stream keeps a heap copy of them (graph.cpp): a graph replays the
// values of the capture, as a GPU's kernel node does.
#pragma once

#include <cstddef>
#include <memory>
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
  // For stream capture and graph nodes (graph.cpp): a heap copy of `state`; a state with the
  // same kernel whose arguments are read from params[i] (cudaKernelNodeParams::kernelParams:
  // a pointer to each argument); the address of each argument of `state` into out[i].
  std::shared_ptr<const void> (*copy_state)(const void* state);
  std::shared_ptr<const void> (*state_from_params)(const void* state, void* const* params);
  void (*param_pointers)(const void* state, void** out);
  int n_params;
};
void launch_kernel(const KernelLaunch& k);

template <class Tuple, size_t... I>
Tuple args_from_params(void* const* params, std::index_sequence<I...>) {
  (void)params;
  return Tuple(*static_cast<const std::tuple_element_t<I, Tuple>*>(params[I])...);
}

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
    const KernelLaunch k{
        reinterpret_cast<const void*>(fn), name, file, line, cfg,
        [](const void* p) {
          const State* st = static_cast<const State*>(p);
          std::apply(st->fn, st->args);
        },
        &s,
        [](const void* p) -> std::shared_ptr<const void> {
          return std::make_shared<const State>(*static_cast<const State*>(p));
        },
        [](const void* p, void* const* params) -> std::shared_ptr<const void> {
          return std::make_shared<const State>(
              State{static_cast<const State*>(p)->fn,
                    args_from_params<Args>(params, std::index_sequence_for<P...>{})});
        },
        [](const void* p, void** out) {
          std::apply([out](const auto&... arg) {
            size_t i = 0;
            ((out[i++] = const_cast<void*>(static_cast<const void*>(&arg))), ...);
            (void)i;
          }, static_cast<const State*>(p)->args);
        },
        static_cast<int>(sizeof...(P))};
    launch_kernel(k);
  }
};

template <class... P>
Launcher<P...> make_launch(void (*fn)(P...), const char* name, const char* file, int line,
                           LaunchConfig cfg) {
  return Launcher<P...>{fn, name, file, line, cfg};
}

}  // namespace emu
