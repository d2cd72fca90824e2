// mask.json of a run: for every tensor a method masks (S-MeZO magnitude, R-MeZO random), the mask
// the first step applies, on the current weights (the base ones at a start): threshold h (S-MeZO:
// SpsaOptimizer's (1 - sparsity) quantile of |W|) or keep probability (R-MeZO), and the entries
// perturbed (count, fraction), each decided by mask_keep (common/noise_spec.h) as the probes do.
//   {"method": "smezo", "sparsity": 0.75, "perturbed": K, "entries": N, "fraction_perturbed": K/N,
//    "tensors": {"model.layers.0.mlp.up_proj.weight": {"mask": "magnitude", "threshold": h,
//      "threshold_f32_bits": "3c0c...", "entries": n, "perturbed": k, "fraction_perturbed": k/n}, ...}}
// MeZO (no tensor masked) has no mask.json.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "smezo/train.h"

namespace smezo {

// The record above for the model's current weights; null when no tensor is masked. Reads
// each masked tensor back to the host once (Backend::download), one tensor at a time.
nlohmann::json spsa_mask_record(Model& model, const SpsaOptions& opts);

// Writes spsa_mask_record to dir/mask.json atomically, unless null. this_stage_only: a pipeline
// stage's own layers only, as the record says.
void spsa_mask_write(const std::string& dir, Model& model, const SpsaOptions& opts, bool this_stage_only);

}  // namespace smezo
