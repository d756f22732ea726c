// One attention head's blocks of the [T, 3h] QKV and [T, h] context tensors (tp_local.hpp's
// layout: rows s B + b, per head g the columns [q | k | v] at g 3d ..), in float32 for
// the sharded compute (blocks/tp_local.cpp) and float64 for the reference
// (reference/tp_local_reference.cpp).
#pragma once

#include <cstddef>

#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers::head_blocks {

// The rows of sequence b (tokens s B + b) and columns [c0, c0 + d) of m: [S, d].
template <class T>
Matrix<T> head_block(const Matrix<T>& m, std::size_t batch, std::size_t b, std::size_t c0,
                     std::size_t d) {
  Matrix<T> out(m.rows / batch, d);
  for (std::size_t s = 0; s < out.rows; ++s)
    for (std::size_t c = 0; c < d; ++c) out.at(s, c) = m.at(s * batch + b, c0 + c);
  return out;
}

template <class T>
void put_head_block(Matrix<T>& m, std::size_t batch, std::size_t b, std::size_t c0,
                    const Matrix<T>& blk) {
  for (std::size_t s = 0; s < blk.rows; ++s)
    for (std::size_t c = 0; c < blk.cols; ++c) m.at(s * batch + b, c0 + c) = blk.at(s, c);
}

// q, k, v of local head g, sequence b.
template <class T>
struct HeadQkv {
  Matrix<T> q, k, v;
  HeadQkv(const Matrix<T>& qkv, std::size_t batch, std::size_t b, std::size_t g, std::size_t d)
      : q(head_block(qkv, batch, b, g * 3 * d, d)),
        k(head_block(qkv, batch, b, g * 3 * d + d, d)),
        v(head_block(qkv, batch, b, g * 3 * d + 2 * d, d)) {}
};

template <class T, class Grads>
void put_head_grads(Matrix<T>& dqkv, std::size_t batch, std::size_t b, std::size_t g,
                    std::size_t d, const Grads& gr) {
  put_head_block(dqkv, batch, b, g * 3 * d, gr.dq);
  put_head_block(dqkv, batch, b, g * 3 * d + d, gr.dk);
  put_head_block(dqkv, batch, b, g * 3 * d + 2 * d, gr.dv);
}

}  // namespace collscope::layers::head_blocks
