// How ranks share GPUs (collscope/runtime/gpu_sharing.hpp), from hosts, GPUs and MPS flags.
#include <gtest/gtest.h>

#include "collscope/runtime/gpu_sharing.hpp"

namespace collscope {
namespace {

TEST(GpuSharing, OneRankPerGpuIsExclusive) {
  const GpuSharingOfJob s = gpu_sharing_from({"a", "a", "b"}, {"GPU-0", "GPU-1", "GPU-0"}, {false, false, false});
  EXPECT_EQ(s.job, GpuSharing::exclusive);
  for (GpuSharing r : s.per_rank) EXPECT_EQ(r, GpuSharing::exclusive);
}

TEST(GpuSharing, RanksOnOneGpuAreMpsOrTimeSlicedAndTheWorstRankDecides) {
  GpuSharingOfJob s = gpu_sharing_from({"a", "a", "a"}, {"GPU-0", "GPU-0", "GPU-1"}, {true, true, false});
  EXPECT_EQ(s.per_rank[0], GpuSharing::mps);
  EXPECT_EQ(s.per_rank[1], GpuSharing::mps);
  EXPECT_EQ(s.per_rank[2], GpuSharing::exclusive);
  EXPECT_EQ(s.job, GpuSharing::mps);
  s = gpu_sharing_from({"a", "a"}, {"GPU-0", "GPU-0"}, {true, false});  // one rank off MPS
  EXPECT_EQ(s.per_rank[1], GpuSharing::time_sliced);
  EXPECT_EQ(s.job, GpuSharing::time_sliced);
  EXPECT_EQ(gpu_sharing_name(s.job), "time_sliced");
  EXPECT_NE(time_sliced_warning(s).find("1 ranks share a GPU without MPS"), std::string::npos);
}

}  // namespace
}  // namespace collscope
