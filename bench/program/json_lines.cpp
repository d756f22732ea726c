#include "collscope/program/json_lines.hpp"

#include <cstdio>
#include <iostream>

#include "collscope/errors.hpp"

namespace collscope::program {

JsonLines JsonLines::open_on_root(const std::string& path, MPI_Comm comm) {
  JsonLines j;
  int rank = 0, ok = 1;
  MPI_Comm_rank(comm, &rank);
  if (!path.empty() && rank == 0) {
    j.path_ = path;
    j.out_ = std::make_unique<std::ofstream>(path + ".tmp", std::ios::trunc);
    ok = j.out_->good() ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) throw RuntimeErrorOnAllRanks("cannot write the JSON file '" + path + "'");
  return j;
}

void JsonLines::write(const std::string& line) {
  if (out_) *out_ << line << std::endl;  // flushed: a crash keeps the lines
}

bool JsonLines::finish(const std::string& program) {
  if (!out_) return true;
  out_->close();
  out_.reset();
  if (std::rename((path_ + ".tmp").c_str(), path_.c_str()) == 0) return true;
  std::cerr << program << ": error: cannot rename '" << path_ << ".tmp' to '" << path_ << "'"
            << std::endl;
  return false;
}

}  // namespace collscope::program
