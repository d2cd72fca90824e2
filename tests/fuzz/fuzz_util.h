// Shared by the libFuzzer targets in this folder (built by `make fuzz`, see the Makefile):
// the input written as files in a private scratch folder (the readers take paths), the one
// exception a reader may throw on bad input, and a host-memory Backend that lets Model load
// (allocate, convert, check) without the CPU backend's ops.
//
// Every target turns its input into files, runs one reader, and accepts exactly two
// outcomes: success (then it checks what the reader promises), or a smezo::Error whose text
// is one printable line. Anything else (a crash, a sanitizer report, another exception, a
// leak, a hang, an allocation beyond -rss_limit_mb/-malloc_limit_mb) is a finding.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/check.h"
#include "backend/backend.h"

namespace smezo_fuzz {

// A folder of this process's own, on tmpfs when there is one; removed at exit. (The name is
// never freed: the exit handler runs after static destructors.)
inline const std::string& scratch_dir() {
  static const std::string* dir = [] {
    struct stat st;
    std::string base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    auto* d = new std::string(base + "/smezo-fuzz-" + std::to_string(getpid()));
    mkdir(d->c_str(), 0700);
    std::atexit([] {
      std::string cmd = "rm -rf '" + scratch_dir() + "'";
      if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", cmd.c_str());
    });
    return d;
  }();
  return *dir;
}

inline void write_file(const std::string& path, const void* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

inline void write_file(const std::string& path, const std::string& bytes) {
  write_file(path, bytes.data(), bytes.size());
}

// A fresh empty subfolder of the scratch folder (it only ever holds plain files).
inline std::string fresh_dir(const char* name) {
  std::string d = scratch_dir() + "/" + name;
  if (DIR* dir = opendir(d.c_str())) {
    while (dirent* e = readdir(dir))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        unlink((d + "/" + e->d_name).c_str());
    closedir(dir);
  } else {
    mkdir(d.c_str(), 0700);
  }
  return d;
}

// data split at every occurrence of sep.
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size,
                                            const std::string& sep) {
  std::string s(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

// The error promise: one line, printable, not huge. A violation is a finding.
inline void check_error_message(const smezo::Error& e) {
  const std::string msg = e.what();
  bool ok = !msg.empty() && msg.size() < 4096;
  for (char c : msg)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ok = false;
  if (!ok) {
    std::fprintf(stderr, "error message breaks the one-line promise: [%s]\n",
                 smezo::printable(msg, 4096).c_str());
    std::abort();
  }
}

// Runs fn; a smezo::Error is the expected refusal of bad input (its message is checked).
// SMEZO_FUZZ_VERBOSE=1 prints each outcome (to see why a seed or reproducer is refused).
template <typename Fn>
bool run_reader(Fn fn) {
  static const bool verbose = std::getenv("SMEZO_FUZZ_VERBOSE") != nullptr;
  try {
    fn();
    if (verbose) std::fprintf(stderr, "fuzz: accepted\n");
    return true;
  } catch (const smezo::Error& e) {
    check_error_message(e);
    if (verbose) std::fprintf(stderr, "fuzz: refused: %s\n", e.what());
    return false;
  }
}

// Host memory, fp32 storage whatever the dtype asked; only what Model's constructor uses.
class HostBackend : public smezo::Backend {
 public:
  ~HostBackend() override {
    for (float* p : blocks_) delete[] p;
  }
  const char* name() const override { return "fuzz-host"; }
  smezo::BackendKind kind() const override { return smezo::BACKEND_CPU; }
  smezo::BackendMemoryPlan memory_plan() const override { return {}; }  // no estimate is made here
  smezo::Tensor alloc(int64_t rows, int64_t cols, smezo::DType) override {
    smezo::Tensor t;
    t.rows = rows;
    t.cols = cols;
    t.dtype = smezo::DTYPE_F32;
    blocks_.push_back(new float[static_cast<size_t>(rows * cols) + 1]);
    t.data = blocks_.back();
    bytes_ += rows * cols * 4;
    return t;
  }
  void upload(const smezo::Tensor& dst, const float* src) override {
    std::memcpy(dst.data, src, static_cast<size_t>(dst.numel()) * 4);
  }
  void download(const smezo::Tensor& src, float* dst) override {
    std::memcpy(dst, src.data, static_cast<size_t>(src.numel()) * 4);
  }
  int64_t bytes_allocated() const override { return bytes_; }

  [[noreturn]] static void no_op() { smezo::throw_error("fuzz backend: no ops"); }
  void embedding(const smezo::Tensor&, const smezo::Param&, const std::vector<int32_t>&,
                 const smezo::Probe&) override { no_op(); }
  void add_position_embedding(const smezo::Tensor&, const smezo::Param&,
                              const std::vector<int32_t>&, int64_t,
                              const smezo::Probe&) override { no_op(); }
  void norm(const smezo::Tensor&, const smezo::Tensor&, const smezo::Param&, const smezo::Param*,
            smezo::NormKind, float, const smezo::Probe&) override { no_op(); }
  void linear(const smezo::Tensor&, const smezo::Tensor&, const smezo::Param&,
              const smezo::Param*, const smezo::Probe&) override { no_op(); }
  void rope(const smezo::Tensor&, const std::vector<int32_t>&, int64_t, const std::vector<float>&,
            smezo::RopeStyle) override { no_op(); }
  void attention(const smezo::AttentionParams&) override { no_op(); }
  void swiglu(const smezo::Tensor&, const smezo::Tensor&, const smezo::Tensor&) override { no_op(); }
  void relu(const smezo::Tensor&) override { no_op(); }
  void add(const smezo::Tensor&, const smezo::Tensor&) override { no_op(); }
  void add_scaled(const smezo::Tensor&, const smezo::Tensor&, float) override { no_op(); }
  void gather_rows(const smezo::Tensor&, const smezo::Tensor&,
                   const std::vector<int64_t>&) override { no_op(); }
  void copy_rows(const smezo::Tensor&, int64_t, const smezo::Tensor&) override { no_op(); }
  void update(smezo::Param&, float, float, uint64_t) override { no_op(); }
  float abs_quantile(const smezo::Param&, double) override { no_op(); }

 private:
  std::vector<float*> blocks_;
  int64_t bytes_ = 0;
};

}  // namespace smezo_fuzz
