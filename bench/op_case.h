// The op case harness, in the manner of ggml's test-backend-ops: each case of the op lists
// (bench/op_cases.h) is written once, here and in bench/op_case_*.cpp, as
//   - its host inputs, built from its seeds when the case is made, so every backend sees the
//     same values;
//   - setup(t): its tensors made through an OpTensors on one backend, returning the op call;
//   - the outputs to compare (what the call returns to the host, then every output() and
//     inout() tensor in the order made) and their tolerance.
// Two drivers run the cases: the backend conformance test (tests/test_backend_ops.cu) runs each
// on the CPU (the reference) and on CUDA with guard rows, poisoned outputs and inputs checked
// unchanged, and compares; the op benchmark (bench/op_bench.cpp, build/op_bench) times the call.
//
// Adding a case: append it to its list in op_cases.h (the order is part of the seeds). Adding
// an op: a list there, an OpList value, and a make_<op>_case in bench/op_case_*.cpp that fills
// an OpCase (op_case.cpp's for_each_op_case calls it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace smezo {

// The seeds of case `index` of the list tested as `list`: part p is splitmix64(base + golden ·
// (list·1000003 + index·101 + p)); base is SMEZO_TEST_SEED in the test, its default here.
struct OpSeeds {
  uint64_t base, list, index;
  uint64_t u64(uint64_t part) const;
  uint32_t u32(uint64_t part) const { return static_cast<uint32_t>(u64(part)); }
};
constexpr uint32_t kOpCaseDefaultSeed = 20250101;

// How a case's tensors are made on a backend. The benchmark allocates and uploads (and uploads
// in-place operands again before each timed call); the test adds guard rows, poisons outputs
// and checks that inputs come back unchanged. `values` are the case's host inputs: they live
// as long as the case, and an implementation may keep a pointer to them.
class OpTensors {
 public:
  OpTensors(Backend& backend, bool reference) : be(backend), reference(reference) {}
  virtual ~OpTensors() = default;
  Backend& be;
  const bool reference;  // the conformance test's CPU side: the reference the device is held to
  // dt as this backend stores it (the CPU stores fp32 only; values are rounded to dt already).
  DType storage(DType dt) const { return be.kind() == BACKEND_CPU ? DTYPE_F32 : dt; }
  // An activation the op only reads.
  virtual Tensor input(int64_t rows, int64_t cols, const std::vector<float>& values) = 0;
  // An fp32 output the op writes (NaN-poisoned in the test).
  virtual Tensor output(int64_t rows, int64_t cols) = 0;
  // An operand the op updates in place (stored as storage(dt)), starting from values.
  virtual Tensor inout(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values) = 0;
  // A parameter the op only reads (stored as storage(dt), no guard rows: kernels may need its
  // allocation's alignment).
  virtual Param param(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values,
                      const ParamInfo& info) = 0;
};

// The op call setup() returns: what it returns to the host (abs_quantile's values; else empty).
using OpCall = std::function<std::vector<float>()>;
// The OpCall of an op that returns nothing to the host.
template <typename F>
OpCall void_call(F f) {
  return [f]() mutable {
    f();
    return std::vector<float>();
  };
}

struct OpCase {
  std::string op;    // TimingBackend's name of the op ("norm", "linear up", "update o", ...)
  std::string name;  // shapes, dtype, probe: the benchmark's line, the test's trace
  std::function<OpCall(OpTensors& t)> setup;
  // Tolerance of output element i against the reference's value ref (0: exact); NaN fails,
  // except where unwritten(i): elements the op must leave as poisoned (NaN on both sides).
  std::function<double(size_t i, float ref)> bound = [](size_t, float) { return 0.0; };
  std::function<bool(size_t i)> unwritten;  // empty: every element is written
  bool bit_exact = false;                   // compare bits (+0 and -0 differ)
  DType ref_rounding = DTYPE_F32;           // the reference's outputs rounded to this first
  // "" when the reference's outputs show the case tests something, else why not.
  std::function<std::string(const std::vector<float>& ref)> check_ref;
};

// The lists, each tested as one conformance test (the list number is its seed's `list`).
enum OpList {
  OPS_EMBEDDING, OPS_POSITION_EMBEDDING, OPS_NORM, OPS_ROPE, OPS_SWIGLU, OPS_RELU, OPS_ADD,
  OPS_GATHER_ROWS, OPS_COPY_ROWS, OPS_LINEAR_SMALL_INT, OPS_LINEAR_RANDOM, OPS_LINEAR_PERTURBED,
  OPS_UPDATE, OPS_ABS_QUANTILE, OPS_ATTENTION, OPS_COUNT
};

// Calls fn(c) for every case of `list` in order, each made (its host inputs built from seeds
// mixed with base_seed) just before the call and freed after it.
void for_each_op_case(OpList list, uint32_t base_seed, const std::function<void(const OpCase&)>& fn);

// ---- for the case makers (bench/op_case_*.cpp)

// Every noise kind of the spec; cases cycle through them (noise_of_case(case index)).
constexpr NoiseKind kNoiseKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN};
inline NoiseKind noise_of_case(uint64_t index) { return kNoiseKinds[index % 4]; }
constexpr DType kAllDtypes[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
const char* mask_name(MaskKind m);
// ParamInfo for a mask kind: MAGNITUDE keeps |w| <= median |w|, RANDOM keeps 30 %.
ParamInfo op_param_info(const std::string& name, uint32_t tensor_id, MaskKind mask, const std::vector<float>& values,
                        bool trainable, uint64_t mask_seed, NoiseKind noise = NOISE_GAUSSIAN);

// ---- tolerances (the policy: bench/op_case_ops.cpp's top comment)
constexpr double kTolElementwise = 1e-6;
constexpr double kTolNorm = 1e-5;
constexpr double kTolGemm = 1e-5;
constexpr double kRopeAngleUlps = 8.0;
constexpr double kTolAttention = 1e-5;

}  // namespace smezo
