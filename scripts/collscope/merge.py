"""Joins collscope results files (results/SCHEMA.md) into one.

    scripts/merge [--force] OUT.h5 IN.h5 [IN.h5 ...]

Every run of every input is kept with its attributes; its rows follow it, renumbered
(run_id, row, offsets); /layer (rows, ranks, times_us, sites, site_ranks, checks) too when
an input has it. Rows that a killed writer left unfinished (run_id -1) and per-rank
rows or pool values no row refers to are dropped. The inputs must all be results files
of one schema version this build reads (collscope/results.py); OUT keeps that version
(merging never converts). OUT is written as OUT.tmp.<pid> and moved into place only when
everything worked, and an existing OUT is replaced only with --force.

Exit status: 0 merged; 2 refused (bad arguments, OUT exists, an input that is not a
results file of a readable version, mismatched versions, one run in two inputs);
3 an input or OUT could not be read or written. /usr/bin/python3: Debian's python3-h5py.
"""

import argparse
import datetime
import os
import sys

import h5py
import numpy as np

# The results layout (results/SCHEMA.md), shared with report and sweep.
from collscope import results as cr

LAYER = cr.LAYER
LAYER_POOLS = list(cr.LAYER_POOLS)
LAYER_DATASETS = list(cr.LAYER_DATASETS)


class Refused(Exception):
    """The inputs or arguments are wrong: exit 2."""


def open_input(path):
    try:
        if not os.path.isfile(path):
            raise Refused(f"'{path}' is not a file")
        return cr.open_results_file(path)
    except cr.NotResults as e:
        raise Refused(str(e)) from None
    except cr.Unreadable as e:
        raise OSError(str(e)) from None


def check_versions(inputs):
    """The inputs' one schema version (the output keeps it: merging never converts)."""
    versions = {path: cr.schema_version(f) for path, f in inputs}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{p} has {v}" for p, v in versions.items())
        raise Refused(f"schema versions differ ({listed}): refusing to merge")
    return next(iter(versions.values()))


def check_layout(inputs, version):
    first_path, first = inputs[0]
    for path, f in inputs:
        for name in cr.dataset_paths(version):
            if name not in f or name not in first or not isinstance(f[name], h5py.Dataset):
                raise Refused(f"'{path}' has no dataset /{name}: not schema {version}")
            if f[name].id.get_type() != first[name].id.get_type():
                raise Refused(f"/{name} of '{path}' differs from '{first_path}'")
    with_layer = [(path, f) for path, f in inputs if LAYER in f]
    for path, f in with_layer:
        for name in LAYER_DATASETS:
            full = f"{LAYER}/{name}"
            if full not in f or not isinstance(f[full], h5py.Dataset):
                raise Refused(f"'{path}' has no dataset /{full}: not schema {version}")
            if f[full].id.get_type() != with_layer[0][1][full].id.get_type():
                raise Refused(f"/{full} of '{path}' differs from '{with_layer[0][0]}'")
    return with_layer[0][1] if with_layer else None


def check_runs_unique(inputs):
    seen = {}
    for path, f in inputs:
        runs = f["runs"][:]
        for uuid in runs["run_uuid"][runs["run_id"] >= 0]:
            key = cr.text(uuid)
            if key in seen:
                raise Refused(f"run {key} is in both '{seen[key]}' and '{path}'")
            seen[key] = path


# ---- the output -------------------------------------------------------------------------

def create_output(tmp, template, layer_template, sources, version):
    """An empty file laid out exactly as the template's: same creation properties, types,
    chunks and fill values, chunk indexes already made (the writer expects them). /layer
    as layer_template's, when an input has it (None: OUT has none either)."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_V18)
    fcpl = template.id.get_create_plist()
    out = h5py.File(h5py.h5f.create(tmp.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl))
    out.attrs["collscope_format"] = cr.FORMAT_NAME
    out.attrs.create("collscope_schema_version", version, dtype=np.int32)
    out.attrs["created_by"] = "collscope scripts/merge"
    out.attrs["created_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out.attrs["merged_from"] = [os.path.abspath(p) for p in sources]
    for group in cr.row_tables(version):
        out.create_group(group)
    names = [(name, template) for name in cr.dataset_paths(version)]
    if layer_template is not None:
        out.create_group(LAYER)
        names += [(f"{LAYER}/{name}", layer_template) for name in LAYER_DATASETS]
    for name, source_file in names:
        source = source_file[name].id
        space = h5py.h5s.create_simple((0,), (h5py.h5s.UNLIMITED,))
        h5py.h5d.create(out.id, name.encode(), source.get_type(), space, dcpl=source.get_create_plist())
        make_index(out[name])
    return out


def make_index(dataset):
    dataset.resize((1,))
    dataset[0] = np.zeros((), dtype=dataset.dtype)
    dataset.resize((0,))


def append(dataset, values):
    if len(values) == 0:
        return len(dataset)
    start = len(dataset)
    dataset.resize((start + len(values),))
    dataset[start:] = values
    return start


def gather(source, offsets, counts):
    """The slices [offset, offset + count) of a dataset, one after the other."""
    if len(offsets) == 0 or counts.sum() == 0:
        return source[:0], np.zeros(len(offsets), dtype=np.int64)
    data = source[:]
    index = np.concatenate([np.arange(o, o + c) for o, c in zip(offsets, counts)])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return data[index], starts


def copy_runs(out, f):
    runs = f["runs"][:]
    runs = runs[runs["run_id"] >= 0]
    first = len(out["runs"])
    run_map = {int(old): first + i for i, old in enumerate(runs["run_id"])}
    runs["run_id"] = np.arange(first, first + len(runs))
    append(out["runs"], runs)
    if "run_gpus" in f:   # version 2: every rank's GPU, by run
        gpus = f["run_gpus"][:]
        gpus = gpus[np.isin(gpus["run_id"], list(run_map))]
        gpus["run_id"] = [run_map[int(r)] for r in gpus["run_id"]]
        append(out["run_gpus"], gpus)
    return run_map


def copy_table(out, f, group, pools, run_map):
    rows = f[f"{group}/rows"][:]
    rows = rows[np.isin(rows["run_id"], list(run_map))]
    if len(rows) == 0:
        return
    first_row = len(out[f"{group}/rows"])
    rows["run_id"] = [run_map[int(r)] for r in rows["run_id"]]
    ranks, starts = gather(f[f"{group}/ranks"], rows["ranks_offset"], rows["ranks_count"])
    ranks["row"] = np.repeat(np.arange(first_row, first_row + len(rows)), rows["ranks_count"])
    rows["ranks_offset"] = append(out[f"{group}/ranks"], ranks) + starts
    for pool in pools:
        offsets, counts = rows[f"{pool}_offset"], rows[f"{pool}_count"]
        present = offsets >= 0
        values, starts = gather(f[f"{group}/{pool}"], offsets[present], counts[present])
        offsets[present] = append(out[f"{group}/{pool}"], values) + starts
        rows[f"{pool}_offset"] = offsets
    append(out[f"{group}/rows"], rows)
    return rows, first_row


def copy_children(out, f, name, offsets, counts, parents, parent_column):
    """The records offsets[i] .. + counts[i] of /layer/<name> for each parent i, appended
    with parent_column set to parents[i]; returns their new offsets."""
    records, starts = gather(f[f"{LAYER}/{name}"], offsets, counts)
    records[parent_column] = np.repeat(parents, counts)
    return append(out[f"{LAYER}/{name}"], records) + starts, records


def copy_layer(out, f, run_map):
    """/layer rows of the finished runs, with their ranks, times, sites (and their per-rank
    records) and checks, every index rebased."""
    if LAYER not in f or LAYER not in out:
        return
    copied = copy_table(out, f, LAYER, LAYER_POOLS, run_map)
    if copied is None:
        return
    # copy_table wrote the rows already: rebase their sites and checks offsets in place.
    rows, first_row = copied
    row_index = np.arange(first_row, first_row + len(rows))
    site_offsets, sites = copy_children(out, f, "sites", rows["sites_offset"], rows["sites_count"],
                                        row_index, "row")
    first_site = len(out[f"{LAYER}/sites"]) - len(sites)
    site_index = np.arange(first_site, first_site + len(sites))
    if len(sites):
        rank_offsets, _ = copy_children(out, f, "site_ranks", sites["ranks_offset"], sites["ranks_count"],
                                        site_index, "site")
        sites["ranks_offset"] = rank_offsets
        out[f"{LAYER}/sites"][first_site:] = sites
    check_offsets, _ = copy_children(out, f, "checks", rows["checks_offset"], rows["checks_count"],
                                     row_index, "row")
    rows["sites_offset"] = site_offsets
    rows["checks_offset"] = check_offsets
    out[f"{LAYER}/rows"][first_row:] = rows


def merge(out_path, in_paths, force):
    if os.path.exists(out_path) and not force:
        raise Refused(f"'{out_path}' exists: use --force to replace it")
    for p in in_paths:
        if os.path.exists(out_path) and os.path.samefile(out_path, p):
            raise Refused(f"'{out_path}' is also an input")
    inputs = [(p, open_input(p)) for p in in_paths]
    version = check_versions(inputs)
    layer_template = check_layout(inputs, version)
    check_runs_unique(inputs)
    tmp = f"{out_path}.tmp.{os.getpid()}"
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise OSError(f"cannot create '{out_path}': {e.strerror}") from None
    try:
        with create_output(tmp, inputs[0][1], layer_template, in_paths, version) as out:
            for _, f in inputs:
                run_map = copy_runs(out, f)
                for group, pools in cr.row_tables(version).items():
                    copy_table(out, f, group, pools, run_map)
                copy_layer(out, f, run_map)
        publish(tmp, out_path, force)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def publish(tmp, out_path, force):
    if force:
        os.replace(tmp, out_path)
        return
    try:
        os.link(tmp, out_path)  # never replaces a file that appeared meanwhile
    except FileExistsError:
        raise Refused(f"'{out_path}' exists: use --force to replace it") from None
    except OSError:  # a file system without hard links
        if os.path.exists(out_path):
            raise Refused(f"'{out_path}' exists: use --force to replace it") from None
        os.rename(tmp, out_path)


def main():
    parser = argparse.ArgumentParser(prog="merge", description="Join collscope results files.")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.add_argument("out", metavar="OUT.h5")
    parser.add_argument("inputs", metavar="IN.h5", nargs="+")
    args = parser.parse_args()
    try:
        merge(args.out, args.inputs, args.force)
    except Refused as e:
        print(f"merge: error: {e}", file=sys.stderr)
        return 2
    except (OSError, KeyError, ValueError) as e:
        print(f"merge: error: {e}", file=sys.stderr)
        return 3
    return 0
