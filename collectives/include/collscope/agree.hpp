// Errors some ranks see and others do not (a GPU missing on one node, a file readable on
// one host): every rank must stop alike, or the others wait forever in the next
// collective. agree_or_throw makes one rank's problem everybody's.
#pragma once

#include <mpi.h>

#include <string>

namespace collscope {

// Collective over comm. `problem` is "" where this rank is fine. When any rank has one,
// every rank throws UsageError with the message of the lowest such rank (naming it, as
// "rank R: ...", when it is not rank 0).
void agree_or_throw(MPI_Comm comm, const std::string& problem);

}  // namespace collscope
