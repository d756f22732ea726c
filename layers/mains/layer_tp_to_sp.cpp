// layer_tp_to_sp: layers/src/tp_to_sp.cpp through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_tp_to_sp(), argc, argv);
}
