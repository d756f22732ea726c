// Errors at the boundary and the exit codes they map to (README "Exit codes").
#pragma once

#include <stdexcept>
#include <string>

namespace collscope {

enum ExitCode : int {
  kExitOk = 0,
  kExitVerifyFailed = 1,  // a result or a byte count did not match
  kExitUsage = 2,         // bad flag, size, dtype/op, constraint not met
  kExitRuntime = 3,       // transport, I/O, timeout
};

// Bad input: detected identically on every rank before any communication.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Something failed while running: transport, memory, I/O.
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A runtime failure every rank detected alike (say, after a broadcast of the status):
// reported once, and no abort is needed.
struct RuntimeErrorOnAllRanks : RuntimeError {
  using RuntimeError::RuntimeError;
};

}  // namespace collscope
