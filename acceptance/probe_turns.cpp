#include "probe_turns.hpp"

#include <chrono>
#include <iostream>

#include "collscope/errors.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/quiet_barrier.hpp"

namespace collscope::acceptance {

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

void quiet_barrier(MPI_Comm comm) { program::quiet_barrier(comm, std::chrono::microseconds(100)); }

std::vector<int> every_rank(int nranks) {
  std::vector<int> ranks;
  for (int r = 0; r < nranks; ++r) ranks.push_back(r);
  return ranks;
}

int print_record(const nlohmann::json& record, bool any_wrong) {
  std::cout << record.dump() << std::endl;
  return any_wrong ? kExitVerifyFailed : kExitOk;
}

int probe_main(const char* program, int argc, char** argv,
               int (*on_all_ranks)(int argc, char** argv, int rank, int nranks)) {
  return program::run_mpi_program(program, argc, argv, [&](int rank, int nranks) {
    int code = on_all_ranks(argc, argv, rank, nranks);
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return code;
  });
}

}  // namespace collscope::acceptance
