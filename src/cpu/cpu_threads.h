// How many OpenMP threads the CPU backend runs, and how they wait.
// Threads: the affinity mask's CPU count, lowered to floor(quota / period) (at least 1) when a cgroup
// CPU quota of this process or an ancestor is lower: libgomp ignores quotas, and a thread sharing a
// throttled quota stalls every barrier of a parallel loop.
// Wait policy: passive, idle threads sleep at once: libgomp's default spin takes CPU from the working
// thread on a shared machine, while a futex wake costs microseconds against millisecond ops.
// The user's OMP_NUM_THREADS, OMP_WAIT_POLICY or GOMP_SPINCOUNT always wins.
// libgomp reads its environment once at load, so main() calls cpu_threads_apply_defaults first:
// when smezo's defaults differ it sets them and re-executes /proc/self/exe (same pid, before
// MPI_Init). SMEZO_OMP_DEFAULTS records the pid and the variables set, so it happens at most once and
// `smezo info` can tell smezo's settings from the user's. If the re-exec fails, only the thread count
// applies. OpenBLAS (OpenMP build) runs each sgemm call on one thread, so these settings cover it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace smezo {

// --- pure parts (tests/test_cpu_threads.cpp)

// CPUs a cgroup v2 cpu.max allows ("150000 100000" -> 1.5), or 0 (no limit, or not a quota).
double cgroup_cpu_max_limit(const std::string& cpu_max_text);
// The same for cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us ("-1": no limit).
double cgroup_cfs_limit(const std::string& quota_text, const std::string& period_text);
// The lowest CPU limit of this process's cgroup and its ancestors (0: none), from /proc/self/cgroup's
// text and a file reader (path -> content, "" if absent): v2 cpu.max or v1 cfs files. *where: the file.
double cgroup_cpu_limit(const std::string& proc_self_cgroup,
                        const std::function<std::string(const std::string&)>& read_file, std::string* where);
// The thread count for affinity_cpus allowed CPUs under a cgroup limit (0: none).
int cpu_threads_for(int affinity_cpus, double cgroup_cpus);

// What the process's environment says, and what smezo would set.
struct OmpEnvironment {
  std::string omp_num_threads, omp_wait_policy, gomp_spincount;  // "" when unset
  std::string smezo_marker;                                      // SMEZO_OMP_DEFAULTS
  long pid = 0;                                                  // this process
};
struct OmpPlan {
  int threads = 1;                  // the count smezo asks for (0: the user's OMP_NUM_THREADS)
  std::string threads_source;       // "yours: OMP_NUM_THREADS=4", "the affinity mask allows ...", "cgroup quota ..."
  std::string wait_policy;          // "passive", "active", or what GOMP_SPINCOUNT gives
  std::string wait_source;          // why
  std::vector<std::pair<std::string, std::string>> set;  // variables smezo sets (before a re-exec)
  bool reexec = false;              // the environment lacks `set` and this pid has not re-executed
};
// The plan for an environment, affinity_cpus and a cgroup limit (0: none).
OmpPlan cpu_threads_plan(const OmpEnvironment& env, int affinity_cpus, double cgroup_cpus,
                         const std::string& cgroup_where);
// SMEZO_OMP_DEFAULTS's value for a plan: "pid=123 OMP_WAIT_POLICY OMP_NUM_THREADS".
std::string cpu_threads_marker(const OmpPlan& plan, long pid);

// --- the process

// First thing in main(): applies the plan; re-executes with argv when needed (returns if it did not).
void cpu_threads_apply_defaults(char** argv);
// Lines for `smezo info`: thread count, wait policy and OpenBLAS's threading, with reasons.
std::vector<std::string> cpu_threads_describe();

}  // namespace smezo
