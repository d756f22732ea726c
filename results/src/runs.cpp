#include "runs.hpp"

#include "schema.hpp"

namespace collscope::results {
namespace {

// The text fields of a run, by column name.
template <class Run, class F>
void for_each_text(Run& run, F f) {
  f("run_uuid", run.run_uuid);
  f("program", run.program);
  f("suite_version", run.suite_version);
  f("git_revision", run.git_revision);
  f("command_line", run.command_line);
  f("start_utc", run.start_utc);
  f("mpi_library", run.mpi_library);
  f("mpi_version", run.mpi_version);
  f("ucx_version", run.ucx_version);
  f("nccl_version", run.nccl_version);
  f("cuda_version", run.cuda_version);
  f("slurm_job_id", run.slurm_job_id);
  f("slurm_array_job_id", run.slurm_array_job_id);
  f("slurm_array_task_id", run.slurm_array_task_id);
  f("slurm_nodelist", run.slurm_nodelist);
}

// Version 2's (absent from a version-1 record).
template <class Run, class F>
void for_each_device_text(Run& run, F f) {
  f("device_runtime", run.device_runtime);
  f("nccl_runtime_version", run.nccl_runtime_version);
}

bool has_field(const Record& r, const char* name) {
  for (const Field& f : r.layout().fields())
    if (f.name == name) return true;
  return false;
}

// Version 5's machine and libraries (absent from older records).
template <class Run, class F>
void for_each_machine_text(Run& run, F f) {
  f("cpu_governor", run.machine.cpu_governor);
  f("busy_processes", run.machine.busy_processes);
  f("mpi_cuda_aware", run.mpi_cuda_aware);
  f("ucx_memory_types", run.ucx_memory_types);
}

// The warnings, one line each, stored joined by '\n'.
std::string joined_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start < s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void encode_machine(Record& r, const RunAttributes& run) {
  for_each_machine_text(run, [&r](const char* name, const std::string& v) { r.set_text(name, v); });
  r.set_int("host_cores", run.machine.host_cores);
  r.set_bool("oversubscribed", run.machine.oversubscribed);
  r.set_f64("load_avg_1m", run.machine.load_avg_1m);
  r.set_text("machine_warnings", joined_lines(run.machine.warnings));
}

void decode_machine(const Record& r, RunAttributes& run) {
  if (!has_field(r, "host_cores")) return;  // before version 5
  for_each_machine_text(run, [&r](const char* name, std::string& v) { v = r.get_text(name); });
  run.machine.host_cores = static_cast<int>(r.get_int("host_cores"));
  run.machine.oversubscribed = r.get_bool("oversubscribed");
  run.machine.load_avg_1m = r.get_f64("load_avg_1m");
  run.machine.warnings = split_lines(r.get_text("machine_warnings"));
}

template <class Run, class F>
void for_each_int(Run& run, F f) {
  f("world_size", run.world_size);
  f("nnodes", run.nnodes);
  f("ranks_per_node", run.ranks_per_node);
}

}  // namespace

Record encode_run(const RunAttributes& run, std::int64_t run_id) {
  Record r(runs_layout());  // this build writes the current version
  r.set_int("run_id", run_id);
  for_each_text(run, [&r](const char* name, const std::string& v) { r.set_text(name, v); });
  for_each_int(run, [&r](const char* name, int v) { r.set_int(name, v); });
  for_each_device_text(run, [&r](const char* name, const std::string& v) { r.set_text(name, v); });
  encode_machine(r, run);
  std::string hosts;
  for (const std::string& h : run.hosts) {
    if (!hosts.empty()) hosts += ',';
    hosts += h;
  }
  r.set_text("hosts", hosts);
  return r;
}

RunAttributes decode_run(const Record& r) {
  RunAttributes run;
  for_each_text(run, [&r](const char* name, std::string& v) { v = r.get_text(name); });
  for_each_int(run, [&r](const char* name, int& v) { v = static_cast<int>(r.get_int(name)); });
  for_each_device_text(run, [&r](const char* name, std::string& v) {
    if (has_field(r, name)) v = r.get_text(name);
  });
  decode_machine(r, run);
  const std::string hosts = r.get_text("hosts");
  for (std::size_t start = 0; start < hosts.size();) {
    const std::size_t end = std::min(hosts.find(',', start), hosts.size());
    run.hosts.push_back(hosts.substr(start, end - start));
    start = end + 1;
  }
  return run;
}

std::vector<Record> encode_run_gpus(const RunAttributes& run, std::int64_t run_id) {
  std::vector<Record> out;
  for (const RunGpu& g : run.gpus) {
    Record r(run_gpus_layout());
    r.set_int("run_id", run_id);
    r.set_int("rank", g.rank);
    r.set_int("device", g.device);
    r.set_text("name", g.name);
    r.set_text("uuid", g.uuid);
    r.set_text("pci_bus_id", g.pci_bus_id);
    r.set_u64("memory_bytes", g.memory_bytes);
    r.set_int("driver_version", g.driver_version);
    r.set_int("runtime_version", g.runtime_version);
    r.set_bool("emulated", g.emulated);
    r.set_text("gpu_sharing", g.gpu_sharing);
    r.set_bool("mps_client", g.mps_client);
    out.push_back(std::move(r));
  }
  return out;
}

RunGpu decode_run_gpu(const Record& r) {
  RunGpu g;
  g.rank = static_cast<int>(r.get_int("rank"));
  g.device = static_cast<int>(r.get_int("device"));
  g.name = r.get_text("name");
  g.uuid = r.get_text("uuid");
  g.pci_bus_id = r.get_text("pci_bus_id");
  g.memory_bytes = r.get_u64("memory_bytes");
  g.driver_version = static_cast<int>(r.get_int("driver_version"));
  g.runtime_version = static_cast<int>(r.get_int("runtime_version"));
  g.emulated = r.get_bool("emulated");
  if (has_field(r, "gpu_sharing")) {  // version 5
    g.gpu_sharing = r.get_text("gpu_sharing");
    g.mps_client = r.get_bool("mps_client");
  }
  return g;
}

}  // namespace collscope::results
