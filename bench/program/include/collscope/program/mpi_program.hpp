// What every collscope program does at its edges, written once: parsing a CLI11 command
// line into UsageError or help, and running a body between MPI_Init and MPI_Finalize
// with the boundary's exceptions mapped to the exit codes of errors.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace collscope::program {

// Parses argv into `app`'s options. Returns false, with the help text in `help_text`,
// when -h/--help was given; a bad command line throws UsageError (one line).
bool parse_command_line(CLI::App& app, int argc, const char* const* argv, std::string& help_text);

// The thread level MPI is asked for: single where the process runs no other thread,
// funneled where it may (a watchdog, a GPU or UCX library's threads) while only the main
// thread calls MPI. Open MPI serves any level above single with its thread-safe paths,
// which a call pays for (docs/timing.md).
enum class MpiThreads { single, funneled };

// MPI_Init_thread, then body(rank, nranks), then MPI_Finalize; the exit code is the
// body's, or: UsageError -> 2 and RuntimeErrorOnAllRanks -> 3, printed once by rank 0
// (every rank detected it alike); any other exception is rank-specific: that rank
// prints it and aborts the job (the others may be blocked in a call), exit 3.
int run_mpi_program(std::string_view program, int argc, char** argv,
                    const std::function<int(int rank, int nranks)>& body,
                    MpiThreads threads = MpiThreads::funneled);

// A whole main(): run_mpi_program with body(argc, argv, rank, nranks), MPI_THREAD_FUNNELED.
int run_mpi_main(std::string_view program, int argc, char** argv,
                 int (*body)(int argc, char** argv, int rank, int nranks));

}  // namespace collscope::program
