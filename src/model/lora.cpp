// LoRA adapter options, names and initialisation (see lora.h).
#include "model/lora.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "common/splitmix.h"
#include "formats/json_read.h"

namespace smezo {

namespace {

constexpr ParamRole kLoraRoles[] = {ROLE_ATTN_Q,   ROLE_ATTN_K, ROLE_ATTN_V,  ROLE_ATTN_O,
                                    ROLE_MLP_GATE, ROLE_MLP_UP, ROLE_MLP_DOWN};

}  // namespace

const char* lora_module_name(ParamRole role) {
  switch (role) {
    case ROLE_ATTN_Q: return "q_proj";
    case ROLE_ATTN_K: return "k_proj";
    case ROLE_ATTN_V: return "v_proj";
    case ROLE_ATTN_O: return "o_proj";
    case ROLE_MLP_GATE: return "gate_proj";
    case ROLE_MLP_UP: return "up_proj";
    case ROLE_MLP_DOWN: return "down_proj";
    default: return "?";
  }
}

std::vector<ParamRole> lora_targets_parse(const std::string& list) {
  std::vector<bool> wanted(sizeof kLoraRoles / sizeof kLoraRoles[0], false);
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool found = false;
    for (size_t i = 0; i < wanted.size(); i++) {
      if (item != param_role_name(kLoraRoles[i])) continue;
      SMEZO_REQUIRE(!wanted[i], "--lora-targets '%s' names '%s' twice", list.c_str(), item.c_str());
      wanted[i] = found = true;
    }
    SMEZO_REQUIRE(found, "--lora-targets '%s': '%s' is not a linear layer's role (choose from q,k,v,o,gate,up,down)",
                  list.c_str(), item.c_str());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<ParamRole> roles;
  for (size_t i = 0; i < wanted.size(); i++)
    if (wanted[i]) roles.push_back(kLoraRoles[i]);
  return roles;
}

std::string lora_targets_name(const std::vector<ParamRole>& targets) {
  std::string out;
  for (ParamRole r : targets) out += (out.empty() ? "" : ",") + std::string(param_role_name(r));
  return out;
}

void lora_validate(const LoraOptions& o, const ValueOrigin& origin) {
  require_in_range("--lora-r", ValueRange{true, 1, static_cast<double>(kLoraMaxRank)}, static_cast<double>(o.rank),
                   origin);
  require_in_range("--lora-alpha", ValueRange::above(0), o.alpha, origin);
  if (o.targets.empty()) origin.fail("--lora-targets", "names no layer");
}

void lora_require_useful_rank(const std::vector<Param*>& params, const LoraOptions& o) {
  for (const Param* p : params) {
    const bool target = std::find(o.targets.begin(), o.targets.end(), p->info.role) != o.targets.end();
    if (!target || !p->info.is_linear || p->info.adapter != ADAPTER_NONE) continue;
    const int64_t rows = p->w.rows, cols = p->w.cols, most = (rows * cols - 1) / (rows + cols);
    SMEZO_REQUIRE(o.rank <= most, "--lora-r %lld: the adapter of %s [%lld, %lld] would hold %lld numbers, as many as "
                  "the weight itself or more ---> HINT: use --lora-r %lld or less (to tune whole weights: --tune full)",
                  (long long)o.rank, p->info.name.c_str(), (long long)rows, (long long)cols,
                  (long long)(o.rank * (rows + cols)), (long long)std::max<int64_t>(1, most));
  }
}

nlohmann::json lora_describe(const LoraOptions& o) {
  return {{"mode", "lora"}, {"r", o.rank}, {"alpha", o.alpha}, {"targets", lora_targets_name(o.targets)}};
}

LoraOptions lora_options_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    SMEZO_REQUIRE(j.at("mode").get<std::string>() == "lora", "%s: tune mode '%s' is not lora", source.c_str(),
                  j.at("mode").get<std::string>().c_str());
    LoraOptions o;
    o.rank = json_number_at<int64_t>(j, "r", source);
    o.alpha = json_number_at<float>(j, "alpha", source);
    o.targets = lora_targets_parse(j.at("targets").get<std::string>());
    lora_validate(o, ValueOrigin{source, {{"--lora-alpha", "alpha"}, {"--lora-r", "r"}, {"--lora-targets", "targets"}},
                                 "the run header was edited or damaged"});
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s: the LoRA settings are incomplete or malformed: %s", source.c_str(), e.what());
  }
}

void lora_init_a(uint64_t seed, uint32_t tensor_id, int64_t rank, int64_t in, std::vector<float>* a) {
  // kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1/sqrt(fan_in)
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  const uint64_t base = splitmix64(seed ^ (0x4C6F5241ULL << 32) ^ tensor_id);  // "LoRA"
  a->resize(static_cast<size_t>(rank * in));
  for (int64_t i = 0; i < rank * in; i++) {
    const double u = static_cast<double>(splitmix64(base + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;  // [0, 1)
    (*a)[static_cast<size_t>(i)] = static_cast<float>((2.0 * u - 1.0) * bound);
  }
}

}  // namespace smezo
