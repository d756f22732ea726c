#include "cublas_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collscope/errors.hpp"

namespace collscope::layers::cublas {
namespace {

struct Opened {
  Library lib;
  std::string reason;  // why not
};

template <class F>
bool bind(void* handle, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

// The first of the names that loads, with dlerror()'s text of the last failure.
void* open_first(const std::vector<std::string>& names, std::string& path, std::string& error) {
  for (const std::string& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = n;
      return h;
    }
    const char* e = dlerror();
    error = e ? e : n;
  }
  return nullptr;
}

Opened open_library() {
  Opened o;
  const char* env = std::getenv("COLLSCOPE_CUBLAS_LIBRARY");
  const std::vector<std::string> names =
      env && *env ? std::vector<std::string>{env}
                  : std::vector<std::string>{"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  std::string error;
  void* h = open_first(names, o.lib.path, error);
  if (!h) {
    o.reason = "cannot load cuBLAS (" + error +
               "; put libcublas.so.13 on LD_LIBRARY_PATH or name it in COLLSCOPE_CUBLAS_LIBRARY)";
    return o;
  }
  Library& l = o.lib;
  cublasStatus_t (*get_property)(libraryPropertyType, int*) = nullptr;
  const bool required =
      bind(h, l.Create, "cublasCreate_v2") && bind(h, l.Destroy, "cublasDestroy_v2") &&
      bind(h, l.SetStream, "cublasSetStream_v2") && bind(h, l.SetMathMode, "cublasSetMathMode") &&
      bind(h, l.GemmEx, "cublasGemmEx") &&
      bind(h, l.GemmStridedBatchedEx, "cublasGemmStridedBatchedEx") &&
      bind(h, l.GetStatusString, "cublasGetStatusString") &&
      bind(h, get_property, "cublasGetProperty");
  if (!required) {
    o.reason = "'" + l.path + "' lacks cuBLAS functions the layers need (cuBLAS 12 or later)";
    return o;
  }
  int major = 0, minor = 0, patch = 0;
  get_property(MAJOR_VERSION, &major);
  get_property(MINOR_VERSION, &minor);
  get_property(PATCH_LEVEL, &patch);
  l.version = major * 10000 + minor * 100 + patch;
  return o;  // the handle stays open for the life of the process
}

Opened& opened() {
  static Opened o = open_library();
  return o;
}

}  // namespace

std::string Library::version_text() const {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

void Library::check(cublasStatus_t rc, const char* what) const {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(std::string("cublas: ") + what + ": " + GetStatusString(rc));
}

std::string unavailable_reason() { return opened().reason; }

const Library& library() {
  if (!opened().reason.empty()) throw UsageError(opened().reason);
  return opened().lib;
}

}  // namespace collscope::layers::cublas
