// Helpers shared by the test suites: temporary directories and files, fresh random inputs and
// seeds, error and one-line checks, storage rounding, guarded output buffers, test parameters.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json_fwd.hpp>

#include "backend/tensor.h"
#include "bench/host_values.h"
#include "common/device_names.h"  // the option enums' names, for messages

namespace smezo {
class Backend;
}

namespace smezo_test {

// A fresh empty directory under build/test_tmp, unique per call.
std::string make_temp_dir(const std::string& tag);
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
// The JSON document in the file at path.
nlohmann::json read_json(const std::string& path);
// How many times needle occurs in text (overlapping occurrences counted).
size_t occurrences(const std::string& text, const std::string& needle);
// n floats uniform in [lo, hi), from a seeded generator (bench/host_values.h).
using smezo::random_floats;
// Pearson correlation of a[i * stride_a] and b[i * stride_b], i < n.
double correlation(const float* a, const float* b, int64_t n, int64_t stride_a = 1, int64_t stride_b = 1);
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

// Starts `cmd` (a shell command line, its output discarded) and SIGKILLs it once the seed log at
// seed_log_path holds at least `steps` records (polled every 25 ms, for up to timeout_s). Returns
// the records logged when it was killed, or -1 when the run ended by itself first.
int64_t run_and_kill_after_logged_steps(const std::string& cmd, const std::string& seed_log_path, int64_t steps,
                                        double timeout_s = 240);

// ---- one-line messages

// Passes when message (an error's what()) has no line break: the one line a user reads.
::testing::AssertionResult is_one_line(const std::string& message);
// Passes when out (a command's stdout + stderr) is exactly one line: one '\n'.
::testing::AssertionResult is_one_line_output(const std::string& out);

// ---- bit-exact comparisons

// True when a and b have the same length and the same floats bit for bit.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

// ---- seeds of the randomised backend tests

// SMEZO_TEST_SEED (default 20250101): the seed every randomised input is derived from.
uint32_t base_seed();
// "SMEZO_TEST_SEED=<base_seed()>", for failure messages, so a failing input can be replayed.
std::string seed_note();
// A well-mixed seed from base_seed() and salt (splitmix64 finaliser of base + golden * salt).
uint64_t mixed_seed(uint64_t salt);

// ---- storage types

// v (or each element of it) rounded to nearest even in dt (bench/host_values.h).
using smezo::round_to;
using smezo::rounded;

// ---- guarded outputs

// The value poisoned host buffers are filled with before an op writes them.
constexpr float kPoison = 12345.678f;

// Host memory for a (rows, cols) fp32 tensor `t`, poisoned (kPoison), with kGuard poisoned
// floats on each side that the op must leave alone.
struct PoisonedBuffer {
  static constexpr int64_t kGuard = 16;
  std::vector<float> buf;
  smezo::Tensor t;
  PoisonedBuffer(int64_t rows, int64_t cols);
  // Whether both guards still hold kPoison.
  bool guards_intact() const;
  // All rows of t (without the guards).
  std::vector<float> values() const;
  // Rows [r0, r0 + n) of t.
  std::vector<float> rows(int64_t r0, int64_t n) const;
};

// A (rows, cols) backend tensor with one guard row above and one below: `view` is what the op
// sees; the guard rows hold random values (top, bottom) that must come back bit-identical.
struct GuardedTensor {
  smezo::Tensor full;  // (rows + 2, cols)
  smezo::Tensor view;  // rows 1 .. rows of full
  std::vector<float> top, bottom;
};
// A GuardedTensor of dtype dt on be: guard rows random in [-3, 3) from seed and seed + 1
// (rounded to dt), the middle `contents` or, when contents is empty, NaN (fp32 outputs only).
GuardedTensor make_guarded(smezo::Backend& be, int64_t rows, int64_t cols, smezo::DType dt,
                           const std::vector<float>& contents, uint32_t seed);
// The middle rows of g, downloaded; fails the test when a guard row changed (`what` names the
// writer in the message, "the <backend> op" when empty).
std::vector<float> download_checked(smezo::Backend& be, const GuardedTensor& g,
                                    const std::string& what = "");
// All of t, downloaded as fp32.
std::vector<float> download(smezo::Backend& be, const smezo::Tensor& t);

// ---- parameters

// A parameter on be of dtype dt holding `values` (already representable in dt), with `info`.
smezo::Param make_param(smezo::Backend& be, int64_t rows, int64_t cols, smezo::DType dt,
                        const std::vector<float>& values, const smezo::ParamInfo& info);
// A host-memory fp32 parameter viewing `values` (bench/host_values.h).
using smezo::host_param;
// ParamInfo of a linear weight named "test.weight" with noise stream tensor_id (defaults else).
smezo::ParamInfo linear_weight_info(uint32_t tensor_id);

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
