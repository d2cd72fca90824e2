// How many OpenMP threads the CPU backend runs, and how they wait.
//
// Thread count. libgomp starts as many threads as the CPUs in the process's affinity mask
// (sched_getaffinity: taskset, mpirun's binding, a container's cpuset), but it does not read
// a cgroup CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us): a container limited to 2 CPUs
// on a 64-CPU host would run 64 threads, throttled. smezo's default is the affinity count,
// lowered to floor(quota / period) (at least 1) when a quota in this process's cgroup or an
// ancestor's is lower. A whole CPU per thread: a thread that shares a throttled quota stalls
// every barrier of a parallel loop. OMP_NUM_THREADS, when the user sets it, always wins.
//
// Wait policy. Between parallel regions libgomp's idle threads spin before they sleep
// (~300000 rounds, milliseconds, with OMP_WAIT_POLICY and GOMP_SPINCOUNT unset). On a
// machine where other processes want the cores that CPU time is taken from the thread doing
// the work (measured on a shared 2-core box with two busy loops: the smollm2-135m bench took
// 2.6x the wall time and 3.4x the CPU time of OMP_WAIT_POLICY=passive; RESULTS.md). smezo's
// default is passive: idle threads sleep at once (a futex wake costs microseconds per region;
// the CPU ops are milliseconds). The user's OMP_WAIT_POLICY or GOMP_SPINCOUNT always wins.
//
// Why a re-exec. libgomp reads its environment once, when the library loads, before main():
// setting OMP_WAIT_POLICY in main is too late, and the spin count has no API. So main() calls
// cpu_threads_apply_defaults first: when smezo's defaults differ from the environment it sets
// them and executes /proc/self/exe again with the same argv (same pid, so an MPI launcher's
// bookkeeping is unaffected; before MPI_Init, so no connection is open yet). The variable
// SMEZO_OMP_DEFAULTS records the pid that re-executed and the variables smezo set, so a
// process re-executes at most once and `smezo info` can tell smezo's settings from the
// user's. When the re-exec fails the thread count is still applied (omp_set_num_threads) and
// the wait policy stays libgomp's default; `smezo info` says so.
//
// OpenBLAS is its OpenMP build (Makefile): it has no threads of its own, and every sgemm call
// runs on one thread (cpu_gemm.cpp), so these settings cover it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace smezo {

// --- pure parts (tests/test_cpu_threads.cpp)

// CPUs a cgroup v2 cpu.max allows ("150000 100000" -> 1.5), or 0 for no limit ("max 100000")
// or text that is not a quota.
double cgroup_cpu_max_limit(const std::string& cpu_max_text);
// The same for cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us ("-1": no limit).
double cgroup_cfs_limit(const std::string& quota_text, const std::string& period_text);
// The lowest CPU limit of this process's cgroup and its ancestors, from /proc/self/cgroup's
// text and a reader of files under the cgroup mount (path -> content, "" when absent):
// v2 ("0::/a/b"): /sys/fs/cgroup/a/b/cpu.max, /sys/fs/cgroup/a/cpu.max, /sys/fs/cgroup/cpu.max;
// v1 (a line naming the cpu controller): cpu.cfs_quota_us and cpu.cfs_period_us the same way
// under /sys/fs/cgroup/cpu (or cpu,cpuacct). 0 for no limit. *where names the file that set it.
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
// The plan for an environment, affinity_cpus allowed CPUs and a cgroup limit (0: none;
// cgroup_where: its file). Variables that SMEZO_OMP_DEFAULTS lists count as smezo's, not the
// user's.
OmpPlan cpu_threads_plan(const OmpEnvironment& env, int affinity_cpus, double cgroup_cpus,
                         const std::string& cgroup_where);
// SMEZO_OMP_DEFAULTS's value for a plan: "pid=123 OMP_WAIT_POLICY OMP_NUM_THREADS".
std::string cpu_threads_marker(const OmpPlan& plan, long pid);

// --- the process

// First thing in main(): applies the plan; re-executes /proc/self/exe with argv when needed
// (returns only when it did not or could not).
void cpu_threads_apply_defaults(char** argv);
// Lines for `smezo info`: the thread count and where it came from, the wait policy and why,
// OpenBLAS's threading.
std::vector<std::string> cpu_threads_describe();

}  // namespace smezo
