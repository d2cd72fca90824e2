// Prefix tuning (Li & Liang 2021, as MeZO and PEFT's PREFIX_TUNING, no reparameterisation): every
// layer gets P key and P value rows that all queries attend to, as if P tokens stood before the
// sequence; under --tune prefix the only tuned parameters. As PEFT's key/value cache: keys after RoPE;
// the tokens sit at positions P, P+1, ... (rotary and learned alike).
// Init is MeZO's "real activations": the cache rows of P seeded tokens (prefix_init_tokens) run
// through the base model, so run, resume and replay start from the same prefix.
// Roles k and v; tensor ids follow the base model's (layer by layer, key then value): base noise kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"
#include "common/value_range.h"

namespace smezo {

struct PrefixOptions {
  int64_t tokens = 5;  // P, MeZO's default num_prefix
};

struct PrefixLayer {
  Param key;    // (P, n_kv_heads*head_dim): keys after the rotary embedding
  Param value;  // (P, n_kv_heads*head_dim)
};

// Throws unless 1 <= P <= kPrefixMaxTokens (Model::add_prefix also demands room in the context); messages
// name --prefix-tokens, or a file's field when origin names one.
constexpr int64_t kPrefixMaxTokens = 65536;
void prefix_validate(const PrefixOptions& o, const ValueOrigin& origin = {});
// Throws unless P prefix tokens leave a model of max_seq_len positions room for a sequence (BOS and a token).
void prefix_require_room(int64_t tokens, int64_t max_seq_len);

// Run header's "tune" object ({"mode": "prefix", "tokens": 5, ...}) and back (throws naming `source`).
nlohmann::json prefix_describe(const PrefixOptions& o);
PrefixOptions prefix_options_from_json(const nlohmann::json& j, const std::string& source);

// P ids uniform over [0, vocab_size) from (seed, index), as MeZO's torch.randint.
std::vector<int32_t> prefix_init_tokens(uint64_t seed, int64_t vocab_size, int64_t count);

}  // namespace smezo
