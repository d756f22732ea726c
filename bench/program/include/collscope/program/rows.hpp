// A program's rows as each is measured, written by rank 0: on stdout as a table line or
// as the row's JSON line (--format), and to the -J file (json_lines.hpp). The benchmark
// harness and pingpong both write through it; each prints its own table and appends to
// its own HDF5 table.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <utility>

#include "collscope/program/json_lines.hpp"

namespace collscope::program {

class RowOutput {
 public:
  // to_stdout false: the rows go to -J only (another reporter owns stdout: --gbench).
  RowOutput(bool table, JsonLines json, bool to_stdout = true)
      : table_(table && to_stdout), to_stdout_(to_stdout), json_(std::move(json)) {}

  bool table() const { return table_; }
  // One row: `print_table_row` on stdout for a table, else `json_line` (unless not to
  // stdout); `json_line` to -J.
  void write(const std::string& json_line, const std::function<void(std::ostream&)>& print_table_row);
  // The -J file closed and renamed; false (one line on stderr) if it cannot be.
  bool finish(const std::string& program) { return json_.finish(program); }

 private:
  bool table_;
  bool to_stdout_;
  JsonLines json_;
};

}  // namespace collscope::program
