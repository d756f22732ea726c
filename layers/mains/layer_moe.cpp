// layer_moe: layers/src/moe.cpp through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_moe(), argc, argv);
}
