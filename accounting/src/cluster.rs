//! Agglomerative clustering with average linkage (UPGMA) (cycle-stacks paper §2.5, Fig. 6).
//!
//! Points are rows in some space (for the scaling analysis: runs in the space of the leading
//! principal components); the dissimilarity is the Euclidean distance, and the distance between
//! two clusters is the average distance between their members. The merge sequence comes from
//! the `kodama` crate and uses SciPy's labelling: leaves are `0..n`, the cluster made by merge
//! `i` is `n + i`. Its dendrogram is drawn by [`crate::chart::dendrogram`].

/// One merge of two clusters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Merge {
    /// Label of the first cluster (smaller label).
    pub a: usize,
    /// Label of the second cluster.
    pub b: usize,
    /// Linkage distance: the average distance between members of `a` and of `b`.
    pub height: f64,
    /// Number of points in the merged cluster.
    pub size: usize,
}

/// Average-linkage clustering of `points` under the Euclidean distance: `n − 1` merges in
/// order of non-decreasing height (none for fewer than two points). Rows must have equal
/// lengths and finite values.
pub fn average_linkage(points: &[Vec<f64>]) -> Vec<Merge> {
    let n = points.len();
    let mut condensed = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let d: f64 = points[i]
                .iter()
                .zip(&points[j])
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            condensed.push(d);
        }
    }
    average_linkage_condensed(condensed, n)
}

/// Average-linkage clustering from a condensed distance matrix (the upper triangle, row by
/// row: d(0,1), d(0,2), …, d(1,2), …) of `n` points.
pub fn average_linkage_condensed(mut condensed: Vec<f64>, n: usize) -> Vec<Merge> {
    if n < 2 {
        return Vec::new();
    }
    assert_eq!(condensed.len(), n * (n - 1) / 2, "condensed matrix size");
    let d = kodama::linkage(&mut condensed, n, kodama::Method::Average);
    d.steps()
        .iter()
        .map(|s| Merge {
            a: s.cluster1,
            b: s.cluster2,
            height: s.dissimilarity,
            size: s.size,
        })
        .collect()
}

/// The leaves in drawing order: a depth-first walk from the last merge, first cluster first.
pub fn leaf_order(merges: &[Merge], n: usize) -> Vec<usize> {
    if merges.is_empty() {
        return (0..n).collect();
    }
    let mut out = Vec::with_capacity(n);
    let mut stack = vec![n + merges.len() - 1];
    while let Some(l) = stack.pop() {
        if l < n {
            out.push(l);
        } else {
            let m = &merges[l - n];
            stack.push(m.b);
            stack.push(m.a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five points on a line, 0, 1, 4, 10, 12, clustered by hand with UPGMA:
    /// {0,1} at 1; {10,12} at 2; d({0,1},4) = (4+3)/2 = 3.5 is the smallest of 3.5, 7
    /// (= (6+8)/2) and 10.5, so {0,1,4} at 3.5; finally
    /// d({0,1,4},{10,12}) = (10+12+9+11+6+8)/6 = 56/6.
    #[test]
    fn merge_heights_match_a_hand_computed_upgma() {
        let pts: Vec<Vec<f64>> = [0.0, 1.0, 4.0, 10.0, 12.0]
            .iter()
            .map(|&x| vec![x])
            .collect();
        let m = average_linkage(&pts);
        let heights: Vec<f64> = m.iter().map(|m| m.height).collect();
        let expect = [1.0, 2.0, 3.5, 56.0 / 6.0];
        for (h, e) in heights.iter().zip(expect) {
            assert!((h - e).abs() < 1e-12, "{heights:?}");
        }
        assert_eq!((m[0].a, m[0].b, m[0].size), (0, 1, 2));
        assert_eq!((m[1].a, m[1].b, m[1].size), (3, 4, 2));
        // Cluster 5 ({0,1}) with leaf 2, then cluster 7 ({0,1,4}) with 6 ({10,12}).
        assert_eq!((m[2].a, m[2].b, m[2].size), (2, 5, 3));
        assert_eq!((m[3].a, m[3].b, m[3].size), (6, 7, 5));
        assert_eq!(leaf_order(&m, 5), vec![3, 4, 2, 0, 1]);
    }

    /// An independent, naive UPGMA (O(n³), clusters as member lists, distances averaged
    /// over member pairs from scratch each time) gives the same heights as kodama on
    /// irregular points in 3-D.
    #[test]
    fn merge_heights_match_a_naive_upgma() {
        let mut state = 0x9E37_79B9_u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let pts: Vec<Vec<f64>> = (0..13).map(|_| vec![rnd(), rnd(), rnd()]).collect();
        let dist = |a: usize, b: usize| -> f64 {
            pts[a]
                .iter()
                .zip(&pts[b])
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let mut clusters: Vec<Vec<usize>> = (0..pts.len()).map(|i| vec![i]).collect();
        let mut naive = Vec::new();
        while clusters.len() > 1 {
            let mut best = (f64::INFINITY, 0, 0);
            for i in 0..clusters.len() {
                for j in i + 1..clusters.len() {
                    let mut sum = 0.0;
                    for &a in &clusters[i] {
                        for &b in &clusters[j] {
                            sum += dist(a, b);
                        }
                    }
                    let d = sum / (clusters[i].len() * clusters[j].len()) as f64;
                    if d < best.0 {
                        best = (d, i, j);
                    }
                }
            }
            let (d, i, j) = best;
            let b = clusters.remove(j);
            clusters[i].extend(b);
            naive.push(d);
        }
        let m = average_linkage(&pts);
        assert_eq!(m.len(), naive.len());
        for (k, (x, y)) in m.iter().zip(&naive).enumerate() {
            assert!(
                (x.height - y).abs() < 1e-12,
                "merge {k}: {} vs {y}",
                x.height
            );
        }
        assert_eq!(m.last().unwrap().size, 13);
        let mut order = leaf_order(&m, 13);
        order.sort_unstable();
        assert_eq!(order, (0..13).collect::<Vec<_>>());
    }
}
