// Run attributes gathered over MPI, and rank 0 opening the file for everyone.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/results/results_reader.hpp"

namespace collscope::results {
namespace {

namespace fs = std::filesystem;

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

int size_of(MPI_Comm c) {
  int n = 0;
  MPI_Comm_size(c, &n);
  return n;
}

// One directory for the whole job, named by rank 0.
std::string shared_dir() {
  int pid = rank_of(MPI_COMM_WORLD) == 0 ? static_cast<int>(getpid()) : 0;
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const fs::path dir = fs::temp_directory_path() / ("collscope_results_mpi_" + std::to_string(pid));
  if (rank_of(MPI_COMM_WORLD) == 0) fs::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir.string();
}

char arg0[] = "allreduce_ring", arg1[] = "-b", arg2[] = "8";
char* argv_[] = {arg0, arg1, arg2, nullptr};

TEST(RunAttributes, DescribeTheJob) {
  const RunAttributes a = collect_run_attributes(3, argv_, MPI_COMM_WORLD);
  EXPECT_EQ(a.world_size, size_of(MPI_COMM_WORLD));
  EXPECT_EQ(a.nnodes, 1);
  EXPECT_EQ(a.ranks_per_node, size_of(MPI_COMM_WORLD));
  ASSERT_EQ(a.hosts.size(), 1u);
  EXPECT_FALSE(a.hosts[0].empty());
  EXPECT_EQ(a.program, "allreduce_ring");
  EXPECT_EQ(a.command_line, "allreduce_ring -b 8");
  EXPECT_EQ(a.suite_version, COLLSCOPE_VERSION);
  EXPECT_FALSE(a.git_revision.empty());
  EXPECT_NE(a.mpi_library.find("MPI"), std::string::npos) << a.mpi_library;
  EXPECT_EQ(a.mpi_version.size(), 3u);
  EXPECT_EQ(a.run_uuid.size(), 32u);
  EXPECT_EQ(a.start_utc.size(), 20u);
  EXPECT_EQ(!a.ucx_version.empty(), COLLSCOPE_HAVE_UCX != 0);
}

TEST(OpenOnRoot, RankZeroWritesTheOthersGetNothing) {
  const std::string dir = shared_dir(), path = dir + "/r.h5";
  const RunAttributes a = collect_run_attributes(3, argv_, MPI_COMM_WORLD);
  {
    auto f = open_results_on_root(path, a, MPI_COMM_WORLD);
    EXPECT_EQ(f != nullptr, rank_of(MPI_COMM_WORLD) == 0);
    EXPECT_EQ(open_results_on_root("", a, MPI_COMM_WORLD), nullptr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_of(MPI_COMM_WORLD) == 0) {
    const ResultsContents c = read_results(path);
    ASSERT_EQ(c.runs.size(), 1u);
    EXPECT_EQ(c.runs[0].attributes.world_size, size_of(MPI_COMM_WORLD));
    fs::remove_all(dir);
  }
}

TEST(OpenOnRoot, EveryRankThrowsTheSameError) {
  const std::string dir = shared_dir();
  const RunAttributes a = collect_run_attributes(3, argv_, MPI_COMM_WORLD);
  if (rank_of(MPI_COMM_WORLD) == 0) std::ofstream(dir + "/text.h5") << "text\n";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(open_results_on_root(dir + "/text.h5", a, MPI_COMM_WORLD), UsageError);
  EXPECT_THROW(open_results_on_root(dir + "/missing/r.h5", a, MPI_COMM_WORLD), RuntimeErrorOnAllRanks);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_of(MPI_COMM_WORLD) == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace collscope::results

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (collscope::results::rank_of(MPI_COMM_WORLD) != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
