// Emulated CUDA: the warp collectives' semantics, computed once per completed collective from
// every participating lane's operands (see exec.cpp for when a collective completes).
//   shuffles: width-segmented source lanes as the CUDA programming guide defines them; a
//     source lane inside the segment but outside the mask is an error (undefined on a GPU).
//   ballot / any / all, match_any / match_all, reduce_add/min/max, syncwarp.
#include "emu_internal.h"

namespace emu {

namespace {

void complete_shfl(CollArgs* const lanes[32], unsigned mask) {
  uint64_t out[32] = {};
  for (int l = 0; l < 32; ++l) {
    const CollArgs* a = lanes[l];
    if (a == nullptr) continue;
    const int w = a->width;
    if (w < 1 || w > 32 || (w & (w - 1)) != 0)
      collective_fault("lane %d: width %d is not a power of two in [1, 32]", l, w);
    const int seg = l & ~(w - 1);  // first lane of this lane's segment
    const int arg = static_cast<int>(a->arg);
    int src = l;
    switch (static_cast<ShflMode>(a->layout)) {
      case SHFL_IDX: src = seg + (arg & (w - 1)); break;
      case SHFL_UP: src = (l - seg) >= arg ? l - arg : l; break;
      case SHFL_DOWN: src = (l - seg) + arg < w ? l + arg : l; break;
      case SHFL_XOR: {
        const int x = l ^ arg;
        src = x >= seg + w || x < 0 || x > 31 ? l : x;
        break;
      }
    }
    if (!(mask >> src & 1u))
      collective_fault("lane %d reads lane %d, which is not in the mask (undefined on a GPU)", l, src);
    out[l] = lanes[src]->value;
  }
  for (int l = 0; l < 32; ++l)
    if (lanes[l] != nullptr) lanes[l]->result = out[l];
}

void complete_ballot(CollArgs* const lanes[32], unsigned) {
  uint64_t bits = 0;
  for (int l = 0; l < 32; ++l)
    if (lanes[l] != nullptr && lanes[l]->value != 0) bits |= 1ull << l;
  for (int l = 0; l < 32; ++l)
    if (lanes[l] != nullptr) lanes[l]->result = bits;
}

void complete_match_any(CollArgs* const lanes[32], unsigned mask) {
  unsigned done = ~mask;  // one pass per distinct value
  for (int l = 0; l < 32; ++l) {
    if (done >> l & 1u) continue;
    unsigned peers = 0;
    for (int j = l; j < 32; ++j)
      if (!(done >> j & 1u) && lanes[j]->value == lanes[l]->value) peers |= 1u << j;
    for (int j = l; j < 32; ++j)
      if (peers >> j & 1u) lanes[j]->result = peers;
    done |= peers;
  }
}

void complete_match_all(CollArgs* const lanes[32], unsigned mask) {
  const CollArgs* first = nullptr;
  bool all = true;
  for (int l = 0; l < 32; ++l) {
    if (lanes[l] == nullptr) continue;
    if (first == nullptr) first = lanes[l];
    else if (lanes[l]->value != first->value) all = false;
  }
  for (int l = 0; l < 32; ++l)
    if (lanes[l] != nullptr) {
      lanes[l]->result = all ? mask : 0u;
      lanes[l]->pred = all;
    }
}

void complete_nothing(CollArgs* const[32], unsigned) {}

template <int kOp>  // 0 add, 1 min, 2 max (unsigned 32-bit)
void complete_reduce(CollArgs* const lanes[32], unsigned) {
  uint32_t r = kOp == 1 ? 0xffffffffu : 0u;
  for (int l = 0; l < 32; ++l) {
    if (lanes[l] == nullptr) continue;
    const uint32_t v = static_cast<uint32_t>(lanes[l]->value);
    r = kOp == 0 ? r + v : kOp == 1 ? (v < r ? v : r) : (v > r ? v : r);
  }
  for (int l = 0; l < 32; ++l)
    if (lanes[l] != nullptr) lanes[l]->result = r;
}

}  // namespace

const CollOp kShfl{"__shfl*_sync", complete_shfl};
const CollOp kBallot{"__ballot_sync/__any_sync/__all_sync", complete_ballot};
const CollOp kMatchAny{"__match_any_sync", complete_match_any};
const CollOp kMatchAll{"__match_all_sync", complete_match_all};
const CollOp kSyncwarp{"__syncwarp", complete_nothing};
const CollOp kReduceAdd{"__reduce_add_sync", complete_reduce<0>};
const CollOp kReduceMin{"__reduce_min_sync", complete_reduce<1>};
const CollOp kReduceMax{"__reduce_max_sync", complete_reduce<2>};

}  // namespace emu
