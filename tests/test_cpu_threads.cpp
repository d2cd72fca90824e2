// The CPU backend's OpenMP defaults (src/cpu/cpu_threads.h): cgroup quotas read from made-up
// files, the thread count from an affinity count and a quota, the plan for each environment
// (the user's settings win, smezo re-executes at most once per pid), and `smezo info`'s lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "cpu/cpu_threads.h"
#include "test_util.h"

using namespace smezo;
using testing::HasSubstr;

TEST(CpuThreads, CgroupQuotaTexts) {
  EXPECT_DOUBLE_EQ(cgroup_cpu_max_limit("150000 100000\n"), 1.5);
  EXPECT_DOUBLE_EQ(cgroup_cpu_max_limit("max 100000\n"), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cpu_max_limit(""), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cpu_max_limit("garbage"), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cfs_limit("-1\n", "100000\n"), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cfs_limit("400000\n", "100000\n"), 4.0);
  EXPECT_DOUBLE_EQ(cgroup_cfs_limit("", ""), 0.0);
}

TEST(CpuThreads, CgroupLimitIsTheLowestOfTheCgroupAndItsAncestors) {
  std::map<std::string, std::string> files = {
      {"/sys/fs/cgroup/cpu.max", "max 100000"},
      {"/sys/fs/cgroup/user/cpu.max", "300000 100000"},
      {"/sys/fs/cgroup/user/job/cpu.max", "max 100000"},
  };
  auto read = [&](const std::string& p) { return files.count(p) ? files[p] : std::string(); };
  std::string where;
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit("0::/user/job\n", read, &where), 3.0);
  EXPECT_EQ(where, "/sys/fs/cgroup/user/cpu.max");
  files["/sys/fs/cgroup/user/job/cpu.max"] = "50000 100000";
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit("0::/user/job\n", read, &where), 0.5);
  EXPECT_EQ(where, "/sys/fs/cgroup/user/job/cpu.max");
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit("0::/\n", read, &where), 0.0);  // the root: no limit
  // v1: the line naming the cpu controller, under its mount
  files = {{"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000"},
           {"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000"}};
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n", read, &where), 2.0);
  EXPECT_EQ(where, "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us");
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit("4:memory:/docker/abc\n", read, &where), 0.0);  // no cpu controller line
}

TEST(CpuThreads, ThreadCountFromAffinityAndQuota) {
  EXPECT_EQ(cpu_threads_for(2, 0.0), 2);    // no quota: the affinity mask
  EXPECT_EQ(cpu_threads_for(64, 2.0), 2);   // a container's quota on a big host
  EXPECT_EQ(cpu_threads_for(64, 2.5), 2);   // whole CPUs only
  EXPECT_EQ(cpu_threads_for(64, 0.5), 1);   // at least one
  EXPECT_EQ(cpu_threads_for(4, 16.0), 4);   // a quota above the mask changes nothing
  EXPECT_EQ(cpu_threads_for(0, 0.0), 1);
}

TEST(CpuThreads, PlanSetsPassiveAndTheQuotaWhenTheUserDidNot) {
  OmpEnvironment env;
  env.pid = 42;
  OmpPlan p = cpu_threads_plan(env, 64, 2.0, "/sys/fs/cgroup/cpu.max");
  EXPECT_EQ(p.threads, 2);
  EXPECT_THAT(p.threads_source, HasSubstr("cgroup quota 2.00 CPUs (/sys/fs/cgroup/cpu.max)"));
  EXPECT_EQ(p.wait_policy, "passive");
  ASSERT_EQ(p.set.size(), 2u);
  EXPECT_TRUE(p.reexec);
  EXPECT_EQ(cpu_threads_marker(p, 42), "pid=42 OMP_NUM_THREADS OMP_WAIT_POLICY");

  // after the re-exec: the same pid, the variables set, listed as smezo's
  env.omp_num_threads = "2";
  env.omp_wait_policy = "passive";
  env.smezo_marker = cpu_threads_marker(p, 42);
  const OmpPlan after = cpu_threads_plan(env, 64, 2.0, "/sys/fs/cgroup/cpu.max");
  EXPECT_FALSE(after.reexec);
  EXPECT_EQ(after.threads_source, p.threads_source);  // still smezo's reason, not "yours"
  EXPECT_EQ(after.wait_source, p.wait_source);

  // never twice in one pid, even when the environment did not take
  env.omp_wait_policy = env.omp_num_threads = "";
  EXPECT_FALSE(cpu_threads_plan(env, 64, 2.0, "x").reexec);
  // a child smezo inherits the marker and may re-execute once itself
  env.pid = 43;
  EXPECT_TRUE(cpu_threads_plan(env, 64, 2.0, "x").reexec);
}

TEST(CpuThreads, PlanLeavesTheUsersSettingsAlone) {
  OmpEnvironment env;
  env.pid = 7;
  env.omp_num_threads = "8";
  env.omp_wait_policy = "active";
  OmpPlan p = cpu_threads_plan(env, 2, 1.0, "q");
  EXPECT_EQ(p.threads, 0);
  EXPECT_EQ(p.threads_source, "yours: OMP_NUM_THREADS=8");
  EXPECT_EQ(p.wait_policy, "active");
  EXPECT_EQ(p.wait_source, "yours: OMP_WAIT_POLICY=active");
  EXPECT_TRUE(p.set.empty());
  EXPECT_FALSE(p.reexec);
  // GOMP_SPINCOUNT alone is a wait policy too; no quota and the whole mask: nothing to set
  env = OmpEnvironment();
  env.gomp_spincount = "1000";
  p = cpu_threads_plan(env, 2, 0.0, "");
  EXPECT_EQ(p.threads, 2);
  EXPECT_EQ(p.threads_source, "the affinity mask allows 2 CPUs; no cgroup CPU quota");
  EXPECT_EQ(p.wait_source, "yours: GOMP_SPINCOUNT=1000");
  EXPECT_FALSE(p.reexec);
}

// The real process: smezo re-executes itself with passive set, and says so; the user's wins;
// the thread count follows the affinity mask (taskset).
TEST(CpuThreads, InfoStatesThreadsAndWaitPolicy) {
  const std::string clean = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS -u SMEZO_OMP_DEFAULTS ";
  std::string out;
  ASSERT_EQ(smezo_test::run_command(clean + smezo_test::smezo_binary() + " info", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("wait policy  passive (smezo's default, OMP_WAIT_POLICY being unset"));
  EXPECT_THAT(out, HasSubstr("OpenBLAS     OpenMP build"));
  ASSERT_EQ(smezo_test::run_command(clean + "OMP_WAIT_POLICY=active OMP_NUM_THREADS=3 " +
                                        smezo_test::smezo_binary() + " info", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("wait policy  active (yours: OMP_WAIT_POLICY=active)"));
  EXPECT_THAT(out, HasSubstr("threads      3 (yours: OMP_NUM_THREADS=3)"));
  if (smezo_test::run_command("taskset -c 0 true", &out) != 0) GTEST_SKIP() << "no taskset here";
  ASSERT_EQ(smezo_test::run_command(clean + "taskset -c 0 " + smezo_test::smezo_binary() + " info", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("threads      1 (the affinity mask allows 1 CPU;"));
}
