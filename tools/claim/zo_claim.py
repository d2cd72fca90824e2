"""Does Sparse-MeZO beat MeZO? The grid's claim report (claim.md, written by `zo_grid.py table`),
the edge rule the runner extends by, and the distribution check against an independent peer.

Edges and the extension (the runner's rule, and the report's):
  A best setting sits ON AN EDGE when, in a dimension searched with two or more values, it has
  the smallest or the largest value searched. A grid with "extend_edges" warns and extends ONCE:
  the setting one step further out in each edge dimension (lr x2 above the largest, /2 below the
  smallest; sparsity s -> 1 - (1 - s)/2 above the largest and s/2 below the smallest, so that it
  stays inside (0, 1)), and the corner when both dimensions sit on an edge, at the first seed.
  The best over the search and those runs then gets the other seeds. The report names every
  best setting still on an edge of the values run, saying whether it was extended already.

The verdict on "S-MeZO beats MeZO" per task, from test accuracy paired by seed: d_i = S-MeZO's
minus MeZO's test accuracy at seed i, over the n >= 2 seeds both finished, and the 95% interval
mean(d) ± t_{0.975, n-1} · sd(d) / sqrt(n) (Student t, tools/claim/zo_stats.py):
  holds                    the interval lies above 0 (low > 0), and MeZO's best setting is not
                           on an edge (a better MeZO could lie beyond it);
  does not hold            the interval lies below 0 (high < 0), and S-MeZO's best setting is not
                           on an edge (a better S-MeZO could lie beyond it);
  undecided at this budget otherwise: the interval holds 0, fewer than 2 paired seeds, or the
                           edge that forbids the verdict the interval alone would give.
The paper's speed claim is reported beside it, not folded into the verdict: the first dev
evaluation at which S-MeZO's mean curve reaches MeZO's final dev accuracy (mean over seeds).

The peer check (`zo_grid.py compare`): at every dev evaluation step both have, our mean over
seeds lies within the peer's seed range (min..max) and the peer's mean within ours; each step
where one does not is listed.
"""
from zo_stats import band_curve, mean_curve, paired_interval, steps_to_reach, t_quantile

LABEL = {"mezo": "MeZO", "rmezo": "R-MeZO", "smezo": "S-MeZO"}


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)


def fmt(x):
    """2e-06 -> 2e-6, as the run names write it."""
    return ("%g" % x).replace("e-0", "e-").replace("e+0", "e+")


def round6(x):
    return float("%.6g" % x)


def edges(setting, space):
    """[(dim, side)]: where a (sparsity, lr) setting sits on an edge of space ({"sparsity":
    [values], "lr": [values]}; a dimension with fewer than two values was not searched)."""
    out = []
    for dim, value in (("sparsity", setting[0] or 0.0), ("lr", setting[1])):
        values = space.get(dim, [])
        if len(values) < 2:
            continue
        if close(value, min(values)):
            out.append((dim, "low"))
        elif close(value, max(values)):
            out.append((dim, "high"))
    return out


def step_out(dim, side, value):
    """One step beyond an edge: lr x2 or /2; sparsity halfway to 1 or to 0."""
    if dim == "lr":
        return round6(value * 2.0 if side == "high" else value / 2.0)
    return round6(1.0 - (1.0 - value) / 2.0 if side == "high" else value / 2.0)


def extension_settings(setting, space):
    """(edges, [(sparsity, lr)] to run): the extension of a best setting on an edge."""
    sides = edges(setting, space)
    out = {dim: step_out(dim, side, setting[0] if dim == "sparsity" else setting[1]) for dim, side in sides}
    sp, lr = setting
    new = []
    if "lr" in out:
        new.append((sp, out["lr"]))
    if "sparsity" in out:
        new.append((out["sparsity"], lr))
    if len(out) == 2:
        new.append((out["sparsity"], out["lr"]))
    return sides, new


def describe_edges(sides):
    return ", ".join("%s %s" % (dim, "largest" if side == "high" else "smallest") for dim, side in sides)


def searched_space(method_runs):
    """The sparsities and learning rates a method's runs tried (search and extension)."""
    return {"sparsity": sorted({r["setting"][0] or 0.0 for r in method_runs}),
            "lr": sorted({r["setting"][1] for r in method_runs})}


def pct(x):
    return "–" if x is None else "%.1f" % (100.0 * x)


def signed_points(x):
    return "%+.1f" % (100.0 * x)


def test_by_seed(runs):
    return {r["seed"]: r["summary"]["test_acc"] for r in runs
            if isinstance(r["summary"].get("test_acc"), (int, float))}


def verdict(interval, mezo_edges, smezo_edges):
    """(word, why) by the rule in the module docstring."""
    if interval is None:
        return "undecided at this budget", "fewer than 2 seeds with both methods finished"
    if interval["low"] > 0.0:
        if mezo_edges:
            return "undecided at this budget", "the interval lies above 0, but MeZO's best setting sits on an edge (%s)" \
                % describe_edges(mezo_edges)
        return "holds", "the 95% interval lies above 0"
    if interval["high"] < 0.0:
        if smezo_edges:
            return "undecided at this budget", "the interval lies below 0, but S-MeZO's best setting sits on an edge " \
                "(%s)" % describe_edges(smezo_edges)
        return "does not hold", "the 95% interval lies below 0"
    return "undecided at this budget", "the 95% interval holds 0"


def method_rows(chosen, runs_by_method, extensions, mezo_target):
    """The per-method table rows and each method's edges after the search."""
    rows, edge_of = [], {}
    for method in [m for m in ("mezo", "rmezo", "smezo") if m in chosen]:
        setting, runs = chosen[method]
        sides = edges(setting, searched_space(runs_by_method[method]))
        edge_of[method] = sides
        tests = list(test_by_seed(runs).values())
        mean = sum(tests) / len(tests) if tests else None
        sd = (sum((t - mean) ** 2 for t in tests) / (len(tests) - 1)) ** 0.5 if len(tests) > 1 else 0.0
        finals = [r["summary"]["final_dev_acc"] for r in runs if isinstance(r["summary"].get("final_dev_acc"), (int, float))]
        reach = steps_to_reach(mean_curve([r["curve"] for r in runs]), mezo_target - 1e-9) if mezo_target else None
        rates = [r["summary"]["steps_per_s"] for r in runs if r["summary"].get("steps_per_s")]
        edge = "–"
        if sides:
            edge = "ON AN EDGE (%s)%s" % (describe_edges(sides), ", after extending once" if method in extensions
                                          else ", not extended")
        rows.append("| %s | %s, %s | %d | %s ± %s | %s | %s | %s | %s |" % (
            LABEL.get(method, method), fmt(setting[0] or 0.0), fmt(setting[1]), len(runs),
            pct(mean), "%.1f" % (100.0 * sd), pct(sum(finals) / len(finals) if finals else None),
            "not reached" if reach is None else reach,
            "%.0f" % (1000.0 * len(rates) / sum(rates)) if rates else "–", edge))
    return rows, edge_of


def task_report(task, chosen, runs_by_method, evals, extensions, level=0.95):
    """(markdown lines, verdict word) of one task. chosen: {method: (setting, runs of its seeds)};
    runs_by_method: every finished run per method; evals: {name: eval json}; extensions:
    {method: the runner's extension record}."""
    mezo_target = None
    if "mezo" in chosen:
        finals = [r["summary"]["final_dev_acc"] for r in chosen["mezo"][1]]
        mezo_target = sum(finals) / len(finals) if finals else None
    lines = ["## %s" % task, "",
             "| method | best setting (sparsity, lr) | seeds | test acc % (mean ± sd) | final dev % (mean) | "
             "steps to MeZO's final dev | ms/step | edge |", "|---|---|---|---|---|---|---|---|"]
    rows, edge_of = method_rows(chosen, runs_by_method, extensions, mezo_target)
    lines += rows + [""]
    base = ", ".join("%s %s" % (name.replace("eval-", ""), pct(j.get("accuracy"))) for name, j in sorted(evals.items())
                     if isinstance(j.get("accuracy"), (int, float)))
    lines.append("Baselines (test accuracy %%): %s." % (base or "none run"))
    for method, record in sorted(extensions.items()):
        lines.append("Extended once: %s's best setting after the search, %s, sat on an edge (%s); ran %s." % (
            LABEL.get(method, method), record.get("best_after_search"), record.get("edges"), record.get("added")))
    if "mezo" not in chosen or "smezo" not in chosen:
        lines += ["", "**S-MeZO beats MeZO on %s: undecided at this budget** (MeZO or S-MeZO has no finished run)." % task, ""]
        return lines, "undecided at this budget"
    ours, theirs = test_by_seed(chosen["smezo"][1]), test_by_seed(chosen["mezo"][1])
    seeds = sorted(set(ours) & set(theirs))
    interval = paired_interval([(ours[s], theirs[s]) for s in seeds], level)
    if interval:
        lines.append("Paired S-MeZO − MeZO test accuracy, seeds %s: %s points; mean %s, sd %.1f, %d%% t interval "
                     "[%s, %s] (t = %.3f, df %d)." % (
                         ", ".join(str(s) for s in seeds), ", ".join(signed_points(d) for d in interval["diffs"]),
                         signed_points(interval["mean"]), 100.0 * interval["sd"], round(100 * level),
                         signed_points(interval["low"]), signed_points(interval["high"]),
                         t_quantile(0.5 + level / 2.0, interval["n"] - 1), interval["n"] - 1))
    mine = steps_to_reach(mean_curve([r["curve"] for r in chosen["smezo"][1]]), mezo_target - 1e-9)
    base = steps_to_reach(mean_curve([r["curve"] for r in chosen["mezo"][1]]), mezo_target - 1e-9)
    lines.append("Speed (the paper's claim): S-MeZO's mean dev curve reaches MeZO's final dev accuracy (%s %%) %s; "
                 "MeZO's at step %s%s." % (pct(mezo_target), "at step %d" % mine if mine else "at no evaluation",
                                          base, " (%.1f× faster)" % (base / mine) if mine and base else ""))
    word, why = verdict(interval, edge_of.get("mezo"), edge_of.get("smezo"))
    lines += ["", "**S-MeZO beats MeZO on %s: %s** (%s)." % (task, word, why), ""]
    return lines, word


def compare_curves(ours, theirs):
    """(lines, misses) of the peer check: ours and theirs are lists of per-seed dev curves."""
    mine, peer = dict(mean_curve(ours)), dict(mean_curve(theirs))
    my_band = {s: (lo, hi) for s, lo, hi in band_curve(ours)}
    peer_band = {s: (lo, hi) for s, lo, hi in band_curve(theirs)}
    lines = ["| step | our mean % | our min..max | peer mean % | peer min..max | ours in theirs | theirs in ours |",
             "|---|---|---|---|---|---|---|"]
    misses = []
    for step in sorted(set(mine) & set(peer)):
        a_in = peer_band[step][0] - 1e-9 <= mine[step] <= peer_band[step][1] + 1e-9
        b_in = my_band[step][0] - 1e-9 <= peer[step] <= my_band[step][1] + 1e-9
        if not a_in:
            misses.append("step %d: our mean %s outside the peer's %s..%s" % (step, pct(mine[step]), pct(peer_band[step][0]),
                                                                            pct(peer_band[step][1])))
        if not b_in:
            misses.append("step %d: the peer's mean %s outside our %s..%s" % (step, pct(peer[step]), pct(my_band[step][0]),
                                                                             pct(my_band[step][1])))
        lines.append("| %d | %s | %s..%s | %s | %s..%s | %s | %s |" % (
            step, pct(mine[step]), pct(my_band[step][0]), pct(my_band[step][1]), pct(peer[step]),
            pct(peer_band[step][0]), pct(peer_band[step][1]), "yes" if a_in else "NO", "yes" if b_in else "NO"))
    return lines, misses
