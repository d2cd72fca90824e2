// The canonical parameter list of each architecture: Hugging Face names, shapes, and which
// ModelParams field each binds to. Its order defines the noise tensor ids, so it must never
// depend on the checkpoint file.
#include "model/model_params.h"

#include <string>

namespace smezo {

namespace {

struct Lister {
  std::vector<ParamSlot>* out;
  int64_t layer = -1;  // set by the listers as they walk the model
  void operator()(const std::string& name, std::vector<int64_t> shape, bool is_linear, Param* p) {
    out->push_back(ParamSlot{name, std::move(shape), is_linear, p, layer});
  }
};

void list_llama(const ModelConfig& c, ModelParams& w, Lister& add) {
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  add("model.embed_tokens.weight", {c.vocab_size, c.dim}, false, &w.tok_embedding);
  for (int64_t i = 0; i < c.n_layers; i++) {
    add.layer = i;
    LayerParams& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {c.dim}, false, &l.attn_norm);
    add(p + "self_attn.q_proj.weight", {q_dim, c.dim}, true, &l.wq);
    add(p + "self_attn.k_proj.weight", {kv_dim, c.dim}, true, &l.wk);
    add(p + "self_attn.v_proj.weight", {kv_dim, c.dim}, true, &l.wv);
    add(p + "self_attn.o_proj.weight", {c.dim, q_dim}, true, &l.wo);
    if (c.linear_bias) {
      add(p + "self_attn.q_proj.bias", {q_dim}, false, &l.bq);
      add(p + "self_attn.k_proj.bias", {kv_dim}, false, &l.bk);
      add(p + "self_attn.v_proj.bias", {kv_dim}, false, &l.bv);
      add(p + "self_attn.o_proj.bias", {c.dim}, false, &l.bo);
    }
    add(p + "post_attention_layernorm.weight", {c.dim}, false, &l.ffn_norm);
    add(p + "mlp.gate_proj.weight", {c.hidden_dim, c.dim}, true, &l.w_gate);
    add(p + "mlp.up_proj.weight", {c.hidden_dim, c.dim}, true, &l.w_up);
    add(p + "mlp.down_proj.weight", {c.dim, c.hidden_dim}, true, &l.w_down);
    if (c.linear_bias) {  // Hugging Face LLaMA's mlp_bias (same flag as attention_bias here)
      add(p + "mlp.gate_proj.bias", {c.hidden_dim}, false, &l.b_gate);
      add(p + "mlp.up_proj.bias", {c.hidden_dim}, false, &l.b_up);
      add(p + "mlp.down_proj.bias", {c.dim}, false, &l.b_down);
    }
  }
  add.layer = c.n_layers;
  add("model.norm.weight", {c.dim}, false, &w.final_norm);
  if (!c.tied_lm_head) add("lm_head.weight", {c.vocab_size, c.dim}, true, &w.lm_head);
}

void list_opt(const ModelConfig& c, ModelParams& w, Lister& add) {
  const std::string d = "model.decoder.";
  add(d + "embed_tokens.weight", {c.vocab_size, c.dim}, false, &w.tok_embedding);
  add(d + "embed_positions.weight", {c.max_seq_len + c.learned_pos_offset, c.dim}, false,
      &w.pos_embedding);
  for (int64_t i = 0; i < c.n_layers; i++) {
    add.layer = i;
    LayerParams& l = w.layers[i];
    const std::string p = d + "layers." + std::to_string(i) + ".";
    add(p + "self_attn_layer_norm.weight", {c.dim}, false, &l.attn_norm);
    add(p + "self_attn_layer_norm.bias", {c.dim}, false, &l.attn_norm_bias);
    add(p + "self_attn.q_proj.weight", {c.dim, c.dim}, true, &l.wq);
    add(p + "self_attn.q_proj.bias", {c.dim}, false, &l.bq);
    add(p + "self_attn.k_proj.weight", {c.dim, c.dim}, true, &l.wk);
    add(p + "self_attn.k_proj.bias", {c.dim}, false, &l.bk);
    add(p + "self_attn.v_proj.weight", {c.dim, c.dim}, true, &l.wv);
    add(p + "self_attn.v_proj.bias", {c.dim}, false, &l.bv);
    add(p + "self_attn.out_proj.weight", {c.dim, c.dim}, true, &l.wo);
    add(p + "self_attn.out_proj.bias", {c.dim}, false, &l.bo);
    add(p + "final_layer_norm.weight", {c.dim}, false, &l.ffn_norm);
    add(p + "final_layer_norm.bias", {c.dim}, false, &l.ffn_norm_bias);
    add(p + "fc1.weight", {c.hidden_dim, c.dim}, true, &l.w_up);
    add(p + "fc1.bias", {c.hidden_dim}, false, &l.b_up);
    add(p + "fc2.weight", {c.dim, c.hidden_dim}, true, &l.w_down);
    add(p + "fc2.bias", {c.dim}, false, &l.b_down);
  }
  add.layer = c.n_layers;
  add(d + "final_layer_norm.weight", {c.dim}, false, &w.final_norm);
  add(d + "final_layer_norm.bias", {c.dim}, false, &w.final_norm_bias);
  if (!c.tied_lm_head) add("lm_head.weight", {c.vocab_size, c.dim}, true, &w.lm_head);
}

}  // namespace

std::vector<ParamSlot> list_param_slots(const ModelConfig& config, ModelParams& weights) {
  std::vector<ParamSlot> slots;
  Lister add{&slots};
  weights.layers.resize(config.n_layers);
  if (config.arch == ARCH_OPT) {
    list_opt(config, weights, add);
  } else {
    list_llama(config, weights, add);
  }
  return slots;
}

bool stage_holds(const ModelStage& stage, const ModelConfig& config, const ParamSlot& slot) {
  if (slot.layer < 0)
    return stage.first() || (stage.last() && config.tied_lm_head && slot.param != nullptr &&
                             slot.name.find("embed_tokens") != std::string::npos);
  if (slot.layer >= config.n_layers) return stage.last();
  return slot.layer >= stage.first_layer && slot.layer < stage.end_layer;
}

bool stage_owns(const ModelStage& stage, const ParamSlot& slot) {
  if (slot.layer < 0) return stage.first();
  if (slot.layer >= stage.end_layer && stage.last()) return true;
  return slot.layer >= stage.first_layer && slot.layer < stage.end_layer;
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
  ModelParams scratch;
  std::vector<ExpectedTensor> out;
  for (const ParamSlot& s : list_param_slots(config, scratch))
    out.push_back(ExpectedTensor{s.name, s.shape, s.is_linear});
  return out;
}

const char* architecture_name(Architecture arch) {
  switch (arch) {
    case ARCH_LLAMA: return "llama";
    case ARCH_MISTRAL: return "mistral";
    case ARCH_OPT: return "opt";
  }
  return "?";
}

}  // namespace smezo
