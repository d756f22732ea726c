// splitmix64's finaliser: a stable, well-mixed 64-bit hash of a 64-bit value. The
// deterministic data of the tests, the benchmarks' payloads and split patterns, and the
// layers' tensors are all functions of it, so every rank computes any element alone.
#pragma once

#include <cstdint>

#include "collscope/hd.hpp"

namespace collscope {

COLLSCOPE_HD inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace collscope
