// The World over MPI-3 (-DSMEZO_MPI). The exchange is point-to-point on a dup of MPI_COMM_WORLD: each
// rank sends to every other non-blocking and polls until all arrive or the deadline passes: O(size²)
// small messages, but it knows which ranks did not answer and never blocks inside MPI.
#ifdef SMEZO_MPI

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "common/check.h"
#include "dist/world.h"

namespace smezo {

namespace {

MPI_Comm g_comm = MPI_COMM_NULL;  // smezo's own communicator (a dup of MPI_COMM_WORLD)
MPI_Comm g_p2p = MPI_COMM_NULL;   // another dup, for point-to-point transfers (pipeline stages)
std::map<int64_t, MPI_Request>& pending_transfers() {  // World::Transfer::id -> its request
  static std::map<int64_t, MPI_Request> requests;
  return requests;
}
int64_t g_next_transfer = 0;

const char* kSilentRankHint =
    "that rank died or hangs (its own output may say why); a slow but healthy rank needs a larger "
    "--mpi-timeout; the seed log keeps every finished step: rerun with --resume";

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
  if (g_p2p != MPI_COMM_NULL) MPI_Comm_free(&g_p2p);
  MPI_Finalize();
}

std::string mpi_error_text(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return format_string("MPI error %d", code);
  return std::string(buf, static_cast<size_t>(len));
}

void mpi_check(int rc, const char* call, const std::string& what) {
  if (rc != MPI_SUCCESS) throw_error("%s failed in the exchange of %s: %s", call, what.c_str(), mpi_error_text(rc).c_str());
}

// SMEZO_DIST_FAULT="exit:R:K" / "hang:R:K" (tests only, see world.h).
struct Fault {
  char kind = 0;  // 'e', 'h', or 0 for none
  int rank = -1;
  int64_t at = 0;
};

Fault parse_fault() {
  Fault f;
  const char* v = std::getenv("SMEZO_DIST_FAULT");
  if (v == nullptr || *v == '\0') return f;
  char kind[8] = {};
  int rank = -1;
  long long at = 0;
  SMEZO_REQUIRE(std::sscanf(v, "%7[a-z]:%d:%lld", kind, &rank, &at) == 3 &&
                    (std::strcmp(kind, "exit") == 0 || std::strcmp(kind, "hang") == 0) && rank >= 0 && at >= 1,
                "SMEZO_DIST_FAULT='%s' is not exit:RANK:EXCHANGE or hang:RANK:EXCHANGE", v);
  f.kind = kind[0];
  f.rank = rank;
  f.at = at;
  return f;
}

}  // namespace

World& dist_world() {
  static World world;
  static bool ready = false;
  if (ready) return world;
  std::string source;
  const int launched = launcher_world_size(&source);
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised && launched <= 1) {  // a plain process: no MPI start-up at all
    ready = true;
    return world;
  }
  if (!initialised) {
    int provided = 0;  // OpenMP threads never call MPI: only the main thread does
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    SMEZO_REQUIRE(rc == MPI_SUCCESS, "MPI_Init_thread failed (%s said %d processes): %s", source.c_str(), launched,
                  mpi_error_text(rc).c_str());
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_p2p);
  MPI_Comm_set_errhandler(g_p2p, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g_comm, &world.rank_);
  MPI_Comm_size(g_comm, &world.size_);
  MPI_Comm node;  // the ranks sharing this node's memory: the local rank picks the GPU
  MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, world.rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &world.local_rank_);
  MPI_Comm_size(node, &world.local_size_);
  MPI_Comm_free(&node);
  ready = true;
  SMEZO_REQUIRE(launched <= 1 || world.size_ == launched,
                "%s says this job has %d processes, but MPI sees %d ---> HINT: under Slurm, let srun start "
                "MPI (srun --mpi=pmix or --mpi=pmi2), or use mpirun", source.c_str(), launched, world.size_);
  return world;
}

std::vector<std::vector<uint8_t>> World::allgather(const std::vector<uint8_t>& mine, const std::string& what) {
  exchanges_++;
  static const Fault fault = parse_fault();
  if (fault.kind != 0 && fault.rank == rank_ && fault.at == exchanges_) {
    std::fprintf(stderr, "%sSMEZO_DIST_FAULT: %s at exchange %lld\n", rank_prefix().c_str(),
                 fault.kind == 'e' ? "exiting" : "hanging", (long long)exchanges_);
    std::fflush(stderr);
    if (fault.kind == 'e') _exit(3);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::vector<std::vector<uint8_t>> all(static_cast<size_t>(size_));
  all[static_cast<size_t>(rank_)] = mine;
  if (size_ == 1) return all;
  SMEZO_REQUIRE(mine.size() <= static_cast<size_t>(INT_MAX), "the exchange of %s is %zu bytes, above MPI's int count",
                what.c_str(), mine.size());
  const int tag = static_cast<int>(exchanges_ % 32000);  // MPI guarantees tags up to 32767
  std::vector<MPI_Request> sends;
  std::vector<int> send_peer;
  for (int peer = 0; peer < size_; peer++) {
    if (peer == rank_) continue;
    sends.emplace_back();
    send_peer.push_back(peer);
    mpi_check(MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, peer, tag, g_comm, &sends.back()),
              "MPI_Isend", what);
  }
  std::vector<bool> received(static_cast<size_t>(size_), false), sent(sends.size(), false);
  received[static_cast<size_t>(rank_)] = true;
  int missing = size_ - 1, unsent = static_cast<int>(sends.size());
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_s_);
  std::chrono::microseconds pause(0);
  while (missing > 0 || unsent > 0) {
    bool progress = false;
    for (int peer = 0; peer < size_; peer++) {
      if (received[static_cast<size_t>(peer)]) continue;
      int flag = 0;
      MPI_Status st;
      mpi_check(MPI_Iprobe(peer, tag, g_comm, &flag, &st), "MPI_Iprobe", what);
      if (!flag) continue;
      int count = 0;
      mpi_check(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", what);
      std::vector<uint8_t>& buf = all[static_cast<size_t>(peer)];
      buf.resize(static_cast<size_t>(count));
      mpi_check(MPI_Recv(buf.data(), count, MPI_BYTE, peer, tag, g_comm, MPI_STATUS_IGNORE), "MPI_Recv", what);
      received[static_cast<size_t>(peer)] = true;
      missing--;
      progress = true;
    }
    for (size_t i = 0; i < sends.size(); i++) {
      if (sent[i]) continue;
      int flag = 0;
      mpi_check(MPI_Test(&sends[i], &flag, MPI_STATUS_IGNORE), "MPI_Test", what);
      if (flag) sent[i] = true, unsent--, progress = true;
    }
    if (missing == 0 && unsent == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string silent;
      for (int peer = 0; peer < size_; peer++)
        if (!received[static_cast<size_t>(peer)]) silent += (silent.empty() ? "" : ", ") + std::to_string(peer);
      for (size_t i = 0; i < sends.size() && silent.empty(); i++)
        if (!sent[i]) silent += (silent.empty() ? "" : ", ") + std::to_string(send_peer[i]);
      throw PeerTimeout(format_string("no answer from rank %s within %g s in the exchange of %s (exchange %lld)",
                                silent.c_str(), timeout_s_, what.c_str(), (long long)exchanges_),
                  kSilentRankHint);
    }
    // back off from spinning to 1 ms sleeps: ranks may share cores with OpenMP threads
    pause = progress ? std::chrono::microseconds(0) : std::min(std::chrono::microseconds(1000), pause * 2 + std::chrono::microseconds(20));
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
  return all;
}

World::Transfer World::send_start(int peer, int tag, const void* data, size_t bytes, const std::string& what) {
  SMEZO_REQUIRE(size_ > 1 && peer >= 0 && peer < size_ && peer != rank_, "%s: no rank %d to send to", what.c_str(), peer);
  SMEZO_REQUIRE(bytes <= static_cast<size_t>(INT_MAX), "%s is %zu bytes, above MPI's int count", what.c_str(), bytes);
  Transfer t{g_next_transfer++, peer, bytes, false, what};
  MPI_Request request;
  mpi_check(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, g_p2p, &request), "MPI_Isend", what);
  pending_transfers()[t.id] = request;
  return t;
}

World::Transfer World::recv_start(int peer, int tag, void* data, size_t bytes, const std::string& what) {
  SMEZO_REQUIRE(size_ > 1 && peer >= 0 && peer < size_ && peer != rank_, "%s: no rank %d to receive from",
                what.c_str(), peer);
  SMEZO_REQUIRE(bytes <= static_cast<size_t>(INT_MAX), "%s is %zu bytes, above MPI's int count", what.c_str(), bytes);
  Transfer t{g_next_transfer++, peer, bytes, true, what};
  MPI_Request request;
  mpi_check(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, g_p2p, &request), "MPI_Irecv", what);
  pending_transfers()[t.id] = request;
  return t;
}

void World::wait(Transfer* t) {
  if (t->id < 0) return;
  auto it = pending_transfers().find(t->id);
  SMEZO_REQUIRE(it != pending_transfers().end(), "%s: waited for twice", t->what.c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  std::chrono::microseconds pause(0);
  MPI_Status st;
  for (;;) {
    int flag = 0;
    const int rc = MPI_Test(&it->second, &flag, &st);
    if (rc != MPI_SUCCESS) {
      pending_transfers().erase(it);
      t->id = -1;
      mpi_check(rc, "MPI_Test", t->what);
    }
    if (flag) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // cancel it (best effort), so the buffer may go; the job ends on this error anyway
      MPI_Cancel(&it->second);
      MPI_Request_free(&it->second);
      pending_transfers().erase(it);
      t->id = -1;
      throw PeerTimeout(format_string("no answer from rank %d within %g s in the %s of %s", t->peer, timeout_s_,
                                      t->receive ? "receive" : "send", t->what.c_str()),
                        kSilentRankHint);
    }
    pause = std::min(std::chrono::microseconds(1000), pause * 2 + std::chrono::microseconds(20));
    std::this_thread::sleep_for(pause);
  }
  pending_transfers().erase(it);
  t->id = -1;
  if (t->receive) {
    int count = 0;
    mpi_check(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", t->what);
    SMEZO_REQUIRE(static_cast<size_t>(count) == t->bytes, "rank %d sent %d bytes of %s, %zu were expected ---> HINT: "
                  "every rank must run the same smezo on the same data", t->peer, count, t->what.c_str(), t->bytes);
  }
}

void World::abort_job(const std::string& text, int exit_code) {
  // Let rank 0 speak first when every rank hit the same error: its MPI_Abort ends us meanwhile.
  if (rank_ != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::fflush(stdout);
  std::fprintf(stderr, "smezo: error: %s%s\n", rank_prefix().c_str(), text.c_str());
  std::fflush(stderr);
  MPI_Abort(g_comm != MPI_COMM_NULL ? g_comm : MPI_COMM_WORLD, exit_code);
  _exit(exit_code);  // MPI_Abort does not return; this is a backstop
}

std::string World::mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "MPI (version unknown)";
  std::string v(buf, static_cast<size_t>(len));
  const size_t cut = v.find_first_of(",\n");
  return cut == std::string::npos ? v : v.substr(0, cut);
}

}  // namespace smezo

#endif  // SMEZO_MPI
