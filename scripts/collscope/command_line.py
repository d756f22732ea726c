"""Command lines the programs take (option values that are command lines themselves) and
the launches they run (fit-model's and model-check's mpirun)."""
import os
import shlex
import subprocess

# Open MPI as root (containers, CI), more ranks than cores, ranks that yield when idle.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}


def join_command_line_values(argv, options):
    """argv with each of OPTIONS and the word after it joined into OPTION=VALUE: the value
    is itself a command line ("--mpirun-args --oversubscribe" is one option and its value,
    though the value starts with a dash, which argparse would refuse)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def launch(cmd, fail, timeout, exit_code=lambda returncode: 3):
    """Runs CMD (a launch: mpirun ...) with MPI_ENV and returns the finished process; where
    it cannot run, fail(message, 3); where it exits non-zero, fail(message with its last
    line of stderr, exit_code(its exit status))."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV),
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        fail(f"cannot run {' '.join(cmd)}: {e}", 3)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        fail(f"{' '.join(cmd)} exited {p.returncode}: {last}", exit_code(p.returncode))
    return p


def split_words(args, names, fail, what):
    """{name: the option's value split into words as a shell would} for each of NAMES
    (attributes of the parsed ARGS); fail(message, 2) where quotes do not balance."""
    try:
        return {name: shlex.split(getattr(args, name)) for name in names}
    except ValueError as e:
        fail(f"cannot split {what}: {e}", 2)
