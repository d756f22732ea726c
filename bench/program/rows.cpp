#include "collscope/program/rows.hpp"

#include <iostream>

namespace collscope::program {

void RowOutput::write(const std::string& json_line,
                      const std::function<void(std::ostream&)>& print_table_row) {
  if (table_) print_table_row(std::cout);
  else if (to_stdout_) std::cout << json_line << std::endl;
  json_.write(json_line);  // flushed: a crash keeps the rows
}

}  // namespace collscope::program
