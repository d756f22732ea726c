#include "collscope/layers/reference/tp_local_reference.hpp"

#include "collscope/layers/math/head_blocks.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
using head_blocks::head_block;
using head_blocks::HeadQkv;
using head_blocks::put_head_block;
using head_blocks::put_head_grads;

RefMlp ref_mlp(const RefTensor& x, const RefTensor& w1, const RefTensor& w2, const RefTensor& dy) {
  const RefTensor z = ref_matmul(x, Trans::no, w1, Trans::no);
  const RefTensor a = ref_gelu(z);
  const RefTensor dz = ref_gelu_backward(ref_matmul(dy, Trans::no, w2, Trans::yes), z);
  return {ref_matmul(a, Trans::no, w2, Trans::no), ref_matmul(dz, Trans::no, w1, Trans::yes),
          ref_matmul(x, Trans::yes, dz, Trans::no), ref_matmul(a, Trans::yes, dy, Trans::no)};
}

RefAttentionCore ref_attention_core_forward(const RefTensor& x, const RefTensor& wqkv,
                                            const AttentionShape& sh) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = wqkv.cols / (3 * d);
  RefAttentionCore saved;
  saved.qkv = ref_matmul(x, Trans::no, wqkv, Trans::no);
  saved.context = RefTensor(x.rows, heads * d);
  saved.probs.assign(heads * nb, RefTensor());
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<double> h(saved.qkv, nb, b, g, d);
      RefAttentionOut out = ref_attention_head(h.q, h.k, h.v, sh.causal);
      put_head_block(saved.context, nb, b, g * d, out.o);
      saved.probs[g * nb + b] = std::move(out.p);
    }
  return saved;
}

RefTensor ref_attention_core_backward(const RefAttentionCore& saved, const RefTensor& dcontext,
                                      const AttentionShape& sh) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = saved.qkv.cols / (3 * d);
  RefTensor dqkv(saved.qkv.rows, saved.qkv.cols);
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<double> h(saved.qkv, nb, b, g, d);
      put_head_grads(dqkv, nb, b, g, d,
                     ref_attention_head_backward(h.q, h.k, h.v, saved.probs[g * nb + b],
                                                 head_block(dcontext, nb, b, g * d, d)));
    }
  return dqkv;
}

}  // namespace collscope::layers
