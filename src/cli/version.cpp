// `smezo --version`: the version and the build's git commit (SMEZO_GIT_COMMIT from the generated
// smezo_git.h: the short hash, "-dirty" with tracked changes, "" outside a git checkout).
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
