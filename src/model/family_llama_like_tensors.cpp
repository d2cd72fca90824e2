// The LLaMA-shaped tensor table (family_parts.h): Hugging Face names after "model.layers.N.", GGUF
// names (llama.cpp's) after "blk.N.". Optional tensors follow the feature fields.
#include "model/family_parts.h"

namespace smezo {

namespace {

bool untied(const ModelConfig& c) { return !c.tied_lm_head; }
bool qkv_bias(const ModelConfig& c) { return c.qkv_bias; }
bool o_bias(const ModelConfig& c) { return c.o_bias; }
bool qk_norm(const ModelConfig& c) { return c.qk_norm; }
bool mlp_bias(const ModelConfig& c) { return c.mlp_bias; }

TensorEntry global(const char* hf, const char* gguf, TensorShape shape, ParamRole role, Param ModelParams::*field,
                   bool (*present)(const ModelConfig&) = nullptr) {
  return TensorEntry{hf, gguf, shape, role, false, present, field, nullptr};
}

TensorEntry layer(const char* hf, const char* gguf, TensorShape shape, ParamRole role, Param LayerParams::*field,
                  bool (*present)(const ModelConfig&) = nullptr, bool is_bias = false) {
  return TensorEntry{hf, gguf, shape, role, is_bias, present, nullptr, field};
}

TensorEntry bias(const char* hf, const char* gguf, TensorShape shape, ParamRole role, Param LayerParams::*field,
                 bool (*present)(const ModelConfig&)) {
  return layer(hf, gguf, shape, role, field, present, true);
}

}  // namespace

const TensorTable kLlamaLikeTensors = {
    "model.layers.",
    {global("model.embed_tokens.weight", "token_embd.weight", SHAPE_VOCAB_BY_DIM, ROLE_TOKEN_EMBEDDING,
            &ModelParams::tok_embedding)},
    {
        layer("input_layernorm.weight", "attn_norm.weight", SHAPE_DIM, ROLE_NORM, &LayerParams::attn_norm),
        layer("self_attn.q_proj.weight", "attn_q.weight", SHAPE_Q_BY_DIM, ROLE_ATTN_Q, &LayerParams::wq),
        layer("self_attn.k_proj.weight", "attn_k.weight", SHAPE_KV_BY_DIM, ROLE_ATTN_K, &LayerParams::wk),
        layer("self_attn.v_proj.weight", "attn_v.weight", SHAPE_KV_BY_DIM, ROLE_ATTN_V, &LayerParams::wv),
        layer("self_attn.o_proj.weight", "attn_output.weight", SHAPE_DIM_BY_Q, ROLE_ATTN_O, &LayerParams::wo),
        bias("self_attn.q_proj.bias", "attn_q.bias", SHAPE_Q, ROLE_ATTN_Q, &LayerParams::bq, qkv_bias),
        bias("self_attn.k_proj.bias", "attn_k.bias", SHAPE_KV, ROLE_ATTN_K, &LayerParams::bk, qkv_bias),
        bias("self_attn.v_proj.bias", "attn_v.bias", SHAPE_KV, ROLE_ATTN_V, &LayerParams::bv, qkv_bias),
        bias("self_attn.o_proj.bias", "attn_output.bias", SHAPE_DIM, ROLE_ATTN_O, &LayerParams::bo, o_bias),
        layer("self_attn.q_norm.weight", "attn_q_norm.weight", SHAPE_HEAD_DIM, ROLE_NORM, &LayerParams::q_norm,
              qk_norm),
        layer("self_attn.k_norm.weight", "attn_k_norm.weight", SHAPE_HEAD_DIM, ROLE_NORM, &LayerParams::k_norm,
              qk_norm),
        layer("post_attention_layernorm.weight", "ffn_norm.weight", SHAPE_DIM, ROLE_NORM, &LayerParams::ffn_norm),
        layer("mlp.gate_proj.weight", "ffn_gate.weight", SHAPE_HIDDEN_BY_DIM, ROLE_MLP_GATE, &LayerParams::w_gate),
        layer("mlp.up_proj.weight", "ffn_up.weight", SHAPE_HIDDEN_BY_DIM, ROLE_MLP_UP, &LayerParams::w_up),
        layer("mlp.down_proj.weight", "ffn_down.weight", SHAPE_DIM_BY_HIDDEN, ROLE_MLP_DOWN, &LayerParams::w_down),
        bias("mlp.gate_proj.bias", "ffn_gate.bias", SHAPE_HIDDEN, ROLE_MLP_GATE, &LayerParams::b_gate, mlp_bias),
        bias("mlp.up_proj.bias", "ffn_up.bias", SHAPE_HIDDEN, ROLE_MLP_UP, &LayerParams::b_up, mlp_bias),
        bias("mlp.down_proj.bias", "ffn_down.bias", SHAPE_DIM, ROLE_MLP_DOWN, &LayerParams::b_down, mlp_bias),
    },
    {
        global("model.norm.weight", "output_norm.weight", SHAPE_DIM, ROLE_NORM, &ModelParams::final_norm),
        global("lm_head.weight", "output.weight", SHAPE_VOCAB_BY_DIM, ROLE_LM_HEAD, &ModelParams::lm_head, untied),
    },
};

}  // namespace smezo
