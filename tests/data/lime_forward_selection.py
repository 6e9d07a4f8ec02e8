#!/usr/bin/env python3
"""Independent reference for isim's LIME forward-selection regression
(accounting/src/lime/stats.rs, test `forward_selection_matches_numpy_scipy`).

Standardizes y and each predictor (mean 0, population sd 1), then repeatedly adds the
predictor that minimizes the residual sum of squares (numpy.linalg.lstsq), keeping it
if the partial F-test p-value (scipy.stats.f.sf with 1 and n-k-1 degrees of freedom)
is below alpha. Prints the selected indices, F, p, the final standardized betas and R^2.
Run: python3 -m venv v && v/bin/pip install numpy scipy && v/bin/python this_file
"""
import numpy as np
from scipy.stats import f as fdist

Y = [11.0, 12.5, 10.0, 15.0, 12.0, 14.0, 9.5, 13.0, 17.0, 10.5, 13.0, 9.5]
X = [
    [3, 4, 2, 6, 3, 5, 2, 4, 6, 3, 4, 2],            # strong predictor
    [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0],            # alternating, weak
    [5, 5, 4, 7, 6, 6, 4, 6, 7, 5, 6, 4],            # correlated with x0
    [2, 9, 4, 1, 7, 3, 8, 2, 6, 5, 1, 9],            # noise
]
ALPHA = 0.05


def std(v):
    v = np.asarray(v, dtype=float)
    c = v - v.mean()
    return c / np.sqrt((c * c).mean())


y = std(Y)
xs = [std(x) for x in X]
n = len(y)
tss = float(y @ y)
chosen, rss = [], tss
while True:
    k = len(chosen) + 1
    if n < k + 2:
        break
    df = n - k - 1
    best = None
    for i in range(len(xs)):
        if i in chosen:
            continue
        a = np.column_stack([xs[j] for j in chosen + [i]])
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        r = y - a @ coef
        rss_new = float(r @ r)
        F = (rss - rss_new) / (rss_new / df)
        if best is None or F > best[1]:
            best = (i, F)
    i, F = best
    p = float(fdist.sf(F, 1, df))
    if p >= ALPHA:
        break
    chosen.append(i)
    a = np.column_stack([xs[j] for j in chosen])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    r = y - a @ coef
    rss = float(r @ r)
    print(f"step index={i} F={F:.10f} p={p:.10e}")
a = np.column_stack([xs[j] for j in chosen])
coef, *_ = np.linalg.lstsq(a, y, rcond=None)
r = y - a @ coef
print("beta", " ".join(f"{b:.10f}" for b in coef))
print(f"r2 {1 - float(r @ r) / tss:.10f}")
