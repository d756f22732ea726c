// The size grammar (collscope/size_text.hpp) against the shared table of cases
// (collectives/core/size_grammar.tsv) the Python side's test reads too.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "collscope/size_text.hpp"

namespace collscope {
namespace {

struct Case {
  std::string text, want;  // want: the bytes in decimal, or the refusal's name
  int line = 0;
};

std::vector<Case> read_cases() {
  std::ifstream in(COLLSCOPE_SIZE_GRAMMAR);
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t close = line.find('"', 1);
    EXPECT_TRUE(line[0] == '"' && close != std::string::npos) << "line " << n << ": " << line;
    if (line[0] != '"' || close == std::string::npos) continue;
    const std::size_t want = line.find_first_not_of(" \t", close + 1);
    cases.push_back({line.substr(1, close - 1), line.substr(want), n});
  }
  return cases;
}

std::string outcome(std::string_view text) {
  const auto r = parse_size_text(text);
  if (const auto* v = std::get_if<std::uint64_t>(&r)) return std::to_string(*v);
  switch (std::get<SizeRefusal>(r)) {
    case SizeRefusal::malformed: return "malformed";
    case SizeRefusal::signed_: return "signed";
    case SizeRefusal::too_large: return "too_large";
  }
  return "?";
}

TEST(SizeGrammar, EveryCaseOfTheSharedTable) {
  const std::vector<Case> cases = read_cases();
  ASSERT_GE(cases.size(), 30u) << "the table " << COLLSCOPE_SIZE_GRAMMAR << " was not read";
  for (const Case& c : cases)
    EXPECT_EQ(outcome(c.text), c.want) << "line " << c.line << ": '" << c.text << "'";
}

}  // namespace
}  // namespace collscope
