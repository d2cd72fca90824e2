// The ranks of a multi-process run: who I am, how many we are, and the exchanges the trainer needs.
// MPI when built with it (world_mpi.cpp), else world_single.cpp, which refuses to be one of several.
// MPI starts only under a launcher (mpirun/mpiexec: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK; srun:
// SLURM_STEP_NUM_TASKS), so plain `smezo train` never pays for it; whoever initialised MPI finalises it.
// Exchanges never block forever: non-blocking messages are polled against a deadline (--mpi-timeout);
// a silent peer ends the exchange with smezo::Error naming it, then `abort_job` ends the job.
// Fault injection (tests only): SMEZO_DIST_FAULT="exit:R:K" makes rank R _exit(3) at its K-th
// exchange (1-based); "hang:R:K" makes it sleep there forever.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"

namespace smezo {

// Rank `rank`'s contiguous share [begin, end) of n items; the first n % size ranks get one more.
struct Shard {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Shard shard_of(int64_t n, int rank, int size);

// Thrown by allgather and wait when a peer does not answer in time: fatal (unlike a full disk).
class PeerTimeout : public Error {
 public:
  using Error::Error;
};

class World {
 public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  // This process's rank and the rank count on its node (MPI shared-memory split): picks the GPU.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // "rank 2 of 4: " in a multi-rank run, "" on one process (prefix for messages).
  std::string rank_prefix() const;

  // Seconds a rank waits in one exchange for the others (default 1800).
  void set_timeout_s(double seconds);
  double timeout_s() const { return timeout_s_; }

  // Every rank's `mine`, by rank; throws smezo::Error on an MPI error or timeout (naming `what`, ranks).
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine, const std::string& what);

  // Non-blocking point-to-point on its own communicator: start one, keep its buffer alive, wait().
  // Between two ranks, one tag's transfers arrive in start order. Only for size() > 1.
  struct Transfer {
    int64_t id = -1;  // the pending request (world_mpi.cpp); -1: none
    int peer = -1;
    size_t bytes = 0;
    bool receive = false;
    std::string what;
  };
  Transfer send_start(int peer, int tag, const void* data, size_t bytes, const std::string& what);
  Transfer recv_start(int peer, int tag, void* data, size_t bytes, const std::string& what);
  // Throws PeerTimeout after the timeout (request cancelled first), smezo::Error on a wrong byte count.
  void wait(Transfer* transfer);

  // Prints "smezo: error: rank R of N: <text>" and MPI_Aborts (ranks > 0 wait first: printed once).
  [[noreturn]] void abort_job(const std::string& text, int exit_code = 1);

  // "Open MPI 4.1.4" (the library's own version string, first line), or "" without MPI.
  static std::string mpi_library_version();

 private:
  friend World& dist_world();
  World() = default;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_s_ = 1800.0;
  int64_t exchanges_ = 0;  // exchanges entered so far (fault injection counts them)
};

// The world, set up on first call; throws if a non-MPI build is one of several, or MPI's count differs.
World& dist_world();

// The process count the launcher gives (1 without one), and the variable that said so ("" for 1).
int launcher_world_size(std::string* source_variable);

}  // namespace smezo
