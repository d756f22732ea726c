// layer_vocab_parallel: vocab-parallel embedding and cross-entropy
// (layers/src/vocab_parallel.cpp) through the shared driver.
#include "collscope/layers/catalogue.hpp"
#include "collscope/layers/driver.hpp"

int main(int argc, char** argv) {
  return collscope::layers::layer_main(collscope::layers::make_vocab_parallel(), argc, argv);
}
