// smezo generate: greedy or temperature sampling from a prompt (default: BOS only), streamed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "common/stopwatch.h"
#include "train/adapter_folder.h"
#include "train/generate.h"

namespace smezo {

namespace {

struct GenerateState {
  ModelOpenOptions model;
  std::string adapter;  // --adapter DIR, "" for none
  GenerateOptions opts;
  bool stats = false;
  CLI::Option* seed = nullptr;
};

int run_generate(GenerateState& s) {
  GenerateOptions& opts = s.opts;
  if (opts.temperature > 0 && s.seed->count() == 0) {
    // sampled text differs run to run; the seed printed repeats one
    const auto ns = std::chrono::system_clock::now().time_since_epoch().count();
    opts.seed = static_cast<uint64_t>(ns) | 1;
    std::fprintf(stderr, "generate: sampling with --seed %llu (pass it to get this text again)\n",
                 (unsigned long long)opts.seed);
  }
  // the prompt's tokens are at most its bytes + BOS + a leading-space piece
  s.model.max_tokens = opts.new_tokens > 0 ? (int64_t)opts.prompt.size() + 2 + opts.new_tokens : opts.steps;
  s.model.max_logit_rows = 1;
  std::unique_ptr<AdapterFolder> adapter;  // read and checked before the model loads
  if (!s.adapter.empty()) {
    adapter = std::make_unique<AdapterFolder>(read_adapter_folder(s.adapter));
    s.model.model_path = adapter_model_path(*adapter, s.model.model_path);
    s.model.max_tokens = std::max(s.model.max_tokens, adapter->prefix_tokens());  // add_prefix's run
    s.model.adapters = adapter_memory_shape(*adapter);  // counted by the memory check
  }
  LoadedModel lm = open_model(s.model);
  if (adapter) apply_adapter_folder(*lm.model, *adapter);
  const Stopwatch timer;
  std::vector<int32_t> tokens = generate(*lm.model, *lm.tokenizer, opts, [](const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
  });
  std::printf("\n");
  if (s.stats) {
    const double secs = timer.seconds();
    std::fprintf(stderr, "generated %zu positions in %.3f s (%.1f tok/s) on %s\n", tokens.size(), secs,
                 (tokens.size() - 1) / secs, lm.backend->name());
  }
  return 0;
}

}  // namespace

Command register_generate(CLI::App& smezo) {
  auto s = std::make_shared<GenerateState>();
  CLI::App* cmd = add_command(smezo, "generate", "text from a prompt: greedy (--temperature 0) or sampled, "
                                                 "streamed to stdout");
  add_adapter_option(cmd, add_model_options(cmd, &s->model), &s->adapter);
  add_weights_option(cmd, &s->model.weights);
  cmd->add_option("--prompt", s->opts.prompt, "the text to continue")->default_str("none: start from BOS");
  CLI::Option* steps = cmd->add_option("--steps", s->opts.steps,
                                       "positions to fill, the prompt's tokens and BOS included (llama2.c's -n): "
                                       "the text ends at position N, or at the model's context length")
                           ->check(integer_at_least(1));
  cmd->add_option("--new-tokens", s->opts.new_tokens, "tokens to generate after the prompt, instead of --steps")
      ->check(integer_at_least(1))
      ->default_str("none: --steps decides")
      ->excludes(steps);
  cmd->add_option("--temperature", s->opts.temperature, "0: greedy argmax; > 0: sample")->check(number_at_least(0));
  cmd->add_option("--top-p", s->opts.top_p, "nucleus sampling: keep the most likely tokens up to this mass")
      ->check(number_where([](double v) { return v > 0 && v <= 1; }, "in (0, 1]"));
  s->seed = cmd->add_option("--seed", s->opts.seed, "sampling seed")
                ->check(unsigned_integer())
                ->default_str("from the clock, printed on stderr");
  cmd->add_flag("--stats", s->stats, "print the positions generated and tokens/s on stderr");
  return {cmd, [s] { return run_generate(*s); }};
}

}  // namespace smezo
