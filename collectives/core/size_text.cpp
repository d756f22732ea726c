#include "collscope/size_text.hpp"

#include <cctype>
#include <limits>
#include <string>

namespace collscope {
namespace {

// The power of two a unit names, or -1 for no unit of the grammar.
int unit_shift(std::string_view unit) {
  std::string u(unit);
  for (char& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (u.empty() || u == "b") return 0;
  constexpr std::string_view kPrefixes = "kmgt";
  const std::size_t at = kPrefixes.find(u[0]);
  if (at == std::string_view::npos) return -1;
  const std::string_view rest = std::string_view(u).substr(1);
  if (!rest.empty() && rest != "b" && rest != "ib") return -1;
  return 10 * static_cast<int>(at + 1);
}

}  // namespace

std::variant<std::uint64_t, SizeRefusal> parse_size_text(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) return SizeRefusal::signed_;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::size_t i = 0;
  std::uint64_t value = 0;
  bool overflow = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) overflow = true;
    else value = value * 10 + digit;
  }
  const int shift = i == 0 ? -1 : unit_shift(text.substr(i));
  if (shift < 0) return SizeRefusal::malformed;
  if (overflow || value > (kMax >> shift)) return SizeRefusal::too_large;
  return value << shift;
}

}  // namespace collscope
