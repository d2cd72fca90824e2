// patch_scales: a scale-patched GGUF for the export oracle (tools/oracles/gguf_export_oracle.py)
// and CI, made by smezo's writer (formats/gguf_patch.h) without a training run: every
// block-quantised tensor's d (and m/dmin where its type has one) times a seeded factor drawn
// uniformly from [1 - spread, 1 + spread]. It stands in for the checkpoint of
// `smezo train --tune scales` until that lands; the oracle takes any patched file.
//
//   build/patch_scales BASE.gguf OUT.gguf [--seed N] [--spread S]   (defaults: 1, 0.01)
//
// Prints the tensors and blocks patched and OUT's sha256.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "common/sha256.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "formats/gguf_patch.h"

using namespace smezo;

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

std::vector<GgufScalePatch> seeded_patches(const GgufFile& f, uint32_t seed, float spread, int64_t* blocks) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> factor(1.0f - spread, 1.0f + spread);
  std::vector<GgufScalePatch> patches;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (!gguf_block_quantized(t.type)) continue;
    const GgufTypeTraits* tr = gguf_type_traits(t.type);
    const int d_at = t.type == GGUF_TYPE_Q6_K ? 208 : 0;
    const bool has_m = t.type == GGUF_TYPE_Q4_1 || t.type == GGUF_TYPE_Q5_1 || t.type == GGUF_TYPE_Q4_K ||
                       t.type == GGUF_TYPE_Q5_K;
    GgufScalePatch p{t.name, {}, {}};
    for (int64_t b = 0; b < t.numel / tr->block_size; b++) {
      const uint8_t* blk = t.data + b * tr->block_bytes;
      p.d.push_back(f16_at(blk + d_at) * factor(rng));
      if (has_m) p.m.push_back(f16_at(blk + 2) * factor(rng));
    }
    *blocks += static_cast<int64_t>(p.d.size());
    patches.push_back(std::move(p));
  }
  return patches;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BASE.gguf OUT.gguf [--seed N] [--spread S]\n", argv[0]);
    return 2;
  }
  uint32_t seed = 1;
  float spread = 0.01f;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seed") == 0) seed = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (std::strcmp(argv[i], "--spread") == 0) spread = std::strtof(argv[i + 1], nullptr);
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  try {
    std::shared_ptr<GgufFile> base = GgufFile::open(argv[1]);
    int64_t blocks = 0;
    std::vector<GgufScalePatch> patches = seeded_patches(*base, seed, spread, &blocks);
    write_scale_patched_gguf(argv[1], argv[2], patches);
    std::printf("patch_scales: %zu tensors, %lld blocks, scales x U[1-%g, 1+%g] (seed %u) -> %s sha256 %s\n",
                patches.size(), (long long)blocks, spread, spread, seed, argv[2],
                file_sha256_hex(argv[2]).c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "patch_scales: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
