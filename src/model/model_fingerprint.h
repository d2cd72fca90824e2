// The base model's fingerprint, which a seed log's header records ("model_fingerprint") so that
// replay and --resume refuse a model other than the one the run started from. S-MeZO's thresholds
// catch most other models by themselves; MeZO and R-MeZO logs have only this.
//   {"weights": "<16 hex digits>", "qk_rows": "interleaved" | "rotate-half" | "none"}
// weights: FNV-1a 64 over every base tensor (sorted by name) of its name, shape and the stored
// values (as fp32 bit patterns) of its first and last rows: a few KB per model, read back from the
// backend, so a converted copy of the same weights in the same storage dtype matches and any
// other checkpoint (another model, a fine-tuned one, a bf16 rounding) does not.
// qk_rows: the row order of the Q and K weights in memory (a GGUF or llama2.c model keeps
// interleaved RoPE rows, a Hugging Face directory rotate-half ones). The sampled rows are the same
// in both orders, so a conversion between them keeps `weights` and changes only this; the noise
// lands on other entries then, so replay and resume refuse it with their own message.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

// {tensor name: 16 hex digits} of this process's base tensors (a pipeline stage's only; adapters left out).
nlohmann::json model_fingerprint_parts(Model& model);
// The fingerprint of the whole model from every tensor's part (merged over pipeline stages).
nlohmann::json model_fingerprint(const nlohmann::json& parts, const ModelConfig& config);
// What differs between a logged fingerprint and this model's, in a phrase; "" when they match or the
// log has none (runs before the field). model_path names this command's model.
std::string model_fingerprint_difference(const nlohmann::json& logged, const nlohmann::json& mine,
                                         const std::string& model_path);

}  // namespace smezo
