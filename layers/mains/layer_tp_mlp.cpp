// layer_tp_mlp: the tensor-parallel MLP (layers/src/tp_mlp.cpp) through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_tp_mlp(), argc, argv);
}
