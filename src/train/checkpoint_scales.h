// The checkpoint of a --tune scales run (issue 43): a GGUF of the base's block types and size.
//   DIR/model.gguf           the base file byte for byte, each packed weight's master scales rounded to
//                            f16 in place (formats/gguf_patch.h): llama.cpp, the gguf package,
//                            transformers and `smezo eval/generate --model DIR/model.gguf` load it
//   DIR/scales.safetensors   the f32 master scales, (1 or 2, n_blocks) each, named <weight>.scales (the
//                            f16 export rounds away changes below ~5e-4 of a scale; these keep them)
//   DIR/provenance.json      the sidecar: base file name, path and sha256, method, tune, steps, seed,
//                            seed log, smezo version (a new GGUF key would shift the tensor offsets)
//   DIR/smezo_run.json       the run's data settings (checkpoint.h), when given
// The folder is swapped in as full checkpoints are. --resume and `smezo replay` rebuild the masters
// from the base and the seed log, whose header names the base's sha256 (tune.base_sha256).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kScalesGgufFile = "model.gguf";
inline constexpr const char* kScalesMastersFile = "scales.safetensors";
inline constexpr const char* kScalesProvenanceFile = "provenance.json";

// The seed log header's "tune" of a scales run: {"mode": "scales", "with_m": bool, "base_sha256": hex}.
nlohmann::json scales_describe(const Model& model, const std::string& base_path);
// with_m of such a header object; throws naming `source` when it is not one.
bool scales_with_m_from_json(const nlohmann::json& tune, const std::string& source);

// Refuses a base whose sha256 is not the one the run header records (a foreign or changed file).
void scales_require_base(const nlohmann::json& tune, const std::string& base_path, const std::string& source);

// The sidecar for a checkpoint at `step` of the run whose seed log header is `header`.
nlohmann::json scales_provenance(const nlohmann::json& header, const std::string& base_path, int64_t step,
                                 const std::string& seed_log, const char* written_by);

// Writes DIR as above (Model::add_scales first).
void save_scales_checkpoint(Model& model, const std::string& dir, const std::string& base_path,
                            const nlohmann::json& provenance, const nlohmann::json& run_settings = nullptr);

}  // namespace smezo
