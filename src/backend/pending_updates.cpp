// The book of held updates (see pending_updates.h).
#include "backend/pending_updates.h"

#include "backend/backend.h"
#include "common/check.h"

namespace smezo {

void PendingUpdates::apply(Backend& b, const Entry& e) {
  for (const UpdateArgs& u : e.updates) b.update(*e.param, u.coef, u.decay, u.seed);
}

void PendingUpdates::hold(Backend& b, Param& p, const std::vector<UpdateArgs>& updates) {
  SMEZO_REQUIRE(update_foldable(p.info), "%s: only a trainable linear weight's update can be held for the fold "
                "(internal error)", p.info.name.c_str());
  settle(b, p.w);  // a step whose passes never read p (no rows): its update goes first
  if (!updates.empty()) entries_.push_back(Entry{&p, updates});
}

PendingUpdates::Entry PendingUpdates::take(const Tensor& w) {
  for (size_t i = 0; i < entries_.size(); i++) {
    if (entries_[i].param->w.data != w.data) continue;
    Entry e = std::move(entries_[i]);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
    return e;
  }
  return Entry{};
}

void PendingUpdates::settle(Backend& b, const Tensor& w) {
  if (entries_.empty() || w.data == nullptr) return;
  const Entry e = take(w);
  if (!e.param) return;
  apply(b, e);
  settled++;
}

PendingUpdates::Entry PendingUpdates::take_for_linear(Backend& b, const Tensor& w, size_t fold_max) {
  if (entries_.empty()) return Entry{};
  Entry e = take(w);
  if (!e.param) return e;
  if (e.updates.size() > fold_max) {
    apply(b, e);
    settled++;
    return Entry{};
  }
  folded++;
  return e;
}

void PendingUpdates::flush(Backend& b) {
  while (!entries_.empty()) settle(b, entries_.front().param->w);
}

void PendingUpdates::require_none(const Tensor& w, const char* what) const {
  for (const Entry& e : entries_)
    SMEZO_REQUIRE(e.param->w.data != w.data, "%s of %s while its folded update is still held: a flush_updates() "
                  "is missing before this read (internal error) ---> HINT: --fold-update off avoids the fold",
                  what, e.param->info.name.c_str());
}

}  // namespace smezo
