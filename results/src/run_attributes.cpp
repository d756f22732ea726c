#include "collscope/results/run_attributes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <unistd.h>

#include "collscope/build_config.hpp"
#include "collscope/results/build_info.hpp"
#include "utc_time.hpp"

#include "collscope/mpi_transport.hpp"

#if COLLSCOPE_HAVE_UCX
#include <ucp/api/ucp.h>

#include "collscope/ucx_transport.hpp"
#endif

namespace collscope::results {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string random_uuid() {
  std::random_device rd;
  char buf[33];
  for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

std::string join_args(int argc, const char* const* argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) s += ' ';
    s += argv[i];
  }
  return s;
}

std::string base_name(const char* path) {
  const std::string p = path ? path : "";
  return p.substr(p.find_last_of('/') == std::string::npos ? 0 : p.find_last_of('/') + 1);
}

// Host names in the order of their first rank; nnodes and the most ranks on one host.
void set_hosts(RunAttributes& a, const std::vector<std::string>& host_of_rank) {
  a.hosts.clear();
  a.ranks_per_node = 0;
  for (const std::string& h : host_of_rank) {
    if (std::find(a.hosts.begin(), a.hosts.end(), h) == a.hosts.end()) a.hosts.push_back(h);
    a.ranks_per_node = std::max(
        a.ranks_per_node, static_cast<int>(std::count(host_of_rank.begin(), host_of_rank.end(), h)));
  }
  a.nnodes = static_cast<int>(a.hosts.size());
  a.world_size = static_cast<int>(host_of_rank.size());
}

std::vector<std::string> gather_hosts(MPI_Comm comm) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0, n = 1;
  MPI_Get_processor_name(name, &len);
  MPI_Comm_size(comm, &n);
  std::vector<char> all(static_cast<std::size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::vector<std::string> hosts;
  for (int r = 0; r < n; ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  return hosts;
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text);
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string mpi_version() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

RunAttributes local_run_attributes(int argc, const char* const* argv) {
  RunAttributes a;
  a.run_uuid = random_uuid();
  a.program = base_name(argc > 0 ? argv[0] : nullptr);
  a.suite_version = COLLSCOPE_VERSION;
  a.git_revision = COLLSCOPE_GIT_REVISION;
  a.command_line = join_args(argc, argv);
  a.start_utc = utc_now();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  set_hosts(a, {host});
#if COLLSCOPE_HAVE_UCX
  a.ucx_version = ucp_get_version_string();
#endif
  a.nccl_version = COLLSCOPE_NCCL_VERSION;
  a.cuda_version = COLLSCOPE_CUDA_VERSION;
  a.slurm_job_id = env("SLURM_JOB_ID");
  a.slurm_array_job_id = env("SLURM_ARRAY_JOB_ID");
  a.slurm_array_task_id = env("SLURM_ARRAY_TASK_ID");
  a.slurm_nodelist = env("SLURM_JOB_NODELIST");
  return a;
}

RunAttributes collect_run_attributes(int argc, char** argv, MPI_Comm comm) {
  RunAttributes a = local_run_attributes(argc, argv);
  set_hosts(a, gather_hosts(comm));
  a.mpi_library = mpi_library();
  a.mpi_version = mpi_version();
  a.mpi_cuda_aware = mpi_cuda_aware();
#if COLLSCOPE_HAVE_UCX
  a.ucx_memory_types = ucx_context_memory_types();
#endif
  a.machine = collect_machine_state(comm);
  return a;
}

}  // namespace collscope::results
