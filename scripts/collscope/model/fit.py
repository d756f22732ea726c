"""The arithmetic of scripts/fit-model, without running anything (so it is unit-tested on
synthetic measurements: collectives/tests/model_fit_py_test.py). MODEL.md, "Fitting",
explains every step; in short:

- every probe runs several times (repeats); per size, the repeats' values go through
  `robust`: values more than OUTLIER_MADS robust standard deviations from the median are
  dropped, the median of the rest is the estimate and their relative robust standard
  deviation the spread;
- times must not fall as sizes grow: `isotonic` (pool-adjacent-violators) makes the
  per-size estimates non-decreasing before anything is derived from them;
- a message's port time is its measured time less the per-message fixed part (the
  smallest messages' time), floored at bytes / peak, where the peak bandwidth is the best
  one among the sizes whose port time is at least that fixed part (from Hockney's n_1/2
  up); below n_1/2 the bandwidth drowns in the latency, and those sizes share one
  bandwidth, a least-squares fit through the origin;
- overhead (LogP's o) is the slope of a pipelined chain's time against its number of
  messages (`theil_sen`); link_delay is what the smallest ping-pong leaves of o + L + o;
- start_lat + sync_lat is what the smallest exchange leaves beyond one message;
- where a message's bytes sit changes its port time on shared memory: bytes the sender
  wrote earlier in the call ("written": `one_way`, `both_ways`) against the caller's
  unchanged input (`one_way_input`, `both_ways_input`). A ping-pong's half round trip is
  half of each (the ping leaves the payload buffer, the pong leaves where the ping
  landed); the pong is a one-way send of written bytes with no copy or third rank in it,
  so the written one-way leg is derived from it: 2 x the ping-pong's port time less the
  input leg's (`written_ports`; scripts/fit-model's docstring says why).

Every function takes and returns plain numbers, lists and dicts (seconds, bytes).
"""
import statistics

MAD_SCALE = 1.4826    # MAD x this = the standard deviation, for normal noise
OUTLIER_MADS = 3.0    # a repeat this many robust SDs from the median is dropped
SD_FLOOR = 0.01       # relative: when most repeats agree exactly, 3% off is still kept
SMALL_SIZES = 3       # the per-message fixed part: the median over this many smallest sizes
WRITTEN_FLOOR = 0.5   # the derived written leg's port time: at least this x the ping-pong's
INPUT_KEYS = ("one_way_input", "both_ways_input")  # in every band or in none (the loader)


class FitError(Exception):
    """The measurements cannot be fitted (too few sizes, no growth): exit 3."""


# ---- robust statistics ---------------------------------------------------------------


def robust(values):
    """(estimate, spread, kept, dropped) of repeated measurements of one thing: the median
    of the values within OUTLIER_MADS robust SDs of the median (the robust SD being
    1.4826 MAD, at least SD_FLOOR of the median), and the relative robust SD of those.
    One value: spread 0."""
    values = [float(v) for v in values]
    if not values:
        raise FitError("no measurement to fit")
    med = statistics.median(values)
    sd = max(MAD_SCALE * statistics.median(abs(v - med) for v in values), SD_FLOOR * abs(med))
    inside = [abs(v - med) <= OUTLIER_MADS * sd for v in values]
    kept = [v for v, ok in zip(values, inside) if ok]
    dropped = [v for v, ok in zip(values, inside) if not ok]
    est = statistics.median(kept)
    kept_sd = MAD_SCALE * statistics.median(abs(v - est) for v in kept)
    spread = kept_sd / abs(est) if est != 0 else 0.0
    return est, spread, kept, dropped


def isotonic(values):
    """The non-decreasing sequence closest to `values` in least squares (pool adjacent
    violators): a longer message cannot take less time, so a dip is noise."""
    blocks = []  # [mean, weight]
    for v in values:
        blocks.append([float(v), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2 = blocks.pop()
            m1, w1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    out = []
    for mean, weight in blocks:
        out += [mean] * weight
    return out


def theil_sen(xs, ys):
    """The median of the slopes between every two points: a line fit that ignores up to
    ~29% of wild points."""
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i])
              for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[j] != xs[i]]
    if not slopes:
        raise FitError("need two different x values to fit a slope")
    return statistics.median(slopes)


# ---- link classes --------------------------------------------------------------------


def pair_class(node_of_rank, a, b):
    return "intra_node" if node_of_rank[a] == node_of_rank[b] else "inter_node"


def classify_pairs(node_of_rank):
    """{"intra_node": [(a, b), ...], "inter_node": [...]} over every pair a < b."""
    out = {"intra_node": [], "inter_node": []}
    n = len(node_of_rank)
    for a in range(n):
        for b in range(a + 1, n):
            out[pair_class(node_of_rank, a, b)].append((a, b))
    return out


def spans_nodes(node_of_rank):
    return len(set(node_of_rank)) > 1


def pingpong_times(record):
    """{link class: seconds} of one pingpong JSON record: the median over the class's pairs
    of each pair's median half round trip (`latency_us_matrix` of --pairs all), or the
    record's own time_us (one pair) classed by `pair`."""
    nodes = record.get("node_of_rank") or [0] * int(record.get("nranks", 2))
    matrix = record.get("latency_us_matrix")
    if not matrix:
        a, b = record.get("pair") or (0, 1)
        return {pair_class(nodes, a, b): record["time_us"] * 1e-6}
    out = {}
    for cls, pairs in classify_pairs(nodes).items():
        times = [matrix[a][b] for a, b in pairs if matrix[a][b] > 0]
        if times:
            out[cls] = statistics.median(times) * 1e-6
    return out


def call_class(record):
    """The link class a 2-rank call ran on, from its node_of_rank."""
    nodes = record.get("node_of_rank") or [0, 0]
    return pair_class(nodes, 0, 1) if len(nodes) >= 2 else "intra_node"


# ---- per-size curves -----------------------------------------------------------------


def per_size(samples):
    """{bytes: [repeats]} -> sorted [(bytes, estimate, spread, kept, dropped)]."""
    return [(b, *robust(v)) for b, v in sorted(samples.items())]


def fixed_part(samples):
    """Per-message fixed time: the median over the SMALL_SIZES smallest sizes' estimates,
    as a robust estimate over repeats (repeat i's value: the median of its small sizes)."""
    sizes = sorted(samples)[:SMALL_SIZES]
    repeats = min(len(samples[b]) for b in sizes)
    per_repeat = [statistics.median(samples[b][i] for b in sizes) for i in range(repeats)]
    return robust(per_repeat)[:2]


def port_times(samples, fixed):
    """[(bytes, port seconds)] from per-size times and the fixed part (see the module's
    docstring). From Hockney's n_1/2 (the first size whose port time reaches the fixed
    part) up: the isotonic estimates less `fixed`, floored at bytes / peak. Below it the
    port time drowns in the latency's noise, and an isotonic fit of noise climbs like a
    staircase, so those sizes share one bandwidth: the least-squares line through the
    origin of their port times (at most the peak)."""
    rows = per_size(samples)
    sizes = [r[0] for r in rows]
    raw = [r[1] - fixed for r in rows]
    port = [max(p, 0.0) for p in isotonic(raw)]
    long_from = next((i for i, p in enumerate(port) if p >= fixed and p > 0), len(sizes))
    rates = [b / p for b, p in zip(sizes[long_from:], port[long_from:])]
    sbt = sum(b * t for b, t in zip(sizes[:long_from], raw[:long_from]))
    sbb = sum(b * b for b in sizes[:long_from])
    if not rates and sbt <= 0:
        raise FitError("no size takes longer than the smallest one: no bandwidth to fit "
                       "(measure larger sizes)")
    peak = max(rates) if rates else sbb / sbt
    small_bw = min(peak, sbb / sbt) if sbt > 0 else peak
    return ([(b, b / small_bw) for b in sizes[:long_from]] +
            [(b, max(p, b / peak)) for b, p in zip(sizes[long_from:], port[long_from:])])


def points_of(samples, b):
    return [[b, t] for t in samples[b]]


def curve(samples, fixed):
    """One probe's {bytes: (port seconds, spread, points)}: what a band keeps of it."""
    ports = dict(port_times(samples, fixed))
    spreads = {r[0]: r[2] for r in per_size(samples)}
    return {b: (ports[b], spreads[b], points_of(samples, b)) for b in ports}


def written_ports(pingpong, input_port):
    """{bytes: port seconds} of a message whose bytes the sender wrote in the call, from
    the ping-pong's port times and the input leg's ({bytes: seconds} each): the half round
    trip is half an input leg (the ping leaves the payload buffer) and half a written one
    (the pong leaves where the ping landed), so written = 2 pp - input. Floored at
    WRITTEN_FLOOR x pp: a noise guard, for when a noisy input leg drives the difference
    towards zero or below (either placement may be the faster one: that depends on the
    cache topology, MODEL.md "Where the bytes sit")."""
    return {b: max(2 * pp - input_port[b], WRITTEN_FLOOR * pp) for b, pp in pingpong.items()}


def written_curve(pingpong, input_curve):
    """The ping-pong's curve with its port times made the written leg's; the spread and
    points stay the ping-pong's (the derived leg has no repeats of its own)."""
    ports = written_ports({b: c[0] for b, c in pingpong.items()},
                          {b: c[0] for b, c in input_curve.items()})
    return {b: (ports[b], *c[1:]) for b, c in pingpong.items()}


def placed_one_way(pingpong, input_curve, fixed):
    """(written, input) one-way curves from the ping-pong's and the broadcast's. From the
    ping-pong's n_1/2 up (its port time at least its fixed part) the input leg is the
    broadcast's and the written one derived (written_curve). Below it both are the
    ping-pong's own: latency dominates there, the placements differ by less than the
    probes' noise, and a difference of two noisy probes is the noise doubled."""
    long = {b for b, c in pingpong.items() if c[0] >= fixed}
    written = written_curve(pingpong, input_curve)
    return ({b: written[b] if b in long else c for b, c in pingpong.items()},
            {b: c if b in long else (pingpong[b][0], *c[1:]) for b, c in input_curve.items()})


def check_covers(curves, key):
    """An input key must be in every band or in none: its probe needs every one-way size."""
    missing = sorted(set(curves["one_way"]) - set(curves.get(key, curves["one_way"])))
    if missing:
        raise FitError(f"the {key} probe has no size {missing[0]} of the ping-pong's")


def link_bands(curves):
    """The model file's bands of one link class from its curves ({key: curve}; one_way
    required, the others where measured): per one-way size, each key's bandwidth, its
    spread and its measured points."""
    bands = []
    for b in sorted(curves["one_way"]):
        band, spread, points = {"bytes": b}, {}, {}
        for key, c in curves.items():
            if b in c:
                port, spread[key], points[key] = c[b]
                band[key] = b / port
        band["spread"] = spread
        band["points"] = points
        bands.append(band)
    return bands


def curve_seconds(bands, size):
    """The time of `size` bytes on rate bands, as the simulator reads them (MODEL.md,
    "Costs by size"): linear between two bands' sizes, proportional beyond the ends."""
    pts = [(b["bytes"], b["bytes"] / b["rate"]) for b in bands]
    if size <= pts[0][0]:
        return pts[0][1] * size / pts[0][0]
    if size >= pts[-1][0]:
        return pts[-1][1] * size / pts[-1][0]
    for (b0, t0), (b1, t1) in zip(pts, pts[1:]):
        if b0 <= size <= b1:
            return t0 + (size - b0) / (b1 - b0) * (t1 - t0)


def less_local_work(samples, bands):
    """{bytes: [repeats]} less the time of a local copy of `bytes` on `bands` (the
    both-ways probes, the all-to-all and the recursive-doubling all-gather, copy their
    own block before they exchange)."""
    return {b: [t - curve_seconds(bands, b) for t in v] for b, v in samples.items()}


def rate_bands(samples):
    """reduce_rate / copy_rate bands: per size the rate of the isotonic time, its spread
    and the measured points."""
    rows = per_size(samples)
    times = isotonic([r[1] for r in rows])
    return [{"bytes": row[0], "rate": row[0] / t, "spread": row[2],
             "points": points_of(samples, row[0])}
            for row, t in zip(rows, times) if t > 0]


# ---- scalar parameters ---------------------------------------------------------------


def overhead_from_chain(chains, cap):
    """LogP's o: per repeat, the Theil-Sen slope of a pipelined chain's time against its
    number of messages ([(messages, seconds)]); robust over repeats, in [0, cap].
    Returns (o, spread)."""
    slopes = [theil_sen([k for k, _ in c], [t for _, t in c]) for c in chains if len(c) >= 2]
    if not slopes:
        raise FitError("the message-rate probe gave fewer than two sizes")
    o, spread = robust(slopes)[:2]
    return min(max(o, 0.0), cap), spread


def latencies(fixed_one, fixed_both, overhead, barrier, barrier_messages):
    """(link_delay, start_lat, sync_lat). A ping-pong message costs o + L + o beyond its
    port time, so L = fixed_one - 2o. An exchange (one message each way, one call) costs
    start_lat + o + L + o + sync_lat, so start_lat + sync_lat = fixed_both - fixed_one.
    The split: sync_lat is the barrier's time less its messages, at most that sum."""
    link_delay = max(fixed_one - 2 * overhead, 0.0)
    per_call = max(fixed_both - fixed_one, 0.0)
    sync = min(max(barrier - barrier_messages * fixed_one, 0.0), per_call) if barrier else 0.0
    return link_delay, per_call - sync, sync


def link_curves(m):
    """{key: curve} of one class's measurements: one_way (the written leg where the input
    one was measured, else the ping-pong's own), one_way_input, both_ways, both_ways_input,
    each port time beyond its own probe's fixed part (placed_one_way for the two one-way
    legs below n_1/2)."""
    fixed_one = fixed_part(m["one_way"])[0]
    curves = {"one_way": curve(m["one_way"], fixed_one)}
    for key in ("one_way_input", "both_ways", "both_ways_input"):
        if m.get(key):
            curves[key] = curve(m[key], fixed_part(m[key])[0])
    for key in INPUT_KEYS:
        check_covers(curves, key)
    if "one_way_input" in curves:
        curves["one_way"], curves["one_way_input"] = placed_one_way(
            curves["one_way"], curves["one_way_input"], fixed_one)
    return curves


def link_class(m):
    """The model file's link class from one class's measurements `m`: one_way (the
    ping-pong, half input and half written), one_way_input, both_ways (written) and
    both_ways_input ({bytes: [repeats]}; the last three may be empty: no such key in the
    bands), chains ([[(messages, seconds)], ...] per repeat), barrier (seconds or None),
    barrier_messages. start_lat + sync_lat come from the input exchange where measured,
    else from the written one (a class without placements keeps every exchange there)."""
    if len(m["one_way"]) < SMALL_SIZES + 2:
        raise FitError(f"need at least {SMALL_SIZES + 2} ping-pong sizes to fit a link")
    fixed_one, spread_one = fixed_part(m["one_way"])
    exchange = m.get("both_ways_input") or m.get("both_ways")
    fixed_both, spread_both = fixed_part(exchange) if exchange else (fixed_one, 0.0)
    o, spread_o = overhead_from_chain(m["chains"], fixed_one / 2)
    link_delay, start, sync = latencies(fixed_one, fixed_both, o, m.get("barrier"),
                                        m.get("barrier_messages", 1))
    return {
        "link_delay": link_delay, "overhead": o, "start_lat": start, "sync_lat": sync,
        "bwurate": 1.0,
        "bands": link_bands(link_curves(m)),
        "spread": {"link_delay": spread_one, "overhead": spread_o,
                   "start_lat": spread_both, "sync_lat": spread_both},
    }


def gbps_pair(band, key):
    """'written/input' GB/s of one direction (just the written one without an input key)."""
    text = f"{band[key] / 1e9:.3f}" if key in band else "nan"
    return text + (f"/{band[key + '_input'] / 1e9:.3f}" if key + "_input" in band else "")


def spread_pair(band, key):
    s = band.get("spread", {})
    text = f"{s.get(key, 0) * 100:.1f}"
    return text + (f"/{s[key + '_input'] * 100:.1f}" if key + "_input" in s else "") + "%"


def describe_link(link):
    """A few lines for the terminal: scalars and one row per band (bandwidths and spreads
    as written/input where both were measured)."""
    lines = [f"  link_delay {link['link_delay'] * 1e6:.3f} us, overhead "
             f"{link['overhead'] * 1e6:.3f} us, start_lat {link['start_lat'] * 1e6:.3f} us, "
             f"sync_lat {link['sync_lat'] * 1e6:.3f} us",
             f"  {'bytes':>10} {'one way GB/s':>15} {'spread':>11} {'both ways GB/s':>15} "
             f"{'spread':>11}   (written/input)"]
    for band in link["bands"]:
        lines.append(f"  {band['bytes']:>10} {gbps_pair(band, 'one_way'):>15} "
                     f"{spread_pair(band, 'one_way'):>11} {gbps_pair(band, 'both_ways'):>15} "
                     f"{spread_pair(band, 'both_ways'):>11}")
    return lines
