# Optional back-ends. Each ends as COLLSCOPE_HAVE_<X> = 0 or 1. AUTO takes what is
# found; ON fails when it is missing; OFF never looks.
#
# CUDA: the toolkit and nvcc. The GPU code is built for sm_80 and sm_90 plus PTX (newer
# GPUs compile the PTX when they load it); COLLSCOPE_CUDA_ARCHITECTURES overrides that.
# Binaries link the CUDA runtime statically and never libcuda, so they start on machines
# without a driver (and say so when asked for a device).
# NCCL: only its header is needed at build time. The library is opened at run time
# (dlopen), so a binary starts where NCCL is missing and `-t nccl` says so.
include(CheckLanguage)

function(_collscope_require name found)
  if(COLLSCOPE_WITH_${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "COLLSCOPE_WITH_${name}=ON but ${name} was not found")
  endif()
endfunction()

set(COLLSCOPE_HAVE_CUDA 0)
if(NOT COLLSCOPE_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  check_language(CUDA)
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER)
    set(COLLSCOPE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING
        "GPU architectures of the CUDA code")
    set(CMAKE_CUDA_ARCHITECTURES ${COLLSCOPE_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc 13's C++20 flag: tell it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(COLLSCOPE_HAVE_CUDA 1)
  endif()
  _collscope_require(CUDA COLLSCOPE_HAVE_CUDA)
endif()

set(COLLSCOPE_HAVE_UCX 0)
if(NOT COLLSCOPE_WITH_UCX STREQUAL "OFF")
  find_path(UCX_INCLUDE_DIR ucp/api/ucp.h)
  find_library(UCX_UCP_LIBRARY ucp)
  find_library(UCX_UCS_LIBRARY ucs)
  if(UCX_INCLUDE_DIR AND UCX_UCP_LIBRARY AND UCX_UCS_LIBRARY)
    set(COLLSCOPE_HAVE_UCX 1)
  endif()
  _collscope_require(UCX COLLSCOPE_HAVE_UCX)
endif()

set(COLLSCOPE_HAVE_NCCL 0)
if(NOT COLLSCOPE_WITH_NCCL STREQUAL "OFF" AND COLLSCOPE_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NCCL_INCLUDE_DIR)
    set(COLLSCOPE_HAVE_NCCL 1)
  endif()
endif()
_collscope_require(NCCL COLLSCOPE_HAVE_NCCL)
