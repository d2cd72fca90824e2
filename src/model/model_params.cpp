// Each architecture's canonical parameter list; its order is the noise tensor ids: never reorder it.
#include "model/model_params.h"

#include <string>

namespace smezo {

namespace {

struct Lister {
  std::vector<ParamSlot>* out;
  int64_t layer = -1;  // set by the listers as they walk the model
  // A weight: the projections' and the head's are linear (masked by S-MeZO/R-MeZO).
  void operator()(const std::string& name, std::vector<int64_t> shape, ParamRole role, Param* p) {
    const bool is_linear = role >= ROLE_ATTN_Q && role <= ROLE_LM_HEAD;
    out->push_back(ParamSlot{name, std::move(shape), is_linear, role, false, p, layer});
  }
  void bias(const std::string& name, std::vector<int64_t> shape, ParamRole role, Param* p) {
    out->push_back(ParamSlot{name, std::move(shape), false, role, true, p, layer});
  }
};

void list_llama(const ModelConfig& c, ModelParams& w, Lister& add) {
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  add("model.embed_tokens.weight", {c.vocab_size, c.dim}, ROLE_TOKEN_EMBEDDING, &w.tok_embedding);
  for (int64_t i = 0; i < c.n_layers; i++) {
    add.layer = i;
    LayerParams& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {c.dim}, ROLE_NORM, &l.attn_norm);
    add(p + "self_attn.q_proj.weight", {q_dim, c.dim}, ROLE_ATTN_Q, &l.wq);
    add(p + "self_attn.k_proj.weight", {kv_dim, c.dim}, ROLE_ATTN_K, &l.wk);
    add(p + "self_attn.v_proj.weight", {kv_dim, c.dim}, ROLE_ATTN_V, &l.wv);
    add(p + "self_attn.o_proj.weight", {c.dim, q_dim}, ROLE_ATTN_O, &l.wo);
    if (c.linear_bias) {
      add.bias(p + "self_attn.q_proj.bias", {q_dim}, ROLE_ATTN_Q, &l.bq);
      add.bias(p + "self_attn.k_proj.bias", {kv_dim}, ROLE_ATTN_K, &l.bk);
      add.bias(p + "self_attn.v_proj.bias", {kv_dim}, ROLE_ATTN_V, &l.bv);
      add.bias(p + "self_attn.o_proj.bias", {c.dim}, ROLE_ATTN_O, &l.bo);
    }
    add(p + "post_attention_layernorm.weight", {c.dim}, ROLE_NORM, &l.ffn_norm);
    add(p + "mlp.gate_proj.weight", {c.hidden_dim, c.dim}, ROLE_MLP_GATE, &l.w_gate);
    add(p + "mlp.up_proj.weight", {c.hidden_dim, c.dim}, ROLE_MLP_UP, &l.w_up);
    add(p + "mlp.down_proj.weight", {c.dim, c.hidden_dim}, ROLE_MLP_DOWN, &l.w_down);
    if (c.linear_bias) {  // Hugging Face LLaMA's mlp_bias (same flag as attention_bias here)
      add.bias(p + "mlp.gate_proj.bias", {c.hidden_dim}, ROLE_MLP_GATE, &l.b_gate);
      add.bias(p + "mlp.up_proj.bias", {c.hidden_dim}, ROLE_MLP_UP, &l.b_up);
      add.bias(p + "mlp.down_proj.bias", {c.dim}, ROLE_MLP_DOWN, &l.b_down);
    }
  }
  add.layer = c.n_layers;
  add("model.norm.weight", {c.dim}, ROLE_NORM, &w.final_norm);
  if (!c.tied_lm_head) add("lm_head.weight", {c.vocab_size, c.dim}, ROLE_LM_HEAD, &w.lm_head);
}

void list_opt(const ModelConfig& c, ModelParams& w, Lister& add) {
  const std::string d = "model.decoder.";
  add(d + "embed_tokens.weight", {c.vocab_size, c.dim}, ROLE_TOKEN_EMBEDDING, &w.tok_embedding);
  add(d + "embed_positions.weight", {c.max_seq_len + c.learned_pos_offset, c.dim}, ROLE_POSITION_EMBEDDING,
      &w.pos_embedding);
  for (int64_t i = 0; i < c.n_layers; i++) {
    add.layer = i;
    LayerParams& l = w.layers[i];
    const std::string p = d + "layers." + std::to_string(i) + ".";
    add(p + "self_attn_layer_norm.weight", {c.dim}, ROLE_NORM, &l.attn_norm);
    add.bias(p + "self_attn_layer_norm.bias", {c.dim}, ROLE_NORM, &l.attn_norm_bias);
    add(p + "self_attn.q_proj.weight", {c.dim, c.dim}, ROLE_ATTN_Q, &l.wq);
    add.bias(p + "self_attn.q_proj.bias", {c.dim}, ROLE_ATTN_Q, &l.bq);
    add(p + "self_attn.k_proj.weight", {c.dim, c.dim}, ROLE_ATTN_K, &l.wk);
    add.bias(p + "self_attn.k_proj.bias", {c.dim}, ROLE_ATTN_K, &l.bk);
    add(p + "self_attn.v_proj.weight", {c.dim, c.dim}, ROLE_ATTN_V, &l.wv);
    add.bias(p + "self_attn.v_proj.bias", {c.dim}, ROLE_ATTN_V, &l.bv);
    add(p + "self_attn.out_proj.weight", {c.dim, c.dim}, ROLE_ATTN_O, &l.wo);
    add.bias(p + "self_attn.out_proj.bias", {c.dim}, ROLE_ATTN_O, &l.bo);
    add(p + "final_layer_norm.weight", {c.dim}, ROLE_NORM, &l.ffn_norm);
    add.bias(p + "final_layer_norm.bias", {c.dim}, ROLE_NORM, &l.ffn_norm_bias);
    add(p + "fc1.weight", {c.hidden_dim, c.dim}, ROLE_MLP_UP, &l.w_up);
    add.bias(p + "fc1.bias", {c.hidden_dim}, ROLE_MLP_UP, &l.b_up);
    add(p + "fc2.weight", {c.dim, c.hidden_dim}, ROLE_MLP_DOWN, &l.w_down);
    add.bias(p + "fc2.bias", {c.dim}, ROLE_MLP_DOWN, &l.b_down);
  }
  add.layer = c.n_layers;
  add(d + "final_layer_norm.weight", {c.dim}, ROLE_NORM, &w.final_norm);
  add.bias(d + "final_layer_norm.bias", {c.dim}, ROLE_NORM, &w.final_norm_bias);
  if (!c.tied_lm_head) add("lm_head.weight", {c.vocab_size, c.dim}, ROLE_LM_HEAD, &w.lm_head);
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
                             slot.role == ROLE_TOKEN_EMBEDDING);
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
    out.push_back(ExpectedTensor{s.name, s.shape, s.is_linear, s.role, s.is_bias});
  return out;
}

void interleaved_rows_to_rotate_half(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out) {
  for (int64_t h = 0; h < rows / head_dim; h++)
    for (int64_t i = 0; i < head_dim / 2; i++)
      for (int64_t k = 0; k < cols; k++) {
        out[(h * head_dim + i) * cols + k] = in[(h * head_dim + 2 * i) * cols + k];
        out[(h * head_dim + i + head_dim / 2) * cols + k] = in[(h * head_dim + 2 * i + 1) * cols + k];
      }
}

void rotate_half_rows_to_interleaved(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out) {
  for (int64_t h = 0; h < rows / head_dim; h++)
    for (int64_t i = 0; i < head_dim / 2; i++)
      for (int64_t k = 0; k < cols; k++) {
        out[(h * head_dim + 2 * i) * cols + k] = in[(h * head_dim + i) * cols + k];
        out[(h * head_dim + 2 * i + 1) * cols + k] = in[(h * head_dim + i + head_dim / 2) * cols + k];
      }
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
