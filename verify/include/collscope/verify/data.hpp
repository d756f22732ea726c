// Deterministic test data and exact expected results.
//
// Element i of rank r's input is a function of (seed, r, i) and of the dtype, op and
// rank count, chosen so that the reduced result is exact whatever the order of the
// reduction (the nccl-tests idea):
//   integers: any values (sum and prod wrap modulo 2^bits, which is associative);
//   floats, sum/avg: integers in [-m, m] with N*m within the dtype's exact-integer range
//     (half 2048, bfloat16 256, float 2^24, double 2^53), so every partial sum is exact;
//   floats, prod: +-1, and +-2 on the one rank r == i mod N: every partial product is
//     +-1 or +-2;
//   max/min: integers in [-100, 100] (unsigned: [0, 200]).
// Exactness for bfloat16 sums holds up to N = 256 ranks (m >= 1), for half up to 2048.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/types.hpp"

namespace collscope::verify {

struct DataSpec {
  std::uint64_t seed = 1;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int nranks = 1;
};

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

}  // namespace collscope::verify
