// llama2.c checkpoint reader (format in llama2c.h).
#include "model/llama2c.h"

#include <cstring>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/checked_int.h"
#include "common/mapped_file.h"
#include "model/model_check.h"
#include "model/model_size.h"

namespace smezo {

namespace {

// One stacked array: `count` tensors of `shape`, named model.layers.<i>.<name> or <name> ("": skipped).
struct Llama2cArray {
  const char* what;  // llama2.c's name, for errors
  int64_t count;
  std::vector<int64_t> shape;
  bool per_layer;
  std::string name;
};

// The header's 7 int32 fields as a config (LLaMA, interleaved RoPE), each size checked.
ModelConfig read_llama2c_header(const MappedFile& file, const std::string& path) {
  const char* p = path.c_str();
  SMEZO_REQUIRE(file.size() >= 28, "%s: %lld bytes is too short for a llama2.c header (28 bytes)",
                p, static_cast<long long>(file.size()));
  int32_t h[7];
  std::memcpy(h, file.data(), sizeof h);
  const char* field_names[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                "n_kv_heads", "vocab_size", "seq_len"};
  const int64_t limits[7] = {kMaxWidth, kMaxWidth, kMaxLayers, kMaxWidth,
                             kMaxWidth, kMaxVocab, kMaxPositions};
  for (int i = 0; i < 7; i++) {
    // negative vocab_size: untied classifier
    const int64_t v = i == 5 && h[i] < 0 ? -static_cast<int64_t>(h[i]) : h[i];
    SMEZO_REQUIRE(v >= 1 && v <= limits[i], "%s: llama2.c header field %s = %d is not a valid "
                  "size (1..%lld); the file is corrupt or not a llama2.c checkpoint", p,
                  field_names[i], h[i], static_cast<long long>(limits[i]));
  }
  ModelConfig c;
  c.family = "llama";
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] < 0 ? -static_cast<int64_t>(h[5]) : h[5];
  c.tied_lm_head = h[5] > 0;
  c.max_seq_len = h[6];
  SMEZO_REQUIRE(c.dim % c.n_heads == 0, "%s: llama2.c header: dim %d is not a multiple of "
                "n_heads %d", p, h[0], h[3]);
  SMEZO_REQUIRE(c.n_kv_heads <= c.n_heads && c.n_heads % c.n_kv_heads == 0, "%s: llama2.c "
                "header: n_heads %d is not a multiple of n_kv_heads %d", p, h[3], h[4]);
  c.head_dim = c.dim / c.n_heads;
  SMEZO_REQUIRE(c.head_dim % 2 == 0, "%s: llama2.c header: head_dim dim / n_heads = %lld must "
                "be even for RoPE", p, static_cast<long long>(c.head_dim));
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_style = ROPE_INTERLEAVED;
  c.norm_kind = NORM_RMS;
  c.mlp_kind = MLP_SWIGLU;
  check_model_config(c, path);  // the common floor; every size is bounded from here on
  return c;
}

}  // namespace

WeightSource load_llama2c(const std::string& path) {
  std::shared_ptr<MappedFile> file = MappedFile::open(path, "llama2.c model");
  const char* p = path.c_str();
  WeightSource src;
  src.path = path;
  src.keep_alive.push_back(file);
  src.config = read_llama2c_header(*file, path);
  const ModelConfig& c = src.config;

  const int64_t L = c.n_layers, D = c.dim, H = c.hidden_dim, hd = c.head_dim;
  const int64_t q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  std::vector<Llama2cArray> arrays = {
      {"token_embedding", 1, {c.vocab_size, D}, false, "model.embed_tokens.weight"},
      {"rms_att", L, {D}, true, "input_layernorm.weight"},
      {"wq", L, {q_dim, D}, true, "self_attn.q_proj.weight"},
      {"wk", L, {kv_dim, D}, true, "self_attn.k_proj.weight"},
      {"wv", L, {kv_dim, D}, true, "self_attn.v_proj.weight"},
      {"wo", L, {D, q_dim}, true, "self_attn.o_proj.weight"},
      {"rms_ffn", L, {D}, true, "post_attention_layernorm.weight"},
      {"w1", L, {H, D}, true, "mlp.gate_proj.weight"},
      {"w2", L, {D, H}, true, "mlp.down_proj.weight"},
      {"w3", L, {H, D}, true, "mlp.up_proj.weight"},
      {"rms_final", 1, {D}, false, "model.norm.weight"},
      {"freq_cis (the legacy RoPE tables)", 2, {c.max_seq_len, hd / 2}, false, ""},
  };
  if (!c.tied_lm_head) arrays.push_back({"classifier", 1, {c.vocab_size, D}, false, "lm_head.weight"});

  // Every array's extent checked before a single view is made.
  std::vector<int64_t> starts;
  int64_t offset = 28;  // bytes
  for (const Llama2cArray& a : arrays) {
    int64_t bytes = checked_numel(a.shape.data(), a.shape.size()), end = 0;
    SMEZO_REQUIRE(bytes >= 0 && checked_mul(bytes, a.count * 4, &bytes) &&
                      checked_add(offset, bytes, &end),
                  "%s: tensor %s: its size overflows int64; the header is corrupt", p, a.what);
    SMEZO_REQUIRE(end <= file->size(), "%s: tensor %s (bytes %lld..%lld) extends past the end of "
                  "the file (%lld bytes); the checkpoint is truncated or its header is wrong", p,
                  a.what, static_cast<long long>(offset), static_cast<long long>(end),
                  static_cast<long long>(file->size()));
    starts.push_back(offset);
    offset = end;
  }
  SMEZO_REQUIRE(offset == file->size(), "%s: %lld bytes left over after the last tensor; the "
                "header does not describe this file", p,
                static_cast<long long>(file->size() - offset));

  for (size_t k = 0; k < arrays.size(); k++) {
    const Llama2cArray& a = arrays[k];
    if (a.name.empty()) continue;  // skipped (the RoPE tables)
    const int64_t numel = checked_numel(a.shape.data(), a.shape.size());
    for (int64_t i = 0; i < a.count; i++) {
      HostTensorView v;
      v.name = a.per_layer ? "model.layers." + std::to_string(i) + "." + a.name : a.name;
      v.dtype = DTYPE_F32;
      v.shape = a.shape;
      v.data = file->data() + starts[k] + i * numel * 4;
      v.mapping = file.get();
      v.nbytes = numel * 4;
      v.file = path;
      src.tensors[v.name] = v;
    }
  }
  return src;
}

}  // namespace smezo
