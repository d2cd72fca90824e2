// The OPT family (pre-LN OPT: 125m, 1.3b, 2.7b, ...): LayerNorm, learned positions offset by 2, ReLU
// MLP (fc1, fc2), biases on every projection, tied head; no grouped-query attention. config.json:
// hidden_size, ffn_dim, num_hidden_layers, num_attention_heads, vocab_size, max_position_embeddings
// (required); tie_word_embeddings (true), bos_token_id (2), eos_token_id (2); word_embed_proj_dim must
// equal hidden_size, do_layer_norm_before, enable_bias and layer_norm_elementwise_affine must be true,
// activation_function "relu". Layer norm eps 1e-5. No GGUF (llama.cpp has no OPT).
#include "common/check.h"
#include "model/family_parts.h"

namespace smezo {

namespace {

bool untied(const ModelConfig& c) { return !c.tied_lm_head; }

TensorEntry global(const char* hf, TensorShape shape, ParamRole role, bool is_bias, Param ModelParams::*field,
                   bool (*present)(const ModelConfig&) = nullptr) {
  return TensorEntry{hf, nullptr, shape, role, is_bias, present, field, nullptr};
}

TensorEntry layer(const char* hf, TensorShape shape, ParamRole role, bool is_bias, Param LayerParams::*field) {
  return TensorEntry{hf, nullptr, shape, role, is_bias, nullptr, nullptr, field};
}

const TensorTable kOptTensors = {
    "model.decoder.layers.",
    {
        global("model.decoder.embed_tokens.weight", SHAPE_VOCAB_BY_DIM, ROLE_TOKEN_EMBEDDING, false,
               &ModelParams::tok_embedding),
        global("model.decoder.embed_positions.weight", SHAPE_POSITIONS_BY_DIM, ROLE_POSITION_EMBEDDING, false,
               &ModelParams::pos_embedding),
    },
    {
        layer("self_attn_layer_norm.weight", SHAPE_DIM, ROLE_NORM, false, &LayerParams::attn_norm),
        layer("self_attn_layer_norm.bias", SHAPE_DIM, ROLE_NORM, true, &LayerParams::attn_norm_bias),
        layer("self_attn.q_proj.weight", SHAPE_Q_BY_DIM, ROLE_ATTN_Q, false, &LayerParams::wq),
        layer("self_attn.q_proj.bias", SHAPE_Q, ROLE_ATTN_Q, true, &LayerParams::bq),
        layer("self_attn.k_proj.weight", SHAPE_KV_BY_DIM, ROLE_ATTN_K, false, &LayerParams::wk),
        layer("self_attn.k_proj.bias", SHAPE_KV, ROLE_ATTN_K, true, &LayerParams::bk),
        layer("self_attn.v_proj.weight", SHAPE_KV_BY_DIM, ROLE_ATTN_V, false, &LayerParams::wv),
        layer("self_attn.v_proj.bias", SHAPE_KV, ROLE_ATTN_V, true, &LayerParams::bv),
        layer("self_attn.out_proj.weight", SHAPE_DIM_BY_Q, ROLE_ATTN_O, false, &LayerParams::wo),
        layer("self_attn.out_proj.bias", SHAPE_DIM, ROLE_ATTN_O, true, &LayerParams::bo),
        layer("final_layer_norm.weight", SHAPE_DIM, ROLE_NORM, false, &LayerParams::ffn_norm),
        layer("final_layer_norm.bias", SHAPE_DIM, ROLE_NORM, true, &LayerParams::ffn_norm_bias),
        layer("fc1.weight", SHAPE_HIDDEN_BY_DIM, ROLE_MLP_UP, false, &LayerParams::w_up),
        layer("fc1.bias", SHAPE_HIDDEN, ROLE_MLP_UP, true, &LayerParams::b_up),
        layer("fc2.weight", SHAPE_DIM_BY_HIDDEN, ROLE_MLP_DOWN, false, &LayerParams::w_down),
        layer("fc2.bias", SHAPE_DIM, ROLE_MLP_DOWN, true, &LayerParams::b_down),
    },
    {
        global("model.decoder.final_layer_norm.weight", SHAPE_DIM, ROLE_NORM, false, &ModelParams::final_norm),
        global("model.decoder.final_layer_norm.bias", SHAPE_DIM, ROLE_NORM, true, &ModelParams::final_norm_bias),
        global("lm_head.weight", SHAPE_VOCAB_BY_DIM, ROLE_LM_HEAD, false, &ModelParams::lm_head, untied),
    },
};

void read_opt(const HfConfigReader& f, ModelConfig* c) {
  read_hf_sizes(f, "ffn_dim", c);
  SMEZO_REQUIRE(c->dim % c->n_heads == 0, "config %s: hidden_size %lld is not a multiple of num_attention_heads "
                "%lld", f.path.c_str(), static_cast<long long>(c->dim), static_cast<long long>(c->n_heads));
  if (f.get_int("word_embed_proj_dim", c->dim) != c->dim)
    f.unsupported("word_embed_proj_dim", "smezo supports only OPT models whose word_embed_proj_dim equals "
                  "hidden_size (not supported: project_in/out)");
  if (!f.get_bool("do_layer_norm_before", true))
    f.unsupported("do_layer_norm_before", "post-LN OPT (OPT-350m) is not supported; use a pre-LN OPT model "
                  "(125m, 1.3b, 2.7b, ...)");
  if (!f.get_bool("enable_bias", true)) f.unsupported("enable_bias", "smezo supports only OPT with biases");
  if (!f.get_bool("layer_norm_elementwise_affine", true))
    f.unsupported("layer_norm_elementwise_affine", "smezo supports only OPT with affine layer norms");
  const std::string act = f.get_string("activation_function", "relu");
  if (act != "relu") f.unsupported("activation_function", "smezo supports only \"relu\" for opt");
  c->n_kv_heads = c->n_heads;
  c->head_dim = c->dim / c->n_heads;
  c->norm_eps = 1e-5f;
  c->position = POSITION_LEARNED;
  c->norm_kind = NORM_LAYER;
  c->mlp_kind = MLP_RELU;
  c->qkv_bias = c->o_bias = c->mlp_bias = true;
  c->tied_lm_head = f.get_bool("tie_word_embeddings", true);
  c->learned_pos_offset = 2;
  c->sliding_window = 0;
  c->bos_token = f.get_token("bos_token_id", 2, c->vocab_size);
  c->eos_token = f.get_token("eos_token_id", 2, c->vocab_size);
}

void write_opt(const ModelConfig& c, nlohmann::json* j) {
  hf_config_require(c.norm_kind == NORM_LAYER, c, "norm_kind must be NORM_LAYER");
  hf_config_require(c.mlp_kind == MLP_RELU, c, "mlp_kind must be MLP_RELU");
  hf_config_require(c.qkv_bias && c.o_bias && c.mlp_bias, c, "every projection must have a bias");
  hf_config_require(c.position == POSITION_LEARNED && c.learned_pos_offset == 2, c,
                    "positions must be learned, offset by 2");
  hf_config_require(c.n_kv_heads == c.n_heads, c, "n_kv_heads must equal n_heads");
  hf_config_require(c.n_heads > 0 && c.head_dim * c.n_heads == c.dim, c, "head_dim * n_heads must equal dim");
  hf_config_require(c.norm_eps == 1e-5f, c, "norm_eps must be 1e-5");
  hf_config_require(c.sliding_window == 0 && !c.qk_norm, c, "sliding_window and qk_norm must be off");
  nlohmann::json& o = *j;
  o["ffn_dim"] = c.hidden_dim;
  o["word_embed_proj_dim"] = c.dim;
  o["do_layer_norm_before"] = true;
  o["enable_bias"] = true;
  o["layer_norm_elementwise_affine"] = true;
  o["activation_function"] = "relu";
  o["pad_token_id"] = 1;
}

void check_opt(const ModelConfig& c, const std::string& source) {
  SMEZO_REQUIRE(c.n_heads * c.head_dim == c.dim && c.n_kv_heads == c.n_heads,
                "model %s: OPT needs n_heads * head_dim == dim and no grouped-query attention (n_heads %lld, "
                "head_dim %lld, dim %lld, n_kv_heads %lld)", source.c_str(), static_cast<long long>(c.n_heads),
                static_cast<long long>(c.head_dim), static_cast<long long>(c.dim),
                static_cast<long long>(c.n_kv_heads));
}

}  // namespace

extern const FamilyDescriptor kOptFamily = {
    "opt", "opt", "OPTForCausalLM", nullptr, ROPE_ROTATE_HALF, &kOptTensors, false,
    read_opt, write_opt, check_opt,
};

}  // namespace smezo
