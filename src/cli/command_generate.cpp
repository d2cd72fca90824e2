// smezo generate: greedy or temperature sampling from a prompt (default: BOS only), streamed.
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_setup.h"
#include "common/check.h"
#include "model/generate.h"

namespace smezo {

int command_generate(int argc, char** argv) {
  Args args(argc, argv, 2, {"stats"});
  GenerateOptions opts;
  opts.prompt = args.str("prompt", "");
  opts.steps = args.integer("steps", 256);
  opts.temperature = static_cast<float>(args.number("temperature", 0.0));
  opts.top_p = static_cast<float>(args.number("top-p", 1.0));
  opts.seed = static_cast<uint64_t>(args.integer("seed", 1));
  SMEZO_REQUIRE(opts.steps > 0, "--steps must be positive");
  const bool stats = args.flag("stats");
  LoadedModel lm = open_model(args, opts.steps, 1);
  args.require_all_used();
  SMEZO_REQUIRE(args.positional().empty(), "%s: unexpected argument '%s' (options are --name value)",
                "generate", args.positional().empty() ? "" : args.positional()[0].c_str());
  auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> tokens = generate(*lm.model, *lm.tokenizer, opts, [](const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
  });
  std::printf("\n");
  if (stats) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "generated %zu positions in %.3f s (%.1f tok/s) on %s\n", tokens.size(), s,
                 (tokens.size() - 1) / s, lm.backend->name());
  }
  return 0;
}

}  // namespace smezo
