// layer_tp_attention: tensor-parallel self-attention (layers/src/tp_attention.cpp) through
// the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_tp_attention(), argc, argv);
}
