// The registry of model families (see family.h): one line per descriptor (src/model/family_<name>.cpp).
#include "model/family.h"

#include "common/check.h"

namespace smezo {

extern const FamilyDescriptor kLlamaFamily;    // family_llama.cpp (Llama 1-3.x, SmolLM2, llama2.c)
extern const FamilyDescriptor kMistralFamily;  // family_mistral.cpp
extern const FamilyDescriptor kOptFamily;      // family_opt.cpp
extern const FamilyDescriptor kQwen2Family;    // family_qwen2.cpp (Qwen2, Qwen2.5)
extern const FamilyDescriptor kQwen3Family;    // family_qwen3.cpp

const std::vector<const FamilyDescriptor*>& model_families() {
  static const std::vector<const FamilyDescriptor*> all = {&kLlamaFamily, &kMistralFamily, &kOptFamily,
                                                           &kQwen2Family, &kQwen3Family};
  return all;
}

namespace {

std::string join_names(const char* FamilyDescriptor::*field) {
  std::string s;
  for (const FamilyDescriptor* f : model_families())
    if (f->*field != nullptr) s += (s.empty() ? "" : ", ") + std::string(f->*field);
  return s;
}

}  // namespace

const FamilyDescriptor* family_named(const std::string& name) {
  for (const FamilyDescriptor* f : model_families())
    if (name == f->name) return f;
  return nullptr;
}

const FamilyDescriptor& family_of(const ModelConfig& c) {
  if (const FamilyDescriptor* f = family_named(c.family)) return *f;
  throw_error("model family '%s' is unknown; smezo runs %s", printable(c.family).c_str(),
              join_names(&FamilyDescriptor::name).c_str());
}

const FamilyDescriptor* family_by_hf_model_type(const std::string& model_type) {
  for (const FamilyDescriptor* f : model_families())
    if (model_type == f->hf_model_type) return f;
  return nullptr;
}

const FamilyDescriptor* family_by_gguf_architecture(const std::string& arch) {
  for (const FamilyDescriptor* f : model_families())
    if (f->gguf_architecture != nullptr && arch == f->gguf_architecture) return f;
  return nullptr;
}

std::string supported_families() { return join_names(&FamilyDescriptor::name); }
std::string supported_hf_model_types() { return join_names(&FamilyDescriptor::hf_model_type); }
std::string supported_gguf_architectures() { return join_names(&FamilyDescriptor::gguf_architecture); }

std::vector<int64_t> tensor_shape(const ModelConfig& c, TensorShape s) {
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  switch (s) {
    case SHAPE_VOCAB_BY_DIM: return {c.vocab_size, c.dim};
    case SHAPE_POSITIONS_BY_DIM: return {c.max_seq_len + c.learned_pos_offset, c.dim};
    case SHAPE_DIM: return {c.dim};
    case SHAPE_Q_BY_DIM: return {q, c.dim};
    case SHAPE_KV_BY_DIM: return {kv, c.dim};
    case SHAPE_DIM_BY_Q: return {c.dim, q};
    case SHAPE_Q: return {q};
    case SHAPE_KV: return {kv};
    case SHAPE_HIDDEN_BY_DIM: return {c.hidden_dim, c.dim};
    case SHAPE_DIM_BY_HIDDEN: return {c.dim, c.hidden_dim};
    case SHAPE_HIDDEN: return {c.hidden_dim};
    case SHAPE_HEAD_DIM: return {c.head_dim};
  }
  return {};
}

}  // namespace smezo
