// pipeline_tp_sp_ep: layers/src/pipeline_tp_sp_ep.cpp through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_pipeline_tp_sp_ep(), argc, argv);
}
