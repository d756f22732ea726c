"""Open MPI's runtime (its libevent) sometimes warns while the job tears down after a rank
exits early ("[warn] Epoll MOD(1) on fd 23 failed ... Bad file descriptor"; upstream
open-mpi/ompi#2004, #5520). That line is mpirun's, not the program's: the one-line error
checks of the MPI test scripts (bench/tests, layers/tests) read stderr without it.
"""
import re

RUNTIME_NOISE = re.compile(r"^\[warn\] Epoll [A-Z]+\(\d+\) on fd \d+ failed\..*$\n?", re.M)


def without_runtime_noise(err):
    return RUNTIME_NOISE.sub("", err)
