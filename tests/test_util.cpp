// Implementation of the test helpers.
#include "test_util.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/half.h"
#include "run/seed_log.h"
#include "backend/backend.h"

namespace smezo_test {

#ifndef SMEZO_BUILD_DIR
#define SMEZO_BUILD_DIR "build"
#endif

std::string build_dir() { return SMEZO_BUILD_DIR; }
std::string smollm2_path() {
  const char* env = std::getenv("SMEZO_SMOLLM2");
  std::string path = env && *env ? env : "weights/SmolLM2-135M-Instruct.Q4_1.gguf";
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : "";
}

std::string smezo_binary() { return build_dir() + "/smezo"; }

std::string make_temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  mkdir("build", 0755);
  mkdir((build_dir() + "/test_tmp").c_str(), 0755);
  std::string dir = build_dir() + "/test_tmp/" + tag + "_" + std::to_string(getpid()) + "_" +
                    std::to_string(counter++);
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot create " + dir);
  return dir;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

double correlation(const float* a, const float* b, int64_t n, int64_t stride_a, int64_t stride_b) {
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i * stride_a], y = b[i * stride_b];
    sa += x; sb += y; saa += x * x; sbb += y * y; sab += x * y;
  }
  const double cov = sab / n - (sa / n) * (sb / n);
  return cov / std::sqrt((saa / n - (sa / n) * (sa / n)) * (sbb / n - (sb / n) * (sb / n)));
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const smezo::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected smezo::Error";
  return "";
}

std::string error_under_file_size_limit(uint64_t bytes, const std::function<void()>& fn) {
  struct rlimit old_limit;
  if (getrlimit(RLIMIT_FSIZE, &old_limit) != 0) return "getrlimit failed";
  struct rlimit low = old_limit;
  low.rlim_cur = static_cast<rlim_t>(bytes);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  if (setrlimit(RLIMIT_FSIZE, &low) != 0) return "setrlimit failed";
  std::string msg = error_of(fn);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  return msg;
}

int64_t run_and_kill_after_logged_steps(const std::string& cmd, const std::string& seed_log_path, int64_t steps,
                                        double timeout_s) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const std::string line = "exec " + cmd + " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", line.c_str(), (char*)nullptr);
    _exit(127);
  }
  int64_t logged = 0;
  for (int i = 0; i < static_cast<int>(timeout_s * 40) && logged < steps; i++) {  // slow on a loaded machine
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    try {
      logged = static_cast<int64_t>(smezo::seed_log_read(seed_log_path).records.size());
    } catch (const std::exception&) {  // not written yet, or a partial header
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? logged : -1;
}

int run_command(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::string out;
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

::testing::AssertionResult is_one_line(const std::string& message) {
  if (message.find('\n') == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the message is not one line: " << message;
}

::testing::AssertionResult is_one_line_output(const std::string& out) {
  const auto lines = std::count(out.begin(), out.end(), '\n');
  if (lines == 1) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the output has " << lines << " lines, not one: " << out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

uint32_t base_seed() {
  static const uint32_t seed = [] {
    const char* v = std::getenv("SMEZO_TEST_SEED");
    return v != nullptr ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : 20250101u;
  }();
  return seed;
}

std::string seed_note() { return "SMEZO_TEST_SEED=" + std::to_string(base_seed()); }

uint64_t mixed_seed(uint64_t salt) {
  uint64_t z = base_seed() + 0x9E3779B97F4A7C15ull * salt;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

PoisonedBuffer::PoisonedBuffer(int64_t rows, int64_t cols)
    : buf(rows * cols + 2 * kGuard, kPoison) {
  t.data = buf.data() + kGuard;
  t.rows = rows;
  t.cols = cols;
}

bool PoisonedBuffer::guards_intact() const {
  for (int64_t i = 0; i < kGuard; i++)
    if (buf[i] != kPoison || buf[buf.size() - 1 - i] != kPoison) return false;
  return true;
}

std::vector<float> PoisonedBuffer::values() const {
  return std::vector<float>(buf.begin() + kGuard, buf.end() - kGuard);
}

std::vector<float> PoisonedBuffer::rows(int64_t r0, int64_t n) const {
  const auto first = buf.begin() + kGuard + r0 * t.cols;
  return std::vector<float>(first, first + n * t.cols);
}

GuardedTensor make_guarded(smezo::Backend& be, int64_t rows, int64_t cols, smezo::DType dt,
                           const std::vector<float>& contents, uint32_t seed) {
  GuardedTensor g;
  g.full = be.alloc(rows + 2, cols, dt);
  g.view = g.full;
  g.view.rows = rows;
  g.view.data = static_cast<char*>(g.full.data) + cols * smezo::dtype_size(dt);
  g.top = rounded(dt, random_floats(cols, seed, -3.0f, 3.0f));
  g.bottom = rounded(dt, random_floats(cols, seed + 1, -3.0f, 3.0f));
  std::vector<float> host;
  host.reserve(static_cast<size_t>((rows + 2) * cols));
  host.insert(host.end(), g.top.begin(), g.top.end());
  if (contents.empty()) {
    host.insert(host.end(), static_cast<size_t>(rows * cols), std::nanf(""));
  } else {
    EXPECT_EQ(static_cast<int64_t>(contents.size()), rows * cols);
    host.insert(host.end(), contents.begin(), contents.end());
  }
  host.insert(host.end(), g.bottom.begin(), g.bottom.end());
  be.upload(g.full, host.data());
  return g;
}

std::vector<float> download_checked(smezo::Backend& be, const GuardedTensor& g,
                                    const std::string& what) {
  const int64_t rows = g.view.rows, cols = g.full.cols;
  std::vector<float> all(static_cast<size_t>(g.full.numel()));
  be.download(g.full, all.data());
  int64_t bad = 0;
  for (int64_t c = 0; c < cols; ++c) {
    bad += smezo::float_bits(all[c]) != smezo::float_bits(g.top[c]);
    bad += smezo::float_bits(all[(rows + 1) * cols + c]) != smezo::float_bits(g.bottom[c]);
  }
  EXPECT_EQ(bad, 0) << (what.empty() ? "the " + std::string(be.name()) + " op" : what) << " wrote "
                    << bad << " guard element(s) outside its output";
  return std::vector<float>(all.begin() + cols, all.begin() + (rows + 1) * cols);
}

std::vector<float> download(smezo::Backend& be, const smezo::Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  be.download(t, v.data());
  return v;
}

smezo::Param make_param(smezo::Backend& be, int64_t rows, int64_t cols, smezo::DType dt,
                        const std::vector<float>& values, const smezo::ParamInfo& info) {
  smezo::Param p;
  p.w = be.alloc(rows, cols, dt);
  be.upload(p.w, values.data());
  p.info = info;
  return p;
}

smezo::ParamInfo linear_weight_info(uint32_t tensor_id) {
  smezo::ParamInfo info;
  info.name = "test.weight";
  info.tensor_id = tensor_id;
  info.is_linear = true;
  return info;
}

}  // namespace smezo_test
