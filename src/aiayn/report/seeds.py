"""How sure a number is: the spread of a metric over a run's seeds, and which row-to-row differences it resolves.

A run trained with k seeds (``seeds``, :meth:`aiayn.runs.Records.seeds`) has k values of each metric. The
tables show their mean and sample standard deviation (:class:`Spread`). Whether a difference between two
rows of the paper (a Table 3 row and the base row) could be seen in our runs is judged with Welch's t
interval (:func:`resolvable_at`): the smallest difference of means that a two-sided Welch t test at level
``1 - LEVEL`` would call significant, given our seed spread of both rows. The paper's difference is
*resolved* when it is larger than that (:func:`resolved`): had our runs reproduced it exactly, seed noise
could not account for it. It is a statement about resolution, not power: a true difference just at the
bound is detected about half the time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LEVEL = 0.95  # two-sided confidence of the interval; 5% is the usual significance level


@dataclass(frozen=True)
class Spread:
    """A metric over ``n`` seeds: ``mean`` and sample standard deviation ``sd`` (n - 1 in the
    denominator; ``None`` for one seed, where it is undefined)."""

    mean: float
    sd: float | None
    n: int


def spread(values: list[float]) -> Spread:
    """Mean and sample sd of ``values`` (one per seed, at least one); a NaN value makes both NaN."""
    n = len(values)
    if n == 0:
        raise ValueError("spread of no values")
    mean = math.fsum(values) / n
    if n == 1:
        return Spread(mean, None, 1)
    return Spread(mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)), n)


def resolvable_at(a: Spread, b: Spread, level: float = LEVEL) -> float | None:
    """The half width of Welch's ``level`` interval of ``a.mean - b.mean``:
    ``t_{(1+level)/2, ν} · sqrt(s_a²/n_a + s_b²/n_b)``, with Welch-Satterthwaite's ν; ``None`` when
    either has one seed (no spread to judge by), 0.0 when both spreads are 0 (then any difference shows)."""
    if a.sd is None or b.sd is None or math.isnan(a.sd) or math.isnan(b.sd):
        return None
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    if va + vb == 0:
        return 0.0
    dof = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    # imported here: the Snakefile imports this module when parsed, and scipy.stats takes about a second
    from scipy import stats

    return float(stats.t.ppf((1 + level) / 2, dof)) * math.sqrt(va + vb)


def resolved(difference: float | None, bound: float | None) -> str | None:
    """``"yes"`` when ``|difference|`` (the paper's) exceeds ``bound`` (:func:`resolvable_at`), else
    ``"no"``; ``None`` when either is unknown."""
    if difference is None or bound is None:
        return None
    return "yes" if abs(difference) > bound else "no"


def cells(key: str, values: list[float]) -> dict[str, float | None]:
    """A table's cells for one metric over seeds: ``key`` the mean, ``key_sd`` the sample sd."""
    result = spread(values)
    return {key: result.mean, f"{key}_sd": result.sd}
