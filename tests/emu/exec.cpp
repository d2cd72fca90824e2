// Emulated CUDA: the kernel executor. Blocks are spread over OpenMP threads; the threads of a
// block are fibers (Boost.Context's fcontext, with AddressSanitizer's fiber annotations) that
// one OS thread runs in turn, each until it exits or waits at a barrier or warp collective.
// Between waits the order of the threads is the schedule: fwd (0, 1, ...), rev, or a fresh
// random permutation every round (EMU_SCHED=fwd|rev|random:SEED), so code that needs a barrier
// it lacks computes a different result under another schedule.
//   __syncthreads: released when every thread of the block waits at the same call site; a
//     thread that exited, or waits at another __syncthreads, is reported as divergence.
//   warp collectives: completed once every lane named in the mask waits at the same
//     collective (op, call site, mask); a named lane that exited or does not exist, a mask
//     without the caller's own lane, lanes stuck at different collectives: reported.
//   no thread can run and nothing completes: deadlock, reported with where each thread waits.
// A report ends the launch and becomes the device's sticky error (cudaErrorLaunchFailure,
// or cudaErrorLaunchTimeout for a deadlock). Launch limits are checked first, with the real
// runtime's error codes; then a launch into a capturing stream is recorded (graph.cpp) and
// runs when its graph is launched.
#include <boost/context/detail/fcontext.hpp>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread dim3 blockDim;
__thread dim3 gridDim;

namespace emu {

__thread void* tl_dynamic_smem;

namespace {

namespace bctx = boost::context::detail;

#if EMU_ASAN
constexpr size_t kStackBytes = 1024 * 1024;  // ASan's redzones and fake frames need room
#else
constexpr size_t kStackBytes = 256 * 1024;
#endif

// ---- schedule
enum SchedKind { SCHED_FWD, SCHED_REV, SCHED_RANDOM };
struct Schedule {
  SchedKind kind = SCHED_FWD;
  uint64_t seed = 0;
  std::string name = "fwd";
};
bool parse_schedule(const char* spec, Schedule* s) {
  if (std::strcmp(spec, "fwd") == 0) *s = Schedule{SCHED_FWD, 0, "fwd"};
  else if (std::strcmp(spec, "rev") == 0) *s = Schedule{SCHED_REV, 0, "rev"};
  else if (std::strncmp(spec, "random:", 7) == 0 && spec[7] != '\0') {
    char* end = nullptr;
    const unsigned long long seed = std::strtoull(spec + 7, &end, 10);
    if (*end != '\0') return false;
    *s = Schedule{SCHED_RANDOM, seed, spec};
  } else return false;
  return true;
}

Schedule& schedule() {
  static Schedule s = [] {
    Schedule d;
    const char* env = std::getenv("EMU_SCHED");
    if (env != nullptr && *env != '\0' && !parse_schedule(env, &d)) {
      std::fprintf(stderr, "emu: EMU_SCHED=%s is not fwd, rev or random:SEED\n", env);
      std::exit(2);
    }
    return d;
  }();
  return s;
}

// ---- threads, blocks, workers
enum ThreadState { UNSTARTED, RUNNABLE, AT_BARRIER, AT_COLLECTIVE, EXITED };

struct Thread {
  uint3 idx;
  int linear = 0;
  bctx::fcontext_t ctx = nullptr;
  ThreadState state = UNSTARTED;
  const char* file = nullptr;  // where it waits
  int line = 0;
  const CollOp* op = nullptr;  // at a collective
  unsigned mask = 0;
  CollArgs* args = nullptr;
  void* stack_lo = nullptr;    // this slot's stack [stack_lo, stack_lo + kStackBytes)
  int stack_slot = 0;          // whose stack the fiber running this thread uses
  void* asan_fake = nullptr;
  char* deepest = nullptr;     // lowest frame seen on this slot's stack at a switch (ASan)
};

// What one OS thread needs to run blocks: fibers' stacks, the threads, dynamic shared memory.
struct Worker {
  std::vector<Thread> threads;
  std::vector<void*> mappings;
  void* smem = nullptr;
  size_t smem_bytes = SIZE_MAX;
  const KernelLaunch* k = nullptr;
  bctx::fcontext_t sched = nullptr;  // the scheduler's context while a fiber runs
  Thread* cur = nullptr;
  std::vector<int> order_buf;
  const int* order = nullptr;  // this round's schedule, and the position the scheduler is at
  int order_pos = 0, n = 0;
  std::vector<std::pair<void*, size_t>> static_shared;  // registered by SharedPoison
  const void* sched_stack_lo = nullptr;
  size_t sched_stack_size = 0;
  ~Worker() {
    for (void* m : mappings) munmap(m, kStackBytes + static_cast<size_t>(getpagesize()));
    std::free(smem);
  }
  void ensure_threads(int n) {
    const size_t page = static_cast<size_t>(getpagesize());
    while (static_cast<int>(threads.size()) < n) {
      void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) {
        std::fprintf(stderr, "emu: cannot map a fiber stack\n");
        std::abort();
      }
      mprotect(m, page, PROT_NONE);  // a stack overflow faults instead of corrupting
      mappings.push_back(m);
      threads.emplace_back();
      threads.back().stack_lo = static_cast<char*>(m) + page;
    }
  }
};

thread_local std::unique_ptr<Worker> tl_worker;
Worker& worker() {
  if (!tl_worker) tl_worker.reset(new Worker);
  return *tl_worker;
}

// ---- the launch's failure (first report wins; every block stops)
std::atomic<bool> g_failed{false};
std::mutex g_fail_mutex;
cudaError_t g_fail_code = cudaSuccess;
std::string g_fail_msg;

void fail_launch(cudaError_t code, const std::string& msg) {
  std::lock_guard<std::mutex> lock(g_fail_mutex);
  if (g_failed.load()) return;
  g_fail_code = code;
  g_fail_msg = msg;
  g_failed.store(true);
}

std::string where_kernel(const KernelLaunch& k) {
  return format("kernel `%s` (launched at %s:%d, grid (%u,%u,%u), block (%u,%u,%u))", k.name,
                k.file, k.line, k.cfg.grid.x, k.cfg.grid.y, k.cfg.grid.z, k.cfg.block.x,
                k.cfg.block.y, k.cfg.block.z);
}

// ---- switching
void asan_start(void** fake, const void* lo, size_t size) {
#if EMU_ASAN
  __sanitizer_start_switch_fiber(fake, lo, size);
#else
  (void)fake, (void)lo, (void)size;
#endif
}
void asan_finish(void* fake, const void** lo, size_t* size) {
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, lo, size);
#else
  (void)fake, (void)lo, (void)size;
#endif
}

// From a fiber back to the scheduler; returns when the scheduler resumes this thread.
void yield_to_scheduler(bool exiting) {
  Worker& w = worker();
  Thread* th = w.cur;
#if EMU_ASAN
  // Frames below this one stay poisoned when the fiber never returns (it exits through here,
  // or is abandoned after a fault): the next fiber on this stack must see them clean.
  char* here = static_cast<char*>(__builtin_frame_address(0)) - 4096;
  Thread& slot = w.threads[th->stack_slot];
  if (slot.deepest == nullptr || here < slot.deepest) slot.deepest = here;
#endif
  asan_start(exiting ? nullptr : &th->asan_fake, w.sched_stack_lo, w.sched_stack_size);
  const bctx::transfer_t t = bctx::jump_fcontext(w.sched, nullptr);
  Worker& w2 = worker();
  w2.sched = t.fctx;
  asan_finish(th->asan_fake, &w2.sched_stack_lo, &w2.sched_stack_size);
}

// A fiber starts one thread and, each time the thread it runs exits, goes on with the next
// thread of the schedule if that one has not started yet: threads that never wait cost a
// function call, not a context switch. A thread that waits keeps the fiber (and its stack).
void fiber_main(bctx::transfer_t t) {
  Worker& w = worker();
  w.sched = t.fctx;
  asan_finish(nullptr, &w.sched_stack_lo, &w.sched_stack_size);
  const int slot = static_cast<Thread*>(t.data)->linear;
  for (;;) {
    Thread* th = w.cur;
    th->stack_slot = slot;
    w.k->invoke(w.k->state);
    th->state = EXITED;
    Worker& w2 = worker();
    const int next = w2.order_pos + 1;
    if (next < w2.n && w2.threads[w2.order[next]].state == UNSTARTED &&
        !g_failed.load(std::memory_order_relaxed)) {
      w2.order_pos = next;
      Thread& nt = w2.threads[w2.order[next]];
      nt.state = RUNNABLE;
      w2.cur = &nt;
      ::threadIdx = nt.idx;
      continue;
    }
    yield_to_scheduler(true);
    std::abort();  // an exited fiber is never resumed
  }
}

// Runs `th` (starting it on its own stack if it has not started) until it waits or exits;
// the fiber may go on with later unstarted threads, so w.order_pos can move on.
void resume(Worker& w, Thread& th) {
  if (th.state == UNSTARTED) {
#if EMU_ASAN
    if (th.deepest != nullptr) {  // frames a fiber of an earlier block left poisoned
      char* lo = std::max(th.deepest, static_cast<char*>(th.stack_lo));
      __asan_unpoison_memory_region(lo, static_cast<size_t>(static_cast<char*>(th.stack_lo) + kStackBytes - lo));
      th.deepest = nullptr;
    }
#endif
    th.ctx = bctx::make_fcontext(static_cast<char*>(th.stack_lo) + kStackBytes, kStackBytes, fiber_main);
    th.stack_slot = th.linear;
    th.state = RUNNABLE;
  }
  w.cur = &th;
  ::threadIdx = th.idx;
  void* fake = nullptr;
  asan_start(&fake, w.threads[th.stack_slot].stack_lo, kStackBytes);
  const bctx::transfer_t t = bctx::jump_fcontext(th.ctx, &th);
  asan_finish(fake, nullptr, nullptr);
  w.cur->ctx = t.fctx;  // the thread that switched back: th, or one the fiber went on with
  w.cur = nullptr;
}

// ---- diagnostics: "threads 0-31, 64" style lists
std::string id_list(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += ids[i] == ids[j] ? format("%d", ids[i]) : format("%d-%d", ids[i], ids[j]);
    i = j + 1;
  }
  return s;
}

std::string describe_wait(const Thread& t) {
  switch (t.state) {
    case AT_BARRIER: return format("wait at __syncthreads (%s:%d)", t.file, t.line);
    case AT_COLLECTIVE:
      return format("wait at %s (%s:%d, mask 0x%08x)", t.op->name, t.file, t.line, t.mask);
    case EXITED: return "have exited";
    case RUNNABLE: return "can run";
    case UNSTARTED: return "have not started";
  }
  return "?";
}

// Every distinct wait, with the threads at it.
std::string describe_block(const std::vector<Thread>& th, int n) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int i = 0; i < n; ++i) {
    const std::string d = describe_wait(th[i]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == d; });
    if (it == groups.end()) groups.push_back({d, {i}});
    else it->second.push_back(i);
  }
  std::string s;
  for (const auto& g : groups) s += format("\n    threads %s %s", id_list(g.second).c_str(), g.first.c_str());
  return s;
}

// ---- completing waits
__thread const char* tl_collective_error = nullptr;
__thread char tl_collective_msg[1024];

// Collectives whose named lanes have all arrived; returns whether any completed.
// "kernel `k` (...), block (x,y,z)": built only for a report.
std::string block_name() {
  return format("%s, block (%u,%u,%u)", where_kernel(*worker().k).c_str(), ::blockIdx.x,
                ::blockIdx.y, ::blockIdx.z);
}

bool complete_collectives(Worker& w, int n) {
  bool progressed = false;
  for (int base = 0; base < n; base += 32) {
    const int lanes = std::min(32, n - base);
    for (int l = 0; l < lanes; ++l) {
      Thread& t = w.threads[base + l];
      if (t.state != AT_COLLECTIVE) continue;
      bool ready = true;
      for (int j = 0; j < 32; ++j) {
        if (!(t.mask >> j & 1u)) continue;
        if (j >= lanes) {
          fail_launch(cudaErrorLaunchFailure,
                      format("%s: %s at %s:%d by thread %d names lane %d in mask 0x%08x, but warp %d "
                             "has only %d lanes",
                             block_name().c_str(), t.op->name, t.file, t.line, base + l, j, t.mask,
                             base / 32, lanes));
          return false;
        }
        const Thread& o = w.threads[base + j];
        if (o.state == EXITED) {
          fail_launch(cudaErrorLaunchFailure,
                      format("%s: %s at %s:%d by thread %d names lane %d in mask 0x%08x, but that "
                             "lane has exited: it can never arrive",
                             block_name().c_str(), t.op->name, t.file, t.line, base + l, j, t.mask));
          return false;
        }
        if (o.state != AT_COLLECTIVE || o.op != t.op || o.line != t.line || o.mask != t.mask ||
            (o.file != t.file && std::strcmp(o.file, t.file) != 0))
          ready = false;
      }
      if (!ready) continue;
      CollArgs* args[32] = {};
      for (int j = 0; j < 32; ++j)
        if (t.mask >> j & 1u) args[j] = w.threads[base + j].args;
      tl_collective_error = nullptr;
      try {
        t.op->complete(args, t.mask);
      } catch (int) {  // collective_fault: the message is in tl_collective_error
      }
      if (tl_collective_error != nullptr) {
        fail_launch(cudaErrorLaunchFailure, format("%s: %s at %s:%d (warp %d, mask 0x%08x): %s",
                                                   block_name().c_str(), t.op->name, t.file, t.line,
                                                   base / 32, t.mask, tl_collective_error));
        return false;
      }
      for (int j = 0; j < 32; ++j)
        if (t.mask >> j & 1u) w.threads[base + j].state = RUNNABLE;
      progressed = true;
    }
  }
  return progressed;
}

// The block barrier: released when every thread waits at one __syncthreads.
bool complete_barrier(Worker& w, int n) {
  int at_barrier = 0, exited = 0;
  for (int i = 0; i < n; ++i) {
    if (w.threads[i].state == AT_BARRIER) ++at_barrier;
    else if (w.threads[i].state == EXITED) ++exited;
    else return false;  // someone can still run or waits at a collective
  }
  if (at_barrier == 0) return false;
  const Thread& first = *std::find_if(w.threads.begin(), w.threads.begin() + n,
                                      [](const Thread& t) { return t.state == AT_BARRIER; });
  bool same = true;
  for (int i = 0; i < n; ++i) {
    const Thread& t = w.threads[i];
    if (t.state == AT_BARRIER && (t.line != first.line || std::strcmp(t.file, first.file) != 0)) same = false;
  }
  if (exited > 0 || !same) {
    fail_launch(cudaErrorLaunchFailure,
                format("%s: divergent __syncthreads: not every thread of the block reaches the same "
                       "barrier:%s",
                       block_name().c_str(), describe_block(w.threads, n).c_str()));
    return false;
  }
  for (int i = 0; i < n; ++i) w.threads[i].state = RUNNABLE;
  return true;
}

void run_block(Worker& w, const KernelLaunch& k, uint64_t block_linear) {
  const dim3 g = k.cfg.grid, b = k.cfg.block;
  const int n = static_cast<int>(b.x * b.y * b.z);
  ::blockIdx = uint3{static_cast<unsigned>(block_linear % g.x),
                     static_cast<unsigned>(block_linear / g.x % g.y),
                     static_cast<unsigned>(block_linear / (uint64_t(g.x) * g.y))};
  ::blockDim = b;
  ::gridDim = g;
  w.k = &k;
  if (w.smem_bytes != k.cfg.smem) {  // exactly the launch's size, so ASan sees an overflow
    std::free(w.smem);
    w.smem = nullptr;
    if (posix_memalign(&w.smem, 128, std::max<size_t>(k.cfg.smem, 1)) != 0) std::abort();
    w.smem_bytes = k.cfg.smem;
  }
  if (k.cfg.smem > 0) std::memset(w.smem, 0xff, k.cfg.smem);  // uninitialised: NaN patterns
  for (const auto& [p, bytes] : w.static_shared) std::memset(p, 0xff, bytes);
  tl_dynamic_smem = w.smem;
  w.ensure_threads(n);
  for (int i = 0; i < n; ++i) {
    Thread& t = w.threads[i];
    t.idx = uint3{static_cast<unsigned>(i % b.x), static_cast<unsigned>(i / b.x % b.y),
                  static_cast<unsigned>(i / (b.x * b.y))};
    t.linear = i;
    t.state = UNSTARTED;
    t.asan_fake = nullptr;
  }
  const Schedule& sched = schedule();
  std::vector<int>& order = w.order_buf;
  order.resize(n);
  std::unique_ptr<std::mt19937_64> rng;
  if (sched.kind == SCHED_RANDOM) rng.reset(new std::mt19937_64(sched.seed ^ (block_linear * 0x9E3779B97F4A7C15ull)));
  for (int i = 0; i < n; ++i) order[i] = sched.kind == SCHED_REV ? n - 1 - i : i;
  for (;;) {
    if (rng) std::shuffle(order.begin(), order.end(), *rng);  // a new order every round
    w.order = order.data();
    w.n = n;
    for (w.order_pos = 0; w.order_pos < n; ++w.order_pos) {
      Thread& t = w.threads[order[w.order_pos]];
      if (t.state == RUNNABLE || t.state == UNSTARTED) {
        resume(w, t);
        if (g_failed.load(std::memory_order_relaxed)) return;
      }
    }
    int exited = 0;
    for (int i = 0; i < n; ++i) exited += w.threads[i].state == EXITED;
    if (exited == n) return;
    const bool coll = complete_collectives(w, n);
    if (g_failed.load()) return;
    const bool bar = !coll && complete_barrier(w, n);
    if (g_failed.load()) return;
    if (!coll && !bar) {
      fail_launch(cudaErrorLaunchTimeout,
                  format("%s: deadlock: no thread can proceed (on a GPU this kernel hangs):%s",
                         block_name().c_str(), describe_block(w.threads, n).c_str()));
      return;
    }
  }
}

}  // namespace

// The real runtime's launch checks, with its error codes.
cudaError_t check_kernel_launch(const KernelLaunch& k, std::string* why) {
  const dim3 g = k.cfg.grid, b = k.cfg.block;
  const cudaDeviceProp& p = device_properties();
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0) {
    *why = "a zero grid or block dimension";
    return cudaErrorInvalidConfiguration;
  }
  if (b.x > unsigned(p.maxThreadsDim[0]) || b.y > unsigned(p.maxThreadsDim[1]) ||
      b.z > unsigned(p.maxThreadsDim[2]) || threads > unsigned(p.maxThreadsPerBlock)) {
    *why = format("block (%u,%u,%u) = %llu threads exceeds the limits (1024, 1024, 64; 1024 in all)",
                  b.x, b.y, b.z, (unsigned long long)threads);
    return cudaErrorInvalidConfiguration;
  }
  if (g.x > unsigned(p.maxGridSize[0]) || g.y > unsigned(p.maxGridSize[1]) ||
      g.z > unsigned(p.maxGridSize[2])) {
    *why = format("grid (%u,%u,%u) exceeds the limits (2^31-1, 65535, 65535)", g.x, g.y, g.z);
    return cudaErrorInvalidConfiguration;
  }
  if (k.cfg.smem > p.sharedMemPerBlockOptin) {
    *why = format("%zu bytes of dynamic shared memory exceed the device's %zu per block",
                  k.cfg.smem, p.sharedMemPerBlockOptin);
    return cudaErrorInvalidValue;
  }
  const int opted = max_dynamic_smem(k.fn);
  const size_t allowed = opted > 0 ? size_t(opted) : p.sharedMemPerBlock;  // 48 KB without opting in
  if (k.cfg.smem > allowed) {
    *why = format("%zu bytes of dynamic shared memory exceed the %zu allowed for this kernel "
                  "(above 48 KB a kernel must opt in with cudaFuncSetAttribute("
                  "cudaFuncAttributeMaxDynamicSharedMemorySize))",
                  k.cfg.smem, allowed);
    return cudaErrorInvalidValue;
  }
  if (!stream_valid(k.cfg.stream)) {
    *why = "the stream is not a live stream";
    return cudaErrorInvalidResourceHandle;
  }
  return cudaSuccess;
}

// ---- device-side entry points

SharedPoison::SharedPoison(void* p, size_t bytes) {
  worker().static_shared.emplace_back(p, bytes);
  std::memset(p, 0xff, bytes);
}

void syncthreads_at(const char* file, int line) {
  Thread* t = worker().cur;
  t->state = AT_BARRIER;
  t->file = file;
  t->line = line;
  yield_to_scheduler(false);
}

void warp_collective(const CollOp& op, unsigned mask, CollArgs& args, const char* file, int line) {
  Thread* t = worker().cur;
  t->state = AT_COLLECTIVE;
  t->op = &op;
  t->mask = mask;
  t->args = &args;
  t->file = file;
  t->line = line;
  if (!(mask >> (t->linear % 32) & 1u)) {
    fail_launch(cudaErrorLaunchFailure,
                format("%s: thread %d calls %s at %s:%d with mask 0x%08x, which does not name its "
                       "own lane %d",
                       where_kernel(*worker().k).c_str(), t->linear, op.name, file, line, mask,
                       t->linear % 32));
  }
  yield_to_scheduler(false);
}

void collective_fault(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(tl_collective_msg, sizeof tl_collective_msg, fmt, ap);
  va_end(ap);
  tl_collective_error = tl_collective_msg;
  throw 0;  // caught by the completion wrapper below
}


bool set_schedule(const char* spec) { return parse_schedule(spec, &schedule()); }
const char* schedule_name() { return schedule().name.c_str(); }

void launch_kernel(const KernelLaunch& k) {
  if (sticky_error() != cudaSuccess) return;  // a faulted context runs nothing
  std::string why;
  const cudaError_t err = check_kernel_launch(k, &why);
  if (err != cudaSuccess) {
    record_error(err, format("launch of %s refused: %s", where_kernel(k).c_str(), why.c_str()));
    return;
  }
  bool captured = false;  // a capturing stream records it (with its arguments) instead
  if (enqueue(k.cfg.stream, "kernel launch", [&] { return kernel_op(k); }, &captured) != cudaSuccess ||
      captured)
    return;
  execute_kernel(k);
}

void execute_kernel(const KernelLaunch& k) {
  if (sticky_error() != cudaSuccess) return;
  static std::mutex one_launch;  // launches from several host threads run one at a time
  std::lock_guard<std::mutex> lock(one_launch);
  g_failed.store(false);
  const uint64_t n_blocks = uint64_t(k.cfg.grid.x) * k.cfg.grid.y * k.cfg.grid.z;
  const uint64_t threads = n_blocks * k.cfg.block.x * k.cfg.block.y * k.cfg.block.z;
  const bool rev = schedule().kind == SCHED_REV;
  // Small launches run on the calling thread: waking the team costs more than they do.
  if (n_blocks == 1 || threads < 4096 || omp_in_parallel() || omp_get_max_threads() == 1) {
    for (uint64_t i = 0; i < n_blocks && !g_failed.load(); ++i) run_block(worker(), k, rev ? n_blocks - 1 - i : i);
  } else {
    // OpenMP, not a pool of our own: the process's OpenBLAS and host loops use the same team,
    // so the emulator adds no threads to compete with them for the cores.
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < static_cast<int64_t>(n_blocks); ++i) {
      if (g_failed.load(std::memory_order_relaxed)) continue;
      run_block(worker(), k, rev ? n_blocks - 1 - uint64_t(i) : uint64_t(i));
    }
  }
  if (g_failed.load()) {
    record_fault(g_fail_code, g_fail_msg);
    return;
  }
  check_guards(k.name);
  note_launch();
}

}  // namespace emu
