// The runtimes runtime() chooses from (device/runtime.cpp). Internal to the library.
#pragma once

#include <memory>
#include <string>

#include "collscope/device/runtime.hpp"

namespace collscope::device {

std::unique_ptr<Runtime> make_emulated_runtime();
// nullptr with `why` set when there is no usable device (no driver, no GPU).
std::unique_ptr<Runtime> make_cuda_runtime(std::string& why);

}  // namespace collscope::device
