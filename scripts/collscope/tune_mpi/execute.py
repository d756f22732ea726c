"""A tuning sweep's tasks run here (mpirun, one task after another) or submitted to Slurm
(scripts/sweep's job arrays); either way the results directory is scripts/sweep's, and
`scripts/sweep --collect DIR` merges it and names the tasks without their rows."""
import os
import subprocess
import sys

from collscope import sweep as sw

LOCAL_JOB = "0"      # the job id in the names of locally run tasks' files (0_<task>.h5)
LOCAL_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
             "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}


def make_sweep(conf):
    full = dict(sw.DEFAULTS)
    full.update(conf)
    return sw.build_sweep(full)


def describe(sweep):
    os.makedirs(os.path.join(sweep.results_dir, "logs"), exist_ok=True)
    sw.write_text(os.path.join(sweep.results_dir, "sweep.conf"), sw.resolved_conf(sweep))
    sw.write_text(os.path.join(sweep.results_dir, "sweep.tasks"), sw.task_file_text(sweep))


def run_local(sweep, mpirun="mpirun", task_timeout=600):
    """Runs every task without its rows (a rerun resumes), then merges: the merged file's
    path, or None when tasks are missing (sweep --collect has said which)."""
    sw.prepare_results_dir(sweep, resume=True)
    describe(sweep)
    states = sw.all_states(sweep)
    todo = [s.task for s in states if not s.complete]
    env = dict(os.environ, **LOCAL_ENV)
    for i, task in enumerate(todo, 1):
        out = os.path.join(sweep.results_dir, f"{LOCAL_JOB}_{task.index}.h5")
        log = os.path.join(sweep.results_dir, "logs", f"{LOCAL_JOB}_{task.index}.out")
        argv = [mpirun, "-np", str(task.ranks), os.path.join(sweep.bin_dir, task.program),
                *task.args, "-O", out]
        print(f"# [{i}/{len(todo)}] {task.ranks} ranks: {task.program} {' '.join(task.args)}",
              flush=True)
        with open(log, "w") as f:
            try:
                subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=task_timeout)
            except subprocess.TimeoutExpired:
                f.write(f"tune-mpi: error: the task ran past {task_timeout} s and was stopped\n")
    status = sw.cmd_collect(sweep.results_dir)
    merged = os.path.join(sweep.results_dir, f"{sweep.name}.h5")
    return merged if status == 0 else None


def submit_slurm(sweep, dry_run=False):
    """scripts/sweep's submission of the tasks: the exit status it gives."""
    sw.prepare_results_dir(sweep, resume=False)
    jobs = sw.submissions(sweep, sweep.tasks, [])
    if dry_run:
        sw.print_plan(sweep, jobs, sweep.tasks)
        return 0
    status = sw.submit(sweep, jobs, True)
    if status == 0:
        print(f"tune-mpi: when the merge job is done: scripts/tune-mpi decide {os.path.dirname(sweep.results_dir)}",
              file=sys.stderr)
    return status
