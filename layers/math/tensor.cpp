#include "collscope/layers/math/tensor.hpp"

#include "collscope/half.hpp"

namespace collscope::layers {

bool is_storage_dtype(DataType t) { return t == DataType::float32 || t == DataType::bfloat16; }

float store_value(float v, DataType storage) {
  return storage == DataType::bfloat16 ? to_float(to_bfloat16(v)) : v;
}

void round_to_storage(Tensor& t, DataType storage) {
  if (storage != DataType::bfloat16) return;
  for (float& v : t.data) v = to_float(to_bfloat16(v));
}

RefTensor to_ref(const Tensor& t) {
  RefTensor out(t.rows, t.cols);
  for (std::size_t i = 0; i < t.size(); ++i) out.data[i] = t.data[i];
  return out;
}

}  // namespace collscope::layers
