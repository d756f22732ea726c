// The benchmark harness: every benchmark binary is `return benchmark_main(...)`.
#pragma once

#include <string_view>

namespace collscope::bench {

// Runs the sweep the command line asks for with one algorithm of one collective and
// returns the process exit code (README "Exit codes").
int benchmark_main(std::string_view collective, std::string_view algorithm, int argc,
                   char** argv);

}  // namespace collscope::bench
