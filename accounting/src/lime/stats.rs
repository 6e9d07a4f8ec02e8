//! The statistics of LIME (§3): Pearson correlation, centring and scaling, the Gram–Schmidt
//! removal of superior events (§3.1), averaged z-scores (§3.5) and forward-selection multiple
//! regression with a partial F-test (§3.5). Vectors are per-thread values of one event.
//!
//! Conventions. A constant vector has no correlation with anything: [`pearson`] returns 0 for
//! it (LIME drops constant events before it ever asks). Gram–Schmidt works on *centred*
//! vectors, so it removes what a superior event explains of the variation *between threads*
//! and leaves a residual with mean 0; correlation is unaffected by the centring.

use nalgebra::{DMatrix, DVector};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

/// Mean of `x` (0 for an empty slice).
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// `x` minus its mean.
pub fn centred(x: &[f64]) -> Vec<f64> {
    let m = mean(x);
    x.iter().map(|v| v - m).collect()
}

/// Dot product.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Euclidean norm.
pub fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Pearson's correlation coefficient of `a` and `b`; 0 if either is constant.
pub fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (centred(a), centred(b));
    let (na, nb) = (norm(&ca), norm(&cb));
    if na <= f64::EPSILON * (1.0 + mean(a).abs()) * a.len() as f64
        || nb <= f64::EPSILON * (1.0 + mean(b).abs()) * b.len() as f64
    {
        return 0.0;
    }
    (dot(&ca, &cb) / (na * nb)).clamp(-1.0, 1.0)
}

/// `x` centred and scaled to unit norm, or `None` if it is constant (its centred norm is at
/// most `rel` times its own scale, which absorbs rounding in Gram–Schmidt residuals).
pub fn unit(x: &[f64], scale: f64, rel: f64) -> Option<Vec<f64>> {
    let c = centred(x);
    let n = norm(&c);
    if n <= rel * scale.max(f64::MIN_POSITIVE) || n == 0.0 {
        return None;
    }
    Some(c.iter().map(|v| v / n).collect())
}

/// Gram–Schmidt over a chain of events ordered superior first (execution count, then L1,
/// L2, L3 misses): returns each event's centred residual after removing its projections on
/// the residuals of all events before it. A residual that is (numerically) zero contributes
/// no projection to later events.
pub fn gram_schmidt(chain: &[&[f64]]) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = Vec::with_capacity(chain.len());
    for v in chain {
        let mut u = centred(v);
        let scale = norm(&u);
        for prev in &out {
            let pp = dot(prev, prev);
            if pp > 1e-18 * scale * scale && pp > 0.0 {
                let k = dot(&u, prev) / pp;
                for (ui, pi) in u.iter_mut().zip(prev) {
                    *ui -= k * pi;
                }
            }
        }
        out.push(u);
    }
    out
}

/// Element-wise mean of the z-scores of `vectors` (each standardized to mean 0 and standard
/// deviation 1): LIME's "averaged z-score" of a cluster. Constant vectors are skipped.
pub fn averaged_z(vectors: &[&[f64]]) -> Vec<f64> {
    let n = vectors.first().map_or(0, |v| v.len());
    let mut acc = vec![0.0; n];
    let mut k = 0usize;
    for v in vectors {
        let c = centred(v);
        let sd = (dot(&c, &c) / n as f64).sqrt();
        if sd == 0.0 {
            continue;
        }
        k += 1;
        for (a, x) in acc.iter_mut().zip(&c) {
            *a += x / sd;
        }
    }
    if k > 0 {
        for a in &mut acc {
            *a /= k as f64;
        }
    }
    acc
}

/// One step of forward selection.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    /// Index of the predictor added.
    pub index: usize,
    /// Its partial F statistic when added.
    pub f: f64,
    /// The F-test's p-value.
    pub p: f64,
}

/// A fitted forward-selection model.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// Predictors in the order they were added.
    pub steps: Vec<Selected>,
    /// Standardized coefficient of each selected predictor (same order as `steps`).
    pub beta: Vec<f64>,
    /// Coefficient of determination of the final model.
    pub r2: f64,
}

/// Residual sum of squares and coefficients of the least-squares fit of `y` on the columns
/// `cols` of `x` (all centred, so no intercept column is needed).
fn fit(y: &[f64], x: &[Vec<f64>], cols: &[usize]) -> (f64, Vec<f64>) {
    let n = y.len();
    if cols.is_empty() {
        return (dot(y, y), Vec::new());
    }
    let a = DMatrix::from_fn(n, cols.len(), |i, j| x[cols[j]][i]);
    let b = DVector::from_column_slice(y);
    let svd = a.clone().svd(true, true);
    let coef = svd
        .solve(&b, 1e-12)
        .unwrap_or_else(|_| DVector::zeros(cols.len()));
    let r = &b - &a * &coef;
    (r.dot(&r), coef.iter().copied().collect())
}

/// Forward-selection regression of `y` on `x` (LIME §3.5): both are standardized (centred, unit
/// variance) so the coefficients are standardized β. At each step the predictor that most
/// reduces the residual sum of squares is tested with the partial F-test
/// `F = (RSS_old − RSS_new) / (RSS_new / (n − k − 1))` on (1, n − k − 1) degrees of freedom,
/// `k` being the predictors in the enlarged model; it is added if `p < alpha`, else selection
/// stops. Near-ties (F within 1e-9 relative) go to the predictor most positively correlated
/// with `y`, then to the lower index: complementary events (the two edges of a branch whose
/// total is fixed) tie exactly, and "more of this, more time" is the useful explanation.
/// Predictors that are constant are never selected.
pub fn forward_selection(y: &[f64], x: &[Vec<f64>], alpha: f64) -> Regression {
    let n = y.len();
    let Some(ys) = standardize(y) else {
        return Regression {
            steps: Vec::new(),
            beta: Vec::new(),
            r2: 0.0,
        };
    };
    let xs: Vec<Option<Vec<f64>>> = x.iter().map(|c| standardize(c)).collect();
    let xs_dense: Vec<Vec<f64>> = xs
        .iter()
        .map(|c| c.clone().unwrap_or_else(|| vec![0.0; n]))
        .collect();
    let tss = dot(&ys, &ys);
    let mut chosen: Vec<usize> = Vec::new();
    let mut steps = Vec::new();
    // Each candidate's component orthogonal to the chosen columns (x⊥), kept up to date as
    // columns are chosen, and the current residual: a candidate's RSS reduction is
    // (r·x⊥)² / |x⊥|² — the same as refitting the enlarged model. Subtracting each new basis
    // vector from every x⊥ as it is chosen performs, in the same order, the projections a
    // fresh modified Gram–Schmidt of the candidate would, at O(n) per candidate and step.
    let mut xp: Vec<Option<Vec<f64>>> = xs.clone();
    let norms: Vec<f64> = xs
        .iter()
        .map(|c| c.as_ref().map_or(0.0, |c| dot(c, c)))
        .collect();
    let corr: Vec<f64> = xs
        .iter()
        .map(|c| c.as_ref().map_or(0.0, |c| dot(&ys, c) / tss))
        .collect();
    let mut resid = ys.clone();
    let mut rss = tss;
    loop {
        let k = chosen.len() + 1;
        if n < k + 2 || rss <= 1e-12 * tss {
            break;
        }
        let df = (n - k - 1) as f64;
        let mut best: Option<(usize, f64, f64)> = None; // (index, F, corr)
        for (i, c) in xp.iter().enumerate() {
            let Some(c) = c else { continue };
            if chosen.contains(&i) {
                continue;
            }
            let nn = dot(c, c);
            if nn <= 1e-10 * norms[i] {
                continue; // a linear combination of the chosen predictors
            }
            let rx = dot(&resid, c);
            let gain = (rx * rx / nn).min(rss);
            let rss_new = rss - gain;
            let f = if rss_new <= 1e-12 * tss {
                f64::INFINITY
            } else {
                gain / (rss_new / df)
            };
            let better = match best {
                None => true,
                Some((_, bf, bc)) => {
                    let tie = if f.is_infinite() || bf.is_infinite() {
                        f == bf
                    } else {
                        (f - bf).abs() <= 1e-9 * bf.abs().max(1e-300)
                    };
                    if tie { corr[i] > bc + 1e-12 } else { f > bf }
                }
            };
            if better {
                best = Some((i, f, corr[i]));
            }
        }
        let Some((i, f, _)) = best else { break };
        let p = if f.is_infinite() {
            0.0
        } else {
            match FisherSnedecor::new(1.0, df) {
                Ok(d) => d.sf(f),
                Err(_) => 1.0,
            }
        };
        if p >= alpha {
            break;
        }
        chosen.push(i);
        steps.push(Selected { index: i, f, p });
        let xi = xp[i].take().expect("a selectable candidate");
        let nq = norm(&xi);
        let q: Vec<f64> = xi.iter().map(|v| v / nq).collect();
        let d = dot(&resid, &q);
        for (a, b) in resid.iter_mut().zip(&q) {
            *a -= d * b;
        }
        for c in xp.iter_mut().flatten() {
            let d = dot(c, &q);
            for (a, b) in c.iter_mut().zip(&q) {
                *a -= d * b;
            }
        }
        rss = dot(&resid, &resid);
    }
    let (rss_final, beta) = fit(&ys, &xs_dense, &chosen);
    Regression {
        steps,
        beta,
        r2: if tss > 0.0 {
            1.0 - rss_final / tss
        } else {
            0.0
        },
    }
}

/// `x` with mean 0 and (population) standard deviation 1, or `None` if constant.
pub fn standardize(x: &[f64]) -> Option<Vec<f64>> {
    let c = centred(x);
    let sd = (dot(&c, &c) / x.len().max(1) as f64).sqrt();
    let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if sd <= 1e-12 * scale || sd == 0.0 {
        return None;
    }
    Some(c.iter().map(|v| v / sd).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pearson_of_small_vectors_matches_hand_computation() {
        // x = (1,2,3,4), y = (2,4,5,4): x̄ = 2.5, ȳ = 3.75;
        // Σdxdy = (-1.5)(-1.75)+(-0.5)(0.25)+(0.5)(1.25)+(1.5)(0.25) = 3.5
        // Σdx² = 5, Σdy² = 3.0625+0.0625+1.5625+0.0625 = 4.75; r = 3.5/√(5·4.75) = 0.718184
        let r = pearson(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 5.0, 4.0]);
        assert!((r - 0.718_184_4).abs() < 1e-6, "{r}");
        assert!((pearson(&[1.0, 2.0, 3.0], &[6.0, 4.0, 2.0]) + 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[5.0, 5.0, 5.0], &[1.0, 2.0, 3.0]), 0.0);
    }

    #[test]
    fn gram_schmidt_on_a_three_thread_example() {
        // Executions e = (10, 20, 30); L1 misses m = (1, 5, 3).
        // centred e = (-10, 0, 10), centred m = (-2, 2, 0);
        // projection coefficient = (20 + 0 + 0) / 200 = 0.1 → residual = (-2+1, 2, 0-1) = (-1, 2, -1).
        // L2 misses l = (1, 5, 3) = m: its residual after e and m is 0.
        let e = [10.0, 20.0, 30.0];
        let m = [1.0, 5.0, 3.0];
        let g = gram_schmidt(&[&e, &m, &m]);
        assert_eq!(g[0], vec![-10.0, 0.0, 10.0]);
        for (a, b) in g[1].iter().zip([-1.0, 2.0, -1.0]) {
            assert!((a - b).abs() < 1e-12, "{:?}", g[1]);
        }
        assert!(norm(&g[2]) < 1e-12, "{:?}", g[2]);
        // Misses proportional to executions are fully explained by them.
        let g = gram_schmidt(&[&e, &[2.0, 4.0, 6.0]]);
        assert!(norm(&g[1]) < 1e-12);
    }

    #[test]
    fn averaged_z_scores_average_standardized_events() {
        // (1,2,3) → z = (-1.2247, 0, 1.2247); (2,4,6) → same; (3,2,1) → negated.
        let z = averaged_z(&[&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], &[7.0, 7.0, 7.0]]);
        let s = (1.5f64).sqrt();
        for (a, b) in z.iter().zip([-s, 0.0, s]) {
            assert!((a - b).abs() < 1e-12, "{z:?}");
        }
    }

    /// Reference: `tests/data/lime_forward_selection.py` (numpy `lstsq` + scipy `f.sf`, an
    /// independent implementation of the same procedure) printed, for the data below:
    /// ```text
    /// step index=0 F=152.2960725076 p=2.2439864784e-07
    /// step index=1 F=7.1033071812 p=2.5824656788e-02
    /// beta 1.0099176635 0.1699351517
    /// r2 0.9655634669
    /// ```
    #[test]
    fn forward_selection_matches_numpy_scipy() {
        let y = [
            11.0, 12.5, 10.0, 15.0, 12.0, 14.0, 9.5, 13.0, 17.0, 10.5, 13.0, 9.5,
        ];
        let x: Vec<Vec<f64>> = [
            [3, 4, 2, 6, 3, 5, 2, 4, 6, 3, 4, 2],
            [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0],
            [5, 5, 4, 7, 6, 6, 4, 6, 7, 5, 6, 4],
            [2, 9, 4, 1, 7, 3, 8, 2, 6, 5, 1, 9],
        ]
        .iter()
        .map(|r| r.iter().map(|&v| v as f64).collect())
        .collect();
        let r = forward_selection(&y, &x, 0.05);
        let idx: Vec<usize> = r.steps.iter().map(|s| s.index).collect();
        assert_eq!(idx, vec![0, 1]);
        assert!(
            (r.steps[0].f - 152.2960725076).abs() < 1e-6,
            "{:?}",
            r.steps
        );
        assert!((r.steps[1].f - 7.1033071812).abs() < 1e-7, "{:?}", r.steps);
        assert!((r.steps[0].p / 2.2439864784e-07 - 1.0).abs() < 1e-6);
        assert!((r.steps[1].p / 2.5824656788e-02 - 1.0).abs() < 1e-6);
        assert!((r.beta[0] - 1.0099176635).abs() < 1e-9, "{:?}", r.beta);
        assert!((r.beta[1] - 0.1699351517).abs() < 1e-9, "{:?}", r.beta);
        assert!((r.r2 - 0.9655634669).abs() < 1e-9);
        // With a stricter α the second predictor (p = 0.026) is not significant.
        assert_eq!(forward_selection(&y, &x, 0.01).steps.len(), 1);
    }

    #[test]
    fn forward_selection_picks_the_exact_predictor() {
        let x0 = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let x1 = vec![1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
        let y = x0.iter().map(|v| 3.0 * v + 7.0).collect::<Vec<_>>();
        let r = forward_selection(&y, &[x1.clone(), x0.clone()], 0.05);
        assert_eq!(r.steps.len(), 1);
        assert_eq!(r.steps[0].index, 1);
        assert!((r.beta[0] - 1.0).abs() < 1e-9);
        assert!((r.r2 - 1.0).abs() < 1e-9);
    }
}
