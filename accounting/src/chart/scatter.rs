//! The scatter plot of rows in the plane of two principal components (cycle-stacks paper
//! Fig. 8; drawn for [`crate::pca`]): the points of one series (a workload at several core
//! counts) joined from the smallest to the largest core count, the largest marked with a cross,
//! series names placed so that they never overlap.

use std::fmt::Write as _;

use super::{nice_range, series_colour, svg_page, tick_label, ticks};
use crate::render::xml_escape;

/// One point of a scatter plot.
#[derive(Debug, Clone, PartialEq)]
pub struct ScatterPoint {
    /// Label of the point (shown in its tooltip).
    pub label: String,
    /// Series it belongs to (e.g. `lu-owner`); points of a series are joined by a line.
    pub series: String,
    /// Position within its series (e.g. the core count): the line runs from the smallest to
    /// the largest, which is marked with a cross.
    pub order: f64,
    /// Horizontal coordinate.
    pub x: f64,
    /// Vertical coordinate.
    pub y: f64,
}

/// A scatter plot as a self-contained SVG document (Fig. 8 style): each series in its own
/// colour, its points joined by a dotted line in `order`, the first point a circle, the last a
/// cross with the series name beside it, the others small dots. Axes cross at zero when zero is
/// in range. Every point has a tooltip. A series name that would overlap an earlier one moves
/// up or down by whole lines, with a thin leader line to its point. Elements carry classes for
/// tests and styling: `series` (polyline), `point` (circle), `cross` (path), `series-label`,
/// `leader` (line), `axis-title`.
pub fn scatter_svg(title: &str, x_title: &str, y_title: &str, points: &[ScatterPoint]) -> String {
    let finite: Vec<&ScatterPoint> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    let (xa, xb, xs) = nice_range(
        finite.iter().map(|p| p.x).fold(f64::INFINITY, f64::min),
        finite.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max),
    );
    let (ya, yb, ys) = nice_range(
        finite.iter().map(|p| p.y).fold(f64::INFINITY, f64::min),
        finite.iter().map(|p| p.y).fold(f64::NEG_INFINITY, f64::max),
    );
    // Series in order of first appearance.
    let mut series: Vec<&str> = Vec::new();
    for p in &finite {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    let max_series_chars = series.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    let (left, top, pw, ph) = (70.0, 48.0, 520.0, 400.0);
    let right_pad = 24.0 + (max_series_chars.min(40) as f64) * 6.4;
    let width = (left + pw + right_pad).max(title.chars().count() as f64 * 8.5 + 40.0);
    let height = top + ph + 70.0;
    let px = |x: f64| left + (x - xa) / (xb - xa) * pw;
    let py = |y: f64| top + ph - (y - ya) / (yb - ya) * ph;

    let mut s = svg_page(width, height, title, &format!("{left:.1}"));
    // Grid, ticks and zero axes.
    for v in ticks(xa, xb, xs) {
        let x = px(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"1\"/>",
            top + ph,
            if v == 0.0 { "#888888" } else { "#eeeeee" }
        );
        let _ = writeln!(
            s,
            "<text class=\"tick-label\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top + ph + 16.0,
            tick_label(v, xs)
        );
    }
    for v in ticks(ya, yb, ys) {
        let y = py(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"1\"/>",
            left + pw,
            if v == 0.0 { "#888888" } else { "#eeeeee" }
        );
        let _ = writeln!(
            s,
            "<text class=\"tick-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            tick_label(v, ys)
        );
    }
    let _ = writeln!(
        s,
        "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#444444\"/>"
    );
    let _ = writeln!(
        s,
        "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        left + pw / 2.0,
        top + ph + 36.0,
        xml_escape(x_title)
    );
    let _ = writeln!(
        s,
        "<text class=\"axis-title\" transform=\"translate(18,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        top + ph / 2.0,
        xml_escape(y_title)
    );
    let _ = writeln!(
        s,
        "<text class=\"note\" x=\"{left:.1}\" y=\"{:.1}\" fill=\"#555555\">○ smallest core count, × largest; dotted lines join a series in core-count order</text>",
        top + ph + 56.0
    );
    // Series labels sit beside each series' last point, moved up or down in whole lines
    // when they would overlap a label placed before them (series order).
    let label_pos = place_labels(
        &series
            .iter()
            .map(|name| {
                let last = finite
                    .iter()
                    .filter(|p| p.series == *name)
                    .max_by(|a, b| a.order.total_cmp(&b.order))
                    .expect("a series has a point");
                let chars = name.chars().take(40).count() as f64;
                LabelBox {
                    x: px(last.x) + 8.0,
                    y: py(last.y) - 6.0,
                    width: chars * LABEL_CHAR_WIDTH,
                }
            })
            .collect::<Vec<_>>(),
    );
    // Series.
    for (si, name) in series.iter().enumerate() {
        let colour = series_colour(si);
        let mut pts: Vec<&&ScatterPoint> = finite.iter().filter(|p| p.series == *name).collect();
        pts.sort_by(|a, b| a.order.total_cmp(&b.order));
        let _ = writeln!(
            s,
            "<g class=\"series-group\" data-series=\"{}\">",
            xml_escape(name)
        );
        if pts.len() > 1 {
            let coords: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"3,3\"/>",
                coords.join(" ")
            );
        }
        let last = pts.len().saturating_sub(1);
        for (k, p) in pts.iter().enumerate() {
            let (x, y) = (px(p.x), py(p.y));
            let tip = format!(
                "<title>{} ({:.4}, {:.4})</title>",
                xml_escape(&p.label),
                p.x,
                p.y
            );
            if k == last && pts.len() > 1 {
                let _ = writeln!(
                    s,
                    "<path class=\"cross\" d=\"M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}\" stroke=\"{colour}\" stroke-width=\"2.5\">{tip}</path>",
                    x - 5.0,
                    y - 5.0,
                    x + 5.0,
                    y + 5.0,
                    x - 5.0,
                    y + 5.0,
                    x + 5.0,
                    y - 5.0
                );
            } else {
                let (r, fill) = if k == 0 {
                    (4.0, "#ffffff")
                } else {
                    (2.5, colour)
                };
                let _ = writeln!(
                    s,
                    "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\">{tip}</circle>"
                );
            }
        }
        if let Some(p) = pts.last() {
            let label: String = name.chars().take(40).collect();
            let (lx, ly) = label_pos[si];
            if (ly - (py(p.y) - 6.0)).abs() > 0.5 {
                // Moved: a thin leader from the point to the label.
                let _ = writeln!(
                    s,
                    "<line class=\"leader\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"0.6\"/>",
                    px(p.x),
                    py(p.y),
                    lx - 1.0,
                    ly - 4.0
                );
            }
            let _ = writeln!(
                s,
                "<text class=\"series-label\" x=\"{lx:.1}\" y=\"{ly:.1}\" fill=\"{colour}\">{}</text>",
                xml_escape(&label)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    s
}

/// Width of one character of an 11-px sans-serif label, a little generous.
const LABEL_CHAR_WIDTH: f64 = 6.4;
/// Height of one label line.
const LABEL_LINE: f64 = 12.0;

/// A label's baseline start and width.
#[derive(Debug, Clone, Copy)]
struct LabelBox {
    x: f64,
    y: f64,
    width: f64,
}

fn overlaps(a: (f64, f64, f64), b: (f64, f64, f64)) -> bool {
    // (x, baseline y, width); a line of text spans [y − LABEL_LINE + 2, y + 2].
    a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && (a.1 - b.1).abs() < LABEL_LINE
}

/// Places labels in order: each keeps its wanted spot if free, else takes the nearest free
/// spot in whole lines above or below it (up first), trying up to 20 lines each way.
/// Deterministic: depends only on the wanted boxes and their order.
fn place_labels(wanted: &[LabelBox]) -> Vec<(f64, f64)> {
    let mut placed: Vec<(f64, f64, f64)> = Vec::with_capacity(wanted.len());
    for w in wanted {
        let free = |y: f64| !placed.iter().any(|&q| overlaps((w.x, y, w.width), q));
        let y = (0..=20)
            .flat_map(|k| [-(k as f64), k as f64])
            .map(|k| w.y + k * LABEL_LINE)
            .find(|&y| free(y))
            .unwrap_or(w.y);
        placed.push((w.x, y, w.width));
    }
    placed.iter().map(|&(x, y, _)| (x, y)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_joins_series_in_order_and_escapes_labels() {
        let pt = |series: &str, order: f64, x: f64, y: f64| ScatterPoint {
            label: format!("{series} {order}"),
            series: series.into(),
            order,
            x,
            y,
        };
        let points = [
            pt("a<b>", 16.0, 1.0, 1.0),
            pt("a<b>", 4.0, -1.0, 0.5),
            pt("a<b>", 8.0, 0.0, 0.8),
            pt("solo", 4.0, 0.3, -0.2),
            pt("nan", 2.0, f64::NAN, 0.0),
        ];
        let svg = scatter_svg("PCA & co", "PC 1 (base)", "PC 2", &points);
        assert!(svg.contains("a&lt;b&gt;") && !svg.contains("a<b>"));
        assert!(svg.contains("PCA &amp; co"));
        assert!(!svg.contains("NaN"));
        assert_eq!(svg.matches("class=\"series\"").count(), 1);
        assert_eq!(svg.matches("class=\"cross\"").count(), 1);
        assert_eq!(svg.matches("class=\"point\"").count(), 3);
        // The line runs in core-count order: 4 (x=-1), 8 (x=0), 16 (x=1).
        let line = svg
            .lines()
            .find(|l| l.contains("class=\"series\""))
            .unwrap();
        let xs: Vec<f64> = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    }

    #[test]
    fn series_labels_never_overlap_and_moved_ones_get_a_leader() {
        // Three series ending at nearly the same point, one far away.
        let pt = |series: &str, order: f64, x: f64, y: f64| ScatterPoint {
            label: format!("{series} {order}"),
            series: series.into(),
            order,
            x,
            y,
        };
        let points = [
            pt("radix-miss", 4.0, 0.60, -0.10),
            pt("radix-miss", 16.0, 0.66, -0.16),
            pt("pointer-chase", 4.0, 0.70, -0.17),
            pt("pointer-chase", 16.0, 0.67, -0.165),
            pt("stream", 16.0, 0.665, -0.158),
            pt("far", 16.0, -0.9, 0.9),
        ];
        let svg = scatter_svg("t", "x", "y", &points);
        let attr = |l: &str, a: &str| -> f64 {
            l.split(&format!(" {a}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let labels: Vec<(f64, f64, f64)> = svg
            .lines()
            .filter(|l| l.contains("class=\"series-label\""))
            .map(|l| {
                let text = l.split('>').nth(1).unwrap().split('<').next().unwrap();
                (
                    attr(l, "x"),
                    attr(l, "y"),
                    text.chars().count() as f64 * LABEL_CHAR_WIDTH,
                )
            })
            .collect();
        assert_eq!(labels.len(), 4);
        for (i, a) in labels.iter().enumerate() {
            for b in &labels[i + 1..] {
                assert!(!overlaps(*a, *b), "labels overlap: {a:?} {b:?}\n{svg}");
            }
        }
        // Two of the three crowded labels had to move; the far one did not.
        assert_eq!(svg.matches("class=\"leader\"").count(), 2, "{svg}");
    }
}
