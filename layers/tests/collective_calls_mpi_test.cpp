// CollectiveCalls under mpiexec (1..4 ranks, one TP group of every rank): each collective
// a layer calls delivers the values its table says, in float32 and in bfloat16 (small
// integers, exact in both), and each recorded call's measured bytes equal the exact
// theory of its algorithm for what it recorded (count, dtype, root, split matrix). On
// host memory, or with COLLSCOPE_DEVICE_EMULATION=1 on the emulated device over the ipc
// path (the arrays in device memory, the calls on the executor's stream).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <numeric>

#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/collective_calls.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope::layers {
namespace {

struct World {
  int rank = 0, n = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  }
};

// Every rank's failures summed: all ranks assert alike.
int failures_everywhere(int mine) {
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

class CallsTest : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    config_.world = w_.n;
    config_.tp = w_.n;
    AlgorithmChoice algos;
    using C = Collective;
    for (auto [coll, name] : {std::pair{C::allreduce, "ring"}, {C::allgather, "ring"},
                              {C::reduce_scatter, "ring"}, {C::alltoall, "pairwise"},
                              {C::alltoallv, "pairwise"}, {C::broadcast, "binomial"},
                              {C::scatter, "linear"}, {C::gather, "linear"}})
      algos[coll] = find_algorithm(coll, name);
    const char* emulation = std::getenv("COLLSCOPE_DEVICE_EMULATION");
    const bool device = emulation && std::string(emulation) == "1";
    BackendSpec spec;
    spec.memory = device ? MemoryKind::device : MemoryKind::host;
    if (device) spec.path = DevicePath::ipc;
    auto group = std::make_unique<GroupComm>(config_, GroupKind::tp, MPI_COMM_WORLD, spec);
    engine_ = device ? make_device_engine(device::runtime()) : make_host_engine();
    calls_ = std::make_unique<CollectiveCalls>(algos, *engine_);
    calls_->add_group(std::move(group));
    calls_->timeline().begin();
    calls_->start_recording();
  }

  void TearDown() override {
    engine_->synchronize();
    engine_->release_all();
    calls_->release_freed_buffers();
    calls_.reset();
    engine_.reset();
  }

  // The values as an array of the test's dtype, and back.
  Array array(const std::vector<float>& v) {
    Tensor t(v.size(), 1);
    t.data = v;
    return ops::upload(*engine_, t, GetParam());
  }
  static std::vector<float> values(const Array& a) { return ops::download(a).data; }

  // The last call's measured volume against its algorithm's theory, on every rank.
  void expect_volume_of_last_call() {
    const CallRecord& c = calls_->records().back();
    CollArgs a;
    a.count = c.count;
    a.dtype = c.dtype;
    a.root = c.root;
    a.splits = c.splits;
    const RankVolume want = theory_total(calls_->algorithm(c.collective).theory, w_.rank, w_.n, a);
    EXPECT_EQ(failures_everywhere(c.measured == want ? 0 : 1), 0) << c.site;
  }

  std::size_t block(std::size_t count, int i) const {
    return patterns::block_of(count, w_.n, i).count;
  }
  std::size_t offset(std::size_t count, int i) const {
    return patterns::block_of(count, w_.n, i).offset;
  }

  World w_;
  ParallelConfig config_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<CollectiveCalls> calls_;
};

TEST_P(CallsTest, AllreduceSums) {
  std::vector<float> data(7);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(w_.rank + i);
  Array a = array(data);
  calls_->allreduce(GroupKind::tp, "ar", a);
  data = values(a);
  int bad = 0;
  for (std::size_t i = 0; i < data.size(); ++i)
    bad += data[i] != static_cast<float>(w_.n * (w_.n - 1) / 2 + w_.n * static_cast<int>(i));
  EXPECT_EQ(failures_everywhere(bad), 0);
  expect_volume_of_last_call();
}

TEST_P(CallsTest, AllgatherJoinsBlocks) {
  const std::size_t count = 10;  // uneven at 3 and 4 ranks
  std::vector<float> mine(block(count, w_.rank)), all(count);
  for (std::size_t i = 0; i < mine.size(); ++i)
    mine[i] = static_cast<float>(offset(count, w_.rank) + i);
  Array out = array(all);
  calls_->allgather(GroupKind::tp, "ag", array(mine), out);
  all = values(out);
  int bad = 0;
  for (std::size_t i = 0; i < count; ++i) bad += all[i] != static_cast<float>(i);
  EXPECT_EQ(failures_everywhere(bad), 0);
  expect_volume_of_last_call();
}

TEST_P(CallsTest, ReduceScatterSumsBlocks) {
  const std::size_t count = 10;
  std::vector<float> full(count), mine(block(count, w_.rank));
  for (std::size_t i = 0; i < count; ++i) full[i] = static_cast<float>(i + w_.rank);
  Array out = array(mine);
  calls_->reduce_scatter(GroupKind::tp, "rs", array(full), out);
  mine = values(out);
  int bad = 0;
  for (std::size_t j = 0; j < mine.size(); ++j)
    bad += mine[j] != static_cast<float>(w_.n * static_cast<int>(offset(count, w_.rank) + j) +
                                         w_.n * (w_.n - 1) / 2);
  EXPECT_EQ(failures_everywhere(bad), 0);
  expect_volume_of_last_call();
}

TEST_P(CallsTest, AlltoallTransposesBlocks) {
  const std::size_t per = 3, n = static_cast<std::size_t>(w_.n);
  std::vector<float> send(n * per), recv(n * per);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t e = 0; e < per; ++e)
      send[j * per + e] = static_cast<float>(w_.rank * 16 + static_cast<int>(j * 4 + e));
  Array out = array(recv);
  calls_->alltoall(GroupKind::tp, "a2a", array(send), out);
  recv = values(out);
  int bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t e = 0; e < per; ++e)
      bad += recv[i * per + e] != static_cast<float>(static_cast<int>(i) * 16 + w_.rank * 4 +
                                                     static_cast<int>(e));
  EXPECT_EQ(failures_everywhere(bad), 0);
  expect_volume_of_last_call();
}

TEST_P(CallsTest, AlltoallvDeliversRowsByColumn) {
  const auto n = static_cast<std::size_t>(w_.n);
  std::vector<std::uint64_t> splits(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) splits[i * n + j] = (i + 2 * j) % 3;  // some zero
  const auto me = static_cast<std::size_t>(w_.rank);
  std::vector<float> send, recv;
  for (std::size_t j = 0; j < n; ++j)
    for (std::uint64_t e = 0; e < splits[me * n + j]; ++e)
      send.push_back(static_cast<float>(me * 16 + j * 4 + e));
  std::size_t col = 0;
  for (std::size_t i = 0; i < n; ++i) col += splits[i * n + me];
  recv.resize(col);
  Array out = array(recv);
  calls_->alltoallv(GroupKind::tp, "a2av", array(send), out, splits);
  recv = values(out);
  std::vector<float> want;
  for (std::size_t i = 0; i < n; ++i)
    for (std::uint64_t e = 0; e < splits[i * n + me]; ++e)
      want.push_back(static_cast<float>(i * 16 + me * 4 + e));
  EXPECT_EQ(failures_everywhere(recv == want ? 0 : 1), 0);
  EXPECT_EQ(calls_->records().back().splits, splits);
  expect_volume_of_last_call();
}

TEST_P(CallsTest, RootedCallsMoveTheRootsData) {
  const int root = w_.n - 1;
  const std::size_t count = 9;
  std::vector<float> data(count, w_.rank == root ? 5.0f : 0.0f);
  Array bc = array(data);
  calls_->broadcast(GroupKind::tp, "bc", bc, root);
  data = values(bc);
  int bad = 0;
  for (float v : data) bad += v != 5.0f;
  expect_volume_of_last_call();

  std::vector<float> full(w_.rank == root ? count : 0), mine(block(count, w_.rank));
  std::iota(full.begin(), full.end(), 0.0f);
  Array sc = array(mine);
  calls_->scatter(GroupKind::tp, "sc", array(full), sc, count, root);
  mine = values(sc);
  for (std::size_t j = 0; j < mine.size(); ++j)
    bad += mine[j] != static_cast<float>(offset(count, w_.rank) + j);
  expect_volume_of_last_call();

  std::vector<float> back(w_.rank == 0 ? count : 0);
  Array ga = array(back);
  calls_->gather(GroupKind::tp, "ga", array(mine), ga, count, 0);
  back = values(ga);
  for (std::size_t i = 0; i < back.size(); ++i) bad += back[i] != static_cast<float>(i);
  expect_volume_of_last_call();
  EXPECT_EQ(failures_everywhere(bad), 0);
}

TEST_P(CallsTest, CountsTravelAsInt64) {
  const std::vector<std::int64_t> mine{w_.rank, 3'000'000'000LL + w_.rank};  // beyond float
  Array out(*engine_, 2 * static_cast<std::size_t>(w_.n), 1, DataType::int64);
  calls_->allgather_counts(GroupKind::tp, "counts", ops::upload_int64(*engine_, mine), out);
  const std::vector<std::int64_t> all = ops::download_vector<std::int64_t>(out);
  int bad = 0;
  for (int r = 0; r < w_.n; ++r)
    bad += all[2 * r] != r || all[2 * r + 1] != 3'000'000'000LL + r;
  EXPECT_EQ(failures_everywhere(bad), 0);
  EXPECT_EQ(calls_->records().back().dtype, DataType::int64);
  expect_volume_of_last_call();
}

INSTANTIATE_TEST_SUITE_P(Storage, CallsTest,
                         ::testing::Values(DataType::float32, DataType::bfloat16),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

}  // namespace
}  // namespace collscope::layers
