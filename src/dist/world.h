// The ranks of a multi-process run: who I am, how many we are, and the one
// exchange the data-parallel trainer needs. Built on MPI (Open MPI) when the Makefile found it
// (-DSMEZO_MPI, world_mpi.cpp); otherwise world_single.cpp is a one-process world that refuses,
// with a clear message, to run as one of several processes.
//
// Launch detection: MPI is initialised only when a launcher started this process (mpirun /
// mpiexec: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK; Slurm's srun: SLURM_STEP_NUM_TASKS), so a
// plain `smezo train` never pays for MPI start-up. If this code initialised MPI it also
// finalises it at exit; a host program that initialised MPI itself keeps that job.
//
// Exchanges never block forever: every message is non-blocking and polled against a deadline
// (`set_timeout_s`, --mpi-timeout). A peer that does not answer in time ends the exchange with
// smezo::Error naming the rank(s), and `abort_job` then ends the whole job (MPI_Abort).
//
// Fault injection (tests only): SMEZO_DIST_FAULT="exit:R:K" makes rank R _exit(3) when it
// enters its K-th exchange (1-based), "hang:R:K" makes it sleep there forever.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"

namespace smezo {

// The contiguous share [begin, end) of n items that rank `rank` of `size` owns: the first
// n % size ranks get one more. Pure arithmetic, the same on every rank.
struct Shard {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Shard shard_of(int64_t n, int rank, int size);

// What World::allgather and World::wait throw when a peer does not answer within the timeout:
// that rank is dead or hung, so the job cannot go on (a checkpoint that fails this way is not
// a warning, unlike a full disk).
class PeerTimeout : public Error {
 public:
  using Error::Error;
};

class World {
 public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  // This process's rank among the ranks on its node, and how many there are (MPI shared-memory
  // split): what picks a GPU.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // "rank 2 of 4: " in a multi-rank run, "" on one process (prefix for messages).
  std::string rank_prefix() const;

  // Seconds a rank waits in one exchange for the others (default 1800).
  void set_timeout_s(double seconds);
  double timeout_s() const { return timeout_s_; }

  // Every rank contributes `mine`; every rank gets all contributions, indexed by rank. `what`
  // names the exchange in a timeout message. Throws smezo::Error on a timeout (naming the
  // ranks that did not answer) or an MPI error. One process: returns {mine}.
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine, const std::string& what);

  // Point-to-point transfers between two ranks (pipeline stages, src/train/pipeline.h), on a
  // communicator of their own so they never meet an allgather's messages. Non-blocking: start
  // one, keep its buffer alive, then wait() for it against the deadline. Between two ranks,
  // transfers with the same tag arrive in the order they were started. `what` names the
  // transfer in errors. Only for size() > 1.
  struct Transfer {
    int64_t id = -1;  // the pending request (world_mpi.cpp); -1: none
    int peer = -1;
    size_t bytes = 0;
    bool receive = false;
    std::string what;
  };
  Transfer send_start(int peer, int tag, const void* data, size_t bytes, const std::string& what);
  Transfer recv_start(int peer, int tag, void* data, size_t bytes, const std::string& what);
  // Completes a transfer: throws PeerTimeout naming the peer when it does not complete within
  // the timeout (the request is cancelled first, so no late message lands in a freed buffer),
  // smezo::Error when a receive got another number of bytes than it expected.
  void wait(Transfer* transfer);

  // Ends a multi-rank job after an error on this rank: prints "smezo: error: rank R of N:
  // <text>" on stderr and calls MPI_Abort, which stops every rank. Ranks other than 0 wait a
  // moment first, so an error every rank hits (a bad option) is printed once, by rank 0.
  // Only for size() > 1.
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

// The process's world, set up on the first call (MPI_Init when launched by an MPI launcher).
// Throws smezo::Error when this build has no MPI but the process was started as one of
// several, or when the launcher and MPI disagree on the number of processes.
World& dist_world();

// The number of processes the launcher says this job has (1 when not launched by one), and
// the environment variable that said so ("" for 1).
int launcher_world_size(std::string* source_variable);

}  // namespace smezo
