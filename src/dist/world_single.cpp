// The one-process World of a build without MPI; one of several is refused (it would overwrite them).
#ifndef SMEZO_MPI

#include <cstdio>
#include <cstdlib>

#include "common/check.h"
#include "dist/world.h"

namespace smezo {

World& dist_world() {
  static World world;
  std::string source;
  const int launched = launcher_world_size(&source);
  SMEZO_REQUIRE(launched <= 1,
                "this smezo was built without MPI, but it was started as one of %d processes (%s=%d): each would "
                "train alone and overwrite the others' output ---> HINT: install Open MPI (apt-get install "
                "libopenmpi-dev openmpi-bin, or tools/deps.sh install) and rebuild (`make info` then shows "
                "✓ MPI), or run a single smezo without mpirun/srun",
                launched, source.c_str(), launched);
  return world;
}

std::vector<std::vector<uint8_t>> World::allgather(const std::vector<uint8_t>& mine, const std::string&) {
  exchanges_++;
  return {mine};
}

World::Transfer World::send_start(int, int, const void*, size_t, const std::string& what) {
  throw_error("%s: point-to-point transfers need a build with MPI and several ranks", what.c_str());
}

World::Transfer World::recv_start(int, int, void*, size_t, const std::string& what) {
  throw_error("%s: point-to-point transfers need a build with MPI and several ranks", what.c_str());
}

void World::wait(Transfer*) {}

void World::abort_job(const std::string& text, int exit_code) {
  std::fflush(stdout);
  std::fprintf(stderr, "smezo: error: %s\n", text.c_str());
  std::exit(exit_code);
}

std::string World::mpi_library_version() { return ""; }

}  // namespace smezo

#endif  // !SMEZO_MPI
