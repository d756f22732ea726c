// Block partition of `count` elements into `nblocks` blocks, Open MPI's rule: the first
// count % nblocks blocks get one extra element. Pure arithmetic, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>

namespace collscope::patterns {

struct Block {
  std::size_t offset = 0;  // in elements
  std::size_t count = 0;   // in elements
};

inline Block block_of(std::size_t count, int nblocks, int i) {
  const std::size_t n = static_cast<std::size_t>(nblocks);
  const std::size_t idx = static_cast<std::size_t>(i);
  const std::size_t base = count / n, extra = count % n;
  return {idx * base + (idx < extra ? idx : extra), base + (idx < extra ? 1 : 0)};
}

// Elements in blocks [first, first + len) (contiguous range of block indices).
inline Block block_range(std::size_t count, int nblocks, int first, int len) {
  if (len <= 0) return {block_of(count, nblocks, first).offset, 0};
  const Block a = block_of(count, nblocks, first);
  const Block b = block_of(count, nblocks, first + len - 1);
  return {a.offset, b.offset + b.count - a.offset};
}

// Part `i` of `parts` of block b, cut by the same rule, in elements of the vector.
inline Block block_part(std::size_t count, int nblocks, int b, std::size_t i, std::size_t parts) {
  const Block whole = block_of(count, nblocks, b);
  const Block in = block_of(whole.count, static_cast<int>(parts), static_cast<int>(i));
  return {whole.offset + in.offset, in.count};
}

// Address of a block's first element in a buffer of `elem`-byte elements.
inline std::byte* at(void* base, Block b, std::size_t elem) {
  return static_cast<std::byte*>(base) + b.offset * elem;
}
inline const std::byte* at(const void* base, Block b, std::size_t elem) {
  return static_cast<const std::byte*>(base) + b.offset * elem;
}

// Non-negative remainder: mod(-1, n) == n - 1.
inline int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace collscope::patterns
