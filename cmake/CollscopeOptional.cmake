# Optional back-ends. Each ends as COLLSCOPE_HAVE_<X> = 0 or 1. AUTO takes what is
# found; ON fails when it is missing; OFF never looks. Nothing in this version needs
# them yet: they are detected so the build already tolerates both cases.
include(CheckLanguage)

function(_collscope_require name found)
  if(COLLSCOPE_WITH_${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "COLLSCOPE_WITH_${name}=ON but ${name} was not found")
  endif()
endfunction()

set(COLLSCOPE_HAVE_CUDA 0)
if(NOT COLLSCOPE_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(COLLSCOPE_HAVE_CUDA 1)
  endif()
  _collscope_require(CUDA COLLSCOPE_HAVE_CUDA)
endif()

set(COLLSCOPE_HAVE_UCX 0)
if(NOT COLLSCOPE_WITH_UCX STREQUAL "OFF")
  find_path(UCX_INCLUDE_DIR ucp/api/ucp.h)
  find_library(UCX_UCP_LIBRARY ucp)
  if(UCX_INCLUDE_DIR AND UCX_UCP_LIBRARY)
    set(COLLSCOPE_HAVE_UCX 1)
  endif()
  _collscope_require(UCX COLLSCOPE_HAVE_UCX)
endif()

set(COLLSCOPE_HAVE_NCCL 0)
if(NOT COLLSCOPE_WITH_NCCL STREQUAL "OFF" AND COLLSCOPE_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(COLLSCOPE_HAVE_NCCL 1)
  endif()
endif()
_collscope_require(NCCL COLLSCOPE_HAVE_NCCL)
