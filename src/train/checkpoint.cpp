// Hugging Face checkpoint export (see checkpoint.h).
#include "train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "common/check.h"
#include "formats/hf_dir.h"
#include "formats/safetensors.h"
#include "run/summary.h"
#include "tokenizer/tokenizer_files.h"

namespace smezo {

namespace {

bool is_qk(const std::string& name) {
  return name.find("self_attn.q_proj.weight") != std::string::npos ||
         name.find("self_attn.k_proj.weight") != std::string::npos;
}

// Interleaved pairs (2i, 2i+1) of each head -> rotate-half rows (i, i + hd/2).
std::vector<float> permute_to_rotate_half(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t hd) {
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < rows / hd; h++)
    for (int64_t i = 0; i < hd / 2; i++)
      for (int64_t k = 0; k < cols; k++) {
        out[(h * hd + i) * cols + k] = w[(h * hd + 2 * i) * cols + k];
        out[(h * hd + i + hd / 2) * cols + k] = w[(h * hd + 2 * i + 1) * cols + k];
      }
  return out;
}

}  // namespace

void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings) {
  ModelConfig config = model.config();
  const bool permute = config.arch != ARCH_OPT && config.rope_style == ROPE_INTERLEAVED;
  config.rope_style = ROPE_ROTATE_HALF;

  std::map<std::string, std::vector<int64_t>> shapes;  // Hugging Face shapes (1-D for vectors)
  for (const ExpectedTensor& e : expected_tensors(config)) shapes[e.name] = e.shape;
  std::vector<std::vector<float>> data;
  std::vector<SafetensorsEntry> entries;
  data.reserve(model.params().size());
  for (const Param* p : model.params()) {
    std::vector<float> host(static_cast<size_t>(p->w.numel()));
    model.backend().download(p->w, host.data());
    for (size_t i = 0; i < host.size(); i++)
      SMEZO_REQUIRE(std::isfinite(host[i]), "not writing checkpoint %s: tensor %s holds a non-finite value (%g at "
                    "index %zu); the previous checkpoint is kept", dir.c_str(), p->info.name.c_str(), host[i], i);
    if (permute && is_qk(p->info.name)) host = permute_to_rotate_half(host, p->w.rows, p->w.cols, config.head_dim);
    data.push_back(std::move(host));
    SafetensorsEntry e;
    e.name = p->info.name;
    e.dtype = DTYPE_F32;
    e.shape = shapes.at(p->info.name);
    e.data = data.back().data();
    entries.push_back(e);
  }
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  SMEZO_REQUIRE(!ec, "cannot create checkpoint directory %s: %s", tmp.c_str(), ec.message().c_str());
  write_safetensors(tmp + "/model.safetensors", entries, {{"format", "pt"}});
  run_write_file_atomic(tmp + "/config.json", hf_config_json(config, "float32"));
  save_tokenizer_files(tokenizer_path, tmp, config.max_seq_len);  // sentencepiece, tokenizer.json, ...
  if (run_settings.is_object())
    run_write_file_atomic(tmp + "/" + kRunSettingsFile, run_settings.dump(2) + "\n");
  // swap in: dir -> dir.old, tmp -> dir, drop dir.old
  fs::remove_all(old, ec);
  if (fs::exists(dir)) {
    // only ever replace a previous checkpoint, never a directory holding anything else
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      const std::vector<std::string>& tok_files = tokenizer_file_names();
      if (name != "config.json" && name != "model.safetensors" && name != kRunSettingsFile &&
          std::find(tok_files.begin(), tok_files.end(), name) == tok_files.end()) {
        fs::remove_all(tmp, ec);
        throw_error("refusing to replace %s with a checkpoint: it holds %s, which is not part of one "
                    "---> HINT: choose a new or empty folder", dir.c_str(), name.c_str());
      }
    }
    fs::rename(dir, old, ec);
    SMEZO_REQUIRE(!ec, "cannot replace %s: %s", dir.c_str(), ec.message().c_str());
  }
  fs::rename(tmp, dir, ec);
  SMEZO_REQUIRE(!ec, "cannot move checkpoint into %s: %s", dir.c_str(), ec.message().c_str());
  fs::remove_all(old, ec);
}

nlohmann::json checkpoint_read_run_settings(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(model_path, ec)) return nullptr;
  const std::string path = model_path + "/" + kRunSettingsFile;
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) return nullptr;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s is not valid JSON (%s) ---> HINT: delete it to evaluate with the command line's "
                "options only", path.c_str(), e.what());
  }
  SMEZO_REQUIRE(j.is_object(), "%s must hold a JSON object", path.c_str());
  return j;
}

}  // namespace smezo
