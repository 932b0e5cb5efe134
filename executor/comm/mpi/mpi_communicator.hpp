#pragma once
// The MPI world (OpenMPI). Only mpi_*.cpp files include <mpi.h>; this header does not.
#include <memory>

#include "executor/comm/communicator.hpp"

namespace sixfold {

// Initialises MPI on first use (MPI_Finalize runs at exit) and returns MPI_COMM_WORLD wrapped.
std::unique_ptr<Communicator> make_mpi_world_communicator(double timeout_s);
// MPI_Abort(MPI_COMM_WORLD, code) when MPI runs with more than one rank; else nothing.
void abort_mpi_world(int code);

}  // namespace sixfold
