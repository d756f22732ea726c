"""report.md, the index: what the file holds, every table page (demoted a heading level)
and every plot; the empty report of a file without rows; and the output directory (made and
proved writable before anything is written, each file written or IOFailure)."""

import os
import tempfile

from collscope import noise
from collscope.report.load import BadInput, IOFailure

# ---- report.md and the output directory -------------------------------------------------

TABLES = [("volume.md", "Volume: measured against exact theory"),
          ("textbook_vs_theory.md", "Textbook formula against exact theory"),
          ("time_model.md", "Time model: predicted against measured"),
          ("advisor.md", "Advisor: fastest algorithm against the selection rules"),
          ("layers.md", "Layers: compute, communication and the schemes compared"),
          ("tuning.md", "Tuning: an Open MPI decision file against the default"),
          ("noise.md", "Noise: the machine, the rounds, the rows' spread")]
PLOT_SECTIONS = [("busbw", "Bus bandwidth"), ("time", "Time, measured and predicted"),
                 ("traffic", "Traffic matrices"), ("pingpong", "Ping-pong matrices")]


def file_summary(results):
    a, runs = results["attrs"], results["runs"]
    programs = sorted({r["program"] for r in runs})
    hosts = sorted({h for r in runs for h in r["hosts"].split(",") if h})
    lines = [f"- file: `{results['path']}` ({a.get('created_by', '?')}, created "
             f"{a.get('created_utc', '?')}, schema {a.get('collscope_schema_version', '?')})",
             f"- runs: {len(runs)} ({', '.join(programs) or 'none'})",
             f"- hosts: {', '.join(hosts) or 'unknown'}"]
    libs = sorted({r["mpi_library"] for r in runs if r["mpi_library"]})
    if libs:
        lines.append(f"- MPI: {'; '.join(libs)}")
    lines.append(f"- rows: {len(results['collective'])} collective, "
                 f"{len(results['pingpong'])} ping-pong, {len(results['layer'])} layer")
    return lines


def demote(markdown):
    """A table file's headings one level down, to sit inside report.md."""
    return "\n".join("#" + line if line.startswith("#") else line for line in markdown.split("\n"))


def volume_line(counts):
    na = (f"{counts['measured']} measured by the library (vendor), "
          f"{counts['na']} n/a (vendor or no theory)")
    if counts["mismatch"]:
        return f"- volume: **{counts['mismatch']} MISMATCH**, {counts['ok']} ok, {na}"
    return f"- volume: {counts['ok']} ok, {na}, no mismatch"


def report_markdown(results, tables, plots, counts):
    lines = [f"# collscope report: {os.path.basename(results['path'])}", ""]
    lines += file_summary(results)
    lines += [volume_line(counts),
              f"- rows whose result check failed (wrong elements): {counts['wrong']}",
              noise.summary_line(results), "",
              "## Contents", ""]
    lines += [f"- [{title}]({name})" for name, title in TABLES]
    lines += [f"- [{title}](#{key})" for key, title in PLOT_SECTIONS if plots.get(key)]
    for name, _ in TABLES:
        lines += ["", demote(tables[name])]
    for key, title in PLOT_SECTIONS:
        if plots.get(key):
            lines += ["", f'<a id="{key}"></a>', "", f"## {title}", ""]
            lines += [f"![{caption}]({name})\n" for name, caption in plots[key]]
    return "\n".join(lines) + "\n"


def empty_report(results):
    return "\n".join([f"# collscope report: {os.path.basename(results['path'])}", ""] +
                     file_summary(results) +
                     ["", "The file holds no finished rows: nothing to tabulate or plot.", ""])


def prepare_out_dir(out):
    """Creates DIR if needed and proves it writable; on failure removes what it created."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise BadInput(f"--out '{out}' exists and is not a directory")
    created, probe = [], out
    while probe and not os.path.exists(probe):
        created.append(probe)
        probe = os.path.dirname(probe)
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".report-probe-"):
            pass
    except OSError as e:
        for d in created:  # deepest first
            try:
                os.rmdir(d)
            except OSError:
                pass
        raise BadInput(f"--out '{out}' is not a writable directory: {e.strerror or e}") from None


def write_text(path, content):
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    except OSError as e:
        raise IOFailure(f"cannot write '{path}': {e.strerror or e}") from None


def default_out(path):
    stem, ext = os.path.splitext(path)
    return (stem if ext.lower() in (".h5", ".hdf5") else path) + "_report"
