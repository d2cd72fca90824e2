// Helpers shared by the test suites: temporary directories, fresh random inputs, file writes.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace smezo_test {

// A fresh empty directory under build/test_tmp, unique per call.
std::string make_temp_dir(const std::string& tag);
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
// n floats uniform in [lo, hi), from a seeded generator (never all zeros).
std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
// The message of the smezo::Error that fn throws; fails the test when it throws nothing.
std::string error_of(const std::function<void()>& fn);
// The error text of fn() run under a file-size limit (RLIMIT_FSIZE) of `bytes`, with SIGXFSZ
// ignored so a write past it returns EFBIG, as a write to a full disk fails; "" when none.
std::string error_under_file_size_limit(uint64_t bytes, const std::function<void()>& fn);
// The build folder the tests were built in (make BUILD=...), and the smezo binary in it.
std::string build_dir();
std::string smezo_binary();

// The SmolLM2-135M-Instruct GGUF ($SMEZO_SMOLLM2, else weights/SmolLM2-135M-Instruct.Q4_1.gguf
// fetched by weights/fetch_smollm2.sh), or "" when it is not there.
std::string smollm2_path();
// Runs a shell command, returns its exit code and (stdout + stderr) in *output.
int run_command(const std::string& cmd, std::string* output);

}  // namespace smezo_test

// Expects stmt to throw smezo::Error whose one-line text (what()) contains substring: the
// message a user reads, not only the exception type.
#define EXPECT_THROW_MSG(stmt, substring)                                                          \
  do {                                                                                             \
    const std::string smezo_thrown_ = ::smezo_test::error_of([&] { stmt; });                       \
    EXPECT_NE(smezo_thrown_.find(substring), std::string::npos)                                    \
        << #stmt << " threw \"" << smezo_thrown_ << "\", which lacks \"" << (substring) << "\""; \
  } while (0)

// Skips the test, saying how to fetch the model, when smollm2_path() found none.
#define SKIP_WITHOUT_SMOLLM2(path)                                                      \
  if (path.empty())                                                                     \
  GTEST_SKIP() << "SmolLM2 GGUF not found at weights/SmolLM2-135M-Instruct.Q4_1.gguf " \
                  "(or $SMEZO_SMOLLM2); run weights/fetch_smollm2.sh to fetch it"
