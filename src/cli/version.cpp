// `smezo --version`: include/smezo/version.h's version and the build's git commit. The Makefile
// writes $(BUILD)/gen/smezo_git.h (SMEZO_GIT_COMMIT: the short hash, "-dirty" with tracked
// changes, "" outside a git checkout) only when it changes, so only this file recompiles.
#include "cli/version.h"
#include "dist/world.h"
#include "smezo/version.h"
#include "smezo_git.h"

namespace smezo {

std::string version_text() {
  const std::string commit = SMEZO_GIT_COMMIT;
  const std::string mpi = World::mpi_library_version();
  return std::string("smezo ") + SMEZO_VERSION + (commit.empty() ? " (commit unknown)" : " (commit " + commit + ")") +
         (mpi.empty() ? ", without MPI" : ", with MPI: " + mpi);
}

}  // namespace smezo
