// The ipc path's protocol on the emulated device (COLLSCOPE_DEVICE_EMULATION=1: host
// memory shared between the ranks, flags set and awaited by the host), at any N:
//   - a whole call runs in order through the flags, and the result is exact;
//   - peers' buffers are mapped once and kept across calls, and unmapped on every rank
//     (then freed) only once their owner freed them and the ranks released them;
//   - the receives a reduction consumes are reduced in the sender's memory: the bytes
//     reduced there are the schedule's planned ones, and copied + reduced = received;
//     with fusion off, everything is copied.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/comm.hpp"
#include "collscope/device/device_executor.hpp"
#include "collscope/device/runtime.hpp"

namespace collscope {
namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Every rank's verdict, so that all ranks pass or fail together.
bool everywhere(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

struct Vectors {
  device::Runtime& rt;
  std::size_t count;
  float* send = static_cast<float*>(rt.alloc(count * sizeof(float)));
  float* recv = static_cast<float*>(rt.alloc(count * sizeof(float)));
  ~Vectors() { release(); }
  void release() {
    rt.free(send);
    rt.free(recv);
    send = recv = nullptr;
  }
};

class IpcPath : public ::testing::Test {
 protected:
  device::Runtime& rt = device::runtime();
  std::vector<int> one_node = std::vector<int>(static_cast<std::size_t>(world_size()), 0);
  const Algorithm& ring = *find_algorithm(Collective::allreduce, "ring");

  // An allreduce ring of `count` floats, each rank contributing rank + 1: every element
  // must be N (N + 1) / 2.
  bool allreduce_is_exact(DeviceExecutor& ex, Vectors& v) {
    const int n = world_size();
    std::vector<float> in(v.count, static_cast<float>(world_rank() + 1)), out(v.count, -1);
    rt.copy(v.send, in.data(), v.count * sizeof(float), device::CopyKind::host_to_device, ex.stream());
    CollArgs a;
    a.sendbuf = v.send;
    a.recvbuf = v.recv;
    a.count = v.count;
    a.mem = MemoryKind::device;
    Comm comm(ex, MPI_COMM_WORLD);
    run_collective(comm, ring, a);
    ex.synchronize();
    rt.copy(out.data(), v.recv, v.count * sizeof(float), device::CopyKind::device_to_host, ex.stream());
    const float want = static_cast<float>(n * (n + 1) / 2);
    for (float x : out)
      if (x != want) return false;
    return true;
  }
};

TEST_F(IpcPath, MapsEachPeerBufferOnceAndUnmapsItOnlyOnceFreedAndReleased) {
  DeviceExecutor ex(rt, DevicePath::ipc, TransportKind::mpi, MPI_COMM_WORLD, one_node);
  Vectors v{rt, 1000};
  ASSERT_TRUE(everywhere(allreduce_is_exact(ex, v)));
  const std::size_t first = ex.mapped_peer_buffers();
  ASSERT_TRUE(everywhere(allreduce_is_exact(ex, v)));
  EXPECT_TRUE(everywhere(ex.mapped_peer_buffers() == first)) << "a second call maps nothing new";
  if (world_size() > 1) {
    EXPECT_TRUE(everywhere(first > 0));
  }

  const device::Allocation send = rt.allocation_of(v.send, 1);
  v.release();  // exported: retired, not freed, while a peer may map it
  if (world_size() > 1) {
    EXPECT_TRUE(everywhere(rt.retired(send.id)));
  }
  ex.release_freed_buffers();
  EXPECT_FALSE(rt.retired(send.id));  // gone for real
  const std::size_t kept = ex.mapped_peer_buffers();
  EXPECT_TRUE(everywhere(kept < first || world_size() == 1)) << "the peers' freed buffers are unmapped";

  Vectors w{rt, 1000};  // new buffers: mapped anew
  ASSERT_TRUE(everywhere(allreduce_is_exact(ex, w)));
  EXPECT_TRUE(everywhere(ex.mapped_peer_buffers() >= kept));
}

TEST_F(IpcPath, ReducesConsumedReceivesInTheSendersMemoryUnlessTold) {
  for (bool fuse : {true, false}) {
    DeviceOptions o;
    o.fuse = fuse;
    DeviceExecutor ex(rt, DevicePath::ipc, TransportKind::mpi, MPI_COMM_WORLD, one_node, o);
    Vectors v{rt, 1001};  // uneven blocks
    ex.traffic().reset();
    ASSERT_TRUE(everywhere(allreduce_is_exact(ex, v))) << "fuse " << fuse;
    const CopyVolume& c = ex.traffic().copies();
    CollArgs a;
    a.count = v.count;
    const std::uint64_t planned = planned_consumed_bytes(ring, world_rank(), world_size(), a, false);
    const std::uint64_t received = ex.traffic().total().recv_bytes;
    EXPECT_TRUE(everywhere(c.reduced_from_peer == (fuse ? planned : 0))) << "fuse " << fuse;
    EXPECT_TRUE(everywhere(c.from_peer + c.reduced_from_peer == received)) << "fuse " << fuse;
    if (world_size() > 1) {
      EXPECT_TRUE(everywhere(planned > 0));
    }
    v.release();
    ex.release_freed_buffers();
  }
}

}  // namespace
}  // namespace collscope
