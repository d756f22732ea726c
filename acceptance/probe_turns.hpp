// What the per-rank probes (compute_probe, gpu_probe) share: the host a rank runs on, and
// ranks measured one at a time while the others wait in a barrier that sleeps, so that
// the waiting ranks take no CPU from the one being timed.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace collscope::acceptance {

// MPI_Get_processor_name.
std::string host_name();

// A barrier that sleeps while it waits (MPI_Ibarrier, tested every 100 us).
void quiet_barrier(MPI_Comm comm);

// Collective over comm: for each rank of `order` in turn, a quiet barrier, then `mine()`
// on that rank alone.
template <class F>
void take_turns(MPI_Comm comm, int rank, const std::vector<int>& order, F&& mine) {
  for (int turn : order) {
    quiet_barrier(comm);
    if (turn == rank) mine();
  }
}

// 0, 1, ..., nranks - 1.
std::vector<int> every_rank(int nranks);

// Rank 0's last word: `record` as one JSON line on stdout; kExitVerifyFailed where
// `any_wrong` (a result did not check), else kExitOk.
int print_record(const nlohmann::json& record, bool any_wrong);

// A probe's main: `on_all_ranks(argc, argv, rank, nranks)` under program::run_mpi_program;
// rank 0 judges, so every rank exits with the code rank 0's call returned.
int probe_main(const char* program, int argc, char** argv,
               int (*on_all_ranks)(int argc, char** argv, int rank, int nranks));

}  // namespace collscope::acceptance
