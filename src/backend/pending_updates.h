// The folded update (docs/ARCHITECTURE.md, "One training step"): a linear weight's update of step t
// is held back by the backend and applied by the first pass of step t + 1 that reads the weight under
// a perturbing probe, inside that linear's W' pass: W is read once, the held updates applied in
// order, W written, and W+ (W-) formed from the stored result. Bit for bit Backend::update() in
// turn, then the read. PendingUpdates is a folding backend's book of held updates, and the rules
// every such backend keeps: a held update is applied before any other read of its weight (settle),
// and a read that cannot apply it (download, abs_quantile, upload) throws: a missed flush is loud.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/tensor.h"

namespace smezo {

class Backend;

// One Backend::update call's arguments: W <- W - coef·m(W)⊙z(seed) - decay·m(W)⊙W.
struct UpdateArgs {
  float coef = 0.0f;
  float decay = 0.0f;
  uint64_t seed = 0;
};

// Whether a parameter's update may be held for the fold: a trainable linear weight of the model. Not
// embeddings, norms, biases or adapters (their ops have no W' pass; a tied LM head is the embedding,
// read by the gather before any linear could apply it).
inline bool update_foldable(const ParamInfo& info) {
  return info.trainable && info.is_linear && info.adapter == ADAPTER_NONE;
}

class PendingUpdates {
 public:
  struct Entry {
    Param* param = nullptr;           // null: nothing was held
    std::vector<UpdateArgs> updates;  // in the order they apply
  };

  // Holds `updates` for p (update_foldable); any held for p before are applied first, with b.update().
  void hold(Backend& b, Param& p, const std::vector<UpdateArgs>& updates);
  // What is held for the tensor at w.data, removed from the book (Entry::param null when nothing).
  Entry take(const Tensor& w);
  // Applies what is held for w, if anything, with b.update() (a read that does not fold).
  void settle(Backend& b, const Tensor& w);
  // A linear's read of w: what is held for w, removed, for its W' pass to apply, when that is at most
  // `fold_max` updates (0: the read does not fold); otherwise settle(b, w) and nothing.
  Entry take_for_linear(Backend& b, const Tensor& w, size_t fold_max);
  // Applies everything held, with b.update().
  void flush(Backend& b);
  // Throws unless nothing is held for w: `what` reads it, and only a linear can apply a held update.
  void require_none(const Tensor& w, const char* what) const;
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  // Weights whose held updates a linear has applied inside its W' pass, and those settled (tests).
  int64_t folded = 0, settled = 0;

  static void apply(Backend& b, const Entry& e);  // e's updates with b.update(), in order

 private:
  std::vector<Entry> entries_;  // a handful per layer: a linear search
};

}  // namespace smezo
