// collscope_gemm_rate: the GPU's GEMM rate through the layers' engine, the yardstick of
// the layers' own GEMM rate (each layer record's gemm_tflops): C [M, N] = A [M, K] B [K, N]
// row-major, float32 compute, A, B and C stored as --dtype, uniform random data in
// [-1, 1), timed by events on the engine's stream over --reps back-to-back products
// after --warmup untimed ones.
//
//   collscope_gemm_rate                        # 8192^3 bfloat16 on GPU 0 (cuBLAS)
//   collscope_gemm_rate -M 4096 -N 16384 -K 4096 -d float32 --format jsonl
//   COLLSCOPE_DEVICE_EMULATION=1 collscope_gemm_rate -M 64 -N 64 -K 64   # no GPU: OpenBLAS
//
// Exit codes: 0 measured, 2 bad usage or no device (one line), 3 runtime error.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "collscope/bench/options.hpp"
#include "collscope/device/runtime.hpp"
#include "collscope/errors.hpp"
#include "collscope/layers/compute/engine.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/program/mpi_program.hpp"

namespace collscope::layers {
namespace {

struct Options {
  std::int64_t m = 8192, n = 8192, k = 8192;
  std::string dtype = "bfloat16";
  bench::OutputFormat format = bench::OutputFormat::table;
  int reps = 20, warmup = 3;
};

Options parse(int argc, char** argv, bool& help) {
  Options o;
  CLI::App app{"collscope_gemm_rate: the GEMM rate of the layers' engine on GPU 0",
               "collscope_gemm_rate"};
  const std::tuple<const char*, std::int64_t*, const char*> dims[] = {
      {"-M", &o.m, "rows of A and C"}, {"-N", &o.n, "columns of B and C"},
      {"-K", &o.k, "the inner dimension"}};
  for (const auto& [flag, dim, what] : dims)
    app.add_option(flag, *dim, std::string(what) + " (default 8192)");
  app.add_option("-d,--dtype", o.dtype, "float32 or bfloat16 (default)");
  app.add_option("--reps", o.reps, "timed products (default 20)");
  app.add_option("--warmup", o.warmup, "untimed products first (default 3)");
  std::string format = "table";
  app.add_option("--format", format, "table or jsonl");
  app.set_help_flag("-h,--help", "print this help and exit");
  std::string help_text;
  help = !program::parse_command_line(app, argc, argv, help_text);
  if (help) {
    std::cout << help_text;
    return o;
  }
  if (o.m < 1 || o.n < 1 || o.k < 1) throw UsageError("-M, -N and -K must be at least 1");
  if (o.reps < 1) throw UsageError("--reps must be at least 1, got " + std::to_string(o.reps));
  if (o.warmup < 0) throw UsageError("--warmup must be at least 0, got " + std::to_string(o.warmup));
  if (o.dtype == "float") o.dtype = "float32";
  if (o.dtype != "float32" && o.dtype != "bfloat16")
    throw UsageError("--dtype must be float32 or bfloat16, got '" + o.dtype + "'");
  o.format = bench::parse_output_format(format);
  return o;
}

Array random_matrix(Engine& e, std::size_t rows, std::size_t cols, const char* name,
                    DataType dtype) {
  return ops::upload(e, make_full(1, {name}, rows, cols, 1.0f, dtype), dtype);
}

int run(const Options& o) {
  device::Runtime& rt = device::runtime();  // UsageError when there is no device
  rt.select(0);
  std::unique_ptr<Engine> engine = make_device_engine(rt);
  const DataType dtype = o.dtype == "bfloat16" ? DataType::bfloat16 : DataType::float32;
  const auto m = static_cast<std::size_t>(o.m), n = static_cast<std::size_t>(o.n),
             k = static_cast<std::size_t>(o.k);
  double ms = 0;
  {
    const Array a = random_matrix(*engine, m, k, "A", dtype);
    const Array b = random_matrix(*engine, k, n, "B", dtype);
    Array c(*engine, m, n, dtype);
    for (int i = 0; i < o.warmup; ++i) ops::matmul(a, Trans::no, b, Trans::no, c);
    Engine::Event from = engine->create_event(), to = engine->create_event();
    engine->record(from, engine->stream());
    for (int i = 0; i < o.reps; ++i) ops::matmul(a, Trans::no, b, Trans::no, c);
    engine->record(to, engine->stream());
    engine->synchronize();
    ms = engine->elapsed_ms(from, to) / o.reps;
    engine->destroy_event(from);
    engine->destroy_event(to);
  }
  const double tflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                        static_cast<double>(k) / (ms * 1e-3) * 1e-12;
  const device::Info info = rt.info();
  nlohmann::ordered_json j{{"program", "collscope_gemm_rate"}, {"device", info.name},
                           {"emulated", info.emulated}, {"gemm", engine->gemm().name()},
                           {"dtype", o.dtype}, {"m", m}, {"n", n}, {"k", k},
                           {"reps", o.reps}, {"time_us", ms * 1e3}, {"tflops", tflops}};
  if (o.format == bench::OutputFormat::jsonl) std::cout << j.dump() << std::endl;
  else
    std::cout << "# collscope_gemm_rate on " << info.name << " (" << engine->gemm().name()
              << "): C[" << m << "," << n << "] = A[" << m << "," << k << "] B[" << k << ","
              << n << "] " << o.dtype << ", float32 compute\n"
              << "time_us " << ms * 1e3 << "  TFLOP/s " << tflops << std::endl;
  engine->release_all();
  return kExitOk;
}

}  // namespace
}  // namespace collscope::layers

int main(int argc, char** argv) {
  using namespace collscope;
  try {
    bool help = false;
    const layers::Options o = layers::parse(argc, argv, help);
    if (help) return kExitOk;
    return layers::run(o);
  } catch (const UsageError& e) {
    std::cerr << "collscope_gemm_rate: error: " << e.what() << std::endl;
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "collscope_gemm_rate: error: " << e.what() << std::endl;
    return kExitRuntime;
  }
}
