// A small driver for the Python tests of results files:
//   results_tool write FILE PROGRAM FIRST COUNT   append COUNT collective, COUNT pingpong and
//                                                  COUNT layer sample rows from index FIRST,
//                                                  as one run
//   results_tool forever FILE FIRST               append rows until killed, printing after
//                                                  each "done <index>" (all three tables)
//   results_tool append-layer FILE JSONL          append each line of JSONL (a layer binary's
//                                                  -J output) as a layer row, as one run
//   results_tool dump FILE                        the file as one JSON document
//   results_tool check FILE                       every row equals its sample; prints counts
// Errors: one line on stderr, exit 2 (usage) or 3 (runtime), as the binaries do.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "collscope/errors.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/results/results_reader.hpp"
#include "sample_rows.hpp"

namespace {

using namespace collscope;
using namespace collscope::results;
using nlohmann::json;

RunAttributes run_of(const std::string& program, int argc, char** argv) {
  RunAttributes a = local_run_attributes(argc, argv);
  a.program = program;
  // Version 5's machine and libraries, made up so that every column carries a value.
  a.machine.host_cores = 2;
  a.machine.oversubscribed = program == "pingpong";
  a.machine.load_avg_1m = 0.75;
  a.machine.cpu_governor = "performance";
  a.machine.busy_processes = "vm: cc1plus[4242]";
  a.machine.warnings = {"4 ranks on vm's 2 cores (oversubscribed)", "processes outside the job were running"};
  a.mpi_cuda_aware = "no";
  a.ucx_memory_types = "host";
  return a;
}

int write(const std::string& file, const std::string& program, std::int64_t first, std::int64_t count,
          int argc, char** argv) {
  ResultsFile f = ResultsFile::open_for_append(file, run_of(program, argc, argv));
  for (std::int64_t i = first; i < first + count; ++i) {
    f.append_collective(testing::sample_collective(i));
    f.append_pingpong(testing::sample_pingpong(i));
    f.append_layer(testing::sample_layer(i));
  }
  f.close();
  std::cout << "run " << f.run_id() << std::endl;
  return 0;
}

[[noreturn]] void forever(const std::string& file, std::int64_t first, int argc, char** argv) {
  ResultsFile f = ResultsFile::open_for_append(file, run_of("forever", argc, argv));
  for (std::int64_t i = first;; ++i) {
    f.append_collective(testing::sample_collective(i));
    f.append_pingpong(testing::sample_pingpong(i));
    f.append_layer(testing::sample_layer(i));
    std::cout << "done " << i << std::endl;
  }
}

int append_layer(const std::string& file, const std::string& jsonl, int argc, char** argv) {
  std::ifstream in(jsonl);
  if (!in) throw UsageError("cannot read '" + jsonl + "'");
  ResultsFile f = ResultsFile::open_for_append(file, run_of("append-layer", argc, argv));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) f.append_layer(json(nlohmann::ordered_json::parse(line)));
  f.close();
  std::cout << "layer rows " << n << std::endl;
  return 0;
}

json run_json(const StoredRun& r, int schema_version) {
  const RunAttributes& a = r.attributes;
  json j = {{"run_id", r.run_id},          {"run_uuid", a.run_uuid},
          {"program", a.program},        {"suite_version", a.suite_version},
          {"git_revision", a.git_revision}, {"command_line", a.command_line},
          {"start_utc", a.start_utc},    {"hosts", a.hosts},
          {"world_size", a.world_size},  {"nnodes", a.nnodes},
          {"ranks_per_node", a.ranks_per_node}, {"mpi_library", a.mpi_library},
          {"mpi_version", a.mpi_version}, {"ucx_version", a.ucx_version},
          {"nccl_version", a.nccl_version}, {"cuda_version", a.cuda_version},
          {"slurm_job_id", a.slurm_job_id}, {"slurm_array_job_id", a.slurm_array_job_id},
          {"slurm_array_task_id", a.slurm_array_task_id}, {"slurm_nodelist", a.slurm_nodelist}};
  if (schema_version >= 2) {  // version 2's columns
    j["device_runtime"] = a.device_runtime;
    j["nccl_runtime_version"] = a.nccl_runtime_version;
  }
  if (schema_version >= 5) {  // version 5's
    const MachineState& m = a.machine;
    std::string warnings;
    for (const std::string& w : m.warnings) warnings += (warnings.empty() ? "" : "\n") + w;
    j.update({{"host_cores", m.host_cores}, {"oversubscribed", m.oversubscribed},
              {"load_avg_1m", m.load_avg_1m}, {"cpu_governor", m.cpu_governor},
              {"busy_processes", m.busy_processes}, {"machine_warnings", warnings},
              {"mpi_cuda_aware", a.mpi_cuda_aware}, {"ucx_memory_types", a.ucx_memory_types}});
  }
  return j;
}

json rows_json(const std::vector<StoredRow>& rows) {
  json out = json::array();
  for (const StoredRow& r : rows) out.push_back({{"run_id", r.run_id}, {"fields", r.fields}});
  return out;
}

int dump(const std::string& file) {
  const ResultsContents c = read_results(file);
  json runs = json::array();
  for (const StoredRun& r : c.runs) runs.push_back(run_json(r, c.schema_version));
  std::cout << json{{"schema_version", c.schema_version}, {"created_by", c.created_by},
                    {"runs", runs}, {"collective", rows_json(c.collective)},
                    {"pingpong", rows_json(c.pingpong)}, {"layer", rows_json(c.layer)}}
                   .dump()
            << std::endl;
  return 0;
}

// Every row must be exactly the sample it was made from.
int check(const std::string& file) {
  const ResultsContents c = read_results(file);
  int bad = 0;
  for (const StoredRow& r : c.collective)
    if (r.fields != testing::sample_collective(testing::sample_index(r.fields))) ++bad;
  for (const StoredRow& r : c.pingpong)
    if (r.fields != testing::sample_pingpong(testing::sample_index(r.fields))) ++bad;
  for (const StoredRow& r : c.layer)
    if (r.fields != testing::sample_layer(testing::sample_layer_index(r.fields))) ++bad;
  for (const auto* rows : {&c.collective, &c.pingpong, &c.layer})
    for (const StoredRow& r : *rows)
      if (r.run_id < 0 || r.run_id >= static_cast<std::int64_t>(c.runs.size())) ++bad;
  std::cout << "runs " << c.runs.size() << " collective " << c.collective.size() << " pingpong "
            << c.pingpong.size() << " layer " << c.layer.size() << " bad " << bad << std::endl;
  return bad ? 1 : 0;
}

int run(int argc, char** argv) {
  const std::string cmd = argc > 2 ? argv[1] : "";
  if (cmd == "write" && argc == 6) return write(argv[2], argv[3], std::atoll(argv[4]), std::atoll(argv[5]), argc, argv);
  if (cmd == "forever" && argc == 4) forever(argv[2], std::atoll(argv[3]), argc, argv);
  if (cmd == "append-layer" && argc == 4) return append_layer(argv[2], argv[3], argc, argv);
  if (cmd == "dump" && argc == 3) return dump(argv[2]);
  if (cmd == "check" && argc == 3) return check(argv[2]);
  throw UsageError("usage: results_tool write|forever|append-layer|dump|check FILE ...");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const collscope::UsageError& e) {
    std::cerr << "results_tool: error: " << e.what() << std::endl;
    return collscope::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "results_tool: error: " << e.what() << std::endl;
    return collscope::kExitRuntime;
  }
}
