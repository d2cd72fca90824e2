// What a World is, whatever the build (see world.h): shards, launcher detection, prefixes.
#include "dist/world.h"

#include <cmath>
#include <cstdlib>

#include "common/check.h"

namespace smezo {

Shard shard_of(int64_t n, int rank, int size) {
  SMEZO_REQUIRE(size >= 1 && rank >= 0 && rank < size && n >= 0, "shard_of: rank %d of %d, %lld items", rank,
                size, (long long)n);
  const int64_t base = n / size, extra = n % size;
  Shard s;
  s.begin = rank * base + std::min<int64_t>(rank, extra);
  s.end = s.begin + base + (rank < extra ? 1 : 0);
  return s;
}

std::string World::rank_prefix() const {
  return size_ > 1 ? format_string("rank %d of %d: ", rank_, size_) : std::string();
}

void World::set_timeout_s(double seconds) {
  SMEZO_REQUIRE(std::isfinite(seconds) && seconds > 0, "--mpi-timeout %g must be a positive number of seconds",
                seconds);
  timeout_s_ = seconds;
}

int launcher_world_size(std::string* source_variable) {
  // mpirun/mpiexec (Open MPI), PMI launchers (MPICH's hydra, srun --mpi=pmi2), srun itself
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1) continue;  // not a count: not ours to judge
    if (source_variable) *source_variable = var;
    return static_cast<int>(n);
  }
  if (source_variable) source_variable->clear();
  return 1;
}

}  // namespace smezo
