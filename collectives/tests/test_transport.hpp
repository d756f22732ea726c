// The transport the MPI tests run over: `--transport=NAME` on the test's command line
// (mpi by default), so one test binary checks every transport.
#pragma once

#include <string>

namespace collscope::test {

std::string& transport_name();

}  // namespace collscope::test
