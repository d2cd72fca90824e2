// The layer split of pipeline stages (see model_stage.h).
#include "model/model_stage.h"

#include <algorithm>

#include "common/check.h"

namespace smezo {

ModelStage model_stage(const ModelConfig& config, int index, int count) {
  SMEZO_REQUIRE(count >= 1 && index >= 0 && index < count, "pipeline stage %d of %d", index, count);
  SMEZO_REQUIRE(count <= config.n_layers, "%d pipeline stages for a model of %lld layers: every stage needs at "
                "least one layer ---> HINT: use at most %lld stages", count, (long long)config.n_layers,
                (long long)config.n_layers);
  const int64_t base = config.n_layers / count, extra = config.n_layers % count;
  ModelStage s;
  s.index = index;
  s.count = count;
  s.first_layer = index * base + std::min<int64_t>(index, extra);
  s.end_layer = s.first_layer + base + (index < extra ? 1 : 0);
  return s;
}

}  // namespace smezo
