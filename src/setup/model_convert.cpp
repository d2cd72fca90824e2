// smezo convert (see model_convert.h).
#include "setup/model_convert.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/check.h"
#include "common/device_names.h"  // dtype_option_names
#include "common/half.h"
#include "formats/safetensors.h"
#include "model/hf_dir.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model/model_params.h"
#include "setup/model_setup.h"
#include "tokenizer/tokenizer_files.h"

namespace smezo {

const EnumNames<DType>& convert_dtype_names() {
  static const EnumNames<DType> names = {{DTYPE_BF16, "bf16"}, {DTYPE_F32, "f32"}};
  return names;
}

ConvertResult convert_to_hf_dir(const ConvertOptions& o) {
  SMEZO_REQUIRE(enum_known(convert_dtype_names(), o.dtype), "--dtype %s: convert writes bf16 or f32",
                enum_name(dtype_option_names(), o.dtype));
  SMEZO_REQUIRE(!o.out_dir.empty(), "convert needs --out DIR");
  namespace fs = std::filesystem;
  std::error_code ec;
  SMEZO_REQUIRE(!fs::exists(o.out_dir, ec) || (fs::is_directory(o.out_dir, ec) && fs::is_empty(o.out_dir, ec)),
                "--out %s exists and is not an empty folder ---> HINT: choose a new folder", o.out_dir.c_str());
  ConvertResult r;
  r.model_path = resolve_model_path(o.model_path);
  const WeightSource source = load_weights(r.model_path);
  OpenedTokenizer tok = open_model_tokenizer(r.model_path, o.tokenizer_path);
  check_tokenizer_matches(*tok.tokenizer, tok.path, source.config, r.model_path);
  r.tokenizer_path = tok.path;

  ModelConfig config = source.config;
  const bool permute = rope_rows_interleaved(config);
  config.rope_style = ROPE_ROTATE_HALF;
  const bool bf16 = o.dtype == DTYPE_BF16;

  std::vector<std::vector<char>> bytes;  // the output tensors, one buffer each
  std::vector<SafetensorsEntry> entries;
  std::vector<float> f32, permuted;  // one tensor's values, reused
  for (const ExpectedTensor& e : expected_tensors(config)) {
    const HostTensorView* view = source.find(e.name);
    SMEZO_REQUIRE(view, "%s: tensor %s is missing", r.model_path.c_str(), e.name.c_str());
    const int64_t n = view->numel();
    f32.resize(static_cast<size_t>(n));
    view->read_f32(f32.data());
    const float* values = f32.data();
    if (permute && rope_permutes_rows(e.role, e.is_bias)) {
      permuted.resize(f32.size());
      interleaved_rows_to_rotate_half(f32.data(), e.shape[0], n / e.shape[0], config.head_dim,
                                      permuted.data());
      values = permuted.data();
    }
    std::vector<char> out(static_cast<size_t>(n) * (bf16 ? 2 : 4));
    if (bf16) {
      uint16_t* dst = reinterpret_cast<uint16_t*>(out.data());
      for (int64_t i = 0; i < n; i++) dst[i] = float_to_bf16(values[i]);
    } else {
      std::memcpy(out.data(), values, out.size());
    }
    bytes.push_back(std::move(out));
    SafetensorsEntry entry;
    entry.name = e.name;
    entry.dtype = bf16 ? DTYPE_BF16 : DTYPE_F32;
    entry.shape = e.shape;
    entry.data = bytes.back().data();
    entries.push_back(entry);
    r.n_tensors++;
    r.n_params += n;
    r.bytes += static_cast<int64_t>(bytes.back().size());
  }
  fs::create_directories(o.out_dir, ec);
  SMEZO_REQUIRE(!ec, "cannot create %s: %s", o.out_dir.c_str(), ec.message().c_str());
  write_safetensors(o.out_dir + "/model.safetensors", entries, {{"format", "pt"}});
  const std::string config_path = o.out_dir + "/config.json";
  std::ofstream cfg(config_path, std::ios::binary);
  cfg << hf_config_json(config, bf16 ? "bfloat16" : "float32");
  cfg.close();
  SMEZO_REQUIRE(cfg.good(), "cannot write %s", config_path.c_str());
  r.tokenizer_files = save_tokenizer_files(tok.path, o.out_dir, config.max_seq_len);
  return r;
}

}  // namespace smezo
