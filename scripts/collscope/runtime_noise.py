"""Lines on stderr that are not a program's error, which the one-line error checks of the
MPI test scripts (bench/tests, layers/tests) read stderr without:

- Open MPI's runtime (its libevent) sometimes warns while the job tears down after a rank
  exits early ("[warn] Epoll MOD(1) on fd 23 failed ... Bad file descriptor"; upstream
  open-mpi/ompi#2004, #5520). That line is mpirun's, not the program's.
- The binaries' own warnings about the machine under the run ("allreduce_ring: warning:
  4 ranks on vm's 2 cores (oversubscribed) ..."), printed at the start beside JSON lines:
  the tests run oversubscribed and beside each other on purpose.
"""
import re

RUNTIME_NOISE = re.compile(r"^\[warn\] Epoll [A-Z]+\(\d+\) on fd \d+ failed\..*$\n?", re.M)
MACHINE_WARNING = re.compile(r"^[A-Za-z0-9_.-]+: warning: .*$\n?", re.M)


def without_runtime_noise(err):
    return MACHINE_WARNING.sub("", RUNTIME_NOISE.sub("", err))
