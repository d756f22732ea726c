"""The selection rules the advisor sets beside the fastest algorithm (docs/selection-rules.md
states them in full, with their reasoning and what the libraries do instead), stated once
for Python: `report` sets them against measurements, `predict-rules` against the time
model's predictions at scales this machine cannot run.
"""


def is_pow2(n):
    return n >= 1 and n & (n - 1) == 0


def rule_pick(collective, nranks, nnodes):
    """What the selection rules of docs/selection-rules.md pick, as (algorithm or None, rule).

    The rules depend on N (ranks) and the topology, never on the message size. Topology:
    one node counts as a full mesh, several nodes as a fat-tree network.
    """
    n, one_node = nranks, nnodes <= 1
    if collective == "allreduce":  # docs/selection-rules.md#rule-allreduce
        if n <= 8:
            if one_node:
                return "direct", "N <= 8 and a full mesh (one node): direct, lowest latency"
            return "ring", "N <= 8, not a full mesh (several nodes): ring"
        if n <= 32:
            if not one_node and is_pow2(n):
                return "halving_doubling", ("8 < N <= 32, a fat-tree (several nodes) and N a "
                                            "power of two: halving-doubling")
            return "ring", "8 < N <= 32, not a fat-tree with N a power of two: ring"
        if not one_node:
            return "dbt", "N > 32, several nodes: double binary tree"
        return "ring", "N > 32, one node: ring"
    if collective == "alltoall":  # docs/selection-rules.md#rule-alltoall
        if n <= 8:
            return "pairwise", "N <= 8: pairwise (latency first)"
        if n <= 32:
            return "bruck", "8 < N <= 32: Bruck (balanced)"
        return "ring", "N > 32: ring (bandwidth first)"
    if collective in ("allgather", "reduce_scatter"):  # #rule-allgather-reduce-scatter
        return "ring", "tensor + sequence parallelism: ring for allgather and reduce-scatter"
    return None, f"the rules have nothing for {collective}"


def human_size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def predicted_rules_markdown(verdicts):
    """Markdown lines: per collective, per (N, size) the fastest predicted algorithm beside
    the rules' pick. `verdicts`: the "verdict" lines of predict-rules' jsonl."""
    lines = ["*fastest predicted*: the hand-written algorithm with the lowest predicted time; "
             "*pick ÷ fastest*: the predicted time of the rules' pick over the fastest's. "
             "Topology as the advisor takes it: ceil(N / ranks per node) nodes; one node is a "
             "full mesh, several a fat tree.", ""]
    for coll in sorted({v["collective"] for v in verdicts}):
        rows = sorted((v for v in verdicts if v["collective"] == coll),
                      key=lambda v: (v["nranks"], v["size"]))
        lines += [f"### {coll}", "",
                  "| N | nodes | size | fastest predicted | time (us) | rules pick | time (us) "
                  "| pick ÷ fastest | verdict |",
                  "|--:|--:|--:|---|--:|---|--:|--:|---|"]
        for v in rows:
            pick_us = "—" if v["pick_us"] is None else f"{v['pick_us']:.1f}"
            ratio = "—" if v["pick_over_fastest"] is None else f"{v['pick_over_fastest']:.2f}x"
            lines.append(f"| {v['nranks']} | {v['nodes']} | {human_size(v['size'])} "
                         f"| {v['fastest']} | {v['fastest_us']:.1f} | {v['pick'] or '—'} "
                         f"| {pick_us} | {ratio} | {v['verdict']} |")
        agree = sum(1 for v in rows if v["verdict"] == "agree")
        lines += ["", f"The rules' pick is the fastest predicted at {agree} of {len(rows)} "
                      "points.", ""]
    return lines
