// Libraries collscope reaches at run time (dlopen) instead of linking them (NCCL, cuBLAS):
// their function tables are filled symbol by symbol, and a library that cannot serve
// says why.
#pragma once

#include <dlfcn.h>

#include <string>

namespace collscope::dl {

// A library's function table once opened, or the reason it could not be.
template <class Library>
struct Opened {
  Library lib;
  std::string reason;  // why not
};

// Points `fn` at the symbol `name` of the dlopen handle; false where the library lacks it.
template <class F>
bool bind(void* handle, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

}  // namespace collscope::dl
