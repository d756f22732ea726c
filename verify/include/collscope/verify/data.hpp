// Deterministic test data and exact expected results.
//
// Element i of rank r's input is a function of (seed, r, i) and of the dtype, op and
// rank count, chosen so that the reduced result is exact whatever the order of the
// reduction (the nccl-tests idea), and no partial result ever leaves the dtype's range:
//   sum/avg: integers in [-m, m] ([0, m] unsigned) with N*m within the dtype's exact
//     range (int8 127, uint8 255, half 2048, bfloat16 256, float 2^24, ...), m <= 100;
//   prod: +-1, and +-2 on the one rank r == i mod N (unsigned: 1, and 2 or 3 there);
//   max/min: integers in [-100, 100] (unsigned: [0, 200]).
// The guarantee holds while m >= 1: up to 127 ranks for int8 sums, 256 for bfloat16.
// Data that is only moved (movement = true: gathers, scatters, all-to-all) spreads over
// the dtype's whole exact range instead, so a misplaced element almost never matches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/types.hpp"
#include "collscope/verify/values.hpp"

namespace collscope::verify {

// The exact integer value of element `index` of `rank`'s input.
std::int64_t input_value(const DataSpec& s, int rank, std::size_t index);
// Writes count elements of rank's input, starting at global element `first`.
void fill_input(void* buf, std::size_t count, const DataSpec& s, int rank,
                std::size_t first = 0);
// Writes count elements of the allreduce result (all ranks' inputs reduced),
// starting at global element `first`.
void fill_allreduce_expected(void* buf, std::size_t count, const DataSpec& s,
                             std::size_t first = 0);

struct Mismatch {
  std::uint64_t wrong = 0;           // elements that differ
  std::int64_t first_index = -1;     // first differing element, -1 if none
  double got = 0, want = 0;          // their values there
};

// Compares by value (so +0 == -0; NaN never matches anything).
Mismatch compare(const void* got, const void* want, std::size_t count, DataType t);

// The same three in device memory (the GPU computes the values, with the host's
// element functions), or on the host where the device is the host emulation.
void fill_input(MemoryKind mem, void* buf, std::size_t count, const DataSpec& s, int rank,
                std::size_t first = 0);
void fill_allreduce_expected(MemoryKind mem, void* buf, std::size_t count, const DataSpec& s,
                             std::size_t first = 0);
Mismatch compare(MemoryKind mem, const void* got, const void* want, std::size_t count, DataType t);

}  // namespace collscope::verify
