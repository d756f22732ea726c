#include "collscope/progress.hpp"

namespace collscope {

Progress& progress() {
  static Progress p;
  return p;
}

}  // namespace collscope
