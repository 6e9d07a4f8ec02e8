//! The ParaShares of a run's blocks, largest first (ParaShares paper Fig. 2: "the ParaShare
//! percentages, ordered from greatest to least share, of all the basic blocks"): one bar per
//! block rank, its height the block's percent of the total, with the cumulative share drawn as
//! a line over the bars so that "how few blocks hold 90 %" reads off the chart.

use std::fmt::Write as _;

use super::{nice_range, svg_page, tick_label, ticks};
use crate::render::xml_escape;

/// Most bars drawn; the blocks past it hold what the cumulative line's last point leaves.
pub const MAX_BARS: usize = 200;

/// One block of the chart: its tooltip label and its percent of the total ParaShare.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareBar {
    /// What the tooltip says of the block (rank, function, source lines).
    pub label: String,
    /// Percent of the total ParaShare.
    pub share: f64,
}

/// The chart as a self-contained SVG document: bars are `<rect class="bar">` (at most
/// [`MAX_BARS`], in the given order), each with a `<title>` tooltip; the cumulative share is
/// one `<polyline class="cumulative">` on the same 0–100 % axis.
pub fn shares_svg(title: &str, bars: &[ShareBar]) -> String {
    let shown = &bars[..bars.len().min(MAX_BARS)];
    let (left, top, pw, ph) = (56.0, 48.0, 640.0, 260.0);
    let width = left + pw + 24.0;
    let height = top + ph + 56.0;
    let (_, yb, ys) = nice_range(0.0, 100.0);
    let py = |v: f64| top + ph - v.clamp(0.0, yb) / yb * ph;
    let slot = pw / shown.len().max(1) as f64;

    let mut s = svg_page(width, height, title, "16");
    for v in ticks(0.0, yb, ys) {
        let y = py(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eeeeee\"/>",
            left + pw
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            tick_label(v, ys)
        );
    }
    let mut cum = 0.0;
    let mut points = Vec::with_capacity(shown.len());
    for (i, b) in shown.iter().enumerate() {
        let x = left + i as f64 * slot;
        let y = py(b.share);
        let _ = writeln!(
            s,
            "<rect class=\"bar\" x=\"{:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" \
             fill=\"#1f77b4\"><title>{} ({:.2} %)</title></rect>",
            x + slot * 0.1,
            (slot * 0.8).max(0.5),
            (top + ph - y).max(0.0),
            xml_escape(&b.label),
            b.share
        );
        cum += b.share;
        points.push(format!("{:.2},{:.2}", x + slot / 2.0, py(cum)));
    }
    let _ = writeln!(
        s,
        "<polyline class=\"cumulative\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" \
         points=\"{}\"/>",
        points.join(" ")
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">blocks by rank ({} of {} drawn); \
         bars: percent of the total ParaShare, line: cumulative</text>",
        left + pw / 2.0,
        top + ph + 32.0,
        shown.len(),
        bars.len()
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_block_and_the_cumulative_line_ends_at_the_total() {
        let bars: Vec<ShareBar> = [60.0, 30.0, 10.0]
            .iter()
            .enumerate()
            .map(|(i, &share)| ShareBar {
                label: format!("rank {} <f>", i + 1),
                share,
            })
            .collect();
        let svg = shares_svg("ParaShares", &bars);
        assert_eq!(svg.matches("class=\"bar\"").count(), 3);
        assert!(svg.contains("rank 1 &lt;f&gt; (60.00 %)"), "{svg}");
        // The line's last point is at 100 %, i.e. the top of the plot (y = 48).
        let line = svg.lines().find(|l| l.contains("cumulative\"")).unwrap();
        assert!(line.contains(",48.00\""), "{line}");
        let many: Vec<ShareBar> = (0..MAX_BARS + 5)
            .map(|i| ShareBar {
                label: i.to_string(),
                share: 0.1,
            })
            .collect();
        assert_eq!(
            shares_svg("t", &many).matches("class=\"bar\"").count(),
            MAX_BARS
        );
    }
}
