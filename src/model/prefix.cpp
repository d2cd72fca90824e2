// Prefix tuning options and initial tokens (see prefix.h).
#include "model/prefix.h"

#include <algorithm>

#include "common/check.h"
#include "common/splitmix.h"
#include "formats/json_read.h"

namespace smezo {

void prefix_validate(const PrefixOptions& o, const ValueOrigin& origin) {
  require_in_range("--prefix-tokens", ValueRange{true, 1, static_cast<double>(kPrefixMaxTokens)},
                   static_cast<double>(o.tokens), origin);
}

void prefix_require_room(int64_t P, int64_t max_seq_len) {
  SMEZO_REQUIRE(P <= max_seq_len - 2, "a prefix of %lld tokens leaves %lld of the model's %lld positions for the "
                "sequence, which needs 2 at least (BOS and a token) ---> HINT: use fewer prefix tokens "
                "(--prefix-tokens %lld or fewer)", (long long)P, (long long)std::max<int64_t>(0, max_seq_len - P),
                (long long)max_seq_len, (long long)std::max<int64_t>(1, max_seq_len - 2));
}

nlohmann::json prefix_describe(const PrefixOptions& o) {
  return {{"mode", "prefix"}, {"tokens", o.tokens}, {"init", "real-activations"}};
}

PrefixOptions prefix_options_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    SMEZO_REQUIRE(j.at("mode").get<std::string>() == "prefix", "%s: tune mode '%s' is not prefix", source.c_str(),
                  j.at("mode").get<std::string>().c_str());
    SMEZO_REQUIRE(j.at("init").get<std::string>() == "real-activations",
                  "%s: prefix init '%s' is not one this build knows (real-activations)", source.c_str(),
                  j.at("init").get<std::string>().c_str());
    PrefixOptions o;
    o.tokens = json_number_at<int64_t>(j, "tokens", source);
    prefix_validate(o, ValueOrigin{source, {{"--prefix-tokens", "tokens"}}, "the run header was edited or damaged"});
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s: the prefix settings are incomplete or malformed: %s", source.c_str(), e.what());
  }
}

std::vector<int32_t> prefix_init_tokens(uint64_t seed, int64_t vocab_size, int64_t count) {
  SMEZO_REQUIRE(vocab_size >= 1 && count >= 0, "prefix_init_tokens: vocabulary %lld, %lld tokens",
                (long long)vocab_size, (long long)count);
  const uint64_t base = splitmix64(seed ^ (0x505245464958ULL << 16));  // "PREFIX"
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < count; i++)
    tokens.push_back(static_cast<int32_t>(splitmix64(base + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab_size)));
  return tokens;
}

}  // namespace smezo
