//! Charts as self-contained SVG documents, kept apart from the analyses whose results they
//! draw: [`scatter`] (principal-component scores, for [`crate::pca`]), [`dendrogram`] (for
//! [`crate::cluster`]) and [`shares`] (ParaShares per block, for [`crate::parashare`]); the stacked bars of cycle stacks are [`crate::render`]'s. This file
//! holds the helpers they share: the document's opening, "nice" tick steps, axis ticks over an
//! arbitrary range, tick-label formatting and a fixed palette for series. Everything is
//! deterministic and prints numbers with fixed precision.

pub mod dendrogram;
pub mod scatter;
pub mod shares;

/// Colours of series, in order (a qualitative palette readable on white); series beyond its
/// length reuse it from the start.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// The colour of series `i`.
pub(crate) fn series_colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Opens an SVG document of `width` × `height` pixels: the XML declaration and the `<svg>`
/// element (sans-serif, 11 px by default). The caller closes it with `</svg>`.
pub(crate) fn svg_open(width: f64, height: f64) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    )
}

/// Opens a chart page: [`svg_open`], a white background and the bold title at `title_x` (as
/// written in the `x` attribute).
pub(crate) fn svg_page(width: f64, height: f64, title: &str, title_x: &str) -> String {
    use std::fmt::Write as _;
    let mut s = svg_open(width, height);
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{title_x}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        crate::render::xml_escape(title)
    );
    s
}

/// The "nice" tick step for about `raw` per tick: 1, 2, 2.5, 5 or 10 times the power of ten
/// at or below `raw`. `None` when `raw` is not a finite positive number.
pub(crate) fn nice_step(raw: f64) -> Option<f64> {
    let mag = 10f64.powf(raw.log10().floor());
    if mag <= 0.0 || !mag.is_finite() {
        return None;
    }
    let norm = raw / mag;
    let mult = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    Some(mult * mag)
}

/// About five "nice" ticks (steps of 1, 2, 2.5 or 5 times a power of ten) covering
/// `[lo, hi]`: returns the axis range (a multiple of the step on both ends) and the step.
/// An empty or degenerate range is widened around its value.
pub(crate) fn nice_range(lo: f64, hi: f64) -> (f64, f64, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi - lo < 1e-12 {
        let pad = (lo.abs() * 0.1).max(0.5);
        lo -= pad;
        hi += pad;
    }
    let raw = (hi - lo) / 5.0;
    let step = nice_step(raw).unwrap_or(raw);
    let a = (lo / step + 1e-9).floor() * step;
    let b = (hi / step - 1e-9).ceil() * step;
    (a, b, step)
}

/// The ticks `a, a + step, …, b` of a [`nice_range`], without accumulated rounding error.
pub(crate) fn ticks(a: f64, b: f64, step: f64) -> Vec<f64> {
    let n = ((b - a) / step).round() as i64;
    (0..=n.clamp(0, 1000))
        .map(|i| {
            let v = a + i as f64 * step;
            if v.abs() < step * 1e-9 { 0.0 } else { v }
        })
        .collect()
}

/// A tick label: `v` with as many decimals as multiples of `step` need (at most 6).
pub(crate) fn tick_label(v: f64, step: f64) -> String {
    let mut d = 0;
    while d < 6 {
        let scaled = step * 10f64.powi(d);
        if (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0) {
            break;
        }
        d += 1;
    }
    format!("{:.*}", d as usize, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_data_with_nice_steps() {
        assert_eq!(nice_range(-0.23, 0.61), (-0.4, 0.8, 0.2));
        assert_eq!(nice_range(0.0, 10.0), (0.0, 10.0, 2.0));
        let (a, b, s) = nice_range(3.0, 3.0);
        assert!(a < 3.0 && b > 3.0 && s > 0.0);
        let (a, b, _) = nice_range(f64::NAN, 1.0);
        assert_eq!((a, b), (0.0, 1.0));
        assert_eq!(ticks(-0.4, 0.8, 0.2).len(), 7);
        assert_eq!(ticks(-0.4, 0.8, 0.2)[2], 0.0);
        assert_eq!(tick_label(0.6000000001, 0.2), "0.6");
        assert_eq!(tick_label(25.0, 2.5), "25.0");
        assert_eq!(tick_label(40.0, 20.0), "40");
        assert_ne!(series_colour(0), series_colour(1));
        assert_eq!(series_colour(0), series_colour(10));
    }
}
