// The machine under a run, at its start: the cores each host gives the job, whether the
// job oversubscribes them, the load, the CPU frequency governor and the processes outside
// the job that were running (results/SCHEMA.md, /runs; docs/timing.md says which of
// them make a figure untrustworthy and why).
#include <dirent.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "collscope/results/run_attributes.hpp"

namespace collscope::results {
namespace {

constexpr std::size_t kBusyText = 512;  // one host's list of busy processes, as gathered
constexpr int kBusyListed = 5;          // processes named per host (the rest counted)

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Online CPUs, fewer when a cgroup (v2) quota caps the container: cpu.max "quota period".
int host_cores() {
  int cores = get_nprocs();
  std::istringstream max(first_line("/sys/fs/cgroup/cpu.max"));
  std::string quota;
  long period = 0;
  if (max >> quota >> period && quota != "max" && period > 0) {
    const long q = std::atol(quota.c_str());
    if (q > 0) cores = std::min(cores, static_cast<int>(std::max(1L, (q + period - 1) / period)));
  }
  return std::max(cores, 1);
}

struct ProcStat {
  std::string name;
  char state = '?';
  long ppid = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
bool read_stat(long pid, ProcStat& out) {
  const std::string text = first_line("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > text.size()) return false;
  out.name = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 2));
  return static_cast<bool>(rest >> out.state >> out.ppid);
}

std::map<long, ProcStat> all_processes() {
  std::map<long, ProcStat> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    ProcStat s;
    if (*end == '\0' && pid > 0 && read_stat(pid, s)) out[pid] = s;
  }
  closedir(d);
  return out;
}

// Running processes that are neither the job's ranks nor their ancestors (mpirun, orted,
// the shell): "name[pid] ..." (at most kBusyListed, then how many more).
std::string busy_outside(const std::set<long>& job) {
  const std::map<long, ProcStat> procs = all_processes();
  std::set<long> mine = job;
  for (long pid : job)
    for (auto it = procs.find(pid); it != procs.end() && it->second.ppid > 1; it = procs.find(it->second.ppid))
      mine.insert(it->second.ppid);
  std::string text;
  int busy = 0;
  for (const auto& [pid, s] : procs) {
    if (s.state != 'R' || mine.count(pid)) continue;
    if (++busy <= kBusyListed) text += (text.empty() ? "" : " ") + s.name + "[" + std::to_string(pid) + "]";
  }
  if (busy > kBusyListed) text += " and " + std::to_string(busy - kBusyListed) + " more";
  return text;
}

// What one host's first rank reports to rank 0.
struct HostReport {
  char host[MPI_MAX_PROCESSOR_NAME];
  char busy[kBusyText];
  int cores = 0, ranks = 0;
  double load = NAN;
};

bool frequency_scaled(const std::string& governor) {
  return governor == "powersave" || governor == "ondemand" || governor == "conservative" ||
         governor == "schedutil";
}

std::string fmt_load(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

void add_warnings(MachineState& m, const std::vector<HostReport>& hosts) {
  for (const HostReport& h : hosts) {
    if (h.ranks > h.cores)
      m.warnings.push_back(std::to_string(h.ranks) + " ranks on " + h.host + "'s " + std::to_string(h.cores) +
                           " cores (oversubscribed): the times measure the scheduler as much as the calls");
    if (h.load > h.cores)
      m.warnings.push_back("the load average on " + std::string(h.host) + " (" + fmt_load(h.load) +
                           " over the last minute) exceeds its " + std::to_string(h.cores) +
                           " cores: other work competes with the run");
    if (h.busy[0])
      m.warnings.push_back("processes outside the job were running on " + std::string(h.host) + " at the start (" +
                           h.busy + "): they take cores from the ranks");
  }
  if (frequency_scaled(m.cpu_governor))
    m.warnings.push_back("the CPU frequency governor is '" + m.cpu_governor +
                         "': clock changes during the run shift its times");
}

}  // namespace

MachineState collect_machine_state(MPI_Comm comm) {
  int rank = 0, n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  struct Me {
    char host[MPI_MAX_PROCESSOR_NAME];
    long pid;
  } me{};
  int len = 0;
  MPI_Get_processor_name(me.host, &len);
  me.pid = static_cast<long>(getpid());
  std::vector<Me> all(static_cast<std::size_t>(n));
  MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm);

  // The first rank of each host looks at its host.
  HostReport report{};
  std::set<long> job;
  int first = -1;
  for (int r = 0; r < n; ++r)
    if (std::strcmp(all[r].host, me.host) == 0) {
      job.insert(all[r].pid);
      if (first < 0) first = r;
      ++report.ranks;
    }
  if (first == rank) {
    std::memcpy(report.host, me.host, sizeof report.host);
    std::strncpy(report.busy, busy_outside(job).c_str(), sizeof report.busy - 1);
    report.cores = host_cores();
    double load[1] = {NAN};
    if (getloadavg(load, 1) == 1) report.load = load[0];
  }
  std::vector<HostReport> reports(rank == 0 ? static_cast<std::size_t>(n) : 0);
  MPI_Gather(&report, sizeof report, MPI_BYTE, reports.data(), sizeof report, MPI_BYTE, 0, comm);
  MachineState m;
  if (rank != 0) return m;
  std::erase_if(reports, [](const HostReport& h) { return h.cores == 0; });  // not a host's first rank
  m.cpu_governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  for (const HostReport& h : reports) {
    m.host_cores = m.host_cores == 0 ? h.cores : std::min(m.host_cores, h.cores);
    m.oversubscribed = m.oversubscribed || h.ranks > h.cores;
    if (!std::isnan(h.load)) m.load_avg_1m = std::isnan(m.load_avg_1m) ? h.load : std::max(m.load_avg_1m, h.load);
    if (h.busy[0]) m.busy_processes += (m.busy_processes.empty() ? "" : "; ") + std::string(h.host) + ": " + h.busy;
  }
  add_warnings(m, reports);
  return m;
}

}  // namespace collscope::results
