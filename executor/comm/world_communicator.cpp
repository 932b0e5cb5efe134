#include "common/error.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/self_communicator.hpp"
#ifdef SIXFOLD_HAVE_MPI
#include "executor/comm/mpi/mpi_communicator.hpp"
#endif

namespace sixfold {

std::unique_ptr<Communicator> make_world_communicator(double timeout_s) {
  const int launched = launched_world_size();
#ifdef SIXFOLD_HAVE_MPI
  if (launched > 1) return make_mpi_world_communicator(timeout_s);
#else
  if (launched > 1)
    throw UsageError("this sixfold was built without MPI but was started as one of " + std::to_string(launched) +
                     " ranks; rebuild with -DSIXFOLD_WITH_MPI=ON and an MPI installed");
#endif
  return std::make_unique<SelfCommunicator>("world");
}

void abort_distributed_run(int code) {
#ifdef SIXFOLD_HAVE_MPI
  abort_mpi_world(code);
#else
  (void)code;
#endif
}

}  // namespace sixfold
