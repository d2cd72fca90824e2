// smezo logits: the next-token logits of every position of one token sequence, written as a
// safetensors file with one F32 tensor "logits" (tokens, vocab) and the tokens as metadata.
// For checking the forward pass against other implementations (tools/hf_oracle.py).
#include <cerrno>
#include <climits>
#include <cstdio>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_setup.h"
#include "common/check.h"
#include "formats/model_loader.h"
#include "formats/safetensors.h"
#include "model/model.h"

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

}  // namespace

int command_logits(int argc, char** argv) {
  Args args(argc, argv, 2);
  const std::string model_path = args.str("model", default_model_path());
  const std::string tokens_arg = args.str("tokens", "");
  const std::string out = args.str("out", "");
  const std::string device = args.str("device", "cpu");
  const DType storage = storage_dtype(device, args.str("dtype", ""));
  args.require_all_used();
  SMEZO_REQUIRE(args.positional().empty(), "%s: unexpected argument '%s' (options are --name value)",
                "logits", args.positional().empty() ? "" : args.positional()[0].c_str());
  SMEZO_REQUIRE(!tokens_arg.empty() && !out.empty(), "usage: smezo logits --model M --tokens 1,2,3 --out FILE");
  std::vector<int32_t> tokens = parse_tokens(tokens_arg);
  std::unique_ptr<Backend> backend = make_backend(device);
  WeightSource source = load_weights(model_path);
  const int64_t n = static_cast<int64_t>(tokens.size());
  Model model(source, *backend, storage, n, n);
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
  write_safetensors(out, {e}, {{"tokens", tokens_arg}, {"model", model_path}, {"device", backend->name()}, {"dtype", dtype_name(storage)}});
  std::printf("wrote logits (%lld, %lld) to %s\n", (long long)n, (long long)model.config().vocab_size, out.c_str());
  return 0;
}

}  // namespace smezo
