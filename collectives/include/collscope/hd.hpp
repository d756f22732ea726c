// COLLSCOPE_HD marks a function that runs on the host and, compiled by nvcc, on the GPU
// too: the element functions of the reducers and the test data are written once, so a
// device result is bit-identical to the host's by construction.
#pragma once

#if defined(__CUDACC__)
#define COLLSCOPE_HD __host__ __device__
#else
#define COLLSCOPE_HD
#endif
