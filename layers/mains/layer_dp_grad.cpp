// layer_dp_grad: DP gradient sync (layers/src/dp_grad.cpp) through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_dp_grad(), argc, argv);
}
