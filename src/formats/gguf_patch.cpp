#include "formats/gguf_patch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/check.h"
#include "common/file_util.h"
#include "common/half.h"
#include "common/mapped_file.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"

namespace smezo {

namespace {

// One patch checked against the base: where its tensor lies and which fields it writes.
struct PlannedPatch {
  const GgufScalePatch* patch;
  const GgufTensorInfo* info;
  GgufScaleOffsets fields;  // the bytes it writes in each block
  int64_t block_bytes;
};

void check_values(const std::string& base, const GgufScalePatch& p, const std::vector<float>& v,
                  const char* field) {
  for (size_t b = 0; b < v.size(); b++) {
    // 65520 and above round to inf in f16 (the largest finite f16 is 65504).
    SMEZO_REQUIRE(std::isfinite(v[b]) && std::fabs(v[b]) < 65520.0f,
                  "scale patch of %s: tensor '%s' block %zu: %s = %g has no finite f16 ---> HINT: the "
                  "run diverged; lower the learning rate or export an earlier checkpoint",
                  base.c_str(), p.tensor.c_str(), b, field, static_cast<double>(v[b]));
  }
}

PlannedPatch plan_patch(const GgufFile& file, const GgufScalePatch& p) {
  const char* base = file.path().c_str();
  const GgufTensorInfo* t = file.find_tensor(p.tensor);
  SMEZO_REQUIRE(t != nullptr,
                "scale patch of %s: no tensor '%s' in the file ---> HINT: the patch was made for another "
                "base GGUF; `smezo info --model %s` lists its tensors",
                base, printable(p.tensor).c_str(), base);
  const GgufScaleOffsets f = gguf_scale_offsets(t->type);
  SMEZO_REQUIRE(f.d >= 0,
                "scale patch of %s: tensor '%s' is %s, which has no block scales ---> HINT: only the "
                "block-quantised types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) have scales to patch",
                base, t->name.c_str(), gguf_type_name(t->type));
  const GgufTypeTraits* tr = gguf_type_traits(t->type);
  const int64_t n_blocks = t->numel / tr->block_size;
  SMEZO_REQUIRE(static_cast<int64_t>(p.d.size()) == n_blocks,
                "scale patch of %s: tensor '%s' (%s) has %lld blocks but the patch has %zu d values "
                "---> HINT: the patch was made for another base GGUF (compare its base_sha256)",
                base, t->name.c_str(), tr->name, (long long)n_blocks, p.d.size());
  SMEZO_REQUIRE(p.m.empty() || f.m >= 0,
                "scale patch of %s: tensor '%s' is %s, which has no m/dmin, but the patch has %zu m values "
                "---> HINT: leave m empty for Q8_0, Q4_0, Q5_0 and Q6_K",
                base, t->name.c_str(), tr->name, p.m.size());
  SMEZO_REQUIRE(p.m.empty() || static_cast<int64_t>(p.m.size()) == n_blocks,
                "scale patch of %s: tensor '%s' (%s) has %lld blocks but the patch has %zu m values "
                "---> HINT: give one m per block, or none to keep the file's",
                base, t->name.c_str(), tr->name, (long long)n_blocks, p.m.size());
  check_values(file.path(), p, p.d, "d");
  check_values(file.path(), p, p.m, "m");
  return {&p, t, {f.d, p.m.empty() ? -1 : f.m}, tr->block_bytes};
}

std::shared_ptr<GgufFile> open_base(const std::string& base_path) {
  try {
    return GgufFile::open(base_path);
  } catch (const Error& e) {
    throw Error("scale patch: the base is not a readable GGUF: " + e.message(),
                "pass the GGUF the run was trained on, whole (the seed log's base_sha256 names it)");
  }
}

void put_f16(uint8_t* p, float v) {
  const uint16_t h = float_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Writes the patched copy a megabyte at a time, releasing each megabyte of the base's mapping once
// written, so the copy adds about a megabyte to the process's resident memory, not the base's size.
class PatchWriter {
 public:
  PatchWriter(const MappedFile& base, const std::string& out, const std::string& tmp)
      : base_(base), out_(out), tmp_(tmp) {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) throw_write_error("create", tmp_, errno);
  }
  ~PatchWriter() {
    if (f_) std::fclose(f_);
    if (!done_) std::remove(tmp_.c_str());
  }
  // The base's bytes [p, p + n) as they are.
  void copy(const uint8_t* p, int64_t n) {
    for (int64_t done = 0; done < n; done += kChunk) {
      const int64_t len = std::min(kChunk, n - done);
      write(p + done, len);
      base_.release_pages(p + done, len);
    }
  }
  // The tensor's bytes with its scales replaced, a chunk of whole blocks at a time.
  void write_patched(const PlannedPatch& pp) {
    const int64_t n_blocks = static_cast<int64_t>(pp.patch->d.size());
    const int64_t chunk_blocks = std::max<int64_t>(1, kChunk / pp.block_bytes);
    for (int64_t b0 = 0; b0 < n_blocks; b0 += chunk_blocks) {
      const int64_t nb = std::min(chunk_blocks, n_blocks - b0);
      buf_.assign(pp.info->data + b0 * pp.block_bytes, pp.info->data + (b0 + nb) * pp.block_bytes);
      for (int64_t b = 0; b < nb; b++) {
        uint8_t* blk = buf_.data() + b * pp.block_bytes;
        put_f16(blk + pp.fields.d, pp.patch->d[static_cast<size_t>(b0 + b)]);
        if (pp.fields.m >= 0) put_f16(blk + pp.fields.m, pp.patch->m[static_cast<size_t>(b0 + b)]);
      }
      write(buf_.data(), nb * pp.block_bytes);
      base_.release_pages(pp.info->data + b0 * pp.block_bytes, nb * pp.block_bytes);
    }
  }
  void commit() {
    if (std::fflush(f_) != 0) throw_write_error("flush", tmp_, errno);
    if (fsync(fileno(f_)) != 0) throw_write_error("fsync", tmp_, errno);
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) throw_write_error("close", tmp_, errno);
    if (std::rename(tmp_.c_str(), out_.c_str()) != 0) throw_write_error(("rename " + tmp_ + " to").c_str(), out_, errno);
    done_ = true;
  }

 private:
  static constexpr int64_t kChunk = int64_t{1} << 20;
  void write(const uint8_t* p, int64_t n) {
    if (n > 0 && std::fwrite(p, 1, static_cast<size_t>(n), f_) != static_cast<size_t>(n))
      throw_write_error("write", tmp_, errno);
  }

  const MappedFile& base_;
  std::string out_, tmp_;
  std::FILE* f_ = nullptr;
  bool done_ = false;
  std::vector<uint8_t> buf_;
};

}  // namespace

void write_scale_patched_gguf(const std::string& base_path, const std::string& out_path,
                              const std::vector<GgufScalePatch>& patches) {
  SMEZO_REQUIRE(absolute_path(base_path) != absolute_path(out_path),
                "scale patch: the output %s is the base itself ---> HINT: write the patched GGUF to "
                "another path; the base stays as it is for resume and replay", out_path.c_str());
  std::shared_ptr<GgufFile> file = open_base(base_path);
  std::map<int64_t, PlannedPatch> by_offset;  // the file's order
  for (const GgufScalePatch& p : patches) {
    PlannedPatch pp = plan_patch(*file, p);
    SMEZO_REQUIRE(by_offset.count(pp.info->offset) == 0,
                  "scale patch of %s: tensor '%s' is patched twice ---> HINT: give one patch per tensor",
                  base_path.c_str(), p.tensor.c_str());
    by_offset.emplace(pp.info->offset, pp);
  }
  const uint8_t* bytes = file->mapping()->data();
  PatchWriter w(*file->mapping(), out_path, out_path + ".tmp");
  int64_t pos = 0;
  for (const auto& [offset, pp] : by_offset) {
    w.copy(bytes + pos, offset - pos);
    w.write_patched(pp);
    pos = offset + pp.info->nbytes;
  }
  w.copy(bytes + pos, file->file_size() - pos);
  w.commit();
}

}  // namespace smezo
