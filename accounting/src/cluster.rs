//! Agglomerative clustering with average linkage (UPGMA) and its dendrogram (cycle-stacks
//! paper §2.5, Fig. 6).
//!
//! Points are rows in some space (for the scaling analysis: runs in the space of the leading
//! principal components); the dissimilarity is the Euclidean distance, and the distance between
//! two clusters is the average distance between their members. The merge sequence comes from
//! the `kodama` crate and uses SciPy's labelling: leaves are `0..n`, the cluster made by merge
//! `i` is `n + i`. [`dendrogram_svg`] draws it with leaves on the left and the linkage
//! distance growing to the right, leaves ordered so that no lines cross.

use std::fmt::Write as _;

use crate::plot::{nice_range, svg_open, tick_label, ticks};
use crate::render::xml_escape;

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

/// A dendrogram as a self-contained SVG document: one row per leaf (its label on the left),
/// each merge drawn as a bracket at its linkage distance on the horizontal axis. Merges are
/// `<path class="link">` with a tooltip giving the distance; leaf labels are
/// `<text class="leaf-label">`. Labels are XML-escaped.
pub fn dendrogram_svg(title: &str, labels: &[String], merges: &[Merge]) -> String {
    let n = labels.len();
    let order = leaf_order(merges, n);
    let row = 18.0;
    let max_label = labels
        .iter()
        .map(|l| l.chars().count().min(48))
        .max()
        .unwrap_or(0);
    let left = 16.0 + max_label as f64 * 6.4;
    let top = 48.0;
    let pw = 480.0;
    let ph = row * n.max(1) as f64;
    let width = (left + pw + 40.0).max(title.chars().count() as f64 * 8.5 + 40.0);
    let height = top + ph + 56.0;
    let max_h = merges.iter().map(|m| m.height).fold(0.0, f64::max);
    let (_, xb, xs) = nice_range(0.0, if max_h > 0.0 { max_h } else { 1.0 });
    let px = |h: f64| left + h.max(0.0) / xb * pw;

    // Node positions: leaves by their row, merges halfway between their children.
    let mut pos = vec![(0.0f64, 0.0f64); n + merges.len()];
    for (k, &leaf) in order.iter().enumerate() {
        pos[leaf] = (px(0.0), top + (k as f64 + 0.5) * row);
    }
    for (i, m) in merges.iter().enumerate() {
        pos[n + i] = (px(m.height), (pos[m.a].1 + pos[m.b].1) / 2.0);
    }

    let mut s = svg_open(width, height);
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        xml_escape(title)
    );
    for v in ticks(0.0, xb, xs) {
        let x = px(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eeeeee\"/>",
            top + ph
        );
        let _ = writeln!(
            s,
            "<text class=\"tick-label\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top + ph + 16.0,
            tick_label(v, xs)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#444444\"/>",
        top + ph,
        left + pw,
        top + ph
    );
    let _ = writeln!(
        s,
        "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">linkage distance (average linkage)</text>",
        left + pw / 2.0,
        top + ph + 36.0
    );
    for (k, &leaf) in order.iter().enumerate() {
        let label: String = {
            let l = labels[leaf].replace(|c: char| c.is_control(), " ");
            if l.chars().count() > 48 {
                l.chars().take(47).chain(['…']).collect()
            } else {
                l
            }
        };
        let _ = writeln!(
            s,
            "<text class=\"leaf-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}<title>{}</title></text>",
            left - 6.0,
            top + (k as f64 + 0.5) * row + 4.0,
            xml_escape(&label),
            xml_escape(&labels[leaf])
        );
    }
    for (i, m) in merges.iter().enumerate() {
        let (xa, ya) = pos[m.a];
        let (xb_, yb) = pos[m.b];
        let (xm, _) = pos[n + i];
        let _ = writeln!(
            s,
            "<path class=\"link\" d=\"M{xa:.1},{ya:.1}H{xm:.1}V{yb:.1}H{xb_:.1}\" fill=\"none\" stroke=\"#1f4e79\" stroke-width=\"1.5\"><title>distance {:.4}, {} members</title></path>",
            m.height, m.size
        );
    }
    s.push_str("</svg>\n");
    s
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

    #[test]
    fn dendrogram_svg_has_a_link_per_merge_and_a_label_per_leaf() {
        assert!(average_linkage(&[]).is_empty());
        assert!(average_linkage(&[vec![1.0]]).is_empty());
        let pts: Vec<Vec<f64>> = [0.0, 1.0, 4.0, 10.0].iter().map(|&x| vec![x]).collect();
        let labels: Vec<String> = ["a<1>", "b", "c", "d"].map(String::from).to_vec();
        let m = average_linkage(&pts);
        let svg = dendrogram_svg("t & u", &labels, &m);
        assert_eq!(svg.matches("class=\"link\"").count(), 3);
        assert_eq!(svg.matches("class=\"leaf-label\"").count(), 4);
        assert!(svg.contains("a&lt;1&gt;") && !svg.contains("a<1>"));
        assert!(svg.contains("t &amp; u"));
        // A single leaf still draws.
        let one = dendrogram_svg("one", &labels[..1], &[]);
        assert_eq!(one.matches("class=\"leaf-label\"").count(), 1);
        assert!(!one.contains("NaN"));
    }
}
