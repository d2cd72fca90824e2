// GoogleTest entry point. Besides gtest's own report it prints one closing line,
// "smezo_tests: N passed, N failed, N skipped", that CI reads.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  const testing::UnitTest* ut = testing::UnitTest::GetInstance();
  std::printf("smezo_tests: %d passed, %d failed, %d skipped\n", ut->successful_test_count(),
              ut->failed_test_count(), ut->skipped_test_count());
  return rc;
}
