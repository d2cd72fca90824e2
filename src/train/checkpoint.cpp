// Hugging Face checkpoint export (see checkpoint.h).
#include "train/checkpoint.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "common/check.h"
#include "common/device_names.h"
#include "common/input_file.h"
#include "common/file_util.h"
#include "common/half.h"
#include "formats/safetensors.h"
#include "model/hf_dir.h"
#include "model/model_params.h"
#include "model/model_size.h"
#include "run/summary.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace smezo {

namespace {

DType parse_checkpoint_dtype(std::optional<DType> dtype, DType storage) {
  if (!dtype) return storage;
  enum_require_known(dtype_option_names(), *dtype, "checkpoint dtype");
  return *dtype;
}

const char* torch_dtype_name(DType d) { return d == DTYPE_BF16 ? "bfloat16" : d == DTYPE_F16 ? "float16" : "float32"; }

FreeSpaceQuery& free_space_query() {
  static FreeSpaceQuery query;
  return query;
}

// What a checkpoint of `model` consists of: its config and the tensors' names, dtype, shapes.
struct CheckpointPlan {
  ModelConfig config;  // as written: rotate-half RoPE
  bool permute_qk = false;
  DType dtype = DTYPE_F32;
  std::vector<SafetensorsSpec> specs;  // one per model.params(), same order
  std::string config_json;
};

CheckpointPlan plan_checkpoint(const CheckpointSource& source, std::optional<DType> dtype) {
  CheckpointPlan plan;
  plan.config = source.config;
  plan.permute_qk = rope_rows_interleaved(plan.config);
  plan.config.rope_style = ROPE_ROTATE_HALF;
  plan.dtype = parse_checkpoint_dtype(dtype, source.storage);
  std::map<std::string, std::vector<int64_t>> shapes;  // Hugging Face shapes (1-D for vectors)
  for (const ExpectedTensor& e : expected_tensors(plan.config)) shapes[e.name] = e.shape;
  for (const CheckpointTensor& t : source.tensors) plan.specs.push_back({t.name, plan.dtype, shapes.at(t.name)});
  plan.config_json = hf_config_json(plan.config, torch_dtype_name(plan.dtype));
  return plan;
}

const std::map<std::string, std::string> kMetadata = {{"format", "pt"}};

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// What save_tokenizer_files will write: the files it copies, or for a GGUF a generous allowance.
int64_t tokenizer_files_bytes(const std::string& tokenizer_path, int64_t model_max_length) {
  if (tokenizer_path.empty()) return 0;
  if (ends_with(tokenizer_path, ".gguf")) return int64_t(64) << 20;
  if (ends_with(tokenizer_path, ".json")) return file_bytes(tokenizer_path);
  if (!std::filesystem::is_directory(tokenizer_path)) {
    const SentencepieceModelInfo info = read_sentencepiece_model_info(tokenizer_path);
    const std::string bos = sentencepiece_special_pieces(tokenizer_path).bos;
    return file_bytes(tokenizer_path) +
           static_cast<int64_t>(sentencepiece_tokenizer_config_json(tokenizer_path, model_max_length).size()) +
           (sentencepiece_needs_tokenizer_json(info) ? static_cast<int64_t>(sentencepiece_tokenizer_json(info, bos).size())
                                                     : 0);
  }
  int64_t n = 0;
  for (const std::string& name : tokenizer_file_names()) n += file_bytes(tokenizer_path + "/" + name);
  return n;
}

int64_t plan_bytes(const CheckpointPlan& plan, const std::string& tokenizer_path, const nlohmann::json& run_settings) {
  int64_t n = safetensors_file_bytes(plan.specs, kMetadata) + static_cast<int64_t>(plan.config_json.size());
  n += tokenizer_files_bytes(tokenizer_path, plan.config.max_seq_len);
  if (run_settings.is_object()) n += static_cast<int64_t>(run_settings.dump(2).size()) + 1;
  return n;
}

// One tensor as written: fetched as fp32, checked, q/k rows permuted, converted to dtype.
void fill_tensor(const CheckpointSource& source, const CheckpointPlan& plan, size_t index, const std::string& dir,
                 std::vector<float>* host, char* out) {
  const CheckpointTensor& t = source.tensors[index];
  host->resize(static_cast<size_t>(t.rows * t.cols));
  source.fetch(index, host);
  SMEZO_REQUIRE(host->size() == static_cast<size_t>(t.rows * t.cols), "checkpoint tensor %s: %zu values fetched, "
                "%lld expected", t.name.c_str(), host->size(), (long long)(t.rows * t.cols));
  for (size_t i = 0; i < host->size(); i++)
    SMEZO_REQUIRE(std::isfinite((*host)[i]), "not writing checkpoint %s: tensor %s holds a non-finite value (%g at "
                  "index %zu); the previous checkpoint is kept", dir.c_str(), t.name.c_str(), (*host)[i], i);
  if (plan.permute_qk && rope_permutes_rows(t.role, t.is_bias)) {
    const std::vector<float> interleaved = *host;
    interleaved_rows_to_rotate_half(interleaved.data(), t.rows, t.cols, plan.config.head_dim, host->data());
  }
  const std::vector<float>& w = *host;
  if (plan.dtype == DTYPE_F32) {
    std::memcpy(out, w.data(), w.size() * sizeof(float));
    return;
  }
  uint16_t* o = reinterpret_cast<uint16_t*>(out);
  for (size_t i = 0; i < w.size(); i++) {
    const uint16_t h = plan.dtype == DTYPE_BF16 ? float_to_bf16(w[i]) : float_to_f16(w[i]);
    const float back = plan.dtype == DTYPE_BF16 ? bf16_to_float(h) : f16_to_float(h);
    SMEZO_REQUIRE(std::isfinite(back), "not writing checkpoint %s: tensor %s value %g at index %zu does not fit %s "
                  "(it would become infinite); the previous checkpoint is kept ---> HINT: --checkpoint-dtype f32 "
                  "or bf16", dir.c_str(), t.name.c_str(), w[i], i, dtype_name(plan.dtype));
    std::memcpy(o + i, &h, sizeof h);
  }
}

// The nearest folder of `path` that exists (the checkpoint folder may not exist yet).
std::string existing_folder(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  std::error_code ec;
  while (!std::filesystem::is_directory(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  return p.string();
}

}  // namespace

int64_t checkpoint_free_bytes(const std::string& path) {
  const std::string folder = existing_folder(path);
  struct statvfs st {};
  SMEZO_REQUIRE(::statvfs(folder.c_str(), &st) == 0, "cannot query the free space of %s: %s", folder.c_str(),
                std::strerror(errno));
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

FreeSpaceQuery checkpoint_set_free_space_query(FreeSpaceQuery query) {
  FreeSpaceQuery previous = free_space_query();
  free_space_query() = std::move(query);
  return previous;
}

CheckpointSource checkpoint_source(Model& model) {
  CheckpointSource source;
  source.config = model.config();
  source.storage = model.storage_dtype();
  for (const Param* p : model.params()) source.tensors.push_back({p->info.name, p->w.rows, p->w.cols, p->info.role, p->info.is_bias});
  source.fetch = [&model](size_t i, std::vector<float>* values) {
    const Param* p = model.params()[i];
    values->resize(static_cast<size_t>(p->w.numel()));
    model.backend().download(p->w, values->data());
  };
  return source;
}

DType checkpoint_dtype(Model& model, std::optional<DType> dtype) {
  return parse_checkpoint_dtype(dtype, model.storage_dtype());
}

int64_t checkpoint_bytes(Model& model, const std::string& tokenizer_path, const nlohmann::json& run_settings,
                         std::optional<DType> dtype) {
  return plan_bytes(plan_checkpoint(checkpoint_source(model), dtype), tokenizer_path, run_settings);
}

void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings, std::optional<DType> dtype) {
  save_hf_checkpoint(checkpoint_source(model), dir, tokenizer_path, run_settings, dtype);
}

namespace {

void write_checkpoint(const CheckpointSource& source, const std::string& dir, const std::string& tokenizer_path,
                      const nlohmann::json& run_settings, std::optional<DType> dtype) {
  const CheckpointPlan plan = plan_checkpoint(source, dtype);
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  if (fs::exists(dir)) {
    // only ever replace a previous checkpoint, never a directory holding anything else
    SMEZO_REQUIRE(fs::is_directory(dir), "refusing to replace %s with a checkpoint: it is not a folder ---> HINT: "
                  "move it away", dir.c_str());
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      const std::vector<std::string>& tok_files = tokenizer_file_names();
      SMEZO_REQUIRE(name == "config.json" || name == "model.safetensors" || name == kRunSettingsFile ||
                        std::find(tok_files.begin(), tok_files.end(), name) != tok_files.end(),
                    "refusing to replace %s with a checkpoint: it holds %s, which is not part of one ---> HINT: "
                    "choose a new or empty folder", dir.c_str(), name.c_str());
    }
  }
  fs::remove_all(tmp, ec);  // a leftover of an earlier failure: its space counts as free
  const int64_t need = plan_bytes(plan, tokenizer_path, run_settings);
  const int64_t avail = free_space_query() ? free_space_query()(tmp) : checkpoint_free_bytes(tmp);
  SMEZO_REQUIRE(avail >= need, "not writing checkpoint %s: it needs %lld bytes (%s), the disk has %lld bytes "
                "(%s) free; the previous checkpoint is kept ---> HINT: free disk space, or choose another "
                "--checkpoint-dtype; smezo replay rebuilds these weights from the seed log at any time",
                dir.c_str(), (long long)need, format_bytes(need).c_str(), (long long)avail,
                format_bytes(avail).c_str());
  write_folder_swapped(dir, "checkpoint", [&](const std::string& into) {
    std::vector<float> host;  // one tensor at a time
    write_safetensors_streamed(into + "/model.safetensors", plan.specs, kMetadata,
                               [&](size_t i, char* out) { fill_tensor(source, plan, i, dir, &host, out); });
    run_write_file_atomic(into + "/config.json", plan.config_json);
    save_tokenizer_files(tokenizer_path, into, plan.config.max_seq_len);  // sentencepiece, tokenizer.json, ...
    if (run_settings.is_object())
      run_write_file_atomic(into + "/" + kRunSettingsFile, run_settings.dump(2) + "\n");
  });
}

}  // namespace

void write_folder_swapped(const std::string& dir, const std::string& what,
                          const std::function<void(const std::string& tmp)>& fill) {
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a leftover of an earlier failure
  fs::create_directories(tmp, ec);
  if (ec) throw_write_error(("create the " + what + " folder").c_str(), tmp, ec.value());
  try {
    fill(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // swap in (see checkpoint.h)
  fs::remove_all(old, ec);
  if (fs::exists(dir)) {
    fs::rename(dir, old, ec);
    if (ec) fs::remove_all(tmp);
    if (ec) throw_write_error(("move the previous " + what + " out of").c_str(), dir, ec.value());
  }
  fs::rename(tmp, dir, ec);
  if (ec) throw_write_error(("move the new " + what + " into").c_str(), dir, ec.value());
  fs::remove_all(old, ec);
}

void save_hf_checkpoint(const CheckpointSource& source, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings, std::optional<DType> dtype) {
  try {
    write_checkpoint(source, dir, tokenizer_path, run_settings, dtype);
  } catch (...) {
    if (source.abandon) source.abandon();  // it knows which tensors are still awaited
    throw;
  }
}

nlohmann::json checkpoint_read_run_settings(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(model_path, ec)) return nullptr;
  const std::string path = model_path + "/" + kRunSettingsFile;
  if (!path_exists(path)) return nullptr;
  const std::string text = input_read(path, "run settings file", kInputSettingsMaxBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s is not valid JSON (%s) ---> HINT: delete it to evaluate with the command line's "
                "options only", path.c_str(), e.what());
  }
  SMEZO_REQUIRE(j.is_object(), "%s must hold a JSON object", path.c_str());
  return j;
}

}  // namespace smezo
