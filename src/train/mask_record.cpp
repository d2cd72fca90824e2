// The masks a run's first step applies, counted (see mask_record.h).
#include "train/mask_record.h"

#include <vector>

#include "common/noise_spec.h"
#include "run/number_format.h"  // float_hex_bits
#include "run/summary.h"
#include "train/spsa.h"
#include "train/train_options.h"  // spsa_resolve_defaults

namespace smezo {

namespace {

// Entries of p that mask_keep perturbs, four at a time as the noise paths group them.
int64_t count_perturbed(const Param& p, const std::vector<float>& w) {
  const ParamInfo& in = p.info;
  const int64_t n = static_cast<int64_t>(w.size());
  int64_t kept = 0;
  bool keep[4];
  for (int64_t g = 0; 4 * g + 3 < n; ++g) {
    mask_keep_group4(in.mask, &w[4 * g], in.threshold, in.keep_prob, in.mask_seed, in.tensor_id, g, keep);
    kept += keep[0] + keep[1] + keep[2] + keep[3];
  }
  for (int64_t i = n - n % 4; i < n; ++i)
    kept += mask_keep(in.mask, w[i], in.threshold, in.keep_prob, in.mask_seed, in.tensor_id, i);
  return kept;
}

}  // namespace

nlohmann::json spsa_mask_record(Model& model, const SpsaOptions& opts) {
  nlohmann::json tensors = nlohmann::json::object();
  int64_t entries = 0, perturbed = 0;
  std::vector<float> w;
  for (Param* p : model.params()) {
    if (p->info.mask == MASK_DENSE || !p->info.trainable) continue;
    w.resize(static_cast<size_t>(p->w.numel()));
    model.backend().download(p->w, w.data());
    const int64_t kept = count_perturbed(*p, w);
    nlohmann::json t = {{"entries", p->w.numel()}, {"perturbed", kept},
                        {"fraction_perturbed", static_cast<double>(kept) / static_cast<double>(p->w.numel())}};
    if (p->info.mask == MASK_MAGNITUDE) {
      t["mask"] = "magnitude";
      t["threshold"] = p->info.threshold;
      t["threshold_f32_bits"] = float_hex_bits(p->info.threshold);
    } else {
      t["mask"] = "random";
      t["keep_prob"] = p->info.keep_prob;
    }
    tensors[p->info.name] = t;
    entries += p->w.numel();
    perturbed += kept;
  }
  if (tensors.empty()) return nullptr;
  return {{"method", method_name(opts.method)}, {"sparsity", *spsa_resolve_defaults(opts).sparsity},
          {"entries", entries}, {"perturbed", perturbed},
          {"fraction_perturbed", static_cast<double>(perturbed) / static_cast<double>(entries)},
          {"tensors", tensors}};
}

void spsa_mask_write(const std::string& dir, Model& model, const SpsaOptions& opts, bool this_stage_only) {
  nlohmann::json record = spsa_mask_record(model, opts);
  if (record.is_null()) return;
  if (this_stage_only) record["tensors_of"] = "the first pipeline stage only (each stage holds its own layers)";
  summary_write(dir + "/mask.json", record);
}

}  // namespace smezo
