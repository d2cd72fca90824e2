// mask.json of a run: for every tensor a method masks (S-MeZO magnitude, R-MeZO random), the mask the
// first step applies on the current weights: threshold h (S-MeZO: the (1 - sparsity) quantile of |W|)
// or keep probability (R-MeZO), and the entries perturbed (count, fraction), decided by mask_keep.
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

// The record above for the current weights (null: none masked); downloads one tensor at a time.
nlohmann::json spsa_mask_record(Model& model, const SpsaOptions& opts);

// spsa_mask_record to dir/mask.json atomically, unless null; this_stage_only: a pipeline stage's layers.
void spsa_mask_write(const std::string& dir, Model& model, const SpsaOptions& opts, bool this_stage_only);

}  // namespace smezo
