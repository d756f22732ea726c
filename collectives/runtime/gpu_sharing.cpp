#include "collscope/runtime/gpu_sharing.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "collscope/enum_names.hpp"

namespace collscope {
namespace {

constexpr std::string_view kSharingNames[] = {"exclusive", "mps", "time_sliced"};

// host and uuid of one rank in a fixed-size record, for one MPI_Allgather.
struct Seen {
  char host[MPI_MAX_PROCESSOR_NAME];
  char uuid[64];
  int mps;
};

}  // namespace

std::string_view gpu_sharing_name(GpuSharing s) { return name_of(s, kSharingNames); }

GpuSharingOfJob gpu_sharing_from(const std::vector<std::string>& hosts,
                                 const std::vector<std::string>& uuids,
                                 const std::vector<bool>& mps_client) {
  std::map<std::pair<std::string, std::string>, int> users;  // (host, uuid) -> ranks on it
  for (std::size_t r = 0; r < hosts.size(); ++r) ++users[{hosts[r], uuids[r]}];
  GpuSharingOfJob out;
  out.mps_client = mps_client;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    const bool shared = users[{hosts[r], uuids[r]}] > 1;
    const GpuSharing s = !shared ? GpuSharing::exclusive
                         : mps_client[r] ? GpuSharing::mps
                                         : GpuSharing::time_sliced;
    out.per_rank.push_back(s);
    out.job = std::max(out.job, s);  // the enum's order: exclusive < mps < time_sliced
  }
  return out;
}

std::string time_sliced_warning(const GpuSharingOfJob& sharing) {
  const auto sliced = std::count(sharing.per_rank.begin(), sharing.per_rank.end(), GpuSharing::time_sliced);
  return std::to_string(sliced) + " ranks share a GPU without MPS (time-sliced): their small-message "
         "times measure the GPU's switches between contexts, not the device path (run several "
         "ranks per GPU under MPS)";
}

std::optional<GpuSharingOfJob> gpu_sharing_of(const std::optional<device::Info>& mine, MPI_Comm comm) {
  int on_device = mine ? 1 : 0, all_on_device = 0;
  MPI_Allreduce(&on_device, &all_on_device, 1, MPI_INT, MPI_MIN, comm);
  if (!all_on_device) return std::nullopt;
  Seen me{};
  int len = 0;
  MPI_Get_processor_name(me.host, &len);
  std::strncpy(me.uuid, mine->uuid.c_str(), sizeof me.uuid - 1);
  me.mps = mine->mps_client ? 1 : 0;
  int n = 1;
  MPI_Comm_size(comm, &n);
  std::vector<Seen> all(static_cast<std::size_t>(n));
  MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm);
  std::vector<std::string> hosts, uuids;
  std::vector<bool> mps;
  for (const Seen& s : all) {
    hosts.emplace_back(s.host);
    uuids.emplace_back(s.uuid);
    mps.push_back(s.mps != 0);
  }
  return gpu_sharing_from(hosts, uuids, mps);
}

}  // namespace collscope
