// cuBLAS opened on first use (cuda/cublas_lazy.cu): a process of the CUDA build maps no libcublas
// until it calls cuBLAS, then maps the library and gets its answers. The test binary may already have
// called cuBLAS in an earlier test, so the check runs in a fresh process: this binary again, with
// only this test, which then finds SMEZO_CUBLAS_LAZY_FRESH set. Runs without a GPU (no cuBLAS call
// here needs a device); skipped in the CPU-only build and under emulation (the emulator's cuBLAS).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#if defined(SMEZO_WITH_CUDA) && !defined(SMEZO_EMU)
#include <cublas_v2.h>
#endif

namespace {

std::string own_maps() {
  std::ifstream in("/proc/self/maps");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(CublasLazy, OpenedOnFirstUseNotAtStartUp) {
#if defined(SMEZO_WITH_CUDA) && !defined(SMEZO_EMU)
  if (std::getenv("SMEZO_CUBLAS_LAZY_FRESH")) {  // the fresh process
    EXPECT_EQ(own_maps().find("libcublas"), std::string::npos) << "cuBLAS mapped before any call";
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
    const std::string maps = own_maps();
    EXPECT_NE(maps.find("libcublas.so"), std::string::npos) << "the first call did not open cuBLAS";
    EXPECT_NE(maps.find("libcublasLt.so"), std::string::npos);
    return;
  }
  // Without the shard variables: under tests/run_shards.sh the child would otherwise take the
  // parent's shard of a one-test list and, in any shard but the first, run nothing.
  const std::string command = "env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE "
                              "SMEZO_CUBLAS_LAZY_FRESH=1 /proc/" + std::to_string(getpid()) +
                              "/exe --gtest_filter=CublasLazy.OpenedOnFirstUseNotAtStartUp 2>&1";
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, child)) output.append(buffer, n);
  const int status = pclose(child);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
#else
  GTEST_SKIP() << "built without CUDA, or emulated: no cuBLAS library to open";
#endif
}
