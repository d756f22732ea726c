// -J FILE: JSON lines written by rank 0 as FILE.tmp, flushed line by line (a crash keeps
// what was written), and renamed to FILE when the run ends, so FILE is never a half
// run. Opening is collective: every rank learns whether rank 0 could write, so an
// unwritable path fails everywhere (RuntimeErrorOnAllRanks) before anything runs.
#pragma once

#include <mpi.h>

#include <fstream>
#include <memory>
#include <string>

namespace collscope::program {

class JsonLines {
 public:
  // Nothing is written when `path` is empty. Collective over `comm`.
  static JsonLines open_on_root(const std::string& path, MPI_Comm comm);

  bool active() const { return out_ != nullptr; }
  void write(const std::string& line);  // no-op unless active
  // Closes and renames; false (with one line on stderr naming `program`) if it cannot.
  bool finish(const std::string& program);

 private:
  std::string path_;
  std::unique_ptr<std::ofstream> out_;
};

}  // namespace collscope::program
