#pragma once
// The MPI world (OpenMPI). Only mpi_*.cpp files include <mpi.h>; this header does not.
#include <memory>

#include "executor/communicator.hpp"

namespace sixfold {

// Initialises MPI on first use (MPI_Finalize runs at exit) and returns MPI_COMM_WORLD wrapped.
std::unique_ptr<Communicator> make_mpi_world_communicator(double timeout_s);

}  // namespace sixfold
