// A model family as data: its names in config.json and GGUF, how its config.json is read and
// written, and its tensor list with Hugging Face and GGUF names. One descriptor per family, one file
// each (src/model/family_<name>.cpp, listed in family.cpp); the forward reads only ModelConfig's
// feature fields, never the family. Adding a family: docs/ARCHITECTURE.md, "Where to add".
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace smezo {

class HfConfigReader;  // model/family_parts.h

// A tensor's shape from the config (q = n_heads*head_dim, kv = n_kv_heads*head_dim rows).
enum TensorShape {
  SHAPE_VOCAB_BY_DIM,      // (vocab, dim)
  SHAPE_POSITIONS_BY_DIM,  // (max_seq_len + learned_pos_offset, dim)
  SHAPE_DIM,               // (dim)
  SHAPE_Q_BY_DIM,          // (q, dim)
  SHAPE_KV_BY_DIM,         // (kv, dim)
  SHAPE_DIM_BY_Q,          // (dim, q)
  SHAPE_Q,                 // (q)
  SHAPE_KV,                // (kv)
  SHAPE_HIDDEN_BY_DIM,     // (hidden, dim)
  SHAPE_DIM_BY_HIDDEN,     // (dim, hidden)
  SHAPE_HIDDEN,            // (hidden)
  SHAPE_HEAD_DIM,          // (head_dim)
};

// One tensor of a family's list. Layer tensors are named after the table's prefix and "N."
// (model.layers.N.<hf>, blk.N.<gguf>); the others by their whole name.
struct TensorEntry {
  const char* hf;
  const char* gguf;  // nullptr: no GGUF file has it
  TensorShape shape;
  ParamRole role;
  bool is_bias;
  bool (*present)(const ModelConfig& c);  // nullptr: always
  Param ModelParams::*global;  // the field it fills: one of these two is set
  Param LayerParams::*layer;
};

// The canonical order (= the noise tensor ids: never reorder a released family's list).
struct TensorTable {
  const char* hf_layer_prefix;  // "model.layers."
  std::vector<TensorEntry> before, layer, after;  // before the layers, each layer, after them
};

struct FamilyDescriptor {
  const char* name;               // ModelConfig::family, smezo info, errors
  const char* hf_model_type;      // config.json "model_type"
  const char* hf_architecture;    // config.json "architectures", as written
  const char* gguf_architecture;  // GGUF general.architecture; nullptr: not read from GGUF
  RopeStyle gguf_rope_style;      // how llama.cpp's converter stores this architecture's q/k rows
  const TensorTable* tensors;
  bool lora;                      // --tune lora (PEFT's q_proj .. down_proj modules)
  // config.json -> *c: every size and feature (hf_config.h has the shared readers).
  void (*read_hf)(const HfConfigReader& f, ModelConfig* c);
  // *c -> the family's config.json fields (model_type, sizes and tokens are written already);
  // throws (hf_config_require) when config.json cannot express c.
  void (*write_hf)(const ModelConfig& c, nlohmann::json* j);
  // Rules of the family beyond check_model_config's common floor; nullptr: none.
  void (*check)(const ModelConfig& c, const std::string& source);
};

// Every family smezo runs, in the order errors list them.
const std::vector<const FamilyDescriptor*>& model_families();
// c.family's descriptor; throws naming the family when there is none.
const FamilyDescriptor& family_of(const ModelConfig& c);
const FamilyDescriptor* family_named(const std::string& name);  // nullptr: none
const FamilyDescriptor* family_by_hf_model_type(const std::string& model_type);
const FamilyDescriptor* family_by_gguf_architecture(const std::string& arch);
// "llama, mistral, opt, qwen2, qwen3", or the GGUF architectures ("llama, qwen2, qwen3").
std::string supported_hf_model_types();
std::string supported_families();  // the descriptors' names
std::string supported_gguf_architectures();

// The shape `s` means under config c.
std::vector<int64_t> tensor_shape(const ModelConfig& c, TensorShape s);

}  // namespace smezo
