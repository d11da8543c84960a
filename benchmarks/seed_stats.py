"""Statistics for learning curves over seeds: Welch's and the paired t-test, and how many seeds a
difference needs.

Standard library only (the benchmarks need no scipy). Checked against scipy.stats in
``tests/test_benchmarks.py``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((qam + 2 * m) * (a + 2 * m)),
            -(a + m) * (qab + m) * x / ((a + 2 * m) * (qap + 2 * m)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


@dataclass(frozen=True)
class Welch:
    """Welch's unequal-variance t-test of mean(b) - mean(a)."""

    difference: float
    t: float
    df: float
    p: float


def welch(a: list[float], b: list[float]) -> Welch:
    """Welch's t-test of two samples (at least two values each)."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    difference = statistics.fmean(b) - statistics.fmean(a)
    if va + vb == 0.0:
        return Welch(difference, math.inf if difference else 0.0, len(a) + len(b) - 2.0, 0.0 if difference else 1.0)
    t = difference / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return Welch(difference, t, df, t_two_sided(t, df))


def paired(a: list[float], b: list[float]) -> Welch:
    """Student's paired t-test of b - a, seed by seed (``a[i]`` and ``b[i]`` trained with the same seed:
    the same batch order and dropout masks, only what the runs differ in changes). ``df`` is n - 1."""
    differences = [y - x for x, y in zip(a, b, strict=True)]
    mean, n = statistics.fmean(differences), len(differences)
    spread = statistics.stdev(differences) / math.sqrt(n)
    if spread == 0.0:
        return Welch(mean, math.inf if mean else 0.0, n - 1.0, 0.0 if mean else 1.0)
    return Welch(mean, mean / spread, n - 1.0, t_two_sided(mean / spread, n - 1.0))


def seeds_needed(a: list[float], b: list[float], alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Seeds per run for a two-sided test at ``alpha`` to find the observed difference of means with
    probability ``power``, given the seeds' pooled spread (normal approximation, plus one seed for the
    t distribution's heavier tails at small counts); None when the means are equal."""
    difference = statistics.fmean(b) - statistics.fmean(a)
    if difference == 0.0:
        return None
    pooled = ((len(a) - 1) * statistics.variance(a) + (len(b) - 1) * statistics.variance(b)) / (len(a) + len(b) - 2)
    z = statistics.NormalDist().inv_cdf
    return max(2, math.ceil(2.0 * (z(1 - alpha / 2) + z(power)) ** 2 * pooled / difference**2) + 1)
