#include "schema.hpp"

#include <iterator>

namespace collscope::results {
namespace {

using M = Missing;

// The layer row's closed-form figure, as columns, in versions 2 and 1 (layer.cpp).
constexpr const char* kLayerFigureColumns[] = {
    "textbook_source", "textbook_formula", "textbook_elements", "textbook_bytes",
    "textbook_explanation", "textbook_exact_sent_bytes", "textbook_exact_over_formula"};
constexpr const char* kLayerFigureColumnsV1[] = {
    "seed_source", "seed_formula", "seed_elements", "seed_bytes",
    "seed_explanation", "seed_exact_sent_bytes", "seed_exact_over_seed"};

Layout rows_layout(const std::vector<ScalarSpec>& scalars, const std::vector<PairSpec>& pairs,
                   const std::vector<TextListSpec>& lists, const std::vector<RankGroupSpec>& groups,
                   const std::vector<PoolSpec>& pools, const std::vector<std::string>& children) {
  std::vector<Field> f{{"run_id", Kind::i64}};
  for (const ScalarSpec& s : scalars) f.push_back({s.key, s.kind, s.text_size});
  for (const PairSpec& p : pairs) {
    f.push_back({std::string(p.key) + "_a", Kind::i32});
    f.push_back({std::string(p.key) + "_b", Kind::i32});
  }
  for (const TextListSpec& l : lists) f.push_back({l.key, Kind::text, l.text_size});
  for (const RankGroupSpec& g : groups) f.push_back({g.known, Kind::boolean});
  f.push_back({"ranks_offset", Kind::i64});
  f.push_back({"ranks_count", Kind::i64});
  for (const PoolSpec& p : pools) {
    f.push_back({std::string(p.key) + "_offset", Kind::i64});
    f.push_back({std::string(p.key) + "_count", Kind::i64});
  }
  for (const std::string& c : children) {
    f.push_back({c + "_offset", Kind::i64});
    f.push_back({c + "_count", Kind::i64});
  }
  return Layout(std::move(f));
}

Layout ranks_layout(const std::vector<RankGroupSpec>& groups, const char* parent = "row") {
  std::vector<Field> f{{parent, Kind::i64}, {"rank", Kind::i32}};
  for (const RankGroupSpec& g : groups)
    for (const RankColumn& c : g.columns) f.push_back({c.column, g.kind});
  return Layout(std::move(f));
}

TableSpec make_table(std::string name, std::vector<ScalarSpec> scalars, std::vector<PairSpec> pairs,
                     std::vector<TextListSpec> lists, std::vector<RankGroupSpec> groups,
                     std::vector<PoolSpec> pools, std::vector<std::string> children = {}) {
  Layout rows = rows_layout(scalars, pairs, lists, groups, pools, children);
  Layout ranks = ranks_layout(groups);
  return TableSpec{std::move(name), std::move(scalars), std::move(pairs), std::move(lists),
                   std::move(groups), std::move(pools), 64, 1024, std::move(rows), std::move(ranks),
                   std::move(children)};
}

// A child table's layout: the parent's index, its scalars, then its rank groups' known
// flags and ranks_offset / ranks_count when it has per-rank records.
Layout child_layout(const std::vector<ScalarSpec>& scalars, const std::vector<RankGroupSpec>& groups) {
  std::vector<Field> f{{"row", Kind::i64}};
  for (const ScalarSpec& s : scalars) f.push_back({s.key, s.kind, s.text_size});
  for (const RankGroupSpec& g : groups) f.push_back({g.known, Kind::boolean});
  if (!groups.empty()) {
    f.push_back({"ranks_offset", Kind::i64});
    f.push_back({"ranks_count", Kind::i64});
  }
  return Layout(std::move(f));
}

// Per-rank volumes, as both tables report them.
RankGroupSpec measured() {
  return {"measured_known", Kind::u64,
          {{"sent_bytes", "sent_bytes"}, {"recv_bytes", "recv_bytes"},
           {"sent_msgs", "sent_msgs"}, {"recv_msgs", "recv_msgs"}}};
}

RankGroupSpec theory() {
  return {"theory_known", Kind::u64,
          {{"theory_sent_bytes", "theory_sent_bytes"}, {"theory_recv_bytes", "theory_recv_bytes"},
           {"theory_sent_msgs", "theory_sent_msgs"}, {"theory_recv_msgs", "theory_recv_msgs"}}};
}

RankGroupSpec nodes() { return {"nodes_known", Kind::i32, {{"node_of_rank", "node"}}, true}; }

// Version 5, every timed table: the spread of the iteration times (quartiles, relative
// interquartile range, whether it makes the row noisy against its threshold), the sweep
// round the row belongs to, and how its ranks shared their GPUs.
void add_spread_columns(std::vector<ScalarSpec>& s) {
  s.insert(s.end(), {{"time_us_p25", Kind::f64}, {"time_us_p75", Kind::f64},
                     {"time_spread", Kind::f64, 0, M::null}, {"noise_threshold", Kind::f64},
                     {"noisy", Kind::boolean}, {"round", Kind::i32}, {"gpu_sharing", Kind::text, 16}});
}

}  // namespace

namespace {

// The collective table of `version`: version 2 renamed the closed form's columns and added
// the parameters that shape a row (segment, data seed, scratch limit), the theory's
// traffic matrix with its intra- and inter-node split, and the device columns (path,
// timing mode, what a vendor ran, the device paths' copies with their theory). Version 3
// added how the host waited (`wait`) and the bytes the ipc path reduced in a peer's
// memory instead of copying them. Version 4 added how the ranks' times were combined
// (`ranks`), where the measured volume comes from (the executor's counter or the
// MPI library's own count), its second witness, and for vendor rows the hand-written
// algorithm their traffic identifies.
TableSpec make_collective_table(int version) {
  const bool v1 = version == 1;
  const bool v3 = version >= 3;
  std::vector<ScalarSpec> scalars{
      {"collective", Kind::text, 32}, {"algorithm", Kind::text, 64},
      {"transport", Kind::text, 16}, {"memory", Kind::text, 16}, {"dtype", Kind::text, 16},
      {"op", Kind::text, 16}, {"root", Kind::i32}, {"nranks", Kind::i32},
      {"count", Kind::u64}, {"bytes", Kind::u64}, {"in_place", Kind::boolean},
      {"split", Kind::text, 256, M::absent}, {"iters", Kind::i32}, {"warmup", Kind::i32},
      {"time_us", Kind::f64}, {"time_us_min", Kind::f64}, {"time_us_max", Kind::f64},
      {"algbw_gbps", Kind::f64}, {"busbw_gbps", Kind::f64}, {"volume", Kind::text, 16},
      {"wrong", Kind::i64, 0, M::null}, {"first_bad_rank", Kind::i32},
      {"first_bad_index", Kind::i64}, {"predicted_us", Kind::f64, 0, M::null},
      {"model", Kind::text, 256},
      {v1 ? "seed_sent_bytes" : "textbook_sent_bytes", Kind::f64, 0, M::null},
      {v1 ? "seed_formula" : "textbook_formula", Kind::text, 128}};
  if (!v1)
    scalars.insert(scalars.end(), {{"segment_bytes", Kind::u64}, {"seed", Kind::u64},
                                   {"max_scratch_bytes", Kind::u64}, {"path", Kind::text, 16},
                                   {"timing", Kind::text, 8}, {"graph_calls", Kind::i32},
                                   {"blocking", Kind::boolean}, {"vendor_call", Kind::text, 64},
                                   {"nccl_version", Kind::text, 32, M::absent}});
  if (v3) scalars.push_back({"wait", Kind::text, 8});
  if (version >= 4)
    scalars.insert(scalars.end(), {{"ranks", Kind::text, 8}, {"volume_source", Kind::text, 128}, {"volume_witness", Kind::text, 32},
                                   {"vendor_algorithm", Kind::text, 256},
                                   {"vendor_algorithm_closest", Kind::text, 64},
                                   {"vendor_algorithm_off_bytes", Kind::i64, 0, M::null},
                                   {"vendor_algorithm_off_msgs", Kind::i64, 0, M::null}});
  if (version >= 5) {
    add_spread_columns(scalars);
    scalars.push_back({"mpi_coll_params", Kind::text, 512});
  }
  std::vector<RankGroupSpec> groups{
      measured(), theory(),
      {"traffic_known", Kind::u64,
       {{"sent_intra_node_bytes", "sent_intra_node_bytes"},
        {"sent_inter_node_bytes", "sent_inter_node_bytes"}}}};
  if (!v1) {
    groups.push_back({"theory_traffic_known", Kind::u64,
                      {{"theory_sent_intra_node_bytes", "theory_sent_intra_node_bytes"},
                       {"theory_sent_inter_node_bytes", "theory_sent_inter_node_bytes"}}});
    RankGroupSpec copies{"copies_known", Kind::u64,
                         {{"copy_to_host_bytes", "copy_to_host_bytes"},
                          {"copy_to_device_bytes", "copy_to_device_bytes"},
                          {"copy_from_peer_bytes", "copy_from_peer_bytes"}}};
    RankGroupSpec theory_copies{"theory_copies_known", Kind::u64,
                                {{"theory_copy_to_host_bytes", "theory_copy_to_host_bytes"},
                                 {"theory_copy_to_device_bytes", "theory_copy_to_device_bytes"},
                                 {"theory_copy_from_peer_bytes", "theory_copy_from_peer_bytes"}}};
    if (v3) {
      copies.columns.push_back({"reduced_from_peer_bytes", "reduced_from_peer_bytes"});
      theory_copies.columns.push_back({"theory_reduced_from_peer_bytes", "theory_reduced_from_peer_bytes"});
    }
    groups.push_back(std::move(copies));
    groups.push_back(std::move(theory_copies));
  }
  groups.push_back(nodes());
  std::vector<PoolSpec> pools{{"times_us", Kind::f64, false, M::never},
                              {"traffic_bytes", Kind::u64, false, M::null},
                              {"splits", Kind::u64, false, M::absent}};
  if (!v1) pools.push_back({"theory_traffic_bytes", Kind::u64, false, M::null});
  return make_table("collective", std::move(scalars), {}, {{"transport_env", 512}},
                    std::move(groups), std::move(pools));
}

// Pingpong's table, the same in versions 1 to 4; version 5 adds the spread columns.
TableSpec make_pingpong_table(int version) {
  std::vector<ScalarSpec> scalars{
      {"collective", Kind::text, 32}, {"algorithm", Kind::text, 64},
      {"transport", Kind::text, 16}, {"memory", Kind::text, 16}, {"nranks", Kind::i32},
      {"bytes", Kind::u64}, {"iters", Kind::i32}, {"warmup", Kind::i32},
      {"pairs", Kind::text, 8, M::absent}, {"time_us", Kind::f64}, {"time_us_min", Kind::f64},
      {"time_us_max", Kind::f64}, {"slowest_rank", Kind::i32, 0, M::absent},
      {"algbw_gbps", Kind::f64}, {"busbw_gbps", Kind::f64}, {"volume", Kind::text, 16},
      {"wrong", Kind::i64, 0, M::null}};
  if (version >= 5) add_spread_columns(scalars);
  return make_table(
      "pingpong", std::move(scalars),
      {{"pair", M::null}, {"slowest_pair", M::absent}, {"first_bad_pair", M::null}},
      {{"transport_env", 512}},
      {measured(), theory(), nodes()},
      {{"times_us", Kind::f64, false, M::absent},
       {"traffic_bytes", Kind::u64, false, M::never},
       {"latency_us_matrix", Kind::f64, true, M::absent},
       {"bw_gbps_matrix", Kind::f64, true, M::absent}});
}

// One table per readable version (1 .. kSchemaVersion), made once.
template <class Make>
const TableSpec& of_version(int version, Make make) {
  static const std::vector<TableSpec> all = [&] {
    std::vector<TableSpec> v;
    for (int i = 1; i <= kSchemaVersion; ++i) v.push_back(make(i));
    return v;
  }();
  return all.at(static_cast<std::size_t>(version - 1));
}

}  // namespace

// The collective table: every field of bench::to_json(Measurement).
const TableSpec& collective_table(int version) {
  return of_version(version, [](int v) { return make_collective_table(v); });
}

// The pingpong table: every field of pingpong's JSON record (bench/pingpong/record.cpp).
const TableSpec& pingpong_table(int version) {
  return of_version(version, [](int v) { return make_pingpong_table(v); });
}

const std::vector<const TableSpec*>& row_tables(int version) {
  static const std::vector<std::vector<const TableSpec*>> all = [] {
    std::vector<std::vector<const TableSpec*>> v;
    for (int i = 1; i <= kSchemaVersion; ++i) v.push_back({&collective_table(i), &pingpong_table(i)});
    return v;
  }();
  return all.at(static_cast<std::size_t>(version - 1));
}

// ---- /layer: the layer pipelines' records (layers/framework/record.cpp) ----------------------

namespace {

RankGroupSpec measured_bytes() {
  return {"measured_known", Kind::u64, {{"sent_bytes", "sent_bytes"}, {"recv_bytes", "recv_bytes"}}};
}

RankGroupSpec theory_bytes() {
  return {"theory_known", Kind::u64,
          {{"theory_sent_bytes", "theory_sent_bytes"}, {"theory_recv_bytes", "theory_recv_bytes"}}};
}

// Version 4 adds where a layer ran and how its time splits: the memory, the
// collectives' path, the host's wait, the device runtime, the GEMM, the GPU, --overlap;
// the collectives' exposed and hidden time; the GEMMs' time and rate.
std::vector<ScalarSpec> layer_scalars(int v) {
  const char* const* f = v == 1 ? kLayerFigureColumnsV1 : kLayerFigureColumns;
  std::vector<ScalarSpec> s{{"layer", Kind::text, 32}, {"program", Kind::text, 128},
                            {"scheme", Kind::text, 32}, {"transport", Kind::text, 16}};
  if (v >= 4)
    s.insert(s.end(), {{"memory", Kind::text, 16}, {"path", Kind::text, 16},
                       {"wait", Kind::text, 16}, {"device_runtime", Kind::text, 16},
                       {"gemm", Kind::text, 64}, {"gpu", Kind::text, 128},
                       {"overlap", Kind::boolean}});
  s.insert(s.end(),
           {{"nranks", Kind::i32}, {"tp", Kind::i32}, {"cp", Kind::i32}, {"pp", Kind::i32},
            {"dp", Kind::i32}, {"ep", Kind::i32}, {"etp", Kind::i32}, {"sp", Kind::boolean},
            {"dtype", Kind::text, 16}, {"passes", Kind::text, 16}, {"shape", Kind::text, 512},
            {"seed", Kind::u64}, {"algorithms", Kind::text, 512}, {"iters", Kind::i32},
            {"warmup", Kind::i32}, {"time_us", Kind::f64}, {"time_us_min", Kind::f64},
            {"time_us_max", Kind::f64}, {"compute_us", Kind::f64}, {"comm_us", Kind::f64}});
  if (v >= 4)
    s.insert(s.end(), {{"exposed_comm_us", Kind::f64}, {"hidden_comm_us", Kind::f64},
                       {"gemm_us", Kind::f64}, {"gemm_flop", Kind::f64},
                       {"gemm_tflops", Kind::f64, 0, M::null}});
  s.insert(s.end(),
           {{"pass", Kind::boolean}, {"verified", Kind::boolean},
            {"rel_l2_error", Kind::f64, 0, M::null}, {"max_abs_error", Kind::f64, 0, M::null},
            {"tolerance", Kind::f64, 0, M::null}, {"volume", Kind::text, 16},
            {"volume_error", Kind::text, 1024}, {f[0], Kind::text, 256}, {f[1], Kind::text, 256},
            {f[2], Kind::f64}, {f[3], Kind::f64}, {f[4], Kind::text, 2048},
            {f[5], Kind::i64, 0, M::null}, {f[6], Kind::f64, 0, M::null}});
  if (v >= 5) add_spread_columns(s);
  return s;
}

}  // namespace

// The layer rows: every scalar of the record; `shape` and `algorithms` (small objects) as
// their JSON text, `textbook_figure`'s fields as textbook_* (version 1: `seed_figure`,
// seed_*); `collectives` and `checks` are the child tables sites and checks.
const TableSpec& layer_table(int version) {
  return of_version(version, [](int v) {
    TableSpec l = make_table(
        "layer", layer_scalars(v),
        {}, {{"transport_env", 512}}, {measured_bytes(), theory_bytes()},
        {{"times_us", Kind::f64, false, M::never}}, {"sites", "checks"});
    l.row_chunk = kLayerRowChunk;  // a layer binary writes one row: small chunks, small files
    l.rank_chunk = kLayerRankChunk;
    return l;
  });
}

std::vector<std::pair<std::string, std::string>> version1_renames(std::string_view group) {
  if (group == "collective")
    return {{"seed_sent_bytes", "textbook_sent_bytes"}, {"seed_formula", "textbook_formula"}};
  std::vector<std::pair<std::string, std::string>> out;
  if (group == "layer")
    for (std::size_t i = 0; i < std::size(kLayerFigureColumns); ++i)
      out.emplace_back(kLayerFigureColumnsV1[i], kLayerFigureColumns[i]);
  return out;
}

nlohmann::json rename_version1_fields(nlohmann::json row) {
  for (const auto& [old_key, new_key] : version1_renames("collective")) {
    const auto it = row.find(old_key);
    if (it == row.end()) continue;
    row[new_key] = *it;
    row.erase(old_key);
  }
  return row;
}

// One record per collective call site of a layer row (`collectives` in the record);
// version 4 adds the call's time on its stream and the part of it no compute covered.
const std::vector<ScalarSpec>& layer_site_scalars(int version) {
  static const std::vector<ScalarSpec> s{
      {"site", Kind::text, 256},       {"collective", Kind::text, 32},
      {"algorithm", Kind::text, 64},   {"group", Kind::text, 16},
      {"group_size", Kind::i32},       {"count", Kind::u64},
      {"dtype", Kind::text, 16},       {"op", Kind::text, 16, M::absent},
      {"bytes", Kind::u64},
      {"closed_form", Kind::text, 128}, {"closed_form_sent_bytes", Kind::f64, 0, M::null},
      {"volume", Kind::text, 16}};
  static const std::vector<ScalarSpec> v4 = [] {
    std::vector<ScalarSpec> t = s;
    t.push_back({"time_us", Kind::f64, 0, M::null});
    t.push_back({"exposed_us", Kind::f64, 0, M::null});
    return t;
  }();
  return version >= 4 ? v4 : s;
}

const std::vector<RankGroupSpec>& layer_site_groups() {
  static const std::vector<RankGroupSpec> g{measured_bytes(), theory_bytes()};
  return g;
}

// One record per verified tensor of a layer row (`checks` in the record).
const std::vector<ScalarSpec>& layer_check_scalars() {
  static const std::vector<ScalarSpec> s{
      {"tensor", Kind::text, 64},           {"rel_l2_error", Kind::f64, 0, M::null},
      {"max_abs_error", Kind::f64, 0, M::null}, {"tolerance", Kind::f64},
      {"max_abs_tolerance", Kind::f64, 0, M::null}, {"reduction_length", Kind::u64},
      {"finite", Kind::boolean},            {"pass", Kind::boolean}};
  return s;
}

const Layout& layer_sites_layout(int version) {
  static const Layout before4 = child_layout(layer_site_scalars(3), layer_site_groups());
  static const Layout l = child_layout(layer_site_scalars(4), layer_site_groups());
  return version >= 4 ? l : before4;
}

const Layout& layer_site_ranks_layout() {
  static const Layout l = ranks_layout(layer_site_groups(), "site");
  return l;
}

const Layout& layer_checks_layout() {
  static const Layout l = child_layout(layer_check_scalars(), {});
  return l;
}

namespace {

Layout make_runs_layout(int version) {
  std::vector<Field> f({{"run_id", Kind::i64},
                        {"run_uuid", Kind::text, 40},
                        {"program", Kind::text, 128},
                        {"suite_version", Kind::text, 32},
                        {"git_revision", Kind::text, 64},
                        {"command_line", Kind::text, 8192},
                        {"start_utc", Kind::text, 32},
                        {"hosts", Kind::text, 16384},
                        {"world_size", Kind::i32},
                        {"nnodes", Kind::i32},
                        {"ranks_per_node", Kind::i32},
                        {"mpi_library", Kind::text, 512},
                        {"mpi_version", Kind::text, 16},
                        {"ucx_version", Kind::text, 32},
                        {"nccl_version", Kind::text, 32},
                        {"cuda_version", Kind::text, 32},
                        {"slurm_job_id", Kind::text, 32},
                        {"slurm_array_job_id", Kind::text, 32},
                        {"slurm_array_task_id", Kind::text, 32},
                        {"slurm_nodelist", Kind::text, 4096}});
  if (version >= 2)
    f.insert(f.end(), {{"device_runtime", Kind::text, 16}, {"nccl_runtime_version", Kind::text, 32}});
  if (version >= 5)
    f.insert(f.end(), {{"host_cores", Kind::i32},
                       {"oversubscribed", Kind::boolean},
                       {"load_avg_1m", Kind::f64},
                       {"cpu_governor", Kind::text, 32},
                       {"busy_processes", Kind::text, 1024},
                       {"machine_warnings", Kind::text, 2048},
                       {"mpi_cuda_aware", Kind::text, 8},
                       {"ucx_memory_types", Kind::text, 64}});
  return Layout(std::move(f));
}

Layout make_run_gpus_layout(int version) {
  std::vector<Field> f({{"run_id", Kind::i64},
                        {"rank", Kind::i32},
                        {"device", Kind::i32},
                        {"name", Kind::text, 96},
                        {"uuid", Kind::text, 48},
                        {"pci_bus_id", Kind::text, 24},
                        {"memory_bytes", Kind::u64},
                        {"driver_version", Kind::i32},
                        {"runtime_version", Kind::i32},
                        {"emulated", Kind::boolean}});
  if (version >= 5) f.insert(f.end(), {{"gpu_sharing", Kind::text, 16}, {"mps_client", Kind::boolean}});
  return Layout(std::move(f));
}

}  // namespace

// One row per run (per open_for_append): the run's attributes. Version 2 added which
// device runtime ran and the NCCL library found at run time; versions 3 and 4 changed
// nothing; version 5 added the machine under the run and what the MPI library and UCX
// take (device pointers, memory types).
const Layout& runs_layout(int version) {
  static const std::vector<Layout> all = [] {
    std::vector<Layout> v;
    for (int i = 1; i <= kSchemaVersion; ++i) v.push_back(make_runs_layout(i));
    return v;
  }();
  return all.at(static_cast<std::size_t>(version - 1));
}

// Version 2: one row per (run, rank) of a device memory run; version 5 added how the
// rank shared its GPU.
const Layout& run_gpus_layout(int version) {
  static const std::vector<Layout> all = [] {
    std::vector<Layout> v;
    for (int i = 1; i <= kSchemaVersion; ++i) v.push_back(make_run_gpus_layout(i));
    return v;
  }();
  return all.at(static_cast<std::size_t>(version - 1));
}

}  // namespace collscope::results
