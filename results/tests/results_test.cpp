// The results file: every field back as written, many runs per file, and refusals that
// leave existing files untouched.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "collscope/errors.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/results/results_reader.hpp"
#include "sample_rows.hpp"

namespace collscope::results {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::sample_collective;
using testing::sample_pingpong;

class ResultsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("collscope_results_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

RunAttributes run_named(const std::string& program) {
  const char* argv[] = {program.c_str(), "-b", "8", "-e", "1M"};
  RunAttributes a = local_run_attributes(5, argv);
  a.hosts = {"node-a", "node-b"};
  a.world_size = 4;
  a.nnodes = 2;
  a.ranks_per_node = 2;
  a.mpi_library = "Open MPI v4.1.4";
  a.mpi_version = "3.1";
  a.slurm_job_id = "1234";
  a.slurm_array_task_id = "7";
  a.slurm_nodelist = "node-[a-b]";
  return a;
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_same_run(const RunAttributes& a, const RunAttributes& b) {
  EXPECT_EQ(a.run_uuid, b.run_uuid);
  EXPECT_EQ(a.program, b.program);
  EXPECT_EQ(a.suite_version, b.suite_version);
  EXPECT_EQ(a.git_revision, b.git_revision);
  EXPECT_EQ(a.command_line, b.command_line);
  EXPECT_EQ(a.start_utc, b.start_utc);
  EXPECT_EQ(a.hosts, b.hosts);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.nnodes, b.nnodes);
  EXPECT_EQ(a.ranks_per_node, b.ranks_per_node);
  EXPECT_EQ(a.mpi_library, b.mpi_library);
  EXPECT_EQ(a.mpi_version, b.mpi_version);
  EXPECT_EQ(a.ucx_version, b.ucx_version);
  EXPECT_EQ(a.nccl_version, b.nccl_version);
  EXPECT_EQ(a.cuda_version, b.cuda_version);
  EXPECT_EQ(a.slurm_job_id, b.slurm_job_id);
  EXPECT_EQ(a.slurm_array_job_id, b.slurm_array_job_id);
  EXPECT_EQ(a.slurm_array_task_id, b.slurm_array_task_id);
  EXPECT_EQ(a.slurm_nodelist, b.slurm_nodelist);
}

TEST_F(ResultsFileTest, TwoRunsReadBackFieldForField) {
  const RunAttributes first = run_named("allreduce_ring"), second = run_named("pingpong");
  {
    ResultsFile f = ResultsFile::open_for_append(path("r.h5"), first);
    EXPECT_EQ(f.run_id(), 0);
    for (int i = 0; i < 12; ++i) f.append_collective(sample_collective(i));
  }
  {
    ResultsFile f = ResultsFile::open_for_append(path("r.h5"), second);
    EXPECT_EQ(f.run_id(), 1);
    for (int i = 0; i < 6; ++i) f.append_pingpong(sample_pingpong(i));
    f.append_collective(sample_collective(12));
  }
  const ResultsContents c = read_results(path("r.h5"));
  EXPECT_EQ(c.schema_version, kSchemaVersion);
  EXPECT_NE(c.created_by.find("collscope"), std::string::npos);
  ASSERT_EQ(c.runs.size(), 2u);
  EXPECT_EQ(c.runs[0].run_id, 0);
  expect_same_run(c.runs[0].attributes, first);
  expect_same_run(c.runs[1].attributes, second);
  ASSERT_EQ(c.collective.size(), 13u);
  for (int i = 0; i < 13; ++i) {
    EXPECT_EQ(c.collective[i].run_id, i < 12 ? 0 : 1);
    EXPECT_EQ(c.collective[i].fields, sample_collective(i)) << "collective row " << i;
  }
  ASSERT_EQ(c.pingpong.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(c.pingpong[i].run_id, 1);
    EXPECT_EQ(c.pingpong[i].fields, sample_pingpong(i)) << "pingpong row " << i;
  }
}

TEST_F(ResultsFileTest, NullsAndAbsentKeysSurvive) {
  const json vendor = sample_collective(3);  // nothing measured, no model
  ASSERT_TRUE(vendor["sent_bytes"].is_null());
  ASSERT_TRUE(vendor["predicted_us"].is_null());
  ASSERT_FALSE(vendor.contains("split"));
  json unchecked = sample_collective(5);
  ASSERT_TRUE(unchecked["wrong"].is_null());
  {
    ResultsFile f = ResultsFile::open_for_append(path("n.h5"), run_named("x"));
    f.append_collective(vendor);
    f.append_collective(unchecked);
  }
  const ResultsContents c = read_results(path("n.h5"));
  ASSERT_EQ(c.collective.size(), 2u);
  EXPECT_EQ(c.collective[0].fields, vendor);
  EXPECT_EQ(c.collective[1].fields, unchecked);
}

TEST_F(ResultsFileTest, LongTextIsCutWithAnEllipsis) {
  json row = sample_collective(0);
  row["model"] = std::string(1000, 'm');
  {
    ResultsFile f = ResultsFile::open_for_append(path("t.h5"), run_named("x"));
    f.append_collective(row);
  }
  const std::string stored = read_results(path("t.h5")).collective.at(0).fields["model"];
  EXPECT_EQ(stored.size(), 255u);
  EXPECT_EQ(stored.substr(252), "...");
}

TEST_F(ResultsFileTest, AFieldWithoutAColumnIsRefusedByName) {
  ResultsFile f = ResultsFile::open_for_append(path("u.h5"), run_named("x"));
  json row = sample_collective(0);
  row["new_field"] = 1;
  try {
    f.append_collective(row);
    FAIL() << "an unknown field was accepted";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("new_field"), std::string::npos) << e.what();
  }
  json short_row = sample_collective(1);
  short_row["sent_bytes"] = json::array({1});
  EXPECT_THROW(f.append_collective(short_row), RuntimeError);  // not nranks values
  f.append_collective(sample_collective(2));                   // the file is still fine
  f.close();
  EXPECT_EQ(read_results(path("u.h5")).collective.size(), 1u);
}

// Rewrites the schema version attribute, as a file of another version would have it.
void set_schema_version(const std::string& path, int version) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attr = H5Aopen(file, "collscope_schema_version", H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  H5Awrite(attr, H5T_NATIVE_INT, &version);
  H5Aclose(attr);
  H5Fclose(file);
}

template <class Error>
std::string refusal(const std::string& path) {
  try {
    ResultsFile::open_for_append(path, run_named("x"));
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "accepted";
}

TEST_F(ResultsFileTest, AnotherSchemaVersionIsRefusedAndLeftUntouched) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("v2.h5"), run_named("x"));
    f.append_collective(sample_collective(0));
  }
  set_schema_version(path("v2.h5"), 2);
  const std::string before = contents(path("v2.h5"));
  const std::string why = refusal<UsageError>(path("v2.h5"));
  EXPECT_NE(why.find("schema version 2"), std::string::npos) << why;
  EXPECT_THROW(read_results(path("v2.h5")), UsageError);
  EXPECT_EQ(contents(path("v2.h5")), before);
}

TEST_F(ResultsFileTest, ForeignAndNonHdf5FilesAreRefusedAndLeftUntouched) {
  const hid_t file = H5Fcreate(path("foreign.h5").c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = 4;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  H5Dclose(H5Dcreate2(file, "data", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(space);
  H5Fclose(file);
  std::ofstream(path("notes.h5")) << "not an HDF5 file\n";
  std::ofstream(path("empty.h5")).flush();
  for (const char* name : {"foreign.h5", "notes.h5", "empty.h5"}) {
    const std::string before = contents(path(name));
    const std::string why = refusal<UsageError>(path(name));
    EXPECT_NE(why.find(path(name)), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_EQ(contents(path(name)), before) << name;
  }
  EXPECT_NE(refusal<UsageError>(path("foreign.h5")).find("not a collscope results file"), std::string::npos);
  EXPECT_NE(refusal<UsageError>(path("notes.h5")).find("not an HDF5 file"), std::string::npos);
  EXPECT_NE(refusal<UsageError>(dir_.string()).find("not a regular file"), std::string::npos);
}

TEST_F(ResultsFileTest, ATruncatedFileIsARuntimeErrorAndLeftUntouched) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("cut.h5"), run_named("x"));
    for (int i = 0; i < 20; ++i) f.append_collective(sample_collective(i));
  }
  fs::resize_file(path("cut.h5"), fs::file_size(path("cut.h5")) / 2);
  const std::string before = contents(path("cut.h5"));
  const std::string why = refusal<RuntimeError>(path("cut.h5"));
  EXPECT_NE(why.find("cannot open the results file '" + path("cut.h5") + "'"), std::string::npos) << why;
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_EQ(contents(path("cut.h5")), before);
}

TEST_F(ResultsFileTest, AnUnwritablePathIsARuntimeError) {
  const std::string why = refusal<RuntimeError>(path("no/such/dir/r.h5"));
  EXPECT_NE(why.find("cannot create the results file"), std::string::npos) << why;
  EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(path("no")));
  for (const auto& entry : fs::directory_iterator(dir_)) ADD_FAILURE() << "left behind: " << entry.path();
}

TEST_F(ResultsFileTest, AFileStaysSmallAfterACleanClose) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("s.h5"), run_named("x"));
    f.append_collective(sample_collective(0));
  }
  EXPECT_LT(fs::file_size(path("s.h5")), std::uintmax_t{4} << 20);  // the reserve is gone
}

}  // namespace
}  // namespace collscope::results
