//! The dendrogram of an average-linkage clustering (cycle-stacks paper Fig. 6; drawn for
//! [`crate::cluster`]): leaves on the left, ordered so that no lines cross, the linkage distance
//! growing to the right.

use std::fmt::Write as _;

use super::{nice_range, svg_page, tick_label, ticks};
use crate::cluster::{Merge, leaf_order};
use crate::render::xml_escape;

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

    let mut s = svg_page(width, height, title, "16");
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
    use crate::cluster::average_linkage;

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
