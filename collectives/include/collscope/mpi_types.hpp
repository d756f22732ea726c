// MPI datatypes and operators for collscope's types, for the vendor baselines.
// MPI has no 16-bit floats: half and bfloat16 travel as their own 2-byte types and
// reduce through user-defined operators that call the host reducer.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "collscope/types.hpp"

namespace collscope {

MPI_Datatype mpi_datatype(DataType t);
MPI_Op mpi_op(ReduceOp op, DataType t);  // avg is reduced as sum (see run_collective)
// Throws RuntimeError naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

}  // namespace collscope
