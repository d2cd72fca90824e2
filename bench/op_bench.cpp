// The op benchmark (see op_bench.h).
#include "bench/op_bench.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "bench/op_cases.h"
#include "bench/timing_backend.h"
#include "common/check.h"

namespace smezo {

namespace {

// A case's tensors for the benchmark: allocated and uploaded; in-place operands keep their
// starting values, uploaded again (untimed) before every call.
class BenchTensors : public OpTensors {
 public:
  explicit BenchTensors(Backend& backend) : OpTensors(backend, false) {}
  Tensor input(int64_t rows, int64_t cols, const std::vector<float>& values) override {
    return upload(be.alloc(rows, cols, DTYPE_F32), values);
  }
  Tensor output(int64_t rows, int64_t cols) override { return be.alloc(rows, cols, DTYPE_F32); }
  Tensor inout(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values) override {
    inouts_.emplace_back(upload(be.alloc(rows, cols, storage(dt)), values), values);
    return inouts_.back().first;
  }
  Param param(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values, const ParamInfo& info) override {
    Param p;
    p.w = upload(be.alloc(rows, cols, storage(dt)), values);
    p.info = info;
    return p;
  }
  void restore() {
    for (const auto& io : inouts_) be.upload(io.first, io.second.data());
  }

 private:
  Tensor upload(const Tensor& t, const std::vector<float>& values) {
    be.upload(t, values.data());
    return t;
  }
  std::vector<std::pair<Tensor, std::vector<float>>> inouts_;
};

}  // namespace

int64_t run_op_bench(Backend& backend, const OpBenchOptions& o) {
  SMEZO_REQUIRE(o.reps > 0 && o.warmup >= 0, "op bench: --reps must be positive, --warmup not negative");
  TimingBackend timed(backend);
  std::fprintf(o.out, "op bench: every case of bench/op_cases.h on %s, mean of %d calls after %d warm-up calls\n",
               backend.name(), o.reps, o.warmup);
  int64_t cases = 0;
  for (int list = 0; list < OPS_COUNT; list++)
    for_each_op_case(static_cast<OpList>(list), kOpCaseDefaultSeed, [&](const OpCase& c) {
      BenchTensors t(timed);
      const OpCall call = c.setup(t);
      for (int r = 0; r < o.warmup + o.reps; r++) {
        if (r == o.warmup) timed.reset();
        t.restore();
        call();
      }
      const auto it = timed.ms().find(c.op);
      SMEZO_REQUIRE(it != timed.ms().end(), "op bench: the timing backend recorded no '%s' for %s", c.op.c_str(),
                    c.name.c_str());
      std::fprintf(o.out, "%-20s %-58s %10.4f ms\n", c.op.c_str(), c.name.c_str(), it->second / o.reps);
      std::fflush(o.out);
      ++cases;
    });
  return cases;
}

}  // namespace smezo
