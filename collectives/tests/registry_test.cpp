// The one list of algorithms (collscope/algorithms.def) is what CMake builds binaries
// and MPI tests from, and what the registry is compiled from: the two must name the
// same algorithms, every hand-written one must have a schedule and a theory, every
// vendor one a call, and every binary must exist.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "collscope/runtime/algorithm.hpp"

namespace collscope {
namespace {

const char* const kListed[] = {
#include "listed_algorithms.inc"
};

TEST(Registry, MatchesTheListTheBuildWasMadeFrom) {
  std::set<std::string> listed(std::begin(kListed), std::end(kListed));
  std::set<std::string> registered;
  for (const Algorithm& a : all_algorithms()) registered.insert(a.full_name());
  EXPECT_EQ(listed, registered);
  EXPECT_EQ(registered.size(), all_algorithms().size()) << "a name appears twice";
}

TEST(Registry, EveryEntryCanRun) {
  for (const Algorithm& a : all_algorithms()) {
    EXPECT_NE(a.schedule != nullptr, a.is_vendor()) << a.full_name();
    if (a.schedule) {
      EXPECT_NE(a.theory, nullptr) << a.full_name();
    } else {
      EXPECT_NE(a.vendor->run, nullptr) << a.full_name();
    }
    EXPECT_FALSE(a.summary.empty()) << a.full_name();
    EXPECT_EQ(find_algorithm(a.collective_name(), a.name), &a);
  }
}

TEST(Registry, EveryListedBinaryWasBuilt) {
  for (const char* name : kListed)
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(COLLSCOPE_BIN_DIR) / name)) << name;
}

}  // namespace
}  // namespace collscope
