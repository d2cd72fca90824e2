"""The statistics of the grid's claim report (tools/claim/zo_claim.py): Student t quantiles and the
paired interval of a difference over seeds. Only the Python standard library is used, which has
no t distribution: the CDF below is the closed form for integer degrees of freedom
(Abramowitz & Stegun 26.7.3-4), inverted by bisection; tests/test_zo_grid.cpp checks it against
the published quantiles (df 1: 12.706, df 2: 4.303, df 4: 2.776, df 30: 2.042 for 0.975).
"""
import math
import statistics


def t_cdf(t, df):
    """P(T <= t) for Student's t with an integer df >= 1."""
    if df < 1 or int(df) != df:
        raise ValueError("t_cdf: df must be a positive integer, not %r" % (df,))
    df = int(df)
    theta = math.atan2(abs(t), math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:  # A = (2/pi) (theta + sin theta (cos theta + 2/3 cos^3 + ... + (2.4...(df-3))/(1.3...(df-2)) cos^(df-2)))
        total, term = 0.0, c
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= c * c * (2.0 * k) / (2.0 * k + 1.0)
        inside = (2.0 / math.pi) * (theta + s * total)
    else:  # A = sin theta (1 + 1/2 cos^2 + 1.3/(2.4) cos^4 + ... + (1.3...(df-3))/(2.4...(df-2)) cos^(df-2))
        total, term = 0.0, 1.0
        for k in range(1, df // 2 + 1):
            total += term
            term *= c * c * (2.0 * k - 1.0) / (2.0 * k)
        inside = s * total
    return 0.5 + 0.5 * inside if t >= 0 else 0.5 - 0.5 * inside


def t_quantile(p, df):
    """The t with P(T <= t) = p, for 0 < p < 1 and an integer df >= 1 (bisection to 1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError("t_quantile: p must lie in (0, 1), not %r" % (p,))
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def paired_interval(pairs, level=0.95):
    """The mean of the differences a - b over (a, b) pairs (one per seed) and its two-sided
    Student t interval: mean ± t_{(1+level)/2, n-1} · sd / sqrt(n). None with fewer than 2 pairs."""
    diffs = [a - b for a, b in pairs]
    n = len(diffs)
    if n < 2:
        return None
    mean, sd = statistics.mean(diffs), statistics.stdev(diffs)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "low": mean - half, "high": mean + half, "diffs": diffs, "level": level}


def straddles_zero(interval):
    return interval is not None and interval["low"] <= 0.0 <= interval["high"]


def common_steps(curves):
    """The steps every curve ([(step, value)]) has, in order."""
    steps = None
    for c in curves:
        s = {p[0] for p in c}
        steps = s if steps is None else steps & s
    return sorted(steps) if steps else []


def mean_curve(curves):
    """Mean dev accuracy per step over the runs that all have that step."""
    return [(st, statistics.mean(dict(c)[st] for c in curves)) for st in common_steps(curves)]


def band_curve(curves):
    """(step, min, max) over the runs at each step they all have: the seeds' spread."""
    return [(st, min(dict(c)[st] for c in curves), max(dict(c)[st] for c in curves)) for st in common_steps(curves)]


def steps_to_reach(curve, target):
    """The first step of a [(step, value)] curve whose value is at least target, or None."""
    for step, acc in curve:
        if acc >= target:
            return step
    return None
