#include "cublas_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collscope/dl_symbol.hpp"
#include "collscope/errors.hpp"

namespace collscope::layers::cublas {
namespace {

using Opened = dl::Opened<Library>;
using dl::bind;

Opened open_first() {
  const char* env = std::getenv("COLLSCOPE_CUBLAS_LIBRARY");
  const std::vector<std::string> names =
      env && *env ? std::vector<std::string>{env}
                  : std::vector<std::string>{"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                             "/usr/local/cuda/lib64/libcublas.so.13",
                                             "/usr/local/cuda/lib64/libcublas.so.12"};
  Opened o;
  for (const std::string& n : names) {
    o.lib = Library();
    const std::string why = open_library(n, o.lib);
    if (why.empty()) return {o.lib, ""};
    if (o.reason.empty()) o.reason = why;  // the first name's reason says the most
  }
  return o;
}

Opened& opened() {
  static Opened o = open_first();
  return o;
}

}  // namespace

std::string open_library(const std::string& path, Library& l) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return "cannot load cuBLAS (" + std::string(e ? e : path) +
           "; put libcublas.so.13 on LD_LIBRARY_PATH or name it in COLLSCOPE_CUBLAS_LIBRARY)";
  }
  l.path = path;
  cublasStatus_t (*get_property)(libraryPropertyType, int*) = nullptr;
  const bool required =
      bind(h, l.Create, "cublasCreate_v2") && bind(h, l.Destroy, "cublasDestroy_v2") &&
      bind(h, l.SetStream, "cublasSetStream_v2") && bind(h, l.SetMathMode, "cublasSetMathMode") &&
      bind(h, l.GemmEx, "cublasGemmEx") &&
      bind(h, l.GemmStridedBatchedEx, "cublasGemmStridedBatchedEx") &&
      bind(h, l.GetStatusString, "cublasGetStatusString") &&
      bind(h, get_property, "cublasGetProperty");
  if (!required) return "'" + path + "' lacks cuBLAS functions the layers need (cuBLAS 12 or later)";
  int major = 0, minor = 0, patch = 0;
  get_property(MAJOR_VERSION, &major);
  get_property(MINOR_VERSION, &minor);
  get_property(PATCH_LEVEL, &patch);
  l.version = major * 10000 + minor * 100 + patch;
  return "";  // the handle stays open for the life of the process
}

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
