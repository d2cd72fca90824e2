// LLaMA GGUF -> WeightSource (what is mapped and checked: gguf_llama.h).
#include "model/gguf_llama.h"

#include <cstdlib>

#include "common/check.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "model/model.h"  // expected_tensors
#include "model/model_check.h"

namespace smezo {

namespace {

// GGUF name -> Hugging Face name (layer ones after "blk.N." / "model.layers.N.").
const char* const kGlobalNames[][2] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};
const char* const kLayerNames[][2] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

// `from` + "N." + suffix -> `to` + "N." + kLayerNames[..][col] (N < n_layers, no leading zeros), or "".
std::string map_name(const std::string& name, const std::string& from, const std::string& to,
                     int col, int64_t n_layers) {
  for (const auto& names : kGlobalNames)
    if (name == names[col]) return names[1 - col];
  if (name.compare(0, from.size(), from) != 0) return "";
  const size_t start = from.size(), dot = name.find('.', start);
  if (dot == std::string::npos || dot == start || dot - start > 9) return "";
  const std::string index = name.substr(start, dot - start);
  if (index.find_first_not_of("0123456789") != std::string::npos || (index.size() > 1 && index[0] == '0'))
    return "";
  if (std::atoll(index.c_str()) >= n_layers) return "";
  const std::string suffix = name.substr(dot + 1);
  for (const auto& names : kLayerNames)
    if (suffix == names[col]) return to + index + "." + names[1 - col];
  return "";
}

// The Hugging Face name of a GGUF tensor, or "" when it has no place in a LLaMA model.
std::string hf_name_of(const std::string& gguf_name, int64_t n_layers) {
  return map_name(gguf_name, "blk.", "model.layers.", 0, n_layers);
}

std::string gguf_name_of(const std::string& hf_name, int64_t n_layers) {
  return map_name(hf_name, "model.layers.", "blk.", 1, n_layers);
}

// The metadata keys that decide a tensor's expected shape, for mismatch messages.
std::string keys_for(const std::string& hf_name) {
  auto has = [&](const char* s) { return hf_name.find(s) != std::string::npos; };
  if (has("embed_tokens") || has("lm_head"))
    return "llama.embedding_length and the vocabulary size (llama.vocab_size / tokenizer.ggml.tokens)";
  if (has("q_proj") || has("o_proj"))
    return "llama.embedding_length, llama.attention.head_count and the head size";
  if (has("k_proj") || has("v_proj"))
    return "llama.embedding_length, llama.attention.head_count_kv and the head size";
  if (has("mlp.")) return "llama.embedding_length and llama.feed_forward_length";
  return "llama.embedding_length";
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); i++) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int64_t positive(const GgufFile& f, const std::string& key) {
  const uint32_t v = f.get_u32(key);
  SMEZO_REQUIRE(v > 0 && v < (1u << 30), "%s: GGUF metadata key '%s' = %u is not a valid size",
                f.path().c_str(), key.c_str(), v);
  return v;
}

ModelConfig read_config(const GgufFile& f) {
  const char* p = f.path().c_str();
  ModelConfig c;
  c.arch = ARCH_LLAMA;
  c.norm_kind = NORM_RMS;
  c.mlp_kind = MLP_SWIGLU;
  c.rope_style = ROPE_INTERLEAVED;
  c.dim = positive(f, "llama.embedding_length");
  c.hidden_dim = positive(f, "llama.feed_forward_length");
  c.n_layers = positive(f, "llama.block_count");
  c.n_heads = positive(f, "llama.attention.head_count");
  c.n_kv_heads = f.has("llama.attention.head_count_kv") ? positive(f, "llama.attention.head_count_kv")
                                                        : c.n_heads;
  SMEZO_REQUIRE(c.n_heads % c.n_kv_heads == 0,
                "%s: llama.attention.head_count %lld is not a multiple of "
                "llama.attention.head_count_kv %lld", p, (long long)c.n_heads, (long long)c.n_kv_heads);
  if (f.has("llama.attention.key_length")) {
    c.head_dim = positive(f, "llama.attention.key_length");
  } else {
    SMEZO_REQUIRE(c.dim % c.n_heads == 0,
                  "%s: llama.embedding_length %lld is not a multiple of llama.attention.head_count "
                  "%lld and there is no llama.attention.key_length", p, (long long)c.dim,
                  (long long)c.n_heads);
    c.head_dim = c.dim / c.n_heads;
  }
  if (f.has("llama.attention.value_length"))
    SMEZO_REQUIRE(positive(f, "llama.attention.value_length") == c.head_dim,
                  "%s: llama.attention.value_length differs from the key length %lld; not supported",
                  p, (long long)c.head_dim);
  if (f.has("llama.rope.dimension_count"))
    SMEZO_REQUIRE(positive(f, "llama.rope.dimension_count") == c.head_dim,
                  "%s: llama.rope.dimension_count = %u but the head size is %lld; partial rotary "
                  "embeddings are not supported", p, f.get_u32("llama.rope.dimension_count"),
                  (long long)c.head_dim);
  c.max_seq_len = positive(f, "llama.context_length");
  c.norm_eps = f.get_f32("llama.attention.layer_norm_rms_epsilon");
  SMEZO_REQUIRE(c.norm_eps > 0.0f && c.norm_eps < 1.0f,
                "%s: llama.attention.layer_norm_rms_epsilon = %g is not a valid epsilon", p, c.norm_eps);
  c.rope_theta = f.get_f32_or("llama.rope.freq_base", 10000.0f);
  SMEZO_REQUIRE(c.rope_theta > 0.0f, "%s: llama.rope.freq_base = %g must be positive", p, c.rope_theta);
  const std::string scaling = f.get_string_or("llama.rope.scaling.type", "none");
  SMEZO_REQUIRE(scaling == "none", "%s: llama.rope.scaling.type = '%s': RoPE scaling is not "
                "supported", p, scaling.c_str());
  SMEZO_REQUIRE(f.get_u32_or("llama.expert_count", 0) == 0,
                "%s: llama.expert_count = %u: mixture-of-experts models are not supported", p,
                f.get_u32_or("llama.expert_count", 0));

  const bool has_vocab = f.has("llama.vocab_size");
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  SMEZO_REQUIRE(has_vocab || tokens, "%s: neither llama.vocab_size nor tokenizer.ggml.tokens is "
                "in the metadata, so the vocabulary size is unknown", p);
  if (tokens)
    SMEZO_REQUIRE(tokens->type == GGUF_VALUE_ARRAY && tokens->elem_type == GGUF_VALUE_STRING &&
                      tokens->count > 0,
                  "%s: GGUF metadata key 'tokenizer.ggml.tokens' must be a non-empty array of strings", p);
  c.vocab_size = has_vocab ? positive(f, "llama.vocab_size") : static_cast<int64_t>(tokens->count);
  if (has_vocab && tokens)
    SMEZO_REQUIRE(static_cast<uint64_t>(c.vocab_size) == tokens->count,
                  "%s: llama.vocab_size = %lld but tokenizer.ggml.tokens has %llu entries", p,
                  (long long)c.vocab_size, (unsigned long long)tokens->count);
  auto token_id = [&](const char* key) {
    if (!f.has(key)) return -1;
    const uint32_t v = f.get_u32(key);
    SMEZO_REQUIRE(v < c.vocab_size, "%s: %s = %u is outside the vocabulary (%lld tokens)", p, key,
                  v, (long long)c.vocab_size);
    return static_cast<int32_t>(v);
  };
  c.bos_token = token_id("tokenizer.ggml.bos_token_id");
  c.eos_token = token_id("tokenizer.ggml.eos_token_id");
  return c;
}

HostTensorView view_of(const GgufTensorInfo& t, const std::string& hf_name, const std::string& path,
                       const MappedFile* mapping) {
  HostTensorView v;
  v.name = hf_name;
  v.shape = t.row_major_shape();
  v.data = t.data;
  v.mapping = mapping;
  v.nbytes = t.nbytes;
  v.file = path;
  switch (t.type) {
    case GGUF_TYPE_F32: v.dtype = DTYPE_F32; break;
    case GGUF_TYPE_F16: v.dtype = DTYPE_F16; break;
    case GGUF_TYPE_BF16: v.dtype = DTYPE_BF16; break;
    default:
      v.decode = gguf_decode_fn(t.type);
      v.quant_name = gguf_type_name(t.type);
      SMEZO_REQUIRE(v.decode, "%s: tensor '%s' has type %s, which cannot be dequantised",
                    path.c_str(), t.name.c_str(), gguf_type_name(t.type));
  }
  return v;
}

}  // namespace

WeightSource load_gguf(const std::string& path) {
  std::shared_ptr<GgufFile> file = GgufFile::open(path);
  const GgufFile& f = *file;
  const char* p = path.c_str();
  const std::string arch = f.get_string("general.architecture");
  SMEZO_REQUIRE(arch == "llama", "%s: general.architecture = '%s' is not supported; smezo reads "
                "LLaMA-architecture GGUF files ('llama')", p, arch.c_str());
  WeightSource src;
  src.path = path;
  src.keep_alive.push_back(file);
  src.config = read_config(f);
  ModelConfig& c = src.config;
  c.tied_lm_head = f.find_tensor("output.weight") == nullptr;
  // Before anything is sized from the metadata: a huge block_count must be an error, not an allocation.
  check_model_config(c, path);

  for (const GgufTensorInfo& t : f.tensors()) {
    SMEZO_REQUIRE(t.name != "rope_freqs.weight", "%s: tensor 'rope_freqs.weight' (RoPE frequency "
                  "scaling) is not supported", p);
    const std::string hf = hf_name_of(t.name, c.n_layers);
    SMEZO_REQUIRE(!hf.empty(), "%s: tensor '%s' has no place in a LLaMA model with %lld layers "
                  "(smezo maps token_embd, output_norm, output and blk.N.{attn_norm, attn_q, attn_k, "
                  "attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight)", p,
                  t.name.c_str(), (long long)c.n_layers);
    src.tensors[hf] = view_of(t, hf, path, f.mapping());
  }
  // Every tensor the config needs, with the shape the metadata implies.
  for (const ExpectedTensor& e : expected_tensors(c)) {
    const std::string gguf_name = gguf_name_of(e.name, c.n_layers);
    const GgufTensorInfo* t = f.find_tensor(gguf_name);
    SMEZO_REQUIRE(t, "%s: tensor '%s' is missing (a LLaMA model with llama.block_count = %lld "
                  "needs it)", p, gguf_name.c_str(), (long long)c.n_layers);
    const std::vector<int64_t> want_dims(e.shape.rbegin(), e.shape.rend());
    SMEZO_REQUIRE(t->dims == want_dims, "%s: tensor '%s' has dims %s, but the metadata (%s) says %s",
                  p, gguf_name.c_str(), dims_string(t->dims).c_str(), keys_for(e.name).c_str(),
                  dims_string(want_dims).c_str());
  }
  return src;
}

}  // namespace smezo
