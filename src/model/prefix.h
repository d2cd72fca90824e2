// Prefix tuning (Li & Liang 2021, as MeZO's prefix mode and Hugging Face PEFT's PREFIX_TUNING
// build it, without reparameterisation): every layer gets P key rows and P value rows that all
// queries of every sequence attend to, as if P tokens stood before the sequence. Under
// --tune prefix they are the only tuned parameters; the base weights stay as loaded.
//
// Semantics (PEFT's, a key/value cache of P entries): the prefix holds attention's keys after
// the rotary embedding and its values, per layer (P, n_kv_heads*head_dim); the sequence's
// tokens sit at positions P, P+1, ... (rotary and learned positions alike), and every query
// sees all P prefix entries before its causal span.
//
// Initialisation is MeZO's "init by real activations": P token ids drawn from the run seed
// (prefix_init_tokens), run through the base model with the key/value cache; the cache's P
// rows become the prefix. So the prefixed model starts as the base model reading those P
// tokens first, and a run, its resume and its replay start from the same prefix.
//
// The prefix tensors keep the role of what they stand for (k, v), are never linear weights,
// and get tensor ids after the base model's (layer by layer, key then value), so the base
// tensors' noise is the same with and without a prefix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace smezo {

struct PrefixOptions {
  int64_t tokens = 5;  // P, MeZO's default num_prefix
};

// One layer's prefix.
struct PrefixLayer {
  Param key;    // (P, n_kv_heads*head_dim): keys after the rotary embedding
  Param value;  // (P, n_kv_heads*head_dim)
};

// Checks P >= 1.
void prefix_validate(const PrefixOptions& o);

// The "tune" object of a run header ({"mode": "prefix", "tokens": 5, "init": "real-activations"})
// and back (throws naming `source` when malformed).
nlohmann::json prefix_describe(const PrefixOptions& o);
PrefixOptions prefix_options_from_json(const nlohmann::json& j, const std::string& source);

// The P token ids whose activations initialise the prefix: uniform over [0, vocab_size) from
// (seed, index), as MeZO draws them (torch.randint over the vocabulary).
std::vector<int32_t> prefix_init_tokens(uint64_t seed, int64_t vocab_size, int64_t count);

}  // namespace smezo
