#include "collscope/bench/gbench_flags.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <initializer_list>
#include <regex>
#include <string_view>

#include <unistd.h>

#include "collscope/errors.hpp"

namespace collscope::bench {
namespace {

constexpr std::string_view kPrefix = "--benchmark_";

// One --benchmark_NAME[=VALUE] argument.
struct Flag {
  std::string name;  // "benchmark_format"
  std::string value;
  bool has_value = false;
  std::string text() const { return "--" + name; }
};

Flag split_flag(const std::string& arg) {
  Flag f;
  const std::size_t eq = arg.find('=');
  f.name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  if (eq != std::string::npos) {
    f.value = arg.substr(eq + 1);
    f.has_value = true;
  }
  return f;
}

// The library's reading of a boolean flag's value: "" (no value) is true; one character
// is true unless 0, f, F, n or N; a word is true unless false, no or off (any case).
bool truthy(const Flag& f) {
  if (!f.has_value || f.value.empty()) return true;
  if (f.value.size() == 1) {
    const char c = f.value[0];
    return std::isalnum(static_cast<unsigned char>(c)) && std::strchr("0fFnN", c) == nullptr;
  }
  std::string v = f.value;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v != "false" && v != "no" && v != "off";
}

const std::string& value_of(const Flag& f) {
  if (!f.has_value || f.value.empty())
    throw UsageError(f.text() + " needs a value (" + f.text() + "=...)");
  return f.value;
}

std::string one_of(const Flag& f, std::initializer_list<const char*> allowed) {
  const std::string& v = value_of(f);
  std::string names;
  for (const char* a : allowed) {
    if (v == a) return v;
    names += std::string(names.empty() ? "" : ", ") + a;
  }
  throw UsageError(f.text() + " must be one of " + names + ", got '" + v + "'");
}

int parse_repetitions(const Flag& f) {
  const std::string bad = f.text() + " must be a whole number of at least 1, got '" + f.value + "'";
  const std::string& v = f.has_value ? f.value : std::string();
  const bool digits = !v.empty() && v.size() <= 6 &&
                      std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoi(v) < 1) throw UsageError(bad);
  return std::stoi(v);
}

// The filter's regular expression, without a leading '-' (the library's "not").
std::regex filter_regex(const std::string& filter) {
  const std::string spec = !filter.empty() && filter[0] == '-' ? filter.substr(1) : filter;
  try {
    return std::regex(spec, std::regex_constants::extended);
  } catch (const std::regex_error&) {
    throw UsageError("--benchmark_filter is not a regular expression: '" + filter + "'");
  }
}

// "k=v,k2=v2": what the library's --benchmark_context takes.
void check_context(const Flag& f) {
  const std::string& v = value_of(f);
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t comma = std::min(v.find(',', start), v.size());
    const std::string pair = v.substr(start, comma - start);
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || pair.find('=', eq + 1) != std::string::npos)
      throw UsageError(f.text() + " takes key=value pairs joined by commas, got '" + v + "'");
    start = comma + 1;
  }
}

// The flags that would let the ranks run different iterations or orders, refused.
void refuse_unsafe(const Flag& f) {
  if (f.name == "benchmark_min_time")
    throw UsageError("--benchmark_min_time does not apply: every rank runs -n iterations per "
                     "repetition (a count chosen by time would differ between the ranks)");
  if (f.name == "benchmark_min_warmup_time")
    throw UsageError("--benchmark_min_warmup_time does not apply: -w calls warm each case up "
                     "(a warm-up by time would run a different count on each rank)");
  if (f.name == "benchmark_enable_random_interleaving" && truthy(f))
    throw UsageError("--benchmark_enable_random_interleaving cannot be used: the library "
                     "shuffles in each process apart, and every rank must run the same "
                     "benchmark at the same time (repeat the run in rounds instead, --round)");
  if (f.name == "benchmark_perf_counters")
    throw UsageError("--benchmark_perf_counters is not supported by collscope");
}

void parse_one(const Flag& f, GbenchOptions& o) {
  refuse_unsafe(f);
  const std::string& n = f.name;
  if (n == "benchmark_enable_random_interleaving") return;  // false: the library's default
  if (n == "benchmark_repetitions") o.repetitions = parse_repetitions(f);
  else if (n == "benchmark_format") o.format = one_of(f, {"console", "json", "csv"});
  else if (n == "benchmark_out_format") o.out_format = one_of(f, {"console", "json", "csv"});
  else if (n == "benchmark_out") o.out = value_of(f);
  else if (n == "benchmark_time_unit") o.time_unit = one_of(f, {"ns", "us", "ms", "s"});
  else if (n == "benchmark_filter") {
    o.filter = f.has_value ? f.value : "";
    filter_regex(o.filter);
  } else if (n == "benchmark_list_tests") o.list_tests = truthy(f);
  else if (n == "benchmark_report_aggregates_only" || n == "benchmark_display_aggregates_only")
    o.report_flags.push_back(f.text() + "=" + (truthy(f) ? "true" : "false"));
  else if (n == "benchmark_counters_tabular") o.counters_tabular = truthy(f);
  else if (n == "benchmark_color") o.color = value_of(f) == "auto" ? isatty(STDOUT_FILENO) != 0 : truthy(f);
  else if (n == "benchmark_context") {
    check_context(f);
    o.report_flags.push_back(f.text() + "=" + f.value);
  } else
    throw UsageError("unknown Google Benchmark flag '" + f.text() + "' (collscope takes "
                     "--benchmark_repetitions, _format, _out, _out_format, _filter, "
                     "_list_tests, _time_unit, _report_aggregates_only, "
                     "_display_aggregates_only, _counters_tabular, _color, _context)");
}

}  // namespace

std::vector<const char*> take_gbench_flags(int argc, const char* const* argv,
                                           std::vector<std::string>& flags) {
  std::vector<const char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i > 0 && a.substr(0, kPrefix.size()) == kPrefix) flags.emplace_back(a);
    else rest.push_back(argv[i]);
  }
  return rest;
}

GbenchOptions parse_gbench_flags(const std::vector<std::string>& flags, bool on) {
  GbenchOptions o;
  o.on = on;
  if (!on && !flags.empty())
    throw UsageError(split_flag(flags.front()).text() + " applies to --gbench only");
  for (const std::string& arg : flags) parse_one(split_flag(arg), o);
  return o;
}

std::vector<std::string> gbench_command_line(const GbenchOptions& o, const std::string& argv0,
                                             const std::string& out_path) {
  std::vector<std::string> args{
      argv0,
      "--benchmark_list_tests=" + std::string(o.list_tests ? "true" : "false"),
      "--benchmark_filter=",  // collscope registers only what the filter selects
      "--benchmark_min_warmup_time=0",
      "--benchmark_repetitions=" + std::to_string(o.repetitions),
      "--benchmark_enable_random_interleaving=false",
      "--benchmark_format=" + o.format,
      "--benchmark_out=" + out_path,
      "--benchmark_out_format=" + o.out_format,
      "--benchmark_time_unit=" + o.time_unit,
      "--benchmark_perf_counters=",
      "--benchmark_report_aggregates_only=false",
      "--benchmark_display_aggregates_only=false",
      "--benchmark_counters_tabular=" + std::string(o.counters_tabular ? "true" : "false"),
      "--benchmark_color=" + std::string(o.color ? "true" : "false"),
  };
  args.insert(args.end(), o.report_flags.begin(), o.report_flags.end());  // the last one counts
  return args;
}

bool gbench_filter_selects(const std::string& filter, const std::string& full_name) {
  if (filter.empty() || filter == "all") return true;
  const bool found = std::regex_search(full_name, filter_regex(filter));
  return filter[0] == '-' ? !found : found;
}

}  // namespace collscope::bench
