// GoogleTest entry point. Besides gtest's own report it prints one closing line,
// "smezo_tests: N passed, N failed, N skipped" ("emulated: ..." in the emulated CUDA build,
// tests/emu/), that CI reads.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  const testing::UnitTest* ut = testing::UnitTest::GetInstance();
#if defined(SMEZO_EMU)
  // The emulated CUDA build (tests/emu/): its counts are never GPU results.
  const char* label = "emulated:";
#else
  const char* label = "smezo_tests:";
#endif
  std::printf("%s %d passed, %d failed, %d skipped\n", label, ut->successful_test_count(),
              ut->failed_test_count(), ut->skipped_test_count());
  return rc;
}
