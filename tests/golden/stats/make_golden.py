"""Write golden.json: expected values for tests/stats, from scipy/statsmodels or by hand.

Run from the repository root:

    python tests/golden/stats/make_golden.py

The script never imports steadyeval, so the values are independent of the code under
test. Inputs are stored next to the expected outputs; random inputs come from fixed seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import cochrans_q
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW, ztest

OUT = Path(__file__).with_name("golden.json")


def mcnemar_cases() -> list[dict[str, Any]]:
    cases = []
    for b, c in [(51, 52), (10, 2), (3, 15), (0, 5), (7, 7), (25, 40), (100, 70), (1, 0)]:
        n = b + c
        k = min(b, c)
        exact = sm_mcnemar([[0, b], [c, 0]], exact=True)
        asym = sm_mcnemar([[0, b], [c, 0]], exact=False, correction=False)
        # Continuity correction clipped at 0 (statsmodels does not clip; same when b != c).
        cc_stat = max(abs(b - c) - 1, 0) ** 2 / n
        if b != c:
            sm_cc = sm_mcnemar([[0, b], [c, 0]], exact=False, correction=True)
            assert math.isclose(sm_cc.statistic, cc_stat)
        # Mid-p, Fagerland, Lydersen & Laake (2013): 2 [P(X <= k) - P(X = k)/2], capped at 1.
        pmf = sps.binom.pmf(k, n, 0.5)
        midp = min(1.0, 2 * (sps.binom.cdf(k, n, 0.5) - pmf / 2))
        cases.append(
            {
                "b": b,
                "c": c,
                "exact": [float(exact.statistic), min(1.0, float(exact.pvalue))],
                "midp": [float(k), float(midp)],
                "asymptotic": [float(asym.statistic), float(asym.pvalue)],
                "asymptotic-cc": [cc_stat, float(sps.chi2.sf(cc_stat, 1))],
            }
        )
    return cases


def cochran_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(20240601)
    cases = []
    for n, k in [(30, 3), (50, 4), (12, 2), (80, 5)]:
        p = rng.uniform(0.2, 0.8, size=n)[:, None] + rng.uniform(-0.15, 0.15, size=k)[None, :]
        m = (rng.uniform(size=(n, k)) < np.clip(p, 0, 1)).astype(int)
        r = cochrans_q(m)
        cases.append(
            {
                "matrix": m.tolist(),
                "statistic": float(r.statistic),
                "pvalue": float(r.pvalue),
                "df": int(r.df),
            }
        )
    return cases


def proportion_cases() -> list[dict[str, Any]]:
    cases = []
    for k, n in [(0, 10), (1, 10), (5, 10), (10, 10), (133, 300), (152, 300), (3, 1000)]:
        for conf in (0.95, 0.9, 0.99):
            w = proportion_confint(k, n, alpha=1 - conf, method="wilson")
            b = proportion_confint(k, n, alpha=1 - conf, method="beta")
            cases.append(
                {
                    "k": k,
                    "n": n,
                    "confidence": conf,
                    "wilson": [float(w[0]), float(w[1])],
                    "clopper_pearson": [float(b[0]), float(b[1])],
                }
            )
    return cases


def eq4_by_loops(x: np.ndarray, g: np.ndarray) -> float:
    """Miller (2024) eq. 4 written as literally as possible (double loop per cluster)."""
    n = len(x)
    mean = x.mean()
    se_clt_sq = x.var(ddof=1) / n
    cross = 0.0
    for c in np.unique(g):
        members = x[g == c]
        for i in range(len(members)):
            for j in range(len(members)):
                if i != j:
                    cross += (members[i] - mean) * (members[j] - mean)
    return math.sqrt(se_clt_sq + cross / n**2)


def clustered_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    cases = []
    for n_clusters, per in [(10, 4), (25, 3), (6, 7)]:
        g = np.repeat(np.arange(n_clusters), per)
        effect = rng.normal(0, 0.8, size=n_clusters)[g]
        x = (rng.normal(0, 1, size=g.size) + effect > 0).astype(float)
        ols = sm.OLS(x, np.ones_like(x)).fit(cov_type="cluster", cov_kwds={"groups": g})
        cases.append(
            {
                "scores": x.tolist(),
                "clusters": [f"c{v}" for v in g],
                "mean": float(x.mean()),
                "se_clt": float(DescrStatsW(x).std_mean),
                "se_eq4": eq4_by_loops(x, g),
                "se_cr1": float(ols.bse[0]),
            }
        )
    return cases


def paired_difference_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(11)
    cases = []
    for n in (40, 300):
        p = rng.uniform(0.1, 0.9, size=n)
        a = (rng.uniform(size=n) < p + 0.05).astype(float)
        b = (rng.uniform(size=n) < p).astype(float)
        d = a - b
        z, pval = ztest(d, value=0.0)
        low, high = DescrStatsW(d).zconfint_mean(alpha=0.05)
        cases.append(
            {
                "a": a.tolist(),
                "b": b.tolist(),
                "estimate": float(d.mean()),
                "se": float(DescrStatsW(d).std_mean),
                "statistic": float(z),
                "pvalue": float(pval),
                "low": float(low),
                "high": float(high),
            }
        )
    return cases


def multiple_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(3)
    inputs = [
        [0.01, 0.04, 0.03, 0.005],
        [0.2, 0.2, 0.01, 0.5, 0.049, 1.0],
        rng.uniform(0, 0.2, size=15).tolist(),
        [0.0, 1.0, 0.5],
    ]
    cases = []
    for p in inputs:
        h = multipletests(p, alpha=0.05, method="holm")
        bh = multipletests(p, alpha=0.05, method="fdr_bh")
        cases.append(
            {
                "pvalues": p,
                "holm": h[1].tolist(),
                "holm_reject": h[0].tolist(),
                "bh": bh[1].tolist(),
                "bh_reject": bh[0].tolist(),
            }
        )
    return cases


def correlation_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    cases = []
    for n, ties in [(8, False), (20, True), (50, False), (30, True)]:
        x = rng.normal(size=n)
        y = 0.5 * x + rng.normal(size=n)
        if ties:
            x, y = np.round(x), np.round(y * 2) / 2
        s = sps.spearmanr(x, y)
        k = sps.kendalltau(x, y, variant="b")
        cases.append(
            {
                "x": x.tolist(),
                "y": y.tolist(),
                "spearman": [float(s.statistic), float(s.pvalue)],
                "kendall": [float(k.statistic), float(k.pvalue)],
            }
        )
    return cases


def kendall_w_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(9)
    cases = []
    for m, n, ties in [(4, 6, False), (10, 5, True), (3, 8, True)]:
        base = np.arange(n, dtype=float)
        r = base[None, :] + rng.normal(0, 2.0, size=(m, n))
        if ties:
            r = np.round(r / 2)
        # Friedman's statistic (tie-corrected) equals m (n - 1) W.
        f = sps.friedmanchisquare(*r.T)
        cases.append(
            {
                "rankings": r.tolist(),
                "w": float(f.statistic / (m * (n - 1))),
                "chi2": float(f.statistic),
                "pvalue": float(f.pvalue),
            }
        )
    return cases


def calibration_cases() -> list[dict[str, Any]]:
    """Binned calibration errors written as plain loops over explicit bins."""
    rng = np.random.default_rng(13)
    cases = []
    for n, n_bins, bin_size in [(250, 10, 100), (1000, 15, 100), (37, 4, 10)]:
        conf = rng.uniform(0.25, 1.0, size=n).round(3)
        correct = (rng.uniform(size=n) < conf**1.5).astype(int)
        # equal-width, right-closed bins (b/B, (b+1)/B], 0 in the first
        ece_w = 0.0
        for b in range(n_bins):
            lo, hi = b / n_bins, (b + 1) / n_bins
            mask = (conf > lo) & (conf <= hi) if b > 0 else (conf <= hi)
            if mask.sum():
                ece_w += mask.sum() / n * abs(correct[mask].mean() - conf[mask].mean())
        # equal-mass: stable sort, n_bins runs with sizes differing by at most one
        order = np.argsort(conf, kind="stable")
        sizes = [n // n_bins + (1 if b < n % n_bins else 0) for b in range(n_bins)]
        ece_m = 0.0
        start = 0
        for size in sizes:
            part = order[start : start + size]
            start += size
            ece_m += size / n * abs(correct[part].mean() - conf[part].mean())
        # RMS with bins of at least bin_size items: n // bin_size equal-mass runs
        rb = max(1, n // bin_size)
        sizes = [n // rb + (1 if b < n % rb else 0) for b in range(rb)]
        rms = 0.0
        start = 0
        for size in sizes:
            part = order[start : start + size]
            start += size
            rms += size / n * (correct[part].mean() - conf[part].mean()) ** 2
        cases.append(
            {
                "confidence": conf.tolist(),
                "correct": correct.tolist(),
                "n_bins": n_bins,
                "bin_size": bin_size,
                "ece_equal_width": ece_w,
                "ece_equal_mass": ece_m,
                "rms": math.sqrt(rms),
                "brier": float(np.mean((conf - correct) ** 2)),
            }
        )
    return cases


def rms_reference_cases() -> list[dict[str, Any]]:
    """The MMLU authors' ``calib_tools.rmsce`` as the issue states it, by hand.

    Each confidence c becomes max(c, 1 - c), its outcome flipped when c < 0.5; the folded
    values are sorted (stable) and cut into n // bin_size equal-mass runs (at least one,
    sizes differing by at most one); RMSCE = sqrt(sqrt(sum_b ((n_b / N)(acc_b - conf_b))^2)).
    """
    cases = []
    # 1. Eight items, bins of 4, worked on paper:
    #    folded c: .2->.8 (0->1), .4->.6 (1->0), .55, .65, .7, .85, .9, .95
    #    sorted: .55(1) .6(0) .65(0) .7(1) | .8(1) .85(1) .9(0) .95(1)
    #    bin 1: conf .625, acc .5, weighted gap .5 * -.125 = -.0625
    #    bin 2: conf .875, acc .75, weighted gap .5 * -.125 = -.0625
    #    sum of squares 2 * .00390625 = .0078125; RMSCE = .0078125 ** .25
    conf = [0.2, 0.4, 0.55, 0.65, 0.7, 0.85, 0.9, 0.95]
    correct = [0, 1, 1, 0, 1, 1, 0, 1]
    cases.append(
        {
            "confidence": conf,
            "correct": correct,
            "bin_size": 4,
            "n_bins": 2,
            "rmsce": 0.0078125**0.25,
            "textbook": math.sqrt(0.5 * 0.125**2 + 0.5 * 0.125**2),
        }
    )
    # 2. Seeded inputs, the same recipe as plain loops (250 items: 2 bins of 125; 37: 3 bins).
    rng = np.random.default_rng(29)
    for n, bin_size in [(250, 100), (37, 10)]:
        c = rng.uniform(0.0, 1.0, size=n).round(3)
        y = (rng.uniform(size=n) < np.abs(c - 0.3)).astype(int)
        folded = [max(v, 1.0 - v) for v in c]
        outcome = [1 - o if v < 0.5 else o for v, o in zip(c, y, strict=True)]
        order = sorted(range(n), key=lambda i: folded[i])  # Python's sort is stable
        n_bins = max(1, n // bin_size)
        sizes = [n // n_bins + (1 if b < n % n_bins else 0) for b in range(n_bins)]
        total = 0.0
        start = 0
        for size in sizes:
            part = order[start : start + size]
            start += size
            acc = sum(outcome[i] for i in part) / size
            mean_conf = sum(folded[i] for i in part) / size
            total += (size / n * (acc - mean_conf)) ** 2
        cases.append(
            {
                "confidence": c.tolist(),
                "correct": y.tolist(),
                "bin_size": bin_size,
                "n_bins": n_bins,
                "rmsce": math.sqrt(math.sqrt(total)),
            }
        )
    return cases


def power_cases() -> list[dict[str, Any]]:
    """Connor (1987) by hand."""
    cases = []
    for delta, psi, alpha, power in [
        (0.05, 0.34, 0.05, 0.8),
        (0.1, 0.3, 0.05, 0.9),
        (0.02, 0.1, 0.01, 0.8),
        (0.2, 0.25, 0.05, 0.8),
    ]:
        za = sps.norm.ppf(1 - alpha / 2)
        zb = sps.norm.ppf(power)
        n = (za * math.sqrt(psi) + zb * math.sqrt(psi - delta**2)) ** 2 / delta**2
        cases.append(
            {"delta": delta, "discordance": psi, "alpha": alpha, "power": power, "n_exact": n}
        )
    return cases


def main() -> None:
    golden = {
        "_about": "Written by tests/golden/stats/make_golden.py; do not edit by hand.",
        "mcnemar": mcnemar_cases(),
        "cochran_q": cochran_cases(),
        "proportions": proportion_cases(),
        "clustered": clustered_cases(),
        "paired_difference": paired_difference_cases(),
        "multiple": multiple_cases(),
        "correlation": correlation_cases(),
        "kendall_w": kendall_w_cases(),
        "calibration": calibration_cases(),
        "rms_reference": rms_reference_cases(),
        "power": power_cases(),
    }
    OUT.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
