"""The report's PNG plots: busbw_*.png and time_*.png per (collective, N, medium), one line
per algorithm with its band of quartiles and its noisy points ringed; traffic_*.png, the
N x N bytes sent at each algorithm's largest size; pingpong_bw_*.png and
pingpong_latency_*.png, the --pairs all matrices. report.md shows them."""

import logging
import math
import os
import statistics

import numpy as np

from collscope import noise
from collscope import stats
from collscope.report.formatting import algo_label, human_bytes
from collscope.report.load import VENDOR_ALGORITHMS, IOFailure, file_slug, without_monitored_twins

# ---- plots -------------------------------------------------------------------------------


def pyplot():
    # Quiet: a fresh machine's first import logs "building the font cache" on stderr,
    # where this script's own lines must stand alone.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def series(rows, value, positive=False):
    """{algorithm: (sizes, medians of value(row))}, sizes ascending; None and NaN skipped
    (and values <= 0 when `positive`, for a log axis)."""
    points = {}
    for r in rows:
        v = value(r)
        if v is not None and not math.isnan(v) and r["bytes"] > 0 and (v > 0 or not positive):
            points.setdefault(r["algorithm"], {}).setdefault(r["bytes"], []).append(v)
    return {a: (sorted(p), [statistics.median(p[b]) for b in sorted(p)])
            for a, p in points.items()}


def busbw_samples(row):
    """A row's per-iteration busbw: busbw scales as 1 / time at one size."""
    t = row["time_us"]
    return [row["busbw_gbps"] * t / x for x in noise.samples_of(row)] if t and t > 0 else []


def time_samples(row):
    return noise.samples_of(row)


def spread_series(rows, value, samples):
    """{algorithm: {"x": sizes, "y": medians of value(row), "lo", "hi": the quartiles of
    the iterations of every row at that size (samples(row)), "noisy": a row there is}},
    sizes ascending; None, NaN and values <= 0 skipped (the axes are logarithmic or the
    band would be empty)."""
    points = {}
    for r in rows:
        v = value(r)
        if v is not None and not math.isnan(v) and r["bytes"] > 0 and v > 0:
            p = points.setdefault(r["algorithm"], {}).setdefault(r["bytes"], [[], [], False])
            p[0].append(v)
            p[1].extend(samples(r))
            p[2] = p[2] or bool(r.get("noisy"))
    out = {}
    for a, per in points.items():
        xs = sorted(per)
        ys = [statistics.median(per[b][0]) for b in xs]
        bands = [stats.quartiles(per[b][1]) if per[b][1] else (y, y, y) for b, y in zip(xs, ys)]
        out[a] = {"x": xs, "y": ys, "lo": [q[0] for q in bands], "hi": [q[2] for q in bands],
                  "noisy": [per[b][2] for b in xs]}
    return out


def draw_series(ax, a, line, colour, label, **style):
    """One algorithm's median line, its band of quartiles, and its noisy points ringed."""
    ax.plot(line["x"], line["y"], marker="o", color=colour, label=label, **style)
    ax.fill_between(line["x"], line["lo"], line["hi"], color=colour, alpha=0.15, linewidth=0)
    noisy = [(x, y) for x, y, n in zip(line["x"], line["y"], line["noisy"]) if n]
    if noisy:
        ax.scatter(*zip(*noisy), s=140, facecolors="none", edgecolors="red", linewidths=1.5,
                   zorder=5)


def finish_legend(ax, any_noisy):
    """The legend outside the axes, on the right, with the noisy marker's meaning."""
    handles, labels = ax.get_legend_handles_labels()
    if any_noisy:
        handles.append(ax.scatter([], [], s=140, facecolors="none", edgecolors="red",
                                  linewidths=1.5))
        labels.append("noisy point (spread > threshold)")
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
              borderaxespad=0.0)


def algorithm_colours(algorithms):
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
               "tab:pink", "tab:olive", "tab:cyan"]
    hand = sorted(a for a in algorithms if a not in VENDOR_ALGORITHMS)
    colours = {a: palette[i % len(palette)] for i, a in enumerate(hand)}
    colours.update({a: "black" for a in algorithms if a in VENDOR_ALGORITHMS})
    return colours


def size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = sorted(set(sizes))
    if len(ticks) > 12:
        ticks = ticks[::math.ceil(len(ticks) / 12)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([human_bytes(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlabel("size (bytes, log2)")
    ax.grid(True, alpha=0.3)


def save(fig, path):
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except OSError as e:
        raise IOFailure(f"cannot write '{path}': {e}") from None
    finally:
        pyplot().close(fig)


def no_data(ax):
    ax.text(0.5, 0.5, "no measured values", ha="center", va="center", transform=ax.transAxes)


def plot_busbw(rows, title, path):
    plt = pyplot()
    lines = spread_series(rows, lambda r: r["busbw_gbps"], busbw_samples)
    colours = algorithm_colours(lines)
    fig, ax = plt.subplots(figsize=(9, 5))
    for a in sorted(lines, key=lambda a: (a in VENDOR_ALGORITHMS, a)):
        draw_series(ax, a, lines[a], colours[a], algo_label(a))
    ax.set_ylabel("busbw (GB/s; median, band: quartiles)")
    ax.set_title(title)
    if lines:
        size_axis(ax, [b for line in lines.values() for b in line["x"]])
        finish_legend(ax, any(any(line["noisy"]) for line in lines.values()))
    else:
        no_data(ax)
    save(fig, path)


def plot_time(rows, title, path):
    plt = pyplot()
    measured = spread_series(rows, lambda r: r["time_us"], time_samples)
    predicted = series(rows, lambda r: r["predicted_us"], positive=True)
    colours = algorithm_colours(measured)
    fig, ax = plt.subplots(figsize=(9, 5))
    for a in sorted(measured, key=lambda a: (a in VENDOR_ALGORITHMS, a)):
        draw_series(ax, a, measured[a], colours[a], f"{algo_label(a)} measured")
        if a in predicted:
            px, py = predicted[a]
            ax.plot(px, py, linestyle="--", marker="x", color=colours[a],
                    label=f"{a} predicted")
    ax.set_ylabel("time (us; median, band: quartiles; log)")
    ax.set_title(title)
    if measured:
        size_axis(ax, [b for line in measured.values() for b in line["x"]])
        ax.set_yscale("log")
        finish_legend(ax, any(any(line["noisy"]) for line in measured.values()))
    else:
        no_data(ax)
    save(fig, path)


def short_number(v):
    """Compact annotation for a heatmap cell."""
    if float(v).is_integer() and abs(v) < 1024:
        return str(int(v))
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


def plot_heatmap(matrix, title, label, path, mask_diagonal=False, annotate=short_number):
    plt = pyplot()
    n = matrix.shape[0]
    data = np.ma.masked_array(matrix.astype(np.float64),
                              mask=np.eye(n, dtype=bool) if mask_diagonal else None)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.6 * n + 3), max(4, 0.6 * n + 2)))
    image = ax.imshow(data, cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label=label)
    if n <= 32:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    ax.set_title(title)
    if n <= 8:
        lo, hi = image.get_clim()
        for i in range(n):
            for j in range(n):
                if mask_diagonal and i == j:
                    continue
                v = matrix[i, j]
                light = hi > lo and (v - lo) / (hi - lo) > 0.6  # viridis is light at the top
                ax.text(j, i, annotate(v), ha="center", va="center", fontsize=8,
                        color="black" if light else "white")
    save(fig, path)


def plot_files(results, out):
    """Makes every plot; returns {section: [(file name, caption)]}."""
    made = {"busbw": [], "time": [], "traffic": [], "pingpong": []}
    rows = results["collective"]
    groups = {}
    for r in without_monitored_twins(rows):
        groups.setdefault((r["collective"], r["nranks"], r["medium"]), []).append(r)
    for (coll, n, transport), g in sorted(groups.items()):
        if not any(r["bytes"] > 0 for r in g):
            continue  # the barrier: no sizes to plot against
        stem = f"{coll}_np{n}_{file_slug(transport)}"
        plot_busbw(g, f"{coll}, N = {n}, {transport}: busbw",
                   os.path.join(out, f"busbw_{stem}.png"))
        made["busbw"].append((f"busbw_{stem}.png", f"{coll}, N = {n}, {transport}: busbw"))
        plot_time(g, f"{coll}, N = {n}, {transport}: time (dashed: predicted)",
                  os.path.join(out, f"time_{stem}.png"))
        made["time"].append((f"time_{stem}.png", f"{coll}, N = {n}, {transport}: time"))
    largest = {}
    for r in rows:  # the largest size of each hand-written algorithm (later rows win ties)
        key = (r["collective"], r["algorithm"], r["nranks"])
        if r["traffic"] is not None and (key not in largest or r["bytes"] >= largest[key]["bytes"]):
            largest[key] = r
    for (coll, algo, n), r in sorted(largest.items()):
        name = f"traffic_{coll}_{algo}_np{n}.png"
        title = f"{coll} {algo}, N = {n}, {human_bytes(r['bytes'])} ({r['transport']})"
        if r["vendor"]:
            title += ", as the library counted it"
        plot_heatmap(r["traffic"], title, "bytes sent (row -> column)", os.path.join(out, name))
        made["traffic"].append((name, title))
    made["pingpong"] = plot_pingpong(results["pingpong"], out)
    return made


def plot_pingpong(rows, out):
    made = []
    by_n = {}
    for r in rows:
        if r["bw_matrix"] is not None and r["latency_matrix"] is not None:
            by_n.setdefault(r["nranks"], []).append(r)
    for n, g in sorted(by_n.items()):
        big = max(g, key=lambda r: r["bytes"])
        small = min(g, key=lambda r: r["bytes"])
        name = f"pingpong_bw_np{n}.png"
        title = f"ping-pong bandwidth, N = {n}, {human_bytes(big['bytes'])} ({big['transport']})"
        plot_heatmap(big["bw_matrix"], title, "GB/s", os.path.join(out, name), True,
                     lambda v: f"{v:.3g}")
        made.append((name, title))
        name = f"pingpong_latency_np{n}.png"
        title = (f"ping-pong latency (half round trip), N = {n}, "
                 f"{human_bytes(small['bytes'])} ({small['transport']})")
        plot_heatmap(small["latency_matrix"], title, "us", os.path.join(out, name), True,
                     lambda v: f"{v:.3g}")
        made.append((name, title))
    return made
