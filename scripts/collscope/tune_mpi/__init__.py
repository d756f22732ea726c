"""scripts/tune-mpi: Open MPI decision files from collscope sweeps (docs/tuning.md)."""
