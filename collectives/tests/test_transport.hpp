// The transport the MPI tests run over: `--transport=NAME` on the test's command line
// (mpi by default), so one test binary checks every transport.
#pragma once

#include "collscope/types.hpp"

namespace collscope::test {

TransportKind& transport();

}  // namespace collscope::test
