// llama2.c checkpoint reader (format in llama2c.h).
#include "formats/llama2c.h"

#include <cstring>

#include "common/check.h"
#include "common/mapped_file.h"

namespace smezo {

WeightSource load_llama2c(const std::string& path) {
  std::shared_ptr<MappedFile> file = MappedFile::open(path);
  SMEZO_REQUIRE(file->size() >= 28, "%s: %lld bytes is too short for a llama2.c header (28 bytes)",
                path.c_str(), (long long)file->size());
  int32_t h[7];
  std::memcpy(h, file->data(), sizeof h);
  const char* field_names[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; i++) {
    SMEZO_REQUIRE(h[i] != 0 && (i == 5 || h[i] > 0) && h[i] > -(1 << 24) && h[i] < (1 << 24),
                  "%s: llama2.c header field %s = %d is not a valid size (corrupt header?)",
                  path.c_str(), field_names[i], h[i]);
  }
  WeightSource src;
  src.path = path;
  src.keep_alive.push_back(file);
  ModelConfig& c = src.config;
  c.arch = ARCH_LLAMA;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] < 0 ? -h[5] : h[5];
  c.tied_lm_head = h[5] > 0;
  c.max_seq_len = h[6];
  SMEZO_REQUIRE(c.dim % c.n_heads == 0, "%s: dim %d is not a multiple of n_heads %d", path.c_str(),
                h[0], h[3]);
  c.head_dim = c.dim / c.n_heads;
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_style = ROPE_INTERLEAVED;
  c.norm_kind = NORM_RMS;
  c.mlp_kind = MLP_SWIGLU;

  const int64_t L = c.n_layers, D = c.dim, H = c.hidden_dim, hd = c.head_dim;
  const int64_t q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  int64_t offset = 28;  // bytes
  // Adds a view of `count` stacked tensors of shape `shape` named by name_of(i).
  auto take = [&](const std::string& what, int64_t count, std::vector<int64_t> shape,
                  auto name_of) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    const int64_t bytes = count * numel * 4;
    SMEZO_REQUIRE(offset + bytes <= file->size(),
                  "%s: tensor %s (bytes %lld..%lld) extends past the end of the file (%lld bytes); "
                  "the checkpoint is truncated or its header is wrong",
                  path.c_str(), what.c_str(), (long long)offset, (long long)(offset + bytes),
                  (long long)file->size());
    for (int64_t i = 0; i < count; i++) {
      HostTensorView v;
      v.name = name_of(i);
      v.dtype = DTYPE_F32;
      v.shape = shape;
      v.data = file->data() + offset + i * numel * 4;
      v.file = path;
      src.tensors[v.name] = v;
    }
    offset += bytes;
  };
  auto layer = [](const char* suffix) {
    return [suffix](int64_t i) { return "model.layers." + std::to_string(i) + "." + suffix; };
  };
  take("token_embedding", 1, {c.vocab_size, D}, [](int64_t) { return std::string("model.embed_tokens.weight"); });
  take("rms_att", L, {D}, layer("input_layernorm.weight"));
  take("wq", L, {q_dim, D}, layer("self_attn.q_proj.weight"));
  take("wk", L, {kv_dim, D}, layer("self_attn.k_proj.weight"));
  take("wv", L, {kv_dim, D}, layer("self_attn.v_proj.weight"));
  take("wo", L, {D, q_dim}, layer("self_attn.o_proj.weight"));
  take("rms_ffn", L, {D}, layer("post_attention_layernorm.weight"));
  take("w1", L, {H, D}, layer("mlp.gate_proj.weight"));
  take("w2", L, {D, H}, layer("mlp.down_proj.weight"));
  take("w3", L, {H, D}, layer("mlp.up_proj.weight"));
  take("rms_final", 1, {D}, [](int64_t) { return std::string("model.norm.weight"); });
  const int64_t rope_table_bytes = 2 * c.max_seq_len * (hd / 2) * 4;
  SMEZO_REQUIRE(offset + rope_table_bytes <= file->size(),
                "%s: the legacy RoPE tables extend past the end of the file; the checkpoint is truncated",
                path.c_str());
  offset += rope_table_bytes;
  if (!c.tied_lm_head)
    take("classifier", 1, {c.vocab_size, D}, [](int64_t) { return std::string("lm_head.weight"); });
  SMEZO_REQUIRE(offset == file->size(),
                "%s: %lld bytes left over after the last tensor; the header does not describe this file",
                path.c_str(), (long long)(file->size() - offset));
  return src;
}

}  // namespace smezo
