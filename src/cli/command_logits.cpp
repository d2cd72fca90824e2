// smezo logits: next-token logits of one sequence as a safetensors F32 "logits" (tokens, vocab).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <map>
#include <sstream>

#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "formats/safetensors.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "run/summary.h"
#include "train/adapter_folder.h"

namespace smezo {

namespace {

std::vector<int32_t> parse_tokens(const std::string& text) {
  std::vector<int32_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(item.c_str(), &end, 10);
    SMEZO_REQUIRE(!item.empty() && end && *end == '\0' && errno == 0 && v >= 0 && v <= INT32_MAX,
                  "--tokens: '%s' is not a token id (an integer in [0, 2^31))", item.c_str());
    out.push_back(static_cast<int32_t>(v));
  }
  SMEZO_REQUIRE(!out.empty(), "--tokens needs at least one token id");
  return out;
}

struct LogitsState {
  ModelOpenOptions model;
  std::string adapter;  // --adapter DIR, "" for none
  std::string tokens, out;
};

int run_logits(const LogitsState& s) {
  const std::vector<int32_t> tokens = parse_tokens(s.tokens);
  run_prepare_output_file(s.out, "--out");
  std::unique_ptr<AdapterFolder> adapter;  // read and checked before the model loads
  if (!s.adapter.empty()) adapter = std::make_unique<AdapterFolder>(read_adapter_folder(s.adapter));
  const std::string model_path = resolve_model_path(adapter ? adapter_model_path(*adapter, s.model.model_path)
                                                            : s.model.model_path);
  const DType storage = storage_dtype(s.model.device, s.model.dtype);
  std::unique_ptr<Backend> backend = make_backend(s.model.device);
  WeightSource source = load_weights(model_path);
  const int64_t n = static_cast<int64_t>(tokens.size());
  // a prefix is made from P tokens' activations before the file's values replace it
  Model model(source, *backend, storage, adapter ? std::max(n, adapter->prefix_tokens()) : n, n);
  if (adapter) apply_adapter_folder(model, *adapter);
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.seq_lens = {n};
  for (int64_t i = 0; i < n; i++) batch.logit_rows.push_back(i);
  std::vector<float> logits;
  model.forward(batch, Probe{}, &logits);
  SafetensorsEntry e;
  e.name = "logits";
  e.dtype = DTYPE_F32;
  e.shape = {n, model.config().vocab_size};
  e.data = logits.data();
  std::map<std::string, std::string> metadata = {
      {"tokens", s.tokens}, {"model", model_path}, {"device", backend->name()}, {"dtype", dtype_name(storage)}};
  if (adapter) metadata["adapter"] = s.adapter;
  write_safetensors(s.out, {e}, metadata);
  std::printf("wrote logits (%lld, %lld) to %s\n", (long long)n, (long long)model.config().vocab_size,
              s.out.c_str());
  return 0;
}

}  // namespace

Command register_logits(CLI::App& smezo) {
  auto s = std::make_shared<LogitsState>();
  CLI::App* cmd = add_command(smezo, "logits", "the next-token logits of every position of one token sequence, "
                                               "as safetensors (for oracle checks)");
  add_adapter_option(cmd, add_model_options(cmd, &s->model, /*with_tokenizer=*/false), &s->adapter);
  add_weights_option(cmd, &s->model.weights);
  cmd->add_option("--tokens", s->tokens, "the token ids, comma-separated: 1,2,3")->type_name("IDS")->required();
  cmd->add_option("--out", s->out, "the safetensors file to write")->type_name("FILE")->required();
  return {cmd, [s] { return run_logits(*s); }};
}

}  // namespace smezo
