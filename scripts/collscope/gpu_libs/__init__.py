"""The GPU libraries a bare GPU node lacks, built once here and cached outside the work
tree (scripts/gpu-libs; docs/gpu-libs.md): a CUDA-aware Open MPI, UCX with its CUDA
transports, and an NCCL that runs several ranks on one GPU. scripts/gpu-bundle carries
them (--cuda-mpi, --ucx, --nccl, --gpu-libs)."""
