#include "collscope/program/mpi_program.hpp"

#include <mpi.h>

#include <iostream>

#include "collscope/errors.hpp"

namespace collscope::program {

bool parse_command_line(CLI::App& app, int argc, const char* const* argv, std::string& help_text) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    help_text = app.help();
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  return true;
}

int run_mpi_program(std::string_view program, int argc, char** argv,
                    const std::function<int(int rank, int nranks)>& body, MpiThreads threads) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv,
                  threads == MpiThreads::single ? MPI_THREAD_SINGLE : MPI_THREAD_FUNNELED,
                  &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int code = kExitOk;
  try {
    code = body(rank, nranks);
  } catch (const UsageError& e) {
    if (rank == 0) std::cerr << program << ": error: " << e.what() << std::endl;
    code = kExitUsage;
  } catch (const RuntimeErrorOnAllRanks& e) {
    if (rank == 0) std::cerr << program << ": error: " << e.what() << std::endl;
    code = kExitRuntime;
  } catch (const std::exception& e) {
    // Rank-specific: the others may be blocked in a call, so end the whole job.
    std::cerr << program << ": rank " << rank << ": error: " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, kExitRuntime);
  }
  MPI_Finalize();
  return code;
}

int run_mpi_main(std::string_view program, int argc, char** argv,
                 int (*body)(int argc, char** argv, int rank, int nranks)) {
  return run_mpi_program(program, argc, argv,
                         [&](int rank, int nranks) { return body(argc, argv, rank, nranks); });
}

}  // namespace collscope::program
