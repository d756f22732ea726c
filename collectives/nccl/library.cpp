#include "collscope/nccl/library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "collscope/dl_symbol.hpp"
#include "collscope/errors.hpp"

namespace collscope::nccl {
namespace {

constexpr int kOldestVersion = 21210;  // 2.12.10

using Opened = dl::Opened<Library>;
using dl::bind;

Opened open_library() {
  Opened o;
  const char* env = std::getenv("COLLSCOPE_NCCL_LIBRARY");
  o.lib.path = env && *env ? env : "libnccl.so.2";
  void* h = dlopen(o.lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    o.reason = "cannot load NCCL (" + std::string(e ? e : o.lib.path) +
               "; put libnccl.so.2 on LD_LIBRARY_PATH or name it in COLLSCOPE_NCCL_LIBRARY)";
    return o;
  }
  Library& l = o.lib;
  ncclResult_t (*get_version)(int*) = nullptr;
  const bool required =
      bind(h, get_version, "ncclGetVersion") && bind(h, l.GetErrorString, "ncclGetErrorString") &&
      bind(h, l.GetUniqueId, "ncclGetUniqueId") && bind(h, l.CommInitRank, "ncclCommInitRank") &&
      bind(h, l.CommDestroy, "ncclCommDestroy") && bind(h, l.CommAbort, "ncclCommAbort") &&
      bind(h, l.CommGetAsyncError, "ncclCommGetAsyncError") &&
      bind(h, l.GroupStart, "ncclGroupStart") && bind(h, l.GroupEnd, "ncclGroupEnd") &&
      bind(h, l.Send, "ncclSend") && bind(h, l.Recv, "ncclRecv") &&
      bind(h, l.AllReduce, "ncclAllReduce") && bind(h, l.ReduceScatter, "ncclReduceScatter") &&
      bind(h, l.AllGather, "ncclAllGather") && bind(h, l.Broadcast, "ncclBroadcast") &&
      bind(h, l.Reduce, "ncclReduce");
  if (!required) {
    o.reason = "'" + l.path + "' lacks NCCL functions collscope needs (NCCL 2.12.10 or later)";
    return o;
  }
  bind(h, l.GetLastError, "ncclGetLastError");
  bind(h, l.AlltoAll, "ncclAlltoAll");
  bind(h, l.Gather, "ncclGather");
  bind(h, l.Scatter, "ncclScatter");
  if (get_version(&l.version) != ncclSuccess)
    o.reason = "ncclGetVersion failed";
  else if (l.version < kOldestVersion)  // the schedules' signals are messages of 0 bytes
    o.reason = "NCCL " + l.version_text() + " is too old: collscope needs 2.12.10 or later " +
               "(earlier versions do not deliver messages of 0 bytes)";
  return o;  // the handle stays open for the life of the process
}

Opened& opened() {
  static Opened o = open_library();
  return o;
}

}  // namespace

std::string Library::version_text() const {
  // Since 2.9 the code is major * 10000 + minor * 100 + patch; before, * 1000 + * 100.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  const int minor = version >= 10000 ? version / 100 % 100 : version / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

void Library::check(ncclResult_t rc, const char* what, ncclComm_t comm) const {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  std::string text = std::string("nccl: ") + what + ": " + GetErrorString(rc);
  if (GetLastError) {
    const char* last = GetLastError(comm);
    if (last && *last) text += " (" + std::string(last) + ")";
  }
  throw RuntimeError(text);
}

std::string unavailable_reason() { return opened().reason; }

const Library& library() {
  if (!opened().reason.empty()) throw UsageError(opened().reason);
  return opened().lib;
}

}  // namespace collscope::nccl
