//! LIME's hierarchical clustering (§3.2): events are clustered by average linkage (UPGMA) on
//! the distance `1 − r`, r being Pearson's correlation of their per-thread counts, and merging
//! stops when the largest remaining (average) correlation is below the threshold. The linkage
//! itself is kodama's; average linkage is monotone, so stopping at the threshold equals
//! cutting the full dendrogram at distance `1 − threshold`.
//!
//! Inputs are unit vectors (centred and normalised), so a correlation is one dot product and
//! the condensed distance matrix costs `m(m−1)/2` dot products of length `threads`.

use kodama::{Method, linkage};

/// Dot product with four independent partial sums, which the compiler can keep in vector
/// registers (a single running sum must be added in order and cannot be): the distance matrix
/// is most of the analysis time with thousands of events.
fn dot4(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut acc = [0.0f64; 4];
    for (x, y) in ca.zip(cb) {
        for ((s, u), v) in acc.iter_mut().zip(x).zip(y) {
            *s += u * v;
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Cluster label of every event, numbered 0.. in order of each cluster's smallest member.
pub fn upgma(units: &[Vec<f64>], threshold: f64) -> Vec<usize> {
    let m = units.len();
    if m == 0 {
        return Vec::new();
    }
    if m == 1 {
        return vec![0];
    }
    let mut condensed = Vec::with_capacity(m * (m - 1) / 2);
    for i in 0..m {
        let a = &units[i];
        for b in &units[i + 1..] {
            condensed.push((1.0 - dot4(a, b)).max(0.0));
        }
    }
    let dendrogram = linkage(&mut condensed, m, Method::Average);
    let cut = 1.0 - threshold;
    // Union-find over observations; label ≥ m names the cluster made at step (label − m).
    let mut parent: Vec<usize> = (0..m).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut rep: Vec<usize> = Vec::with_capacity(m - 1);
    for step in dendrogram.steps() {
        let a = if step.cluster1 < m {
            step.cluster1
        } else {
            rep[step.cluster1 - m]
        };
        let b = if step.cluster2 < m {
            step.cluster2
        } else {
            rep[step.cluster2 - m]
        };
        // A small tolerance so that a correlation of exactly the threshold merges.
        if step.dissimilarity <= cut + 1e-12 {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            parent[hi] = lo;
        }
        rep.push(a);
    }
    let mut label = vec![usize::MAX; m];
    let mut next = 0;
    (0..m)
        .map(|i| {
            let r = find(&mut parent, i);
            if label[r] == usize::MAX {
                label[r] = next;
                next += 1;
            }
            label[r]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lime::stats::unit;

    /// Five events over four threads. Correlations (computed by hand from the centred
    /// vectors): r(a,b) = 1, r(a,c) = 0.8 (c = a plus a perturbation), r(d,e) = 0.95;
    /// across the groups r < 0.5. Average linkage at 0.9 merges {a, b} (distance 0),
    /// then {d, e} (0.05); {a,b} with c averages (0.8 + 0.8) / 2 = 0.8 < 0.9, so c stays
    /// alone. At 0.75 c joins {a, b}.
    #[test]
    fn upgma_on_a_five_event_matrix() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [2.0, 4.0, 6.0, 8.0];
        let d = [1.0, -1.0, 1.0, -1.0];
        let e = [1.2, -1.0, 0.8, -1.0];
        // c = a + t with t ⟂ a: chosen so that r(a, c) = 0.8 exactly (see below).
        // centred a = (-1.5,-0.5,0.5,1.5), |a| = √5. t = s·(1,-1,-1,1) (orthogonal to it and to
        // the mean); r = √5 / √(5 + 4 s²) = 0.8 → s² = (5/0.64 − 5)/4 = 0.703125.
        let s = 0.703125f64.sqrt();
        let c = [1.0 + s, 2.0 - s, 3.0 - s, 4.0 + s];
        let units: Vec<Vec<f64>> = [&a, &b, &c, &d, &e]
            .iter()
            .map(|v| unit(&v[..], 1.0, 1e-12).unwrap())
            .collect();
        let r = |i: usize, j: usize| -> f64 {
            units[i].iter().zip(&units[j]).map(|(x, y)| x * y).sum()
        };
        assert!((r(0, 2) - 0.8).abs() < 1e-12);
        // r(d,e): centred d = (1,-1,1,-1), centred e = (1.2,-1,0.8,-1); dot = 4, |e|² = 4.08.
        assert!((r(3, 4) - 4.0 / (2.0 * 4.08f64.sqrt())).abs() < 1e-12);
        for (i, j) in [(0, 3), (0, 4), (2, 3), (2, 4)] {
            assert!(r(i, j) < 0.5, "r({i},{j}) = {}", r(i, j));
        }
        assert_eq!(upgma(&units, 0.9), vec![0, 0, 1, 2, 2]);
        assert_eq!(upgma(&units, 0.75), vec![0, 0, 0, 1, 1]);
        // Everything merges at a threshold below every average correlation.
        assert_eq!(upgma(&units, -1.0), vec![0; 5]);
        assert_eq!(upgma(&units, 1.0), vec![0, 0, 1, 2, 3]);
    }
}
