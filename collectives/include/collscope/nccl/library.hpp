// The NCCL library, opened at run time (dlopen of libnccl.so.2, or the file named by
// COLLSCOPE_NCCL_LIBRARY): a binary starts where NCCL is missing and `-t nccl` then says
// why in one line. Functions newer than the library (ncclAlltoAll, ncclGather and
// ncclScatter arrived in NCCL 2.28) are null, and the callers fall back to grouped
// ncclSend / ncclRecv.
#pragma once

#include <nccl.h>

#include <string>

namespace collscope::nccl {

struct Library {
  int version = 0;  // ncclGetVersion: 22809 = 2.28.9
  std::string path;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  // NCCL 2.28 and later; null before.
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                           cudaStream_t) = nullptr;
  ncclResult_t (*Gather)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*Scatter)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                          cudaStream_t) = nullptr;

  // "2.28.9"
  std::string version_text() const;
  // Throws RuntimeError naming `what` and NCCL's message when rc is not ncclSuccess.
  void check(ncclResult_t rc, const char* what, ncclComm_t comm = nullptr) const;
};

// Why the library cannot be opened, or "" when it can (then library() returns it).
std::string unavailable_reason();
const Library& library();

}  // namespace collscope::nccl
