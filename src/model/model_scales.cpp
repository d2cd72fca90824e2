// Model::add_scales: --tune scales' f32 master block scales, one trainable Param per packed weight.
#include <vector>

#include "common/check.h"
#include "formats/packed_weights.h"
#include "model/model.h"

namespace smezo {

void Model::add_scales(bool with_m) {
  SMEZO_REQUIRE(scales_.empty() && lora_.empty() && prefix_.empty() && stage_.whole(), "--tune scales: master "
                "scales go on a whole model without master scales, LoRA or a prefix (this one: %s%s%s, stage %d of %d)",
                scales_.empty() ? "" : "scales ", lora_.empty() ? "" : "LoRA ", prefix_.empty() ? "" : "prefix ",
                stage_.index, stage_.count);
  const std::vector<Param*> base = param_list_;
  uint32_t tensor_id = static_cast<uint32_t>(param_list_.size());  // after the base tensors: their streams stay
  std::vector<float> values;
  for (Param* w : base) {
    if (!w->w.packed()) continue;
    const int64_t rows = with_m && packed_type_has_m(w->w.packed_type) ? 2 : 1;
    const int64_t n_blocks = packed_block_count(w->w);
    values.resize(static_cast<size_t>(rows * n_blocks));
    read_packed_scales(w->w, rows, w->info.name, values.data());
    scales_.emplace_back();
    Param& s = scales_.back();
    s.w = backend_.alloc(rows, n_blocks, DTYPE_F32);
    backend_.upload(s.w, values.data());
    s.info.name = w->info.name + ".scales";
    s.info.role = w->info.role;  // --freeze-embeddings freezes the embedding's scales
    s.info.tensor_id = tensor_id++;
    w->scales = &s;
    param_list_.push_back(&s);
  }
  SMEZO_REQUIRE(!scales_.empty(), "--tune scales: this model has no block-quantised weight kept in its blocks (its "
                "weights are F32/F16/BF16, or it is not a GGUF file) ---> HINT: give a block-quantised GGUF (Q8_0, "
                "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; llama.cpp's llama-quantize makes one), or use --tune "
                "full|lora");
  scales_with_m_ = with_m;
}

bool Model::is_scales(const Param* p) const {
  for (const Param& s : scales_)
    if (&s == p) return true;
  return false;
}

const std::string& Model::packed_file_name(const std::string& name) const {
  const auto it = packed_file_names_.find(name);
  SMEZO_REQUIRE(it != packed_file_names_.end(), "%s is not a packed weight of this model", name.c_str());
  return it->second;
}

}  // namespace smezo
