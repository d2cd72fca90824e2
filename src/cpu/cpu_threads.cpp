// OpenMP thread count and wait policy defaults (see cpu_threads.h).
#include "cpu/cpu_threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/check.h"
#include "common/file_util.h"  // split_on

namespace smezo {

namespace {

const char* const kMarker = "SMEZO_OMP_DEFAULTS";
std::string g_reexec_error;  // why the re-exec failed, "" when it did not

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and its ancestors, as suffixes of the mount point.
std::vector<std::string> cgroup_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    out.push_back(path);
    if (path.empty()) return out;
    path.resize(path.rfind('/'));
  }
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string read_small_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return std::max(1, CPU_COUNT(&set));
}

OmpPlan current_plan() {
  OmpEnvironment env;
  env.omp_num_threads = env_or_empty("OMP_NUM_THREADS");
  env.omp_wait_policy = env_or_empty("OMP_WAIT_POLICY");
  env.gomp_spincount = env_or_empty("GOMP_SPINCOUNT");
  env.smezo_marker = env_or_empty(kMarker);
  env.pid = static_cast<long>(getpid());
  std::string where;
  const double limit = cgroup_cpu_limit(read_small_file("/proc/self/cgroup"), read_small_file, &where);
  return cpu_threads_plan(env, affinity_cpu_count(), limit, where);
}

}  // namespace

double cgroup_cpu_max_limit(const std::string& text) {
  std::istringstream in(text);
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return 0.0;
  const double q = std::atof(quota.c_str()), p = std::atof(period.c_str());
  return q > 0 && p > 0 ? q / p : 0.0;
}

double cgroup_cfs_limit(const std::string& quota_text, const std::string& period_text) {
  const double q = std::atof(quota_text.c_str()), p = std::atof(period_text.c_str());
  return q > 0 && p > 0 ? q / p : 0.0;
}

double cgroup_cpu_limit(const std::string& proc_self_cgroup,
                        const std::function<std::string(const std::string&)>& read_file, std::string* where) {
  double best = 0.0;
  auto consider = [&](double limit, const std::string& file) {
    if (limit > 0 && (best == 0 || limit < best)) {
      best = limit;
      if (where) *where = file;
    }
  };
  for (const std::string& line : split_on(proc_self_cgroup, '\n')) {
    const size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string id = line.substr(0, c1), controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path = line.substr(c2 + 1);
    if (id == "0" && controllers.empty()) {  // v2
      for (const std::string& p : cgroup_and_ancestors(path)) {
        const std::string file = "/sys/fs/cgroup" + p + "/cpu.max";
        consider(cgroup_cpu_max_limit(read_file(file)), file);
      }
      continue;
    }
    bool cpu = false;
    for (const std::string& c : split_on(controllers, ',')) cpu = cpu || c == "cpu";
    if (!cpu) continue;
    for (const std::string mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"})
      for (const std::string& p : cgroup_and_ancestors(path)) {
        const std::string dir = mount + p;
        consider(cgroup_cfs_limit(read_file(dir + "/cpu.cfs_quota_us"), read_file(dir + "/cpu.cfs_period_us")),
                 dir + "/cpu.cfs_quota_us");
      }
  }
  return best;
}

int cpu_threads_for(int affinity_cpus, double cgroup_cpus) {
  const int allowed = std::max(1, affinity_cpus);
  if (cgroup_cpus <= 0) return allowed;
  return std::max(1, std::min(allowed, static_cast<int>(std::floor(cgroup_cpus + 1e-9))));
}

OmpPlan cpu_threads_plan(const OmpEnvironment& env, int affinity_cpus, double cgroup_cpus,
                         const std::string& cgroup_where) {
  const std::vector<std::string> marker = split_on(env.smezo_marker, ' ');
  auto smezos = [&](const char* var) { return std::find(marker.begin(), marker.end(), var) != marker.end(); };
  const bool marker_is_ours = !marker.empty() && marker[0] == "pid=" + std::to_string(env.pid);
  OmpPlan plan;
  const std::string cgroup_text =
      cgroup_cpus > 0 ? format_string("cgroup quota %.2f CPUs (%s)", cgroup_cpus, cgroup_where.c_str())
                      : std::string("no cgroup CPU quota");
  if (!env.omp_num_threads.empty() && !smezos("OMP_NUM_THREADS")) {
    plan.threads = 0;
    plan.threads_source = "yours: OMP_NUM_THREADS=" + env.omp_num_threads;
  } else {
    plan.threads = cpu_threads_for(affinity_cpus, cgroup_cpus);
    if (plan.threads < affinity_cpus) {
      plan.threads_source = format_string("%s, fewer than the %d CPUs the affinity mask allows", cgroup_text.c_str(),
                                           affinity_cpus);
      plan.set.push_back({"OMP_NUM_THREADS", std::to_string(plan.threads)});
    } else {
      plan.threads_source = format_string("the affinity mask allows %d CPU%s; %s", affinity_cpus,
                                           affinity_cpus == 1 ? "" : "s", cgroup_text.c_str());
    }
  }
  if (!env.omp_wait_policy.empty() && !smezos("OMP_WAIT_POLICY")) {
    plan.wait_policy = env.omp_wait_policy;
    plan.wait_source = "yours: OMP_WAIT_POLICY=" + env.omp_wait_policy;
  } else if (!env.gomp_spincount.empty()) {
    plan.wait_policy = "spin " + env.gomp_spincount + " rounds, then sleep";
    plan.wait_source = "yours: GOMP_SPINCOUNT=" + env.gomp_spincount;
  } else {
    plan.wait_policy = "passive";
    plan.wait_source = "smezo's default, OMP_WAIT_POLICY being unset: idle threads sleep at once instead of "
                       "spinning on cores other processes want; OMP_WAIT_POLICY=active spins";
    plan.set.push_back({"OMP_WAIT_POLICY", "passive"});
  }
  for (const auto& kv : plan.set) {
    const std::string& now = kv.first == "OMP_NUM_THREADS" ? env.omp_num_threads : env.omp_wait_policy;
    if (now != kv.second) plan.reexec = !marker_is_ours;
  }
  return plan;
}

std::string cpu_threads_marker(const OmpPlan& plan, long pid) {
  std::string text = "pid=" + std::to_string(pid);
  for (const auto& kv : plan.set) text += " " + kv.first;
  return text;
}

void cpu_threads_apply_defaults(char** argv) {
  const OmpPlan plan = current_plan();
  if (!plan.reexec) return;
  for (const auto& kv : plan.set) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  setenv(kMarker, cpu_threads_marker(plan, static_cast<long>(getpid())).c_str(), 1);
  execv("/proc/self/exe", argv);
  // Still here: the count can still be set; the wait policy cannot (libgomp read it at load).
  g_reexec_error = format_string("re-executing /proc/self/exe failed: %s", std::strerror(errno));
  if (plan.threads > 0) omp_set_num_threads(plan.threads);
}

std::vector<std::string> cpu_threads_describe() {
  const OmpPlan plan = current_plan();
  std::vector<std::string> out;
  out.push_back(format_string("threads      %d (%s)", omp_get_max_threads(), plan.threads_source.c_str()));
  if (g_reexec_error.empty())
    out.push_back(format_string("wait policy  %s (%s)", plan.wait_policy.c_str(), plan.wait_source.c_str()));
  else
    out.push_back(format_string("wait policy  libgomp's default: spin, then sleep (smezo wanted %s; %s)",
                                plan.wait_policy.c_str(), g_reexec_error.c_str()));
  out.push_back(format_string("OpenBLAS     OpenMP build, %s kernels; each sgemm call on one thread, the "
                              "linear spreads its calls over the threads above",
                              openblas_get_corename()));
  return out;
}

}  // namespace smezo
