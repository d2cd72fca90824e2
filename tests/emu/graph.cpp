// Emulated CUDA: stream capture and graphs, with the real runtime's rules and error codes as
// far as this project can meet them (tests/emu/README.md says what is modelled and what not).
//   Capture. cudaStreamBeginCapture puts a stream in capture: every stream-ordered call on it
//   (kernel launch, cudaMemcpyAsync, cudaMemsetAsync, the emulated cuBLAS GEMMs, a graph
//   launch) is recorded into the capture's graph instead of running, kernel arguments and
//   cuBLAS's alpha/beta by value. A stream that waits on an event recorded in a capture joins
//   it (a fork); work on a joined stream must be waited for by another stream of the capture
//   (a join) before cudaStreamEndCapture, or the capture has unjoined work.
//   Forbidden during a capture, each invalidating the capture concerned (its streams' later
//   work fails with cudaErrorStreamCaptureInvalidated; cudaStreamEndCapture returns that and
//   no graph):
//     synchronising or querying a capturing stream, or the device: ...CaptureUnsupported;
//     "potentially unsafe" calls (allocating, freeing, synchronous copies, synchronising or
//     querying anything) where the capture modes forbid them: ...CaptureUnsupported;
//     any use of the legacy stream while a blocking stream captures: ...CaptureImplicit;
//     synchronising or querying an event recorded in a capture: cudaErrorCapturedEvent;
//     a capturing stream waiting on an event recorded outside its capture: ...CaptureIsolation
//     (or in another capture: ...CaptureMerge).
//   Graphs. Nodes are kept in capture order, which is a valid order of the graph's
//   dependencies; cudaGraphLaunch runs them in that order on the calling thread (no
//   concurrency between branches), each as the enqueued call would have run: memory a copy
//   names that was freed since the capture, or a faulting kernel, is the sticky error and the
//   rest of the graph does not run.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "emu_internal.h"

struct CUgraphNode_st {
  emu::GraphOpPtr op;
};
struct CUgraph_st {
  std::vector<std::shared_ptr<CUgraphNode_st>> nodes;  // in capture order
  bool capturing = false;                              // a capture still adds to it
};
struct CUgraphExec_st {
  std::vector<std::shared_ptr<CUgraphNode_st>> from;  // the nodes it was instantiated from
  std::vector<emu::GraphOpPtr> ops;                   // what runs, in order (updates replace)
};

namespace emu {

cudaGraphExecUpdateResult GraphOp::update_to(const GraphOp& next) const {
  return next.type() == type() ? cudaGraphExecUpdateSuccess
                               : cudaGraphExecUpdateErrorNodeTypeChanged;
}

namespace {

// A kernel node: the launch and a copy of its arguments (k.state points into `state`).
struct KernelOp : GraphOp {
  KernelLaunch k;
  std::shared_ptr<const void> state;
  mutable std::vector<void*> params;  // cudaGraphKernelNodeGetParams's view of the arguments
  KernelOp(const KernelLaunch& launch, std::shared_ptr<const void> s)
      : k(launch), state(std::move(s)) {
    k.state = state.get();
  }
  cudaGraphNodeType type() const override { return cudaGraphNodeTypeKernel; }
  void run() const override { execute_kernel(k); }
  std::string describe() const override {
    return format("kernel node `%s` (captured at %s:%d)", k.name, k.file, k.line);
  }
};

void run_ops(const std::vector<GraphOpPtr>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (sticky_error() != cudaSuccess) return;
    ops[i]->run();
    if (sticky_error() != cudaSuccess)
      std::fprintf(stderr, "emu: note: the fault above is in node %zu of %zu of a graph: %s\n",
                   i + 1, ops.size(), ops[i]->describe().c_str());
  }
}

// A graph launched into a capturing stream: a child graph node.
struct ChildOp : GraphOp {
  std::vector<GraphOpPtr> ops;
  explicit ChildOp(std::vector<GraphOpPtr> o) : ops(std::move(o)) {}
  cudaGraphNodeType type() const override { return cudaGraphNodeTypeGraph; }
  void run() const override { run_ops(ops); }
  std::string describe() const override {
    return format("child graph node (%zu nodes)", ops.size());
  }
  cudaGraphExecUpdateResult update_to(const GraphOp& next) const override {
    const ChildOp* c = dynamic_cast<const ChildOp*>(&next);
    if (c == nullptr) return cudaGraphExecUpdateErrorNodeTypeChanged;
    if (c->ops.size() != ops.size()) return cudaGraphExecUpdateErrorTopologyChanged;
    for (size_t i = 0; i < ops.size(); ++i) {
      const cudaGraphExecUpdateResult r = ops[i]->update_to(*c->ops[i]);
      if (r != cudaGraphExecUpdateSuccess) return r;
    }
    return cudaGraphExecUpdateSuccess;
  }
};

// A stream's part in a capture: the sequence number of its last work, up to which sequence
// number another stream of the capture has waited for it, and its last node.
struct Member {
  uint64_t last_work = 0;
  uint64_t joined = 0;
  cudaGraphNode_t tail = nullptr;
};
struct Capture {
  uint64_t id = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  cudaStream_t origin = nullptr;
  std::thread::id thread;
  cudaGraph_t graph = nullptr;
  bool invalidated = false;
  std::string why;  // the call that invalidated it
  uint64_t seq = 0;
  std::map<cudaStream_t, Member> members;
  std::vector<cudaGraphNode_t> deps;  // cudaStreamGetCaptureInfo's views
  std::vector<cudaGraphEdgeData> edges;
};
// An event recorded in a capture: where.
struct EventMark {
  uint64_t capture_id;
  cudaStream_t stream;
  uint64_t seq;
};
struct Graphs {
  std::mutex mutex;  // taken before State::mutex (runtime.cpp), never after
  uint64_t next_id = 1;
  std::map<cudaStream_t, std::shared_ptr<Capture>> by_stream;  // every stream of a capture
  std::map<cudaEvent_t, EventMark> marks;
  std::set<cudaGraph_t> graphs;
  std::set<cudaGraphExec_t> execs;
};
Graphs& gs() {
  static Graphs* g = new Graphs;  // never destroyed, as runtime.cpp's State
  return *g;
}
thread_local cudaStreamCaptureMode tl_mode = cudaStreamCaptureModeGlobal;

bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }
void* vp(const void* p) { return const_cast<void*>(p); }
const char* mode_name(cudaStreamCaptureMode m) {
  switch (m) {
    case cudaStreamCaptureModeGlobal: return "global";
    case cudaStreamCaptureModeThreadLocal: return "thread-local";
    case cudaStreamCaptureModeRelaxed: return "relaxed";
  }
  return "?";
}

std::vector<Capture*> all_captures() {
  std::vector<Capture*> out;
  for (auto& [s, c] : gs().by_stream)
    if (std::find(out.begin(), out.end(), c.get()) == out.end()) out.push_back(c.get());
  return out;
}
Capture* capture_by_id(uint64_t id) {
  for (Capture* c : all_captures())
    if (c->id == id) return c;
  return nullptr;
}
void invalidate(Capture& c, const std::string& why) {
  if (c.invalidated) return;
  c.invalidated = true;
  c.why = why;
}

// The legacy stream waits for every blocking stream: while one captures, using the legacy
// stream is an error that invalidates those captures (caller holds gs().mutex).
cudaError_t legacy_conflict(const char* call) {
  std::vector<Capture*> hit;
  for (auto& [s, c] : gs().by_stream)
    if (stream_blocking(s) && std::find(hit.begin(), hit.end(), c.get()) == hit.end())
      hit.push_back(c.get());
  if (hit.empty()) return cudaSuccess;
  for (Capture* c : hit) invalidate(*c, format("%s on the legacy stream", call));
  return record_error(
      cudaErrorStreamCaptureImplicit,
      format("%s on the legacy stream while blocking stream %p captures a graph: the "
             "legacy stream would wait for it; the capture is invalidated (capture on a "
             "cudaStreamNonBlocking stream, and use that stream)",
             call, vp(hit[0]->origin)));
}

void add_node(Capture& c, cudaStream_t s, GraphOpPtr op) {
  auto node = std::make_shared<CUgraphNode_st>(CUgraphNode_st{std::move(op)});
  c.graph->nodes.push_back(node);
  Member& m = c.members[s];
  m.last_work = ++c.seq;
  m.tail = node.get();
}

// Ends capture c (caller holds gs().mutex): its streams leave capture, its event marks go.
void end_capture(const std::shared_ptr<Capture>& c) {
  for (auto it = gs().by_stream.begin(); it != gs().by_stream.end();)
    it = it->second == c ? gs().by_stream.erase(it) : std::next(it);
  for (auto it = gs().marks.begin(); it != gs().marks.end();)
    it = it->second.capture_id == c->id ? gs().marks.erase(it) : std::next(it);
  c->graph->capturing = false;
}

// A stream of capture c that has work no other stream of it waited for (null if none).
cudaStream_t unjoined_stream(const Capture& c) {
  for (const auto& [s, m] : c.members)
    if (s != c.origin && m.last_work > m.joined) return s;
  return nullptr;
}

bool node_live(cudaGraphNode_t node) {
  for (cudaGraph_t g : gs().graphs)
    for (const auto& n : g->nodes)
      if (n.get() == node) return true;
  return false;
}

}  // namespace

GraphOpPtr kernel_op(const KernelLaunch& k) {
  return std::make_shared<const KernelOp>(k, k.copy_state(k.state));
}

cudaError_t enqueue(cudaStream_t s, const char* call, const std::function<GraphOpPtr()>& make_op,
                    bool* captured) {
  *captured = false;
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (is_legacy(s)) return legacy_conflict(call);
  auto it = gs().by_stream.find(s);
  if (it == gs().by_stream.end() || !make_op) return cudaSuccess;
  Capture& c = *it->second;
  if (c.invalidated)
    return record_error(
        cudaErrorStreamCaptureInvalidated,
        format("%s on stream %p: its capture was invalidated by %s; nothing more is "
               "recorded (end it with cudaStreamEndCapture)",
               call, vp(s), c.why.c_str()));
  add_node(c, s, make_op());
  *captured = true;
  return cudaSuccess;
}

cudaError_t unsafe_call(const char* call) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  const cudaStreamCaptureMode mode = tl_mode;
  if (mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  const std::thread::id self = std::this_thread::get_id();
  std::vector<Capture*> forbidding;
  for (Capture* c : all_captures())
    if ((c->thread == self && c->mode != cudaStreamCaptureModeRelaxed) ||
        (mode == cudaStreamCaptureModeGlobal && c->thread != self &&
         c->mode == cudaStreamCaptureModeGlobal))
      forbidding.push_back(c);
  if (forbidding.empty()) return cudaSuccess;
  for (Capture* c : forbidding) invalidate(*c, call);
  const Capture& c = *forbidding[0];
  return record_error(
      cudaErrorStreamCaptureUnsupported,
      format("%s while stream %p captures a graph (capture mode %s, this thread's mode %s): "
             "potentially unsafe during a capture, so not permitted; the capture is invalidated "
             "(allocate and synchronise before cudaStreamBeginCapture)",
             call, vp(c.origin), mode_name(c.mode), mode_name(mode)));
}

cudaError_t stream_sync_call(cudaStream_t s, const char* call) {
  {
    std::lock_guard<std::mutex> lock(gs().mutex);
    if (is_legacy(s)) {
      const cudaError_t e = legacy_conflict(call);
      if (e != cudaSuccess) return e;
    }
    auto it = gs().by_stream.find(s);
    if (it != gs().by_stream.end()) {
      invalidate(*it->second, call);
      return record_error(
          cudaErrorStreamCaptureUnsupported,
          format("%s of stream %p, which is capturing a graph: nothing it holds has "
                 "run, so it cannot be synchronised or queried; the capture is "
                 "invalidated",
                 call, vp(s)));
    }
  }
  return unsafe_call(call);
}

cudaError_t device_sync_call(const char* call) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  const std::vector<Capture*> all = all_captures();
  if (all.empty()) return cudaSuccess;
  for (Capture* c : all) invalidate(*c, call);
  return record_error(
      cudaErrorStreamCaptureUnsupported,
      format("%s while stream %p captures a graph: the device cannot be synchronised "
             "during a capture; the capture is invalidated",
             call, vp(all[0]->origin)));
}

cudaError_t event_sync_call(cudaEvent_t e, const char* call, bool query_only) {
  {
    std::lock_guard<std::mutex> lock(gs().mutex);
    auto it = gs().marks.find(e);
    Capture* c = it == gs().marks.end() ? nullptr : capture_by_id(it->second.capture_id);
    if (c != nullptr) {
      invalidate(*c, call);
      return record_error(cudaErrorCapturedEvent,
                          format("%s of event %p, last recorded in the capture on stream %p: it "
                                 "stands for a point of the graph, not for work that runs; the "
                                 "capture is invalidated",
                                 call, static_cast<void*>(e), vp(c->origin)));
    }
  }
  return query_only ? cudaSuccess : unsafe_call(call);
}

cudaError_t event_record(cudaEvent_t e, cudaStream_t s, bool* captured) {
  *captured = false;
  std::lock_guard<std::mutex> lock(gs().mutex);
  auto it = gs().by_stream.find(s);
  if (is_legacy(s) || it == gs().by_stream.end()) {
    gs().marks.erase(e);
    return is_legacy(s) ? legacy_conflict("cudaEventRecord") : cudaSuccess;
  }
  Capture& c = *it->second;
  if (c.invalidated)
    return record_error(cudaErrorStreamCaptureInvalidated,
                        format("cudaEventRecord on stream %p: its capture was invalidated by %s",
                               vp(s), c.why.c_str()));
  gs().marks[e] = EventMark{c.id, s, c.seq};
  *captured = true;
  return cudaSuccess;
}

void event_destroyed(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  gs().marks.erase(e);
}

bool stream_in_capture(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  return gs().by_stream.count(s) != 0;
}

cudaError_t stream_wait_event(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (is_legacy(s)) {
    const cudaError_t err = legacy_conflict("cudaStreamWaitEvent");
    if (err != cudaSuccess) return err;
  }
  auto mark = gs().marks.find(e);
  Capture* ec = mark == gs().marks.end() ? nullptr : capture_by_id(mark->second.capture_id);
  auto sit = gs().by_stream.find(s);
  Capture* sc = sit == gs().by_stream.end() ? nullptr : sit->second.get();
  for (Capture* c : {sc, ec})
    if (c != nullptr && c->invalidated)
      return record_error(cudaErrorStreamCaptureInvalidated,
                          format("cudaStreamWaitEvent(%p, %p): the capture was invalidated by %s",
                                 vp(s), static_cast<void*>(e), c->why.c_str()));
  if (ec == nullptr) {  // the event marks no point of a capture under way
    if (sc == nullptr || (flags & cudaEventWaitExternal)) return cudaSuccess;  // work ran already
    invalidate(*sc, "cudaStreamWaitEvent on an event recorded outside the capture");
    return record_error(
        cudaErrorStreamCaptureIsolation,
        format("cudaStreamWaitEvent: stream %p, capturing, waits on event %p, which was "
               "not recorded in the capture: a dependency on uncaptured work; the "
               "capture is invalidated",
               vp(s), static_cast<void*>(e)));
  }
  if (is_legacy(s)) {  // the legacy stream cannot capture, so it cannot join one either
    invalidate(*ec, "cudaStreamWaitEvent of the legacy stream");
    return record_error(cudaErrorStreamCaptureUnsupported,
                        format("cudaStreamWaitEvent: the legacy stream waits on event %p, recorded "
                               "in a capture: it cannot join a capture; the capture is invalidated",
                               static_cast<void*>(e)));
  }
  if (sc == nullptr) {  // a fork: s joins the capture after the event's point
    gs().by_stream[s] = gs().by_stream.at(mark->second.stream);
    ec->members[s].tail = ec->members[mark->second.stream].tail;
    return cudaSuccess;
  }
  if (sc == ec) {  // a join: s now follows the event's stream up to the event
    Member& m = ec->members[mark->second.stream];
    m.joined = std::max(m.joined, mark->second.seq);
    return cudaSuccess;
  }
  invalidate(*sc, "cudaStreamWaitEvent merging two captures");
  invalidate(*ec, "cudaStreamWaitEvent merging two captures");
  return record_error(
      cudaErrorStreamCaptureMerge,
      format("cudaStreamWaitEvent: stream %p, capturing, waits on event %p of another "
             "capture: the two captures would merge; both are invalidated",
             vp(s), static_cast<void*>(e)));
}

void graphs_reset() {
  std::lock_guard<std::mutex> lock(gs().mutex);
  gs().by_stream.clear();
  gs().marks.clear();
  for (cudaGraph_t g : gs().graphs) delete g;
  for (cudaGraphExec_t x : gs().execs) delete x;
  gs().graphs.clear();
  gs().execs.clear();
}

}  // namespace emu

using emu::format;
using emu::gs;
using emu::record_error;

// ---- capture

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (emu::sticky_error() != cudaSuccess) return emu::sticky_error();
  if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed)
    return record_error(cudaErrorInvalidValue,
                        format("cudaStreamBeginCapture: mode %d", int(mode)));
  if (emu::is_legacy(stream))
    return record_error(
        cudaErrorStreamCaptureUnsupported,
        "cudaStreamBeginCapture: the legacy (NULL) stream cannot capture (capture on "
        "a stream made with cudaStreamCreateWithFlags)");
  if (!emu::stream_valid(stream))
    return record_error(cudaErrorInvalidResourceHandle,
                        "cudaStreamBeginCapture: not a live stream");
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (gs().by_stream.count(stream))
    return record_error(
        cudaErrorIllegalState,
        format("cudaStreamBeginCapture: stream %p is already capturing", emu::vp(stream)));
  auto c = std::make_shared<emu::Capture>();
  c->id = gs().next_id++;
  c->mode = mode;
  c->origin = stream;
  c->thread = std::this_thread::get_id();
  c->graph = new CUgraph_st;
  c->graph->capturing = true;
  c->members[stream] = emu::Member{};
  gs().graphs.insert(c->graph);
  gs().by_stream[stream] = c;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr)
    return record_error(cudaErrorInvalidValue, "cudaStreamEndCapture: null graph pointer");
  *graph = nullptr;
  std::lock_guard<std::mutex> lock(gs().mutex);
  auto it = gs().by_stream.find(stream);
  if (it == gs().by_stream.end())
    return record_error(
        cudaErrorIllegalState,
        format("cudaStreamEndCapture: stream %p is not capturing (the capture began "
               "on another stream, or has ended)",
               emu::vp(stream)));
  const std::shared_ptr<emu::Capture> c = it->second;
  if (stream != c->origin)
    return record_error(cudaErrorStreamCaptureUnmatched,
                        format("cudaStreamEndCapture: the capture began on stream %p, not on %p, "
                               "which joined it; end it where it began",
                               emu::vp(c->origin), emu::vp(stream)));
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return record_error(cudaErrorStreamCaptureWrongThread,
                        format("cudaStreamEndCapture: the %s-mode capture on stream %p began on "
                               "another thread; it must end there",
                               emu::mode_name(c->mode), emu::vp(stream)));
  const cudaStream_t unjoined = emu::unjoined_stream(*c);
  emu::end_capture(c);
  if (!c->invalidated && unjoined == nullptr) {
    *graph = c->graph;
    return cudaSuccess;
  }
  gs().graphs.erase(c->graph);
  delete c->graph;
  if (c->invalidated)
    return record_error(
        cudaErrorStreamCaptureInvalidated,
        format("cudaStreamEndCapture on stream %p: the capture was invalidated by %s; "
               "no graph",
               emu::vp(stream), c->why.c_str()));
  return record_error(
      cudaErrorStreamCaptureUnjoined,
      format("cudaStreamEndCapture on stream %p: stream %p joined the capture and has "
             "work no stream of it waited for (record an event there and make stream "
             "%p wait on it); no graph",
             emu::vp(stream), emu::vp(unjoined), emu::vp(stream)));
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                     unsigned long long* id, cudaGraph_t* graph,
                                     const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edge_data,
                                     size_t* num_dependencies) {
  if (status == nullptr || (edge_data != nullptr && dependencies == nullptr))
    return record_error(cudaErrorInvalidValue,
                        "cudaStreamGetCaptureInfo: a required pointer is null");
  if (!emu::is_legacy(stream) && !emu::stream_valid(stream))
    return record_error(cudaErrorInvalidResourceHandle,
                        "cudaStreamGetCaptureInfo: not a live stream");
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (emu::is_legacy(stream)) {
    for (auto& [s, c] : gs().by_stream)  // an error, but the capture stays valid
      if (emu::stream_blocking(s))
        return record_error(
            cudaErrorStreamCaptureImplicit,
            "cudaStreamGetCaptureInfo of the legacy stream while a blocking stream captures");
  }
  auto it = gs().by_stream.find(stream);
  if (it == gs().by_stream.end()) {
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  emu::Capture& c = *it->second;
  *status = c.invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id) *id = c.id;
  if (graph) *graph = c.graph;
  c.deps.clear();
  if (cudaGraphNode_t tail = c.members[stream].tail) c.deps.push_back(tail);
  c.edges.assign(c.deps.size(), cudaGraphEdgeData{});
  if (dependencies) *dependencies = c.deps.data();
  if (edge_data) *edge_data = c.edges.data();
  if (num_dependencies) *num_dependencies = c.deps.size();
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  return cudaStreamGetCaptureInfo(stream, status);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr || *mode < cudaStreamCaptureModeGlobal ||
      *mode > cudaStreamCaptureModeRelaxed)
    return record_error(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode: not a mode");
  std::swap(*mode, emu::tl_mode);
  return cudaSuccess;
}

// ---- graphs

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (emu::sticky_error() != cudaSuccess) return emu::sticky_error();
  if (exec == nullptr)
    return record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: null exec pointer");
  *exec = nullptr;
  if (flags & cudaGraphInstantiateFlagDeviceLaunch)
    return record_error(
        cudaErrorNotSupported,
        "cudaGraphInstantiate: cudaGraphInstantiateFlagDeviceLaunch (graphs launched "
        "from the device) is NOT MODELLED by the emulator (tests/emu/graph.cpp)");
  if (flags & ~static_cast<unsigned long long>(cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                               cudaGraphInstantiateFlagUseNodePriority))
    return record_error(cudaErrorInvalidValue,
                        format("cudaGraphInstantiate: flags 0x%llx (cudaGraphInstantiateFlagUpload "
                               "is for cudaGraphInstantiateWithParams only)",
                               flags));
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (!gs().graphs.count(graph))
    return record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: not a live graph");
  auto* x = new CUgraphExec_st;
  x->from = graph->nodes;
  for (const auto& n : graph->nodes) x->ops.push_back(n->op);
  gs().execs.insert(x);
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (emu::sticky_error() != cudaSuccess) return emu::sticky_error();
  std::vector<emu::GraphOpPtr> ops;
  {
    std::lock_guard<std::mutex> lock(gs().mutex);
    if (!gs().execs.count(exec))
      return record_error(
          cudaErrorInvalidValue,
          format("cudaGraphLaunch: %p is not a live executable graph (destroyed, or "
                 "never instantiated): undefined behaviour on a GPU",
                 static_cast<void*>(exec)));
    ops = exec->ops;
  }
  if (!emu::stream_valid(stream))
    return record_error(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: not a live stream");
  bool captured = false;
  const cudaError_t e = emu::enqueue(
      stream, "cudaGraphLaunch", [&] { return std::make_shared<const emu::ChildOp>(ops); },
      &captured);
  if (e != cudaSuccess || captured) return e;
  emu::run_ops(ops);
  return emu::sticky_error();
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (gs().execs.erase(exec) == 0)
    return record_error(cudaErrorInvalidValue, "cudaGraphExecDestroy: not a live executable graph");
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (!gs().graphs.count(graph))
    return record_error(cudaErrorInvalidValue, "cudaGraphDestroy: not a live graph");
  if (graph->capturing)
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphDestroy: a capture still records into this graph (end it first)");
  gs().graphs.erase(graph);
  delete graph;  // executable graphs made from it keep their own nodes
  return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo* result) {
  if (result == nullptr)
    return record_error(cudaErrorInvalidValue, "cudaGraphExecUpdate: null result info");
  *result = cudaGraphExecUpdateResultInfo{cudaGraphExecUpdateError, nullptr, nullptr};
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (!gs().execs.count(exec) || !gs().graphs.count(graph))
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphExecUpdate: not a live executable graph and graph");
  if (graph->nodes.size() != exec->ops.size()) {
    result->result = cudaGraphExecUpdateErrorTopologyChanged;
    return record_error(
        cudaErrorGraphExecUpdateFailure,
        format("cudaGraphExecUpdate: the graph has %zu nodes, the executable graph %zu",
               graph->nodes.size(), exec->ops.size()));
  }
  for (size_t i = 0; i < exec->ops.size(); ++i) {
    const cudaGraphExecUpdateResult r = exec->ops[i]->update_to(*graph->nodes[i]->op);
    if (r == cudaGraphExecUpdateSuccess) continue;
    result->result = r;
    result->errorNode = graph->nodes[i].get();
    return record_error(
        cudaErrorGraphExecUpdateFailure,
        format("cudaGraphExecUpdate: node %zu (%s) cannot become %s (result %d)", i + 1,
               exec->ops[i]->describe().c_str(), graph->nodes[i]->op->describe().c_str(), int(r)));
  }
  for (size_t i = 0; i < exec->ops.size(); ++i) exec->ops[i] = graph->nodes[i]->op;
  result->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num_nodes) {
  if (num_nodes == nullptr)
    return record_error(cudaErrorInvalidValue, "cudaGraphGetNodes: null count");
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (!gs().graphs.count(graph))
    return record_error(cudaErrorInvalidValue, "cudaGraphGetNodes: not a live graph");
  const size_t n = graph->nodes.size();
  if (nodes != nullptr) {
    for (size_t i = 0; i < *num_nodes; ++i) nodes[i] = i < n ? graph->nodes[i].get() : nullptr;
    *num_nodes = std::min(*num_nodes, n);
  } else {
    *num_nodes = n;
  }
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (type == nullptr || !emu::node_live(node))
    return record_error(cudaErrorInvalidValue, "cudaGraphNodeGetType: not a node of a live graph");
  *type = node->op->type();
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* params) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (params == nullptr || !emu::node_live(node))
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphKernelNodeGetParams: not a node of a live graph");
  const auto* k = dynamic_cast<const emu::KernelOp*>(node->op.get());
  if (k == nullptr)
    return record_error(cudaErrorInvalidValue,
                        format("cudaGraphKernelNodeGetParams: %s is not a kernel node the emulator "
                               "can describe (a cuBLAS call's kernels are cuBLAS's own)",
                               node->op->describe().c_str()));
  k->params.resize(static_cast<size_t>(k->k.n_params));
  k->k.param_pointers(k->state.get(), k->params.data());
  *params =
      cudaKernelNodeParams{const_cast<void*>(k->k.fn),           k->k.cfg.grid,    k->k.cfg.block,
                           static_cast<unsigned>(k->k.cfg.smem), k->params.data(), nullptr};
  return cudaSuccess;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* params) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  if (params == nullptr || !gs().execs.count(exec))
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphExecKernelNodeSetParams: not a live executable graph");
  size_t i = 0;
  while (i < exec->from.size() && exec->from[i].get() != node) ++i;
  if (i == exec->from.size())
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphExecKernelNodeSetParams: the node is not one of the graph the "
                        "executable graph was instantiated from");
  const auto* cur = dynamic_cast<const emu::KernelOp*>(exec->ops[i].get());
  if (cur == nullptr)
    return record_error(cudaErrorInvalidValue,
                        format("cudaGraphExecKernelNodeSetParams: %s is not a kernel node of this "
                               "project's kernels",
                               exec->ops[i]->describe().c_str()));
  if (params->func != cur->k.fn || params->extra != nullptr)
    return record_error(
        cudaErrorNotSupported,
        format("cudaGraphExecKernelNodeSetParams: another kernel function or `extra` "
               "arguments for %s: valid on a GPU, NOT MODELLED by the emulator",
               cur->describe().c_str()));
  if (params->kernelParams == nullptr && cur->k.n_params > 0)
    return record_error(cudaErrorInvalidValue,
                        "cudaGraphExecKernelNodeSetParams: null kernelParams");
  emu::KernelLaunch k = cur->k;
  k.cfg = emu::LaunchConfig(params->gridDim, params->blockDim, params->sharedMemBytes, nullptr);
  std::shared_ptr<const void> state = k.state_from_params(cur->state.get(), params->kernelParams);
  k.state = state.get();
  std::string why;
  const cudaError_t e = emu::check_kernel_launch(k, &why);
  if (e != cudaSuccess)
    return record_error(e, format("cudaGraphExecKernelNodeSetParams: %s: %s",
                                  cur->describe().c_str(), why.c_str()));
  exec->ops[i] = std::make_shared<const emu::KernelOp>(k, std::move(state));
  return cudaSuccess;
}
