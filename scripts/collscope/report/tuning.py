"""tuning.md: an Open MPI decision file against the default decision, from the rows of
`scripts/tune-mpi validate` (rows whose mpi_coll_params name a
coll_tuned_dynamic_rules_filename, beside rows without coll_* parameters): per
(collective, N, size) what the default ran, what the file ran, the gain and its verdict
(collscope.tune_mpi.validate computes both this page and tune-mpi's validation.md)."""
from collscope.tune_mpi import decide
from collscope.tune_mpi import rules as rl
from collscope.tune_mpi import validate

TITLE = "# Tuning: an Open MPI decision file against the default"


def decision_files(rows):
    named = (decide.params_of(r).get("coll_tuned_dynamic_rules_filename") for r in rows)
    return sorted({path for path in named if path})


def read_rules(path):
    """The file's rules where it is still readable and well formed, else None (the page
    then shows no rule column)."""
    try:
        with open(path) as f:
            return rl.parse(f.read())
    except (OSError, rl.Malformed):
        return None


def tuning_markdown(results):
    rows = [r for r in results["collective"] if r["algorithm"] == "mpi"]
    files = decision_files(rows)
    if not files:
        return "\n".join([TITLE, "", "No rows ran under a decision file (scripts/tune-mpi "
                          "validate makes them; docs/tuning.md).", ""])
    rules = read_rules(files[0]) if len(files) == 1 else None
    checks = validate.checks_of(rows, rules)
    lines = [TITLE, "", f"Decision file: {', '.join(f'`{p}`' for p in files)}"
             + ("" if rules is not None else " (not readable now, or several: no rule column)"),
             "", validate.summary(checks), "",
             "gain = time(default) / time(file), the interval of the ratio of run medians "
             "(docs/statistics.md); `file ran`: what its probe's traffic named, and whether it "
             "shows the rule's algorithm (Open MPI ignores a file it cannot use without a word).",
             ""]
    return "\n".join(lines + validate.markdown(checks)) + "\n"
