// smezo info MODEL: architecture, tensors, parameter count, a training run's memory, OpenMP settings.
#include <algorithm>
#include <cstdio>
#include <map>

#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "cpu/cpu_backend.h"  // cpu_memory_plan
#include "cpu/cpu_threads.h"
#include "cuda/cuda_plan.h"   // cuda_memory_plan
#include "model/lora.h"  // lora_targets_parse
#include "model/memory_estimate.h"
#include "model/model.h"
#include "model/model_check.h"  // shape_string
#include "model/model_loader.h"
#include "model/model_size.h"  // format_bytes
#include "setup/model_setup.h"

namespace smezo {

namespace {

struct InfoState {
  std::string positional, model;
  int64_t batch = 16, max_len = 256;
  DType dtype = DTYPE_BF16;  // the CUDA storage dtype the estimate assumes
};

// --weights packed: the estimates under --tune lora (train's defaults: r 8 on q, v) and --tune scales.
void print_packed_estimates(const WeightSource& src, const ModelConfig& c, const WorkspaceRows& ws, DType cuda_dtype) {
  const PackedTensorBytes packed = packed_tensor_bytes(src);
  if (packed.empty()) return;
  {
    TunedAdapters lora;
    lora.lora_rank = 8;
    lora.lora_targets = lora_targets_parse("q,v");
    std::printf("  --weights packed, --tune lora (r 8, q v):\n");
    std::printf("  cpu  %-4s %s\n", dtype_name(DTYPE_F32),
                describe_memory_estimate(estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan(), ModelStage{}, lora,
                                                               packed)).c_str());
    std::printf("  cuda %-4s %s (predicted: the stored blocks plus the W' block of cuda/packed_dequant.cu)\n",
                dtype_name(cuda_dtype), describe_memory_estimate(estimate_model_memory(
                    c, cuda_dtype, ws, cuda_memory_plan(), ModelStage{}, lora, packed)).c_str());
    TunedAdapters scales;  // train's default: d alone
    scales.scales_rows = 1;
    scales.scale_values = packed_scale_values(src, false);
    std::printf("  --tune scales (f32 master d per block):\n");
    std::printf("  cpu  %-4s %s\n", dtype_name(DTYPE_F32),
                describe_memory_estimate(estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan(), ModelStage{},
                                                               scales, packed)).c_str());
    std::printf("  cuda %-4s %s (predicted: the stored blocks, the f32 masters and the W' block)\n",
                dtype_name(cuda_dtype),
                describe_memory_estimate(estimate_model_memory(c, cuda_dtype, ws, cuda_memory_plan(), ModelStage{},
                                                               scales, packed)).c_str());
  }
}

int run_info(const InfoState& s) {
  SMEZO_REQUIRE(s.positional.empty() || s.model.empty(), "info: give the model once, as MODEL or --model");
  const std::string path = resolve_model_path(s.positional.empty() ? s.model : s.positional);
  WeightSource src = load_weights(path);
  const ModelConfig& c = src.config;
  std::printf("model        %s\n", path.c_str());
  std::printf("architecture %s\n", c.family.c_str());
  std::printf("dim %lld, hidden %lld, layers %lld, heads %lld, kv heads %lld, head_dim %lld\n",
              (long long)c.dim, (long long)c.hidden_dim, (long long)c.n_layers, (long long)c.n_heads,
              (long long)c.n_kv_heads, (long long)c.head_dim);
  std::printf("vocab %lld, max positions %lld, norm %s eps %g, rope %s theta %g, lm head %s",
              (long long)c.vocab_size, (long long)c.max_seq_len,
              c.norm_kind == NORM_RMS ? "rms" : "layer", c.norm_eps,
              c.position == POSITION_LEARNED ? "none" : (c.rope_style == ROPE_INTERLEAVED ? "interleaved" : "rotate-half"),
              c.rope_theta, c.tied_lm_head ? "tied" : "separate");
  if (c.sliding_window) std::printf(", sliding window %lld", (long long)c.sliding_window);
  if (c.rope_scaling.kind == ROPE_SCALING_LLAMA3 || !c.rope_scaling.freq_divisors.empty())
    std::printf(", rope scaling %s", c.rope_scaling.freq_divisors.empty() ? "llama3" : "per-pair divisors (GGUF)");
  if (c.qkv_bias || c.o_bias || c.mlp_bias)
    std::printf(", biases%s%s%s", c.qkv_bias ? " qkv" : "", c.o_bias ? " o" : "", c.mlp_bias ? " mlp" : "");
  if (c.qk_norm) std::printf(", q/k norm");
  std::printf("\n\n%-56s %-6s %s\n", "tensor", "dtype", "shape");
  int64_t total = 0, stored = 0;
  std::map<std::string, int64_t> per_dtype;
  for (const ExpectedTensor& e : expected_tensors(c)) {
    const HostTensorView* v = src.find(e.name);
    if (!v) {
      std::printf("%-56s MISSING\n", e.name.c_str());
      continue;
    }
    std::printf("%-56s %-6s %s\n", e.name.c_str(), v->storage_name(), shape_string(v->shape).c_str());
    total += v->numel();
    stored += v->nbytes > 0 ? v->nbytes : v->numel() * dtype_size(v->dtype);
    per_dtype[v->storage_name()] += v->numel();
  }
  std::printf("\nparameters   %lld (%.3f M)", (long long)total, total / 1e6);
  for (const auto& kv : per_dtype) std::printf(", %s %lld", kv.first.c_str(), (long long)kv.second);
  std::printf("; stored %s\n", format_bytes(stored).c_str());
  const int64_t len = std::min(s.max_len, c.max_seq_len);
  const WorkspaceRows ws = workspace_for_batch(s.batch, len, 8192);
  std::printf("\nmemory for training at batch %lld, max-len %lld (%lld token rows, %lld logit rows):\n",
              (long long)s.batch, (long long)len, (long long)ws.tokens, (long long)ws.logit_rows);
  const DType cuda_dtype = s.dtype;
  std::printf("  cuda %-4s %s\n", dtype_name(cuda_dtype),
              describe_memory_estimate(estimate_model_memory(c, cuda_dtype, ws, cuda_memory_plan())).c_str());
  std::printf("  cpu  %-4s %s\n", dtype_name(DTYPE_F32),
              describe_memory_estimate(estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan())).c_str());
  print_packed_estimates(src, c, ws, cuda_dtype);
  std::printf("\ncpu backend (OpenMP):\n");
  for (const std::string& line : cpu_threads_describe()) std::printf("  %s\n", line.c_str());
  return 0;
}

}  // namespace

Command register_info(CLI::App& smezo) {
  auto s = std::make_shared<InfoState>();
  CLI::App* cmd = add_command(smezo, "info", "a model's architecture, tensor shapes and dtypes, parameter count and memory "
                                             "estimate; the CPU backend's threads and OpenMP wait policy");
  cmd->add_option("MODEL", s->positional, "the model (or --model)")
      ->type_name("PATH")
      ->default_str("the bundled stories260K");
  cmd->add_option("--model", s->model, "the model (or MODEL)")->type_name("PATH")->default_str("the bundled stories260K");
  cmd->add_option("--batch", s->batch, "examples per step, for the memory estimate")->check(integer_at_least(1));
  cmd->add_option("--max-len", s->max_len, "tokens per example, for the memory estimate")
      ->check(integer_at_least(2));
  add_enum_option(cmd, "--dtype", &s->dtype, dtype_option_names(), "the CUDA weight storage the estimate assumes");
  return {cmd, [s] { return run_info(*s); }};
}

}  // namespace smezo
