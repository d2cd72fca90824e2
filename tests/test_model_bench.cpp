// `smezo bench --shape` on the CPU backend at the tiny shape: one JSON line per (T, phase,
// probes) with positive times and token rates, the profile on stderr and its split (GEMM,
// noise, attention, rest) in the JSON adding up to the step, tools/gpu/profile_rows.py's rows,
// bad shapes refused; the profiling wrapper (bench/timing_backend.h) forwards the Backend
// virtuals that have a default and cuts the CPU linear's noise out only when asked.
// (The named large shapes are for the GPU machine: tools/gpu/step_bench.sh.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/model_bench.h"
#include "bench/timing_backend.h"
#include "cpu/cpu_backend.h"
#include "common/check.h"
#include "test_util.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using testing::HasSubstr;

TEST(ModelBench, TinyShapeOnTheCpuPrintsJsonLines) {
  const std::string dir = smezo_test::make_temp_dir("model_bench");
  std::string out;
  // stdout only (the JSON lines); the profile goes to stderr, kept in a file
  ASSERT_EQ(smezo_test::run_command("(" + smezo_test::smezo_binary() + " bench --shape tiny --device cpu --batch 2 "
                                    "--seq 8,16 --reps 2 --warmup 1 --probes both --noise rademacher --profile 2> " +
                                        dir + "/profile.txt)", &out), 0) << out;
  std::set<std::string> seen;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["shape"], "tiny");
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["batch"], 2);
    EXPECT_EQ(j["noise"], "rademacher");
    EXPECT_GT(j["ms"].get<double>(), 0.0);
    EXPECT_LE(j["ms_min"].get<double>(), j["ms"].get<double>());
    EXPECT_GT(j["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(j["backend_allocated_MB"].get<double>(), 0.0);
    // --profile's split: the four parts make up the step; a forward has no noise, a step has
    const nlohmann::json& p = j["profile"];
    const double parts = p["gemm_ms"].get<double>() + p["noise_ms"].get<double>() +
                         p["attention_ms"].get<double>() + p["rest_ms"].get<double>();
    EXPECT_NEAR(parts, p["step_ms"].get<double>(), 1e-9 * p["step_ms"].get<double>()) << line;
    EXPECT_GT(p["gemm_ms"].get<double>(), 0.0) << line;
    EXPECT_GT(p["attention_ms"].get<double>(), 0.0) << line;
    EXPECT_GT(p["rest_ms"].get<double>(), 0.0) << line;
    EXPECT_LE(p["outside_ops_ms"].get<double>(), p["rest_ms"].get<double>()) << line;
    if (j["phase"] == "forward") EXPECT_EQ(p["noise_ms"].get<double>(), 0.0) << line;
    else EXPECT_GT(p["noise_ms"].get<double>(), 0.0) << line;
    seen.insert(j["phase"].get<std::string>() + "/" + j.value("probes", std::string("-")) + "/" +
                std::to_string(j["seq"].get<int64_t>()));
  }
  for (const char* seq : {"8", "16"})
    for (const char* phase : {"forward/-/", "mezo-step/pair/", "mezo-step/separate/", "smezo-step/pair/",
                              "smezo-step/separate/"})
      EXPECT_EQ(seen.count(std::string(phase) + seq), 1u) << phase << seq;
  EXPECT_EQ(seen.size(), 10u);
  const std::string profile = smezo_test::read_file(dir + "/profile.txt");
  EXPECT_THAT(profile, HasSubstr("profile: tiny smezo-step (pair) T=16"));
  EXPECT_THAT(profile, HasSubstr("linear q"));
  EXPECT_THAT(profile, HasSubstr("linear q noise"));  // the CPU linear's noise, cut out
  EXPECT_THAT(profile, HasSubstr("update"));
  EXPECT_THAT(profile, HasSubstr("  split: GEMM "));
  // tools/gpu/profile_rows.py: a markdown row per JSON line, for RESULTS.md's before/after tables
  smezo_test::write_file(dir + "/bench.jsonl", out);
  std::string rows;
  ASSERT_EQ(smezo_test::run_command("python3 tools/gpu/profile_rows.py --header --label before " + dir + "/bench.jsonl",
                                    &rows), 0) << rows;
  EXPECT_THAT(rows, HasSubstr("| run | shape | phase | T | step ms | GEMM ms (share) |"));
  EXPECT_THAT(rows, HasSubstr("| before | tiny b2 | smezo-step (pair) | 16 | "));
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 2 + 10);
  smezo_test::write_file(dir + "/plain.jsonl", "{\"phase\": \"forward\"}\n");  // no --profile
  EXPECT_EQ(smezo_test::run_command("python3 tools/gpu/profile_rows.py " + dir + "/plain.jsonl 2>&1", &rows), 1);
  EXPECT_THAT(rows, HasSubstr("run the bench with --profile"));
}

#ifdef SMEZO_WITH_CUDA
// bench --shape tiny's three JSON lines (forward, mezo-step, smezo-step pair), each with key = value
// and a positive time.
static void expect_phase_lines(const std::string& out, const char* key, const nlohmann::json& value) {
  std::istringstream lines(out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j[key], value) << line;
    EXPECT_GT(j["ms"].get<double>(), 0.0) << line;
    ++count;
  }
  EXPECT_EQ(count, 3);
}
#endif

// --linear-path reaches the backend: on CUDA the tiny shape's forward and steps run on the fused
// kernel and the JSON lines say so; the CPU refuses fused (it has one path) with the hint.
TEST(ModelBench, LinearPathFusedOnCuda) {
  std::string out;
  const std::string bench = smezo_test::smezo_binary() + " bench --shape tiny --batch 1 --seq 8 --reps 1 --warmup 0";
  EXPECT_NE(smezo_test::run_command(bench + " --device cpu --linear-path fused 2>&1", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--linear-path fused: the CPU backend has one linear path"));
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  ASSERT_EQ(smezo_test::run_command(bench + " --device cuda --linear-path fused", &out), 0) << out;
  expect_phase_lines(out, "linear_path", "fused");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// --graphs on reaches the backend: the JSON lines say so; refused on the CPU and with --profile, each with
// its hint.
TEST(ModelBench, GraphsOnCuda) {
  std::string out;
  const std::string bench = smezo_test::smezo_binary() + " bench --shape tiny --batch 1 --seq 8 --reps 2 --warmup 1";
  EXPECT_NE(smezo_test::run_command(bench + " --device cpu --graphs on 2>&1", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--graphs on: CUDA graphs are a GPU's"));
  EXPECT_NE(smezo_test::run_command(bench + " --device cpu --graphs on --profile 2>&1", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("---> HINT: pass --graphs off with --profile"));
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  ASSERT_EQ(smezo_test::run_command(bench + " --device cuda --graphs on", &out), 0) << out;
  expect_phase_lines(out, "graphs", true);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// Which op kinds make GEMM, noise, attention and rest, per step; the rest takes what no op
// timed, so the parts add up to the step.
TEST(ModelBench, ProfileSplitSortsOpKinds) {
  const std::map<std::string, double> ms = {{"linear q", 20},       {"linear q noise", 6}, {"linear head", 10},
                                            {"update q", 4},        {"update norm", 2},    {"attention", 8},
                                            {"norm", 1},            {"swiglu", 3},         {"download", 0.5},
                                            {"abs_quantile", 1.5}};
  const ProfileSplit p = profile_split(ms, 70.0, 2);  // two steps of 35 ms
  EXPECT_DOUBLE_EQ(p.step_ms, 35.0);
  EXPECT_DOUBLE_EQ(p.gemm_ms, 15.0);
  EXPECT_DOUBLE_EQ(p.noise_ms, 6.0);
  EXPECT_DOUBLE_EQ(p.attention_ms, 4.0);
  EXPECT_DOUBLE_EQ(p.outside_ops_ms, 35.0 - 28.0);
  EXPECT_DOUBLE_EQ(p.rest_ms, 3.0 + p.outside_ops_ms);
  EXPECT_DOUBLE_EQ(p.gemm_ms + p.noise_ms + p.attention_ms + p.rest_ms, p.step_ms);
}

// The linear's noise is cut out only where asked (the op benchmark times whole linears).
TEST(ModelBench, TimingBackendSplitsTheCpuLinearsNoiseOnlyWhenAsked) {
  CpuBackend cpu;
  const int64_t M = 4, K = 64, N = 200;  // a BLAS path shape on any machine, else the reference (not split)
  Param w;
  w.w = cpu.alloc(N, K, DTYPE_F32);
  std::vector<float> host(N * K, 0.5f), x(M * K, 1.0f);
  cpu.upload(w.w, host.data());
  w.info.name = "model.layers.0.self_attn.q_proj.weight";
  w.info.role = ROLE_ATTN_Q;
  w.info.is_linear = true;
  Tensor in = cpu.alloc(M, K, DTYPE_F32), out = cpu.alloc(M, N, DTYPE_F32);
  cpu.upload(in, x.data());
  const Probe probe{1e-3f, 5};
  for (bool split : {false, true}) {
    TimingBackend timed(cpu, split);
    timed.linear(out, in, w, nullptr, probe);
    timed.linear(out, in, w, nullptr, Probe{});  // unperturbed: no noise
    EXPECT_EQ(timed.ms().count("linear q"), 1u);
    const bool blas = std::string(cpu_linear_path(N, K)) != "reference";
    EXPECT_EQ(timed.ms().count("linear q noise"), split && blas ? 1u : 0u) << split;
  }
}

TEST(ModelBench, ShapesAreKnownAndChecked) {
  for (const std::string& name : model_bench_shape_names()) {
    const ModelConfig c = model_bench_shape(name);
    EXPECT_GT(c.n_layers, 0) << name;
    EXPECT_EQ(c.dim % c.n_heads, 0) << name;
  }
  EXPECT_EQ(model_bench_shape("llama-7b").hidden_dim, 11008);
  EXPECT_EQ(model_bench_shape("mistral-7b").n_kv_heads, 8);
  EXPECT_EQ(model_bench_shape("opt-13b").family, "opt");
  EXPECT_EQ(model_bench_shape("smollm2-135m").vocab_size, 49152);
  EXPECT_THAT(smezo_test::error_of([] { model_bench_shape("gpt-5"); }), HasSubstr("unknown model shape 'gpt-5'"));
  std::string out;
  EXPECT_NE(smezo_test::run_command(smezo_test::smezo_binary() + " bench --shape tiny --seq 9999", &out), 0);
  EXPECT_THAT(out, HasSubstr("--seq 9999: shape tiny takes 1..512 tokens"));
}

namespace {

// A CPU backend that counts the calls of the two Backend virtuals that have a default and
// answers them recognisably.
class RecordingCpuBackend : public CpuBackend {
 public:
  int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype) override {
    upload_stored_calls++;
    last_src = src;
    const int64_t bad = CpuBackend::upload_stored(dst, src, src_dtype);
    return bad >= 0 ? bad : 4242;  // a value the default (the base class's) never returns
  }
  int64_t free_memory_bytes() const override { return 123456789; }
  void linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe) override {
    linear_group_calls++;
    CpuBackend::linear_group(items, in, probe);
  }
  int upload_stored_calls = 0, linear_group_calls = 0;
  const void* last_src = nullptr;
};

}  // namespace

// TimingBackend forwards upload_stored (a streaming load through --profile reaches the inner
// backend's converter, not the base class's fp32 host copy), free_memory_bytes (the memory
// check before loading sees the inner backend's free memory, not "unknown"), the fold's
// defer_updates and flush_updates (the inner backend's linear applies what it holds) and
// linear_group (the CUDA backend's batched GEMMs), timed as one op.
TEST(ModelBench, TimingBackendForwardsEveryVirtualWithADefault) {
  RecordingCpuBackend inner;
  TimingBackend timed(inner);
  EXPECT_EQ(timed.free_memory_bytes(), 123456789);
  EXPECT_EQ(timed.kind(), inner.kind());
  // the memory estimate asks the inner backend's plan
  EXPECT_EQ(timed.memory_plan().linear_scratch, inner.memory_plan().linear_scratch);
  const Tensor t = timed.alloc(1, 3, DTYPE_F32);
  const float values[3] = {1.5f, -2.0f, 0.25f};
  EXPECT_EQ(timed.upload_stored(t, values, DTYPE_F32), 4242);
  EXPECT_EQ(inner.upload_stored_calls, 1);
  EXPECT_EQ(inner.last_src, static_cast<const void*>(values));
  float back[3] = {0, 0, 0};
  timed.download(t, back);
  EXPECT_EQ(std::memcmp(back, values, sizeof values), 0);
  // the fold's updates are held by the inner backend (the base class's default would apply them)
  std::vector<float> w(8, 0.5f);
  Param p = smezo_test::make_param(timed, 2, 4, DTYPE_F32, w, smezo_test::linear_weight_info(1));
  timed.defer_updates(p, {UpdateArgs{0.1f, 0.0f, 3}});
  EXPECT_EQ(inner.held_updates().size(), 1);
  timed.flush_updates();
  EXPECT_EQ(inner.held_updates().size(), 0);
  const Tensor x = timed.alloc(3, 4, DTYPE_F32), y0 = timed.alloc(3, 2, DTYPE_F32), y1 = timed.alloc(3, 2, DTYPE_F32);
  timed.linear_group({LinearItem{y0, &p}, LinearItem{y1, &p}}, x, Probe{});
  EXPECT_EQ(inner.linear_group_calls, 1);
  EXPECT_EQ(timed.ms().count("linear other+other"), 1u);
}
