// The words of an option's values, as a table in the order of its enum: the value a word
// names, and the word of a value. One table per enum, read both ways.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace collscope {

template <class E, std::size_t N>
std::optional<E> by_name(std::string_view text, const std::string_view (&names)[N]) {
  for (std::size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

template <class E, std::size_t N>
std::string_view name_of(E value, const std::string_view (&names)[N]) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : std::string_view("?");
}

}  // namespace collscope
