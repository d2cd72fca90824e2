// GGUF of a family with a GGUF architecture -> WeightSource (what is mapped and checked: gguf_llama.h).
#include "model/gguf_llama.h"

#include <cstdlib>
#include <cstring>
#include <map>

#include "common/check.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "model/family.h"
#include "model/model.h"  // expected_tensors
#include "model/model_check.h"

namespace smezo {

namespace {

struct NamedTensor {
  std::string gguf, hf;
  std::vector<int64_t> shape;  // Hugging Face (row-major) shape
};

// Every tensor the family's table lists for c that a GGUF holds (family.h), in canonical order.
std::vector<NamedTensor> gguf_tensors_of(const FamilyDescriptor& family, const ModelConfig& c) {
  std::vector<NamedTensor> out;
  const TensorTable& t = *family.tensors;
  auto add = [&](const std::vector<TensorEntry>& entries, const std::string& gguf_prefix, const std::string& hf_prefix) {
    for (const TensorEntry& e : entries)
      if (e.gguf != nullptr && (e.present == nullptr || e.present(c)))
        out.push_back({gguf_prefix + e.gguf, hf_prefix + e.hf, tensor_shape(c, e.shape)});
  };
  add(t.before, "", "");
  for (int64_t i = 0; i < c.n_layers; i++)
    add(t.layer, "blk." + std::to_string(i) + ".", t.hf_layer_prefix + std::to_string(i) + ".");
  add(t.after, "", "");
  return out;
}

// The metadata keys that decide a tensor's expected shape, for mismatch messages.
std::string keys_for(const std::string& hf_name, const std::string& a) {
  auto has = [&](const char* s) { return hf_name.find(s) != std::string::npos; };
  if (has("embed_tokens") || has("lm_head"))
    return a + ".embedding_length and the vocabulary size (" + a + ".vocab_size / tokenizer.ggml.tokens)";
  if (has("q_norm") || has("k_norm")) return a + ".attention.key_length";
  if (has("q_proj") || has("o_proj"))
    return a + ".embedding_length, " + a + ".attention.head_count and the head size";
  if (has("k_proj") || has("v_proj"))
    return a + ".embedding_length, " + a + ".attention.head_count_kv and the head size";
  if (has("mlp.")) return a + ".embedding_length and " + a + ".feed_forward_length";
  return a + ".embedding_length";
}

int64_t positive(const GgufFile& f, const std::string& key) {
  const uint32_t v = f.get_u32(key);
  SMEZO_REQUIRE(v > 0 && v < (1u << 30), "%s: GGUF metadata key '%s' = %u is not a valid size",
                f.path().c_str(), key.c_str(), v);
  return v;
}

// Heads and head size from <arch>.attention.* (key_length absent: dim / heads).
void read_heads(const GgufFile& f, const std::string& a, ModelConfig* c) {
  const char* p = f.path().c_str();
  const std::string heads = a + ".attention.head_count", kv = a + ".attention.head_count_kv",
                    key_length = a + ".attention.key_length", value_length = a + ".attention.value_length",
                    rope_dims = a + ".rope.dimension_count";
  c->n_heads = positive(f, heads);
  c->n_kv_heads = f.has(kv) ? positive(f, kv) : c->n_heads;
  SMEZO_REQUIRE(c->n_heads % c->n_kv_heads == 0, "%s: %s %lld is not a multiple of %s %lld", p, heads.c_str(),
                (long long)c->n_heads, kv.c_str(), (long long)c->n_kv_heads);
  if (f.has(key_length)) {
    c->head_dim = positive(f, key_length);
  } else {
    SMEZO_REQUIRE(c->dim % c->n_heads == 0, "%s: %s.embedding_length %lld is not a multiple of %s %lld and there "
                  "is no %s", p, a.c_str(), (long long)c->dim, heads.c_str(), (long long)c->n_heads,
                  key_length.c_str());
    c->head_dim = c->dim / c->n_heads;
  }
  if (f.has(value_length))
    SMEZO_REQUIRE(positive(f, value_length) == c->head_dim, "%s: %s differs from the key length %lld; not supported",
                  p, value_length.c_str(), (long long)c->head_dim);
  if (f.has(rope_dims))
    SMEZO_REQUIRE(positive(f, rope_dims) == c->head_dim, "%s: %s = %u but the head size is %lld; partial rotary "
                  "embeddings are not supported", p, rope_dims.c_str(), f.get_u32(rope_dims), (long long)c->head_dim);
}

// The vocabulary size from <arch>.vocab_size and/or tokenizer.ggml.tokens; bos/eos ids (-1 when absent).
void read_vocab(const GgufFile& f, const std::string& a, ModelConfig* c) {
  const char* p = f.path().c_str();
  const std::string vocab = a + ".vocab_size";
  const bool has_vocab = f.has(vocab);
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  SMEZO_REQUIRE(has_vocab || tokens, "%s: neither %s nor tokenizer.ggml.tokens is in the metadata, so the "
                "vocabulary size is unknown", p, vocab.c_str());
  if (tokens)
    SMEZO_REQUIRE(tokens->type == GGUF_VALUE_ARRAY && tokens->elem_type == GGUF_VALUE_STRING && tokens->count > 0,
                  "%s: GGUF metadata key 'tokenizer.ggml.tokens' must be a non-empty array of strings", p);
  c->vocab_size = has_vocab ? positive(f, vocab) : static_cast<int64_t>(tokens->count);
  if (has_vocab && tokens)
    SMEZO_REQUIRE(static_cast<uint64_t>(c->vocab_size) == tokens->count,
                  "%s: %s = %lld but tokenizer.ggml.tokens has %llu entries", p, vocab.c_str(),
                  (long long)c->vocab_size, (unsigned long long)tokens->count);
  auto token_id = [&](const char* key) {
    if (!f.has(key)) return -1;
    const uint32_t v = f.get_u32(key);
    SMEZO_REQUIRE(v < c->vocab_size, "%s: %s = %u is outside the vocabulary (%lld tokens)", p, key, v,
                  (long long)c->vocab_size);
    return static_cast<int32_t>(v);
  };
  c->bos_token = token_id("tokenizer.ggml.bos_token_id");
  c->eos_token = token_id("tokenizer.ggml.eos_token_id");
}

// The config from the <arch>.* keys (a = the GGUF architecture): RMSNorm, SwiGLU, RoPE in the
// family's row layout. Features that tensors show (biases, q/k norms, tied head) come later.
ModelConfig read_config(const GgufFile& f, const FamilyDescriptor& family) {
  const char* p = f.path().c_str();
  const std::string a = family.gguf_architecture;
  ModelConfig c;
  c.family = family.name;
  c.position = POSITION_ROPE;
  c.norm_kind = NORM_RMS;
  c.mlp_kind = MLP_SWIGLU;
  c.rope_style = family.gguf_rope_style;
  c.dim = positive(f, a + ".embedding_length");
  c.hidden_dim = positive(f, a + ".feed_forward_length");
  c.n_layers = positive(f, a + ".block_count");
  read_heads(f, a, &c);
  c.max_seq_len = positive(f, a + ".context_length");
  const std::string eps = a + ".attention.layer_norm_rms_epsilon", base = a + ".rope.freq_base",
                    scaling_key = a + ".rope.scaling.type", experts = a + ".expert_count";
  c.norm_eps = f.get_f32(eps);
  SMEZO_REQUIRE(c.norm_eps > 0.0f && c.norm_eps < 1.0f, "%s: %s = %g is not a valid epsilon", p, eps.c_str(),
                c.norm_eps);
  c.rope_theta = f.get_f32_or(base, 10000.0f);
  SMEZO_REQUIRE(c.rope_theta > 0.0f, "%s: %s = %g must be positive", p, base.c_str(), c.rope_theta);
  const std::string scaling = f.get_string_or(scaling_key, "none");
  SMEZO_REQUIRE(scaling == "none", "%s: %s = '%s': RoPE scaling of this type is not supported (llama3's "
                "rope_freqs tensor is)", p, scaling_key.c_str(), scaling.c_str());
  SMEZO_REQUIRE(f.get_u32_or(experts, 0) == 0, "%s: %s = %u: mixture-of-experts models are not supported", p,
                experts.c_str(), f.get_u32_or(experts, 0));
  read_vocab(f, a, &c);
  return c;
}

// What the tensors say: no output.weight -> tied head; layer 0's biases and q/k norms -> the features;
// rope_freqs.weight (Llama 3.x, llama.cpp's converter) -> per-pair frequency divisors.
void read_tensor_features(const GgufFile& f, ModelConfig* c) {
  c->tied_lm_head = f.find_tensor("output.weight") == nullptr;
  c->qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c->o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c->mlp_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
  c->qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  const GgufTensorInfo* freqs = f.find_tensor("rope_freqs.weight");
  if (freqs == nullptr) return;
  SMEZO_REQUIRE(freqs->type == GGUF_TYPE_F32 && freqs->dims.size() == 1 && freqs->dims[0] == c->head_dim / 2,
                "%s: tensor 'rope_freqs.weight' must be F32 of %lld values (one per RoPE pair), it is %s of dims "
                "%s", f.path().c_str(), (long long)(c->head_dim / 2), gguf_type_name(freqs->type),
                shape_string(freqs->dims).c_str());
  c->rope_scaling.freq_divisors.resize(static_cast<size_t>(c->head_dim / 2));
  std::memcpy(c->rope_scaling.freq_divisors.data(), freqs->data, c->rope_scaling.freq_divisors.size() * 4);
}

HostTensorView view_of(const GgufTensorInfo& t, const std::string& hf_name, const std::string& path,
                       const MappedFile* mapping) {
  HostTensorView v;
  v.name = hf_name;
  v.file_name = t.name;
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
      v.packed_type = t.type;
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
  const FamilyDescriptor* family = family_by_gguf_architecture(arch);
  SMEZO_REQUIRE(family, "%s: general.architecture = '%s' is not supported; supported: %s", p,
                printable(arch).c_str(), supported_gguf_architectures().c_str());
  WeightSource src;
  src.path = path;
  src.keep_alive.push_back(file);
  src.config = read_config(f, *family);
  ModelConfig& c = src.config;
  read_tensor_features(f, &c);
  // Before anything is sized from the metadata: a huge block_count must be an error, not an allocation.
  check_model_config(c, path);

  const std::vector<NamedTensor> named = gguf_tensors_of(*family, c);
  std::map<std::string, const NamedTensor*> by_gguf_name;
  for (const NamedTensor& n : named) by_gguf_name[n.gguf] = &n;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;  // read into the config
    auto n = by_gguf_name.find(t.name);
    SMEZO_REQUIRE(n != by_gguf_name.end(), "%s: tensor '%s' has no place in a %s model with %lld layers (its "
                  "family's tensor list, src/model/family_%s.cpp)", p, printable(t.name).c_str(), family->name,
                  (long long)c.n_layers, family->name);
    src.tensors[n->second->hf] = view_of(t, n->second->hf, path, f.mapping());
  }
  // Every tensor the config needs, with the shape the metadata implies.
  for (const NamedTensor& n : named) {
    const GgufTensorInfo* t = f.find_tensor(n.gguf);
    SMEZO_REQUIRE(t, "%s: tensor '%s' is missing (a %s model with %s.block_count = %lld needs it)", p,
                  n.gguf.c_str(), family->name, arch.c_str(), (long long)c.n_layers);
    const std::vector<int64_t> want_dims(n.shape.rbegin(), n.shape.rend());
    SMEZO_REQUIRE(t->dims == want_dims, "%s: tensor '%s' has dims %s, but the metadata (%s) says %s", p,
                  n.gguf.c_str(), shape_string(t->dims).c_str(), keys_for(n.hf, arch).c_str(),
                  shape_string(want_dims).c_str());
  }
  return src;
}

}  // namespace smezo
