"""The checks of the test scripts that go on after a failure: check() prints one
`ok   what` or `FAIL what` line and keeps what failed in `failures`, which the script's
exit status reads (the emulated-cluster tests stop at the first instead:
cluster.harness.check)."""

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run_tests(*tests):
    """Runs each test in turn, then exits: 1 if any check failed, else 0."""
    import sys
    for test in tests:
        test()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
