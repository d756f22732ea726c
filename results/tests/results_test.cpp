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
using testing::sample_layer;
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
  const json vendor = sample_collective(15);  // nothing measured, no model
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

TEST_F(ResultsFileTest, AFutureSchemaVersionIsRefusedAndLeftUntouched) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("v3.h5"), run_named("x"));
    f.append_collective(sample_collective(0));
  }
  set_schema_version(path("v3.h5"), kSchemaVersion + 1);
  const std::string before = contents(path("v3.h5"));
  const std::string why = refusal<UsageError>(path("v3.h5"));
  EXPECT_NE(why.find("schema version " + std::to_string(kSchemaVersion + 1)), std::string::npos) << why;
  EXPECT_THROW(read_results(path("v3.h5")), UsageError);
  EXPECT_EQ(contents(path("v3.h5")), before);
}

// A file the previous release wrote (schema 1: allreduce_ring and alltoallv_mpi rows,
// pingpong, a tp_mlp layer row) reads back with today's names, and is never appended to.
TEST_F(ResultsFileTest, Version1FilesAreReadWithTodaysNamesButNotAppendedTo) {
  const std::string v1 = std::string(COLLSCOPE_RESULTS_TEST_DATA) + "/schema_v1.h5";
  const ResultsContents c = read_results(v1);
  EXPECT_EQ(c.schema_version, 1);
  ASSERT_EQ(c.collective.size(), 3u);
  ASSERT_EQ(c.pingpong.size(), 2u);
  ASSERT_EQ(c.layer.size(), 1u);
  const nlohmann::json& ring = c.collective.front().fields;
  EXPECT_EQ(ring["algorithm"], "ring");
  EXPECT_EQ(ring["textbook_formula"], "2(N-1)/N x D");
  EXPECT_TRUE(ring["textbook_sent_bytes"].is_number());
  EXPECT_FALSE(ring.contains("seed_formula"));
  EXPECT_FALSE(ring.contains("segment_bytes"));  // not recorded before version 2
  const nlohmann::json& layer = c.layer.front().fields;
  ASSERT_TRUE(layer.contains("textbook_figure"));
  EXPECT_EQ(layer["textbook_figure"]["exact_over_formula"], 0.5);
  EXPECT_FALSE(layer.contains("seed_figure"));

  std::filesystem::copy_file(v1, path("old.h5"));
  const std::string before = contents(path("old.h5"));
  const std::string why = refusal<UsageError>(path("old.h5"));
  EXPECT_NE(why.find("appends to version " + std::to_string(kSchemaVersion)), std::string::npos) << why;
  EXPECT_EQ(contents(path("old.h5")), before);
}

// A file of the release before version 3 (allreduce_ring and allreduce_mpi on host
// memory, allreduce_ring on the emulated device over ipc, pingpong, a tp_mlp layer row)
// reads back without version 3's columns, and is never appended to.
TEST_F(ResultsFileTest, Version2FilesAreReadWithoutTheNewColumnsButNotAppendedTo) {
  const std::string v2 = std::string(COLLSCOPE_RESULTS_TEST_DATA) + "/schema_v2.h5";
  const ResultsContents c = read_results(v2);
  EXPECT_EQ(c.schema_version, 2);
  ASSERT_EQ(c.collective.size(), 4u);
  ASSERT_EQ(c.pingpong.size(), 2u);
  ASSERT_EQ(c.layer.size(), 1u);
  const nlohmann::json& ipc = c.collective.back().fields;
  EXPECT_EQ(ipc["path"], "ipc");
  ASSERT_TRUE(ipc["copy_from_peer_bytes"].is_array());
  EXPECT_EQ(ipc["copy_from_peer_bytes"], ipc["theory_copy_from_peer_bytes"]);
  EXPECT_FALSE(ipc.contains("reduced_from_peer_bytes"));  // version 3's
  EXPECT_FALSE(ipc.contains("wait"));
  EXPECT_FALSE(ipc.contains("volume_source"));  // version 4's
  EXPECT_FALSE(ipc.contains("ranks"));

  std::filesystem::copy_file(v2, path("old.h5"));
  const std::string before = contents(path("old.h5"));
  const std::string why = refusal<UsageError>(path("old.h5"));
  EXPECT_NE(why.find("appends to version " + std::to_string(kSchemaVersion)), std::string::npos) << why;
  EXPECT_EQ(contents(path("old.h5")), before);
}

// A file of the release before version 4 (the same rows as version 2's fixture) reads
// back with version 3's columns and without version 4's, and is never appended to.
TEST_F(ResultsFileTest, Version3FilesAreReadWithoutTheNewColumnsButNotAppendedTo) {
  const std::string v3 = std::string(COLLSCOPE_RESULTS_TEST_DATA) + "/schema_v3.h5";
  const ResultsContents c = read_results(v3);
  EXPECT_EQ(c.schema_version, 3);
  ASSERT_EQ(c.collective.size(), 5u);
  ASSERT_EQ(c.pingpong.size(), 2u);
  ASSERT_EQ(c.layer.size(), 1u);
  const nlohmann::json& ipc = c.collective.back().fields;
  EXPECT_EQ(ipc["path"], "ipc");
  EXPECT_EQ(ipc["wait"], "spin");
  ASSERT_TRUE(ipc["reduced_from_peer_bytes"].is_array());
  EXPECT_EQ(ipc["reduced_from_peer_bytes"], ipc["theory_reduced_from_peer_bytes"]);
  const nlohmann::json& vendor = c.collective[2].fields;
  EXPECT_EQ(vendor["algorithm"], "mpi");
  EXPECT_EQ(vendor["volume"], "n/a");
  EXPECT_FALSE(vendor.contains("volume_source"));  // version 4's
  EXPECT_FALSE(vendor.contains("vendor_algorithm"));
  EXPECT_FALSE(vendor.contains("ranks"));
  const nlohmann::json& layer = c.layer.front().fields;
  EXPECT_EQ(layer["layer"], "tp_mlp");
  EXPECT_FALSE(layer.contains("exposed_comm_us"));  // version 4's
  EXPECT_FALSE(layer.contains("memory"));

  std::filesystem::copy_file(v3, path("old3.h5"));
  const std::string before = contents(path("old3.h5"));
  const std::string why = refusal<UsageError>(path("old3.h5"));
  EXPECT_NE(why.find("appends to version " + std::to_string(kSchemaVersion)), std::string::npos) << why;
  EXPECT_EQ(contents(path("old3.h5")), before);
}

// A file of the release before version 5 (allreduce_ring and allreduce_mpi rows on host
// memory, the vendor's counted with --vendor-volume, an allreduce_ring row on the emulated
// device over ipc, pingpong and a tp_mlp layer row) reads back with version 4's columns
// and without version 5's, and is never appended to.
TEST_F(ResultsFileTest, Version4FilesAreReadWithoutTheNewColumnsButNotAppendedTo) {
  const std::string v4 = std::string(COLLSCOPE_RESULTS_TEST_DATA) + "/schema_v4.h5";
  const ResultsContents c = read_results(v4);
  EXPECT_EQ(c.schema_version, 4);
  ASSERT_EQ(c.collective.size(), 8u);
  ASSERT_EQ(c.pingpong.size(), 4u);
  ASSERT_EQ(c.layer.size(), 1u);
  const nlohmann::json& vendor = c.collective[3].fields;
  EXPECT_EQ(vendor["algorithm"], "mpi");
  EXPECT_EQ(vendor["volume"], "measured");
  EXPECT_EQ(vendor["volume_source"], "mpi_t:pml_monitoring");  // version 4's
  EXPECT_FALSE(vendor.contains("mpi_coll_params"));           // version 5's
  for (const auto* rows : {&c.collective, &c.pingpong, &c.layer})
    for (const StoredRow& r : *rows) {
      EXPECT_FALSE(r.fields.contains("time_spread"));
      EXPECT_FALSE(r.fields.contains("round"));
      EXPECT_FALSE(r.fields.contains("gpu_sharing"));
    }
  const nlohmann::json& ipc = c.collective.back().fields;
  EXPECT_EQ(ipc["path"], "ipc");
  ASSERT_EQ(c.runs.size(), 5u);
  EXPECT_EQ(c.runs[2].attributes.gpus.size(), 2u);
  EXPECT_EQ(c.runs[2].attributes.gpus[0].gpu_sharing, "");  // version 5's
  EXPECT_EQ(c.runs[0].attributes.machine.host_cores, 0);

  std::filesystem::copy_file(v4, path("old4.h5"));
  const std::string before = contents(path("old4.h5"));
  const std::string why = refusal<UsageError>(path("old4.h5"));
  EXPECT_NE(why.find("appends to version " + std::to_string(kSchemaVersion)), std::string::npos) << why;
  EXPECT_EQ(contents(path("old4.h5")), before);
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

// ---- /layer ------------------------------------------------------------------------------

// Real records of `mpirun -np 2 layer_tp_mlp -J`, `layer_dp_grad --allreduce-alg mpi -J`
// (the vendor's allreduce: nothing measured) and `layer_tp_attention -J`, as the layer
// driver writes them; and layer_tp_mlp's from before the sites had "op".
const char* const kTpMlpRecord = R"json({"layer":"tp_mlp","program":"layer_tp_mlp","scheme":"tp","transport":"mpi","transport_env":[],"memory":"host","path":"host","wait":"","device_runtime":"","gemm":"openblas","gpu":"","overlap":false,"nranks":2,"tp":2,"cp":1,"pp":1,"dp":1,"ep":1,"etp":1,"sp":false,"dtype":"float","passes":"both","shape":{"S":8,"B":2,"T":16,"H":32,"F":128},"seed":1,"algorithms":{"allreduce":"ring"},"iters":10,"warmup":2,"time_us":26.76,"time_us_min":24.787,"time_us_max":29.845,"time_us_p25":25.4925,"time_us_p75":27.471,"time_spread":0.07393497757847535,"noise_threshold":0.2,"noisy":false,"round":-1,"gpu_sharing":"","compute_us":19.564,"comm_us":7.545999999999999,"exposed_comm_us":7.545999999999999,"hidden_comm_us":0.0,"gemm_us":12.5,"gemm_flop":1048576.0,"gemm_tflops":0.0625,"times_us":[27.471,28.322,27.14,25.247,29.845,24.787,27.471,26.380000000000003,24.857,26.229],"pass":true,"verified":true,"rel_l2_error":1.3307155259371327e-07,"max_abs_error":4.1157749275377853e-07,"tolerance":1e-05,"checks":[{"tensor":"Y","rel_l2_error":1.7892268525962268e-07,"max_abs_error":8.098356291119657e-08,"tolerance":1.4142135623730953e-05,"max_abs_tolerance":1.8853590764504794e-05,"reduction_length":128,"finite":true,"pass":true},{"tensor":"dX","rel_l2_error":1.1775672356560376e-07,"max_abs_error":4.831979021069355e-08,"tolerance":1.4142135623730953e-05,"max_abs_tolerance":1.884317151821568e-05,"reduction_length":128,"finite":true,"pass":true},{"tensor":"dW1","rel_l2_error":1.2030527167539932e-07,"max_abs_error":1.3002160750841263e-07,"tolerance":1e-05,"max_abs_tolerance":4.1693643062289666e-05,"reduction_length":16,"finite":true,"pass":true},{"tensor":"dW2","rel_l2_error":1.3307155259371327e-07,"max_abs_error":4.1157749275377853e-07,"tolerance":1e-05,"max_abs_tolerance":8.544391061282469e-05,"reduction_length":16,"finite":true,"pass":true}],"sent_bytes":[4096,4096],"recv_bytes":[4096,4096],"theory_sent_bytes":[4096,4096],"theory_recv_bytes":[4096,4096],"volume":"ok","volume_error":"","collectives":[{"site":"fwd fc2 allreduce Y [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","op":"sum","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":3.75,"exposed_us":3.5},{"site":"bwd fc1 allreduce dX [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","op":"sum","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":3.75,"exposed_us":3.5}],"textbook_figure":{"source":"Shoeybi et al. 2019 (Megatron-LM), section 3 (docs/textbook-formulas.md, tp-mlp; 8 x b x s x h per transformer layer)","formula":"2 Phi per allreduce, Phi = b x s x h (MLP forward + backward: 4 Phi)","elements":2048.0,"bytes":8192.0,"explanation":"the figure counts elements, not bytes, and takes each of the allreduce's two phases (reduce-scatter, all-gather) as moving the whole [b s, h] tensor; a ring rank sends (TP-1)/TP of it per phase, so the exact figure is (TP-1)/TP = 1/2 of the textbook one (x the element size), nothing at TP 1, and with uneven blocks it differs per rank; its 8 b s h per layer adds the attention block's 4 Phi","exact_sent_bytes":4096,"exact_over_formula":0.5}})json";
const char* const kDpGradMpiRecord = R"json({"layer":"dp_grad","program":"layer_dp_grad","scheme":"dp","transport":"mpi","transport_env":[],"memory":"host","path":"host","wait":"","device_runtime":"","gemm":"openblas","gpu":"","overlap":false,"nranks":2,"tp":1,"cp":1,"pp":1,"dp":2,"ep":1,"etp":1,"sp":false,"dtype":"float","passes":"both","shape":{"S":8,"B":2,"T":16,"H":32,"O":32},"seed":1,"algorithms":{"allreduce":"mpi"},"iters":10,"warmup":2,"time_us":7.271,"time_us_min":6.66,"time_us_max":35.623,"time_us_p25":6.99,"time_us_p75":9.81175,"time_spread":0.38808279466373263,"noise_threshold":0.2,"noisy":true,"round":-1,"gpu_sharing":"","compute_us":2.4185,"comm_us":4.8870000000000005,"exposed_comm_us":4.8870000000000005,"hidden_comm_us":0.0,"gemm_us":12.5,"gemm_flop":1048576.0,"gemm_tflops":0.0625,"times_us":[7.05,6.96,7.461,12.859,10.355,35.623,6.97,7.0809999999999995,6.66,8.182],"pass":true,"verified":true,"rel_l2_error":1.0237428014924396e-07,"max_abs_error":1.8482375596651224e-07,"tolerance":1e-05,"checks":[{"tensor":"Y","rel_l2_error":1.0237428014924396e-07,"max_abs_error":1.8482375596651224e-07,"tolerance":1e-05,"max_abs_tolerance":3.9837850019341066e-05,"reduction_length":32,"finite":true,"pass":true},{"tensor":"dW","rel_l2_error":7.917286594685078e-08,"max_abs_error":4.942495905879696e-07,"tolerance":1e-05,"max_abs_tolerance":0.00013174998299576146,"reduction_length":32,"finite":true,"pass":true}],"sent_bytes":null,"recv_bytes":null,"theory_sent_bytes":null,"theory_recv_bytes":null,"volume":"n/a","volume_error":"","collectives":[{"site":"bwd dW allreduce dW [H,O/TP]","collective":"allreduce","algorithm":"mpi","group":"dp","group_size":2,"count":1024,"dtype":"float","op":"sum","bytes":4096,"sent_bytes":null,"recv_bytes":null,"theory_sent_bytes":null,"theory_recv_bytes":null,"closed_form":"","closed_form_sent_bytes":null,"volume":"n/a","time_us":3.75,"exposed_us":3.5}],"textbook_figure":{"source":"PyTorch DDP (Li et al. 2020) and Megatron data parallelism (docs/textbook-formulas.md, dp-grad)","formula":"parameters x sizeof(dtype) per step","elements":1024.0,"bytes":4096.0,"explanation":"the figure takes one allreduce's traffic as the gradient's size; a ring rank sends 2(DP-1)/DP of it (reduce-scatter, then all-gather): DP 2 gives 2/2 of the figure (equal at DP 2, up to twice it as DP grows, nothing at DP 1)","exact_sent_bytes":null,"exact_over_formula":null}})json";
const char* const kTpAttentionRecord = R"json({"layer":"tp_attention","program":"layer_tp_attention","scheme":"tp","transport":"mpi","transport_env":[],"memory":"host","path":"host","wait":"","device_runtime":"","gemm":"openblas","gpu":"","overlap":false,"nranks":2,"tp":2,"cp":1,"pp":1,"dp":1,"ep":1,"etp":1,"sp":false,"dtype":"float","passes":"both","shape":{"S":8,"B":2,"T":16,"H":32,"heads":4,"head_dim":8,"causal":true},"seed":1,"algorithms":{"allreduce":"ring"},"iters":10,"warmup":2,"time_us":19.7195,"time_us_min":18.386999999999997,"time_us_max":25.689,"time_us_p25":19.09875,"time_us_p75":20.41225,"time_spread":0.0666091939450798,"noise_threshold":0.2,"noisy":false,"round":-1,"gpu_sharing":"","compute_us":12.187999999999999,"comm_us":7.630999999999999,"exposed_comm_us":7.630999999999999,"hidden_comm_us":0.0,"gemm_us":12.5,"gemm_flop":1048576.0,"gemm_tflops":0.0625,"times_us":[25.689,21.892,19.819000000000003,19.278000000000002,19.038999999999998,19.879,18.386999999999997,18.808,20.59,19.619999999999997],"pass":true,"verified":true,"rel_l2_error":1.4547347602854538e-07,"max_abs_error":4.640021914470438e-07,"tolerance":1e-05,"checks":[{"tensor":"Y","rel_l2_error":1.398204267234841e-07,"max_abs_error":7.264899451464579e-08,"tolerance":1e-05,"max_abs_tolerance":1.662076451751206e-05,"reduction_length":32,"finite":true,"pass":true},{"tensor":"dX","rel_l2_error":1.3320043548378405e-07,"max_abs_error":6.773724749165044e-08,"tolerance":1.224744871391589e-05,"max_abs_tolerance":2.081094699660176e-05,"reduction_length":96,"finite":true,"pass":true},{"tensor":"dWqkv","rel_l2_error":1.3156124068234133e-07,"max_abs_error":2.596437393975748e-07,"tolerance":1e-05,"max_abs_tolerance":8.174613918237336e-05,"reduction_length":16,"finite":true,"pass":true},{"tensor":"dWo","rel_l2_error":1.4547347602854538e-07,"max_abs_error":4.640021914470438e-07,"tolerance":1e-05,"max_abs_tolerance":6.835387183861054e-05,"reduction_length":16,"finite":true,"pass":true}],"sent_bytes":[4096,4096],"recv_bytes":[4096,4096],"theory_sent_bytes":[4096,4096],"theory_recv_bytes":[4096,4096],"volume":"ok","volume_error":"","collectives":[{"site":"fwd out-proj allreduce Y [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","op":"sum","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":3.75,"exposed_us":3.5},{"site":"bwd qkv allreduce dX [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","op":"sum","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":3.75,"exposed_us":3.5}],"textbook_figure":{"source":"Shoeybi et al. 2019 (Megatron-LM), section 3 (docs/textbook-formulas.md, tp-attention; 8 x b x s x h per transformer layer)","formula":"2 Phi per allreduce, Phi = b x s x h (attention forward + backward: 4 Phi)","elements":2048.0,"bytes":8192.0,"explanation":"the figure counts elements, not bytes, and takes each of the allreduce's two phases (reduce-scatter, all-gather) as moving the whole [b s, h] tensor; a ring rank sends (TP-1)/TP of it per phase, so the exact figure is (TP-1)/TP = 1/2 of the textbook one (x the element size), nothing at TP 1, and with uneven blocks it differs per rank; as in the figure, nothing moves inside the softmax (whole heads per rank); its 8 b s h per layer adds the MLP's 4 Phi","exact_sent_bytes":4096,"exact_over_formula":0.5}})json";
const char* const kTpMlpRecordBeforeOp = R"json({"layer":"tp_mlp","program":"layer_tp_mlp","scheme":"tp","transport":"mpi","transport_env":[],"memory":"host","path":"host","wait":"","device_runtime":"","gemm":"openblas","gpu":"","overlap":false,"nranks":2,"tp":2,"cp":1,"pp":1,"dp":1,"ep":1,"etp":1,"sp":false,"dtype":"float","passes":"both","shape":{"S":8,"B":2,"T":16,"H":32,"F":128},"seed":1,"algorithms":{"allreduce":"ring"},"iters":10,"warmup":2,"time_us":2418.571,"time_us_min":25.027,"time_us_max":4034.569,"time_us_p25":30.625999999999998,"time_us_p75":3323.191,"time_spread":1.361367931724973,"noise_threshold":0.2,"noisy":true,"round":-1,"gpu_sharing":"","compute_us":24.711499999999724,"comm_us":2396.2935,"exposed_comm_us":2396.2935,"hidden_comm_us":0.0,"gemm_us":12.5,"gemm_flop":1048576.0,"gemm_tflops":null,"times_us":[3960.679,2024.5100000000002,2812.6319999999996,32.789,25.027,25.648,3059.128,4034.569,3411.212,29.904999999999998],"pass":true,"verified":true,"rel_l2_error":1.3307155259371327e-07,"max_abs_error":4.1157749275377853e-07,"tolerance":1e-05,"checks":[{"tensor":"Y","rel_l2_error":1.7892268525962268e-07,"max_abs_error":8.098356291119657e-08,"tolerance":1.4142135623730953e-05,"max_abs_tolerance":1.8853590764504794e-05,"reduction_length":128,"finite":true,"pass":true},{"tensor":"dX","rel_l2_error":1.1775672356560376e-07,"max_abs_error":4.831979021069355e-08,"tolerance":1.4142135623730953e-05,"max_abs_tolerance":1.884317151821568e-05,"reduction_length":128,"finite":true,"pass":true},{"tensor":"dW1","rel_l2_error":1.2030527167539932e-07,"max_abs_error":1.3002160750841263e-07,"tolerance":1e-05,"max_abs_tolerance":4.1693643062289666e-05,"reduction_length":16,"finite":true,"pass":true},{"tensor":"dW2","rel_l2_error":1.3307155259371327e-07,"max_abs_error":4.1157749275377853e-07,"tolerance":1e-05,"max_abs_tolerance":8.544391061282469e-05,"reduction_length":16,"finite":true,"pass":true}],"sent_bytes":[4096,4096],"recv_bytes":[4096,4096],"theory_sent_bytes":[4096,4096],"theory_recv_bytes":[4096,4096],"volume":"ok","volume_error":"","collectives":[{"site":"fwd fc2 allreduce Y [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":null,"exposed_us":null},{"site":"bwd fc1 allreduce dX [T,H]","collective":"allreduce","algorithm":"ring","group":"tp","group_size":2,"count":512,"dtype":"float","bytes":2048,"sent_bytes":[2048,2048],"recv_bytes":[2048,2048],"theory_sent_bytes":[2048,2048],"theory_recv_bytes":[2048,2048],"closed_form":"2(N-1)/N x D","closed_form_sent_bytes":2048.0,"volume":"ok","time_us":null,"exposed_us":null}],"textbook_figure":{"source":"Shoeybi et al. 2019 (Megatron-LM), section 3 (docs/textbook-formulas.md, tp-mlp; 8 x b x s x h per transformer layer)","formula":"2 Phi per allreduce, Phi = b x s x h (MLP forward + backward: 4 Phi)","elements":2048.0,"bytes":8192.0,"explanation":"the figure counts elements, not bytes, and takes each of the allreduce's two phases (reduce-scatter, all-gather) as moving the whole [b s, h] tensor; a ring rank sends (TP-1)/TP of it per phase, so the exact figure is (TP-1)/TP = 1/2 of the textbook one (x the element size), nothing at TP 1, and with uneven blocks it differs per rank; its 8 b s h per layer adds the attention block's 4 Phi","exact_sent_bytes":4096,"exact_over_formula":0.5}})json";

TEST_F(ResultsFileTest, RealLayerRecordsReadBackExactly) {
  // The driver's records are ordered_json: the conversion append_layer's callers use.
  const json tp = json(nlohmann::ordered_json::parse(kTpMlpRecord));
  const json dp = json(nlohmann::ordered_json::parse(kDpGradMpiRecord));
  const json attention = json(nlohmann::ordered_json::parse(kTpAttentionRecord));
  const json before_op = json(nlohmann::ordered_json::parse(kTpMlpRecordBeforeOp));
  ASSERT_TRUE(dp["sent_bytes"].is_null());
  ASSERT_TRUE(dp["collectives"][0]["closed_form_sent_bytes"].is_null());
  ASSERT_TRUE(tp["collectives"][0].contains("op"));
  ASSERT_FALSE(before_op["collectives"][0].contains("op"));
  {
    ResultsFile f = ResultsFile::open_for_append(path("l.h5"), run_named("layer_tp_mlp"));
    f.append_layer(tp);
    f.append_collective(sample_collective(0));
    f.append_layer(dp);
    f.append_layer(attention);
    f.append_layer(before_op);
  }
  const ResultsContents c = read_results(path("l.h5"));
  ASSERT_EQ(c.layer.size(), 4u);
  EXPECT_EQ(c.layer[0].run_id, 0);
  EXPECT_EQ(c.layer[0].fields, tp) << c.layer[0].fields.dump();
  EXPECT_EQ(c.layer[1].fields, dp) << c.layer[1].fields.dump();
  EXPECT_EQ(c.layer[2].fields, attention) << c.layer[2].fields.dump();
  EXPECT_EQ(c.layer[3].fields, before_op) << c.layer[3].fields.dump();
  EXPECT_EQ(c.layer[0].fields.dump(), tp.dump());  // the same text, key for key
  ASSERT_EQ(c.collective.size(), 1u);
  EXPECT_EQ(c.collective[0].fields, sample_collective(0));
}

TEST_F(ResultsFileTest, LayerSamplesReadBackFieldForField) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("s.h5"), run_named("layer_tp_mlp"));
    for (int i = 0; i < 14; ++i) f.append_layer(sample_layer(i));
  }
  {
    ResultsFile f = ResultsFile::open_for_append(path("s.h5"), run_named("layer_dp_grad"));
    for (int i = 14; i < 20; ++i) f.append_layer(sample_layer(i));
  }
  const ResultsContents c = read_results(path("s.h5"));
  ASSERT_EQ(c.layer.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(c.layer[i].run_id, i < 14 ? 0 : 1);
    EXPECT_EQ(c.layer[i].fields, sample_layer(i)) << "layer row " << i << ": " << c.layer[i].fields.dump();
  }
  // The samples cover every missing value.
  EXPECT_TRUE(sample_layer(2)["sent_bytes"].is_null());
  EXPECT_TRUE(sample_layer(2)["textbook_figure"]["exact_sent_bytes"].is_null());
  EXPECT_TRUE(sample_layer(1)["checks"][0]["rel_l2_error"].is_null());
  EXPECT_TRUE(sample_layer(6)["checks"].empty());
  EXPECT_TRUE(sample_layer(6)["rel_l2_error"].is_null());
  EXPECT_TRUE(sample_layer(0)["times_us"].empty());
}

// Deletes /layer, as a file written before the group existed is.
void remove_layer_group(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "/layer", H5P_DEFAULT), 0);
  H5Fclose(file);
}

bool has_layer(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool has = H5Lexists(file, "/layer", H5P_DEFAULT) > 0;
  H5Fclose(file);
  return has;
}

TEST_F(ResultsFileTest, AFileWithoutLayerGetsItOnItsFirstLayerRow) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("old.h5"), run_named("x"));
    f.append_collective(sample_collective(0));
  }
  EXPECT_TRUE(has_layer(path("old.h5")));  // new files have it from the start
  remove_layer_group(path("old.h5"));
  EXPECT_TRUE(read_results(path("old.h5")).layer.empty());
  {
    ResultsFile f = ResultsFile::open_for_append(path("old.h5"), run_named("y"));
    f.append_pingpong(sample_pingpong(0));
  }
  EXPECT_FALSE(has_layer(path("old.h5")));  // only a layer row makes it
  {
    ResultsFile f = ResultsFile::open_for_append(path("old.h5"), run_named("z"));
    f.append_layer(sample_layer(3));
    f.append_layer(sample_layer(4));
  }
  {
    ResultsFile f = ResultsFile::open_for_append(path("old.h5"), run_named("w"));
    f.append_layer(sample_layer(5));
  }
  const ResultsContents c = read_results(path("old.h5"));
  ASSERT_EQ(c.layer.size(), 3u);
  EXPECT_EQ(c.layer[0].run_id, 2);
  EXPECT_EQ(c.layer[2].run_id, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.layer[i].fields, sample_layer(3 + i)) << i;
  EXPECT_EQ(c.collective.size(), 1u);
  EXPECT_EQ(c.pingpong.size(), 1u);
}

std::string layer_refusal(ResultsFile& f, const json& record) {
  try {
    f.append_layer(record);
  } catch (const RuntimeError& e) {
    return e.what();
  }
  return "accepted";
}

TEST_F(ResultsFileTest, LayerFieldsWithoutAColumnAreRefusedByName) {
  ResultsFile f = ResultsFile::open_for_append(path("u.h5"), run_named("x"));
  const json good = sample_layer(7);  // 4 ranks, 2 sites, 2 checks
  json r = good;
  r["new_field"] = 1;
  EXPECT_NE(layer_refusal(f, r).find("'new_field'"), std::string::npos);
  r = good;
  r["collectives"][0]["site_extra"] = "x";
  EXPECT_NE(layer_refusal(f, r).find("'site_extra'"), std::string::npos);
  r = good;
  r["checks"][0]["check_extra"] = 2;
  EXPECT_NE(layer_refusal(f, r).find("'check_extra'"), std::string::npos);
  r = good;
  r["textbook_figure"]["textbook_extra"] = 2;
  EXPECT_NE(layer_refusal(f, r).find("'textbook_extra'"), std::string::npos);
  r = good;
  r["textbook_source"] = "collides with textbook_figure's column";
  EXPECT_NE(layer_refusal(f, r).find("'textbook_source'"), std::string::npos);
  r = good;
  r.erase("shape");
  EXPECT_NE(layer_refusal(f, r).find("'shape'"), std::string::npos);
  r = good;
  r["shape"] = 3;
  EXPECT_NE(layer_refusal(f, r).find("'shape'"), std::string::npos);
  r = good;
  r["algorithms"]["allgather"] = std::string(600, 'a');
  EXPECT_NE(layer_refusal(f, r).find("'algorithms'"), std::string::npos);
  r = good;
  r["collectives"][0].erase("volume");
  EXPECT_NE(layer_refusal(f, r).find("'volume'"), std::string::npos);
  r = good;
  r["collectives"][0]["sent_bytes"] = json::array({1});
  EXPECT_NE(layer_refusal(f, r).find("'sent_bytes'"), std::string::npos);  // not nranks values
  r = good;
  r["checks"] = json::object();
  EXPECT_NE(layer_refusal(f, r).find("'checks'"), std::string::npos);
  f.append_layer(good);  // the file is still fine
  f.close();
  const ResultsContents c = read_results(path("u.h5"));
  ASSERT_EQ(c.layer.size(), 1u);
  EXPECT_EQ(c.layer[0].fields, good);
}

TEST_F(ResultsFileTest, ADifferentLayerTableIsRefused) {
  {
    ResultsFile f = ResultsFile::open_for_append(path("d.h5"), run_named("x"));
    f.append_layer(sample_layer(0));
  }
  const hid_t file = H5Fopen(path("d.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "/layer/checks", H5P_DEFAULT), 0);
  H5Fclose(file);
  const std::string before = contents(path("d.h5"));
  const std::string why = refusal<UsageError>(path("d.h5"));
  EXPECT_NE(why.find("/layer/checks is missing or differs"), std::string::npos) << why;
  EXPECT_EQ(contents(path("d.h5")), before);
}

}  // namespace
}  // namespace collscope::results
