// The noise spec (placeholder: being written). Defines MaskKind for now.
#pragma once

namespace smezo {

// Which entries of a parameter the optimiser perturbs and updates.
enum MaskKind {
  MASK_DENSE,      // every entry (MeZO; embeddings, norms and biases in every method)
  MASK_MAGNITUDE,  // S-MeZO: entries with |w| <= threshold, recomputed from the current w
  MASK_RANDOM,     // R-MeZO: a fixed random subset with probability keep_prob, regenerated
};

}  // namespace smezo
