// Implementation of the test helpers.
#include "test_util.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/check.h"

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

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
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

}  // namespace smezo_test
