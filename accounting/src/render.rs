//! Rendering of cycle stacks: stacked-bar SVG charts (one bar per thread, core or
//! configuration, as in Figs. 3 and 4 of the cycle-stacks paper) and plain-text bars for a
//! terminal.
//!
//! Input is plain data — a list of component names and, per bar, a label and one value per
//! component in the same order — so the renderer does not depend on the simulator's types.
//! Each component name has a fixed colour and a fixed character (see [`component_colour`] and
//! [`component_char`]), so the same component looks the same in every chart. Output is
//! deterministic: the same input gives byte-identical strings (numbers are printed with fixed
//! precision, nothing depends on hashing order, time or the host). Values that are NaN,
//! infinite or negative count as zero; finite values are capped at `1e300` so that sums cannot
//! overflow.

use std::fmt::Write as _;

use crate::chart::{nice_step, svg_open};

/// One bar of a chart: a label (e.g. `"thread 3"`) and one value per component, in the order of
/// the `names` passed to [`stacked_bars_svg`] or [`text_bars`].
///
/// Missing trailing values count as zero; values beyond the last name are ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar<'a> {
    /// Label printed under (SVG) or before (text) the bar.
    pub label: String,
    /// One value (cycles) per component name.
    pub values: &'a [f64],
}

/// Bars from owned `(label, values)` pairs, borrowing the values.
pub fn bars(pairs: &[(String, Vec<f64>)]) -> Vec<Bar<'_>> {
    pairs
        .iter()
        .map(|(label, values)| Bar {
            label: label.clone(),
            values,
        })
        .collect()
}

/// Largest value taken as is; larger finite values are capped so that sums stay finite.
const MAX_VALUE: f64 = 1e300;

/// Fixed colour and text character of each known cycle-stack component (DESIGN §4).
///
/// Compute in greens/yellows, front-end events in red/pink, the memory hierarchy in a
/// light-blue → dark-blue → purple ramp (nearest to farthest), synchronisation in oranges and
/// grey, imbalance in greys.
const KNOWN: &[(&str, &str, char)] = &[
    ("base", "#2ca02c", 'b'),
    ("dispatch-width", "#98df8a", 'w'),
    ("depend-int", "#bcbd22", 'i'),
    ("depend-fp", "#ffd92f", 'f'),
    ("depend-mem", "#e5c494", 'M'),
    ("branch", "#d62728", 'B'),
    ("ifetch", "#f781bf", 'I'),
    ("mem-l1d", "#c6dbef", '1'),
    ("mem-l1-neighbor", "#9ecae1", '!'),
    ("mem-l2", "#6baed6", '2'),
    ("mem-l2-neighbor", "#3182bd", '@'),
    ("mem-l3", "#08519c", '3'),
    ("mem-off-socket", "#756bb1", 'o'),
    ("mem-dram", "#54278f", 'D'),
    ("mem-tlb", "#bcbddc", 'T'),
    ("sync-barrier", "#ff7f0e", 'S'),
    ("sync-crit-sect", "#a63603", 'C'),
    ("sync-join", "#fdbe85", 'J'),
    ("sync-cond", "#969696", 'V'),
    ("imbalance-start", "#d9d9d9", '<'),
    ("imbalance-end", "#525252", '>'),
];

/// Characters given to components without a fixed character (or whose character is taken).
const FALLBACK_CHARS: &str = "acdeghjklmnpqrstuvxyzAEFGHKLMNOPQRTUWXYZ0456789#$%&*+=?~^";

/// Character used when no fallback character is left.
const LAST_RESORT_CHAR: char = '?';

/// Filler of a text bar whose total is zero.
const EMPTY_CHAR: char = ' ';

/// The fixed fill colour (`#rrggbb`) of a component name.
///
/// Known components (DESIGN §4) have hand-picked colours; any other name gets a colour derived
/// from a stable hash of the name, so it is the same in every chart and on every host.
pub fn component_colour(name: &str) -> String {
    if let Some(&(_, colour, _)) = KNOWN.iter().find(|(n, _, _)| *n == name) {
        return colour.to_string();
    }
    let h = fnv1a(name.as_bytes());
    let hue = (h % 360) as f64;
    let sat = 0.45 + ((h >> 16) % 30) as f64 / 100.0;
    let light = 0.40 + ((h >> 32) % 25) as f64 / 100.0;
    let (r, g, b) = hsl_to_rgb(hue, sat, light);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The preferred text-bar character of a known component name, if it has one.
///
/// [`text_bars`] uses it unless an earlier name in the same chart already took it; other names
/// get characters from a fallback pool.
pub fn component_char(name: &str) -> Option<char> {
    KNOWN
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, _, c)| c)
}

/// Renders a stacked-bar chart as a self-contained SVG document.
///
/// One bar per entry of `bars`, left to right; components are stacked bottom-up in `names` order,
/// each with its fixed colour ([`component_colour`]). The legend (right of the plot, top-down in
/// stacking order, so it reads like the bars) lists only the components that are non-zero in at
/// least one bar. The y axis is in cycles, or 0–100 % of each bar's total when `normalised`
/// (then every non-empty bar has the full plot height). Each segment carries a tooltip
/// (`<title>`) with the full label, component, cycles and share.
///
/// Many bars widen the chart (bars never get narrower than a few pixels) and rotate or thin
/// out the labels; long labels are shortened with `…` (the tooltips keep them whole). Labels
/// and titles are XML-escaped. No external fonts, scripts, styles or links are referenced.
///
/// Every bar segment is a `<rect class="seg">` with `data-bar` (bar index) and
/// `data-component` attributes; legend entries are `<rect class="swatch">` and
/// `<text class="legend-label">`.
pub fn stacked_bars_svg(title: &str, names: &[&str], bars: &[Bar], normalised: bool) -> String {
    let n = bars.len();
    let values: Vec<Vec<f64>> = bars.iter().map(|b| bar_values(b, names.len())).collect();
    let totals: Vec<f64> = values.iter().map(|v| v.iter().sum()).collect();
    let present = present_components(&values, names.len());

    // Horizontal layout: a slot per bar, the bar centred in its slot.
    let slot = if n == 0 {
        60.0
    } else {
        (640.0 / n as f64).clamp(10.0, 64.0)
    };
    let bar_w = slot * 0.72;
    let plot_w = (slot * n as f64).max(240.0);
    let plot_h = 320.0;
    let labels: Vec<String> = bars
        .iter()
        .map(|b| truncate_chars(&one_line(&b.label), 28))
        .collect();
    let max_label_chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_px = max_label_chars as f64 * LABEL_CHAR_PX;
    let rotate = label_px > slot - 4.0;
    // Rotated labels need about 15 px between neighbours; keep every `label_step`-th one.
    let label_step = if rotate {
        ((15.0 / slot).ceil() as usize).max(1)
    } else {
        1
    };
    let diag = std::f64::consts::FRAC_1_SQRT_2;
    let label_area = if rotate { label_px * diag + 30.0 } else { 30.0 };
    let left = if rotate {
        (label_px * diag - slot / 2.0 + 16.0).max(84.0)
    } else {
        84.0
    };
    let top = 52.0;
    let plot_bottom = top + plot_h;
    let group_x = left + (plot_w - slot * n as f64) / 2.0;

    let max_name_chars = present
        .iter()
        .map(|&j| names[j].chars().count())
        .max()
        .unwrap_or(10);
    let legend_x = left + plot_w + 28.0;
    let legend_row = 18.0;
    let legend_w = 22.0 + max_name_chars as f64 * LEGEND_CHAR_PX + 16.0;
    let legend_h = present.len() as f64 * legend_row;
    let title_w = title.chars().count() as f64 * 8.5 + 40.0;
    let width = (legend_x + legend_w).max(title_w).ceil();
    let height = (plot_bottom + label_area).max(top + legend_h + 12.0).ceil();

    // Vertical scale.
    let (axis_max, tick_step) = if normalised {
        (100.0, 20.0)
    } else {
        nice_axis(totals.iter().copied().fold(0.0, f64::max))
    };

    let mut s = svg_open(width, height);
    let _ = writeln!(s, "<title>{}</title>", xml_escape(title));
    let _ = writeln!(
        s,
        "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{:.2}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" \
         font-weight=\"bold\">{}</text>",
        width / 2.0,
        xml_escape(title)
    );

    // Grid lines, ticks and tick labels.
    let unit = AxisUnit::for_max(axis_max, normalised);
    let n_ticks = (axis_max / tick_step).round() as usize;
    for k in 0..=n_ticks {
        let v = tick_step * k as f64;
        let y = plot_bottom - v / axis_max * plot_h;
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{left:.2}\" y1=\"{y:.2}\" x2=\"{:.2}\" y2=\"{y:.2}\" \
             stroke=\"#e0e0e0\" stroke-width=\"1\"/>",
            left + plot_w
        );
        let _ = writeln!(
            s,
            "<line class=\"tick\" x1=\"{:.2}\" y1=\"{y:.2}\" x2=\"{left:.2}\" y2=\"{y:.2}\" \
             stroke=\"#333333\" stroke-width=\"1\"/>",
            left - 5.0
        );
        let _ = writeln!(
            s,
            "<text class=\"tick-label\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + 4.0,
            unit.format(v, tick_step)
        );
    }
    let _ = writeln!(
        s,
        "<text class=\"axis-title\" x=\"16\" y=\"{:.2}\" text-anchor=\"middle\" \
         transform=\"rotate(-90 16 {:.2})\">{}</text>",
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        unit.axis_title()
    );

    // Bars.
    for (i, (vals, &total)) in values.iter().zip(&totals).enumerate() {
        let x = group_x + i as f64 * slot + (slot - bar_w) / 2.0;
        // Divide before multiplying: `plot_h / tiny` could overflow.
        let denom = if normalised { total } else { axis_max };
        let full_label = xml_escape(&one_line(&bars[i].label));
        let mut cursor = plot_bottom;
        for (j, &v) in vals.iter().enumerate() {
            if v <= 0.0 {
                continue;
            }
            let h = v / denom * plot_h;
            let y = cursor - h;
            let share = v / total * 100.0;
            let _ = writeln!(
                s,
                "<rect class=\"seg\" data-bar=\"{i}\" data-component=\"{}\" x=\"{x:.3}\" \
                 y=\"{y:.3}\" width=\"{bar_w:.3}\" height=\"{h:.3}\" fill=\"{}\" \
                 stroke=\"#ffffff\" stroke-width=\"0.3\"><title>{full_label}: {} {} cycles \
                 ({share:.1} %)</title></rect>",
                xml_escape(names[j]),
                component_colour(names[j]),
                xml_escape(names[j]),
                thousands(v),
            );
            cursor = y;
        }
    }

    // Axes drawn over the bars.
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{left:.2}\" y1=\"{top:.2}\" x2=\"{left:.2}\" \
         y2=\"{plot_bottom:.2}\" stroke=\"#333333\" stroke-width=\"1\"/>"
    );
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{left:.2}\" y1=\"{plot_bottom:.2}\" x2=\"{:.2}\" \
         y2=\"{plot_bottom:.2}\" stroke=\"#333333\" stroke-width=\"1\"/>",
        left + plot_w
    );

    // Bar labels.
    for (i, label) in labels.iter().enumerate() {
        if i % label_step != 0 {
            continue;
        }
        let cx = group_x + (i as f64 + 0.5) * slot;
        if rotate {
            let y = plot_bottom + 12.0;
            let _ = writeln!(
                s,
                "<text class=\"bar-label\" x=\"{:.2}\" y=\"{y:.2}\" text-anchor=\"end\" \
                 transform=\"rotate(-45 {:.2} {y:.2})\">{}</text>",
                cx + 3.0,
                cx + 3.0,
                xml_escape(label)
            );
        } else {
            let _ = writeln!(
                s,
                "<text class=\"bar-label\" x=\"{cx:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}</text>",
                plot_bottom + 16.0,
                xml_escape(label)
            );
        }
    }

    if present.is_empty() {
        let _ = writeln!(
            s,
            "<text class=\"note\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\" \
             fill=\"#777777\">{}</text>",
            left + plot_w / 2.0,
            top + plot_h / 2.0,
            if n == 0 {
                "no data"
            } else {
                "all components are zero"
            }
        );
    }

    // Legend, top-down in reverse stacking order so that it reads like the bars.
    for (row, &j) in present.iter().rev().enumerate() {
        let y = top + row as f64 * legend_row;
        let _ = writeln!(
            s,
            "<rect class=\"swatch\" data-component=\"{}\" x=\"{legend_x:.2}\" y=\"{y:.2}\" \
             width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#555555\" stroke-width=\"0.5\"/>",
            xml_escape(names[j]),
            component_colour(names[j])
        );
        let _ = writeln!(
            s,
            "<text class=\"legend-label\" x=\"{:.2}\" y=\"{:.2}\">{}</text>",
            legend_x + 18.0,
            y + 10.0,
            xml_escape(names[j])
        );
    }

    s.push_str("</svg>\n");
    s
}

/// Renders bars for a terminal: one line per bar, then one legend line.
///
/// Each line holds the label (padded; long labels are shortened with `…` and control
/// characters become spaces), the total in cycles with thousands separators, and a bar of
/// exactly `width` characters between `|` — one character per component, repeated in
/// proportion to the component's share of the bar. Counts use largest-remainder rounding, so
/// they sum exactly to `width` (ties go to the earlier component); a bar whose total is zero is
/// blank. The legend line maps characters to component names, only for components that are
/// non-zero in some bar. Zero bars give an empty string.
///
/// ```text
/// thread 0  1,234,567 cyc |bbbbbbbbbbbiiiiiii222222222222SSSS|
/// legend: b=base i=depend-int 2=mem-l2 S=sync-barrier
/// ```
pub fn text_bars(names: &[&str], bars: &[Bar], width: usize) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let values: Vec<Vec<f64>> = bars.iter().map(|b| bar_values(b, names.len())).collect();
    let present = present_components(&values, names.len());
    let chars = assign_chars(names);

    let labels: Vec<String> = bars
        .iter()
        .map(|b| truncate_chars(&one_line(&b.label), 40))
        .collect();
    let totals: Vec<String> = values
        .iter()
        .map(|v| thousands(v.iter().sum::<f64>()))
        .collect();
    let label_w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let total_w = totals.iter().map(|t| t.chars().count()).max().unwrap_or(0);

    let mut out = String::new();
    for ((label, total), vals) in labels.iter().zip(&totals).zip(&values) {
        let counts = largest_remainder(vals, width);
        let mut bar = String::with_capacity(width);
        for (j, &c) in counts.iter().enumerate() {
            bar.extend(std::iter::repeat_n(chars[j], c));
        }
        let filled: usize = counts.iter().sum();
        bar.extend(std::iter::repeat_n(EMPTY_CHAR, width - filled));
        let _ = writeln!(out, "{label:<label_w$}  {total:>total_w$} cyc |{bar}|");
    }
    out.push_str("legend:");
    if present.is_empty() {
        out.push_str(" (all components are zero)");
    }
    for &j in &present {
        let _ = write!(out, " {}={}", chars[j], one_line(names[j]));
    }
    out.push('\n');
    out
}

/// Approximate advance of a bar-label character at font size 11, in pixels.
const LABEL_CHAR_PX: f64 = 6.3;
/// Approximate advance of a legend character at font size 11, in pixels.
const LEGEND_CHAR_PX: f64 = 6.6;

/// Sanitised value: NaN, infinities and negatives become 0, huge values are capped.
fn clean(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v.min(MAX_VALUE)
    } else {
        0.0
    }
}

/// The bar's sanitised values, exactly one per name.
fn bar_values(bar: &Bar, n_names: usize) -> Vec<f64> {
    (0..n_names)
        .map(|j| bar.values.get(j).copied().map_or(0.0, clean))
        .collect()
}

/// Indices of components that are non-zero in at least one bar, in name order.
fn present_components(values: &[Vec<f64>], n_names: usize) -> Vec<usize> {
    (0..n_names)
        .filter(|&j| values.iter().any(|v| v[j] > 0.0))
        .collect()
}

/// One text character per name: a known component's own character unless an earlier name took
/// it, otherwise the next free fallback character.
fn assign_chars(names: &[&str]) -> Vec<char> {
    let mut chosen: Vec<Option<char>> = vec![None; names.len()];
    let mut used: Vec<char> = Vec::new();
    for (j, name) in names.iter().enumerate() {
        if let Some(c) = component_char(name)
            && !used.contains(&c)
        {
            chosen[j] = Some(c);
            used.push(c);
        }
    }
    let mut pool = FALLBACK_CHARS.chars().filter(|c| !used.contains(c));
    chosen
        .into_iter()
        .map(|c| c.unwrap_or_else(|| pool.next().unwrap_or(LAST_RESORT_CHAR)))
        .collect()
}

/// Splits `width` cells over the values in proportion, by largest-remainder rounding: floors
/// first, then one more cell each to the largest remainders (ties to the lower index). Counts sum
/// to exactly `width` unless all values are zero (then all counts are zero). Zero values never
/// get a cell.
fn largest_remainder(values: &[f64], width: usize) -> Vec<usize> {
    let total: f64 = values.iter().sum();
    // `total` is a sum of sanitised values: never NaN.
    if total <= 0.0 || width == 0 {
        return vec![0; values.len()];
    }
    let exact: Vec<f64> = values.iter().map(|v| v / total * width as f64).collect();
    let mut counts: Vec<usize> = exact
        .iter()
        .map(|e| (e.floor() as usize).min(width))
        .collect();
    let mut assigned: usize = counts.iter().sum();
    // Floating-point slack could in theory overshoot; take back from the largest counts.
    while assigned > width {
        let (idx, _) = counts
            .iter()
            .enumerate()
            .max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i)))
            .expect("non-empty: total > 0");
        counts[idx] -= 1;
        assigned -= 1;
    }
    let mut order: Vec<usize> = (0..values.len()).filter(|&i| values[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let mut k = 0;
    while assigned < width && !order.is_empty() {
        counts[order[k % order.len()]] += 1;
        assigned += 1;
        k += 1;
    }
    counts
}

/// A "nice" axis for data up to `max`: (axis maximum, tick step) with the step 1, 2, 2.5 or 5
/// times a power of ten and about five ticks.
fn nice_axis(max: f64) -> (f64, f64) {
    // Below a nano-cycle the axis stops shrinking (tiny bars just draw flat).
    let max = if max > 0.0 && max.is_finite() {
        max.max(1e-9)
    } else {
        1.0
    };
    let Some(step) = nice_step(max / 5.0) else {
        return (max, max);
    };
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    if !top.is_finite() || step <= 0.0 || top / step > 100.0 {
        return (max, max);
    }
    (top, step)
}

/// How y-axis tick values are printed.
enum AxisUnit {
    /// 0–100 %.
    Percent,
    /// Cycles divided by a power of a thousand, with its suffix.
    Scaled(f64, &'static str),
    /// Cycles in scientific notation (astronomical values).
    Scientific,
}

impl AxisUnit {
    fn for_max(axis_max: f64, normalised: bool) -> Self {
        if normalised {
            AxisUnit::Percent
        } else if axis_max >= 1e15 {
            AxisUnit::Scientific
        } else if axis_max >= 1e12 {
            AxisUnit::Scaled(1e12, "T")
        } else if axis_max >= 1e9 {
            AxisUnit::Scaled(1e9, "G")
        } else if axis_max >= 1e6 {
            AxisUnit::Scaled(1e6, "M")
        } else if axis_max >= 1e4 {
            AxisUnit::Scaled(1e3, "k")
        } else {
            AxisUnit::Scaled(1.0, "")
        }
    }

    fn format(&self, v: f64, step: f64) -> String {
        match *self {
            AxisUnit::Percent => format!("{v:.0} %"),
            _ if v == 0.0 => "0".to_string(),
            AxisUnit::Scientific => format!("{v:.2e}"),
            AxisUnit::Scaled(div, suffix) => {
                let decimals = decimals_for(step / div);
                format!("{:.*}{suffix}", decimals, v / div)
            }
        }
    }

    fn axis_title(&self) -> &'static str {
        match self {
            AxisUnit::Percent => "% of cycles",
            _ => "cycles",
        }
    }
}

/// Decimals needed to print multiples of `step` exactly (at most 6).
fn decimals_for(step: f64) -> usize {
    let mut d = 0;
    while d < 6 {
        let scaled = step * 10f64.powi(d as i32);
        if (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0) {
            break;
        }
        d += 1;
    }
    d
}

/// `v` rounded to an integer, with `,` every three digits (e.g. `1,234,567`); from `1e15` on,
/// scientific notation.
fn thousands(v: f64) -> String {
    if v >= 1e15 {
        return format!("{v:.3e}");
    }
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `s` with control characters (including line breaks) replaced by spaces.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `s` cut to at most `max` characters, the last one `…` when cut.
fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` escaped for XML text and attribute values; characters XML 1.0 forbids are replaced.
/// The result is also safe as HTML text and as a quoted HTML attribute value.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// 64-bit FNV-1a hash (stable across hosts and releases, unlike `std`'s hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// HSL (hue in degrees, saturation and lightness in 0–1) to 8-bit RGB.
fn hsl_to_rgb(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let to8 = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (to8(r), to8(g), to8(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All stable component names (DESIGN §4), from the core model that defines them.
    const NAMES: &[&str] = &sim_core::Component::NAMES;

    /// Bars from (label, values) pairs.
    fn bars<'a>(v: &[(&str, &'a [f64])]) -> Vec<Bar<'a>> {
        v.iter()
            .map(|(l, vals)| Bar {
                label: l.to_string(),
                values: vals,
            })
            .collect()
    }

    // ---- A tiny XML well-formedness checker and tree, enough for these tests. ----

    #[derive(Debug)]
    struct Node {
        name: String,
        attrs: Vec<(String, String)>,
        children: Vec<Node>,
        text: String,
    }

    impl Node {
        fn attr(&self, k: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(a, _)| a == k)
                .map(|(_, v)| v.as_str())
        }

        fn descendants<'n>(&'n self, out: &mut Vec<&'n Node>) {
            for c in &self.children {
                out.push(c);
                c.descendants(out);
            }
        }

        fn find_all(&self, name: &str, class: &str) -> Vec<&Node> {
            let mut all = Vec::new();
            self.descendants(&mut all);
            all.into_iter()
                .filter(|n| n.name == name && n.attr("class") == Some(class))
                .collect()
        }
    }

    struct Parser<'s> {
        s: &'s str,
        pos: usize,
    }

    impl<'s> Parser<'s> {
        fn rest(&self) -> &'s str {
            &self.s[self.pos..]
        }

        fn err<T>(&self, msg: &str) -> Result<T, String> {
            let ctx: String = self.rest().chars().take(40).collect();
            Err(format!("{msg} at byte {}: {ctx:?}", self.pos))
        }

        fn skip_ws(&mut self) {
            let r = self.rest();
            self.pos += r.len() - r.trim_start().len();
        }

        fn eat(&mut self, lit: &str) -> bool {
            if self.rest().starts_with(lit) {
                self.pos += lit.len();
                true
            } else {
                false
            }
        }

        fn skip_until(&mut self, end: &str) -> Result<(), String> {
            match self.rest().find(end) {
                Some(i) => {
                    self.pos += i + end.len();
                    Ok(())
                }
                None => self.err(&format!("unterminated, expected {end:?}")),
            }
        }

        fn skip_misc(&mut self) -> Result<(), String> {
            loop {
                self.skip_ws();
                if self.eat("<!--") {
                    self.skip_until("-->")?;
                } else if self.eat("<?") {
                    self.skip_until("?>")?;
                } else {
                    return Ok(());
                }
            }
        }

        fn name(&mut self) -> Result<String, String> {
            let r = self.rest();
            let len = r
                .char_indices()
                .find(|&(i, c)| {
                    !(c.is_alphanumeric()
                        || c == '_'
                        || c == ':'
                        || (i > 0 && (c == '-' || c == '.')))
                })
                .map_or(r.len(), |(i, _)| i);
            if len == 0 || r.starts_with(|c: char| c.is_ascii_digit()) {
                return self.err("expected a name");
            }
            self.pos += len;
            Ok(r[..len].to_string())
        }

        fn decode(&self, raw: &str) -> Result<String, String> {
            let mut out = String::new();
            let mut rest = raw;
            while let Some(i) = rest.find('&') {
                out.push_str(&rest[..i]);
                let after = &rest[i + 1..];
                let Some(end) = after.find(';') else {
                    return self.err("bare '&'");
                };
                let ent = &after[..end];
                let c = match ent {
                    "amp" => '&',
                    "lt" => '<',
                    "gt" => '>',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => {
                        let code = if let Some(h) = ent.strip_prefix("#x") {
                            u32::from_str_radix(h, 16).ok()
                        } else if let Some(d) = ent.strip_prefix('#') {
                            d.parse().ok()
                        } else {
                            None
                        };
                        match code.and_then(char::from_u32) {
                            Some(c) => c,
                            None => return self.err(&format!("bad entity &{ent};")),
                        }
                    }
                };
                out.push(c);
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            if out
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
            {
                return self.err("control character");
            }
            Ok(out)
        }

        fn element(&mut self) -> Result<Node, String> {
            if !self.eat("<") {
                return self.err("expected '<'");
            }
            let name = self.name()?;
            let mut attrs: Vec<(String, String)> = Vec::new();
            loop {
                let before = self.pos;
                self.skip_ws();
                if self.eat("/>") {
                    return Ok(Node {
                        name,
                        attrs,
                        children: vec![],
                        text: String::new(),
                    });
                }
                if self.eat(">") {
                    break;
                }
                if self.pos == before {
                    return self.err("expected whitespace before attribute");
                }
                let key = self.name()?;
                self.skip_ws();
                if !self.eat("=") {
                    return self.err("expected '='");
                }
                self.skip_ws();
                let quote = if self.eat("\"") {
                    '"'
                } else if self.eat("'") {
                    '\''
                } else {
                    return self.err("expected a quote");
                };
                let Some(end) = self.rest().find(quote) else {
                    return self.err("unterminated attribute");
                };
                let raw = &self.rest()[..end];
                if raw.contains('<') {
                    return self.err("'<' in attribute value");
                }
                let value = self.decode(raw)?;
                self.pos += end + 1;
                if attrs.iter().any(|(k, _)| *k == key) {
                    return self.err("duplicate attribute");
                }
                attrs.push((key, value));
            }
            let mut children = Vec::new();
            let mut text = String::new();
            loop {
                if self.eat("</") {
                    let end = self.name()?;
                    if end != name {
                        return self.err(&format!("</{end}> closes <{name}>"));
                    }
                    self.skip_ws();
                    if !self.eat(">") {
                        return self.err("expected '>'");
                    }
                    return Ok(Node {
                        name,
                        attrs,
                        children,
                        text,
                    });
                } else if self.eat("<!--") {
                    self.skip_until("-->")?;
                } else if self.rest().starts_with('<') {
                    children.push(self.element()?);
                } else if self.rest().is_empty() {
                    return self.err(&format!("unclosed <{name}>"));
                } else {
                    let end = self.rest().find('<').unwrap_or(self.rest().len());
                    let raw = &self.rest()[..end];
                    text.push_str(&self.decode(raw)?);
                    self.pos += end;
                }
            }
        }
    }

    /// Parses `s` as an XML document with one root element, or says why it is not well formed.
    fn parse_xml(s: &str) -> Result<Node, String> {
        let mut p = Parser { s, pos: 0 };
        p.skip_misc()?;
        let root = p.element()?;
        p.skip_misc()?;
        if !p.rest().is_empty() {
            return p.err("content after the root element");
        }
        Ok(root)
    }

    fn num(n: &Node, attr: &str) -> f64 {
        n.attr(attr)
            .unwrap_or_else(|| panic!("missing {attr}"))
            .parse()
            .unwrap_or_else(|e| panic!("bad {attr}: {e}"))
    }

    /// Sum of segment heights per bar index.
    fn heights_per_bar(root: &Node, n_bars: usize) -> Vec<f64> {
        let mut h = vec![0.0; n_bars];
        for r in root.find_all("rect", "seg") {
            let i: usize = r.attr("data-bar").unwrap().parse().unwrap();
            h[i] += num(r, "height");
        }
        h
    }

    fn seg<'n>(root: &'n Node, bar: usize, comp: &str) -> &'n Node {
        let bar = bar.to_string();
        root.find_all("rect", "seg")
            .into_iter()
            .find(|r| r.attr("data-bar") == Some(&bar) && r.attr("data-component") == Some(comp))
            .unwrap_or_else(|| panic!("no segment for bar {bar} {comp}"))
    }

    fn legend(root: &Node) -> Vec<String> {
        root.find_all("text", "legend-label")
            .into_iter()
            .map(|t| t.text.clone())
            .collect()
    }

    /// The part of a text-bar line between the `|`s.
    fn bar_part(line: &str) -> &str {
        let start = line.find('|').expect("opening |") + 1;
        let end = line.rfind('|').expect("closing |");
        &line[start..end]
    }

    #[test]
    fn xml_checker_rejects_malformed_documents() {
        assert!(parse_xml("<a><b/></a>").is_ok());
        assert!(parse_xml("<a><b></a>").is_err());
        assert!(parse_xml("<a x=\"1\" x=\"2\"/>").is_err());
        assert!(parse_xml("<a>x & y</a>").is_err());
        assert!(parse_xml("<a>x < y</a>").is_err());
        assert!(parse_xml("<a/><b/>").is_err());
        assert!(parse_xml("<a t=\"<\"/>").is_err());
    }

    #[test]
    fn svg_is_well_formed_with_one_rect_per_nonzero_segment() {
        let names = ["base", "mem-l2", "mem-dram", "sync-barrier"];
        let v0 = [100.0, 0.0, 50.0, 25.0];
        let v1 = [200.0, 10.0, 0.0, 0.0];
        let v2 = [0.0, 0.0, 0.0, 0.0];
        let bars = bars(&[("thread 0", &v0), ("thread 1", &v1), ("thread 2", &v2)]);
        for normalised in [false, true] {
            let svg = stacked_bars_svg("fft", &names, &bars, normalised);
            let root = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
            assert_eq!(root.name, "svg");
            let segs = root.find_all("rect", "seg");
            let mut got: Vec<(String, String)> = segs
                .iter()
                .map(|r| {
                    (
                        r.attr("data-bar").unwrap().to_string(),
                        r.attr("data-component").unwrap().to_string(),
                    )
                })
                .collect();
            got.sort();
            let want: Vec<(String, String)> = vec![
                ("0".into(), "base".into()),
                ("0".into(), "mem-dram".into()),
                ("0".into(), "sync-barrier".into()),
                ("1".into(), "base".into()),
                ("1".into(), "mem-l2".into()),
            ];
            assert_eq!(got, want);
            // Stacked bottom-up in name order: base lowest (largest y), sync on top.
            let base = seg(&root, 0, "base");
            let dram = seg(&root, 0, "mem-dram");
            let sync = seg(&root, 0, "sync-barrier");
            assert!(num(base, "y") > num(dram, "y") && num(dram, "y") > num(sync, "y"));
            assert!((num(dram, "y") + num(dram, "height") - num(base, "y")).abs() < 0.01);
            assert_eq!(base.attr("fill"), Some(component_colour("base").as_str()));
        }
    }

    #[test]
    fn svg_heights_are_proportional_to_values() {
        let names = ["base", "mem-l3"];
        let v0 = [100.0, 300.0];
        let v1 = [50.0, 0.0];
        let bars = bars(&[("a", &v0), ("b", &v1)]);
        let svg = stacked_bars_svg("t", &names, &bars, false);
        let root = parse_xml(&svg).unwrap();
        let base0 = num(seg(&root, 0, "base"), "height");
        let l3 = num(seg(&root, 0, "mem-l3"), "height");
        let base1 = num(seg(&root, 1, "base"), "height");
        assert!(base0 > 1.0);
        assert!((l3 / base0 - 3.0).abs() < 1e-3, "{l3} / {base0}");
        // Absolute mode: the same scale across bars.
        assert!((base0 / base1 - 2.0).abs() < 1e-3, "{base0} / {base1}");
        let totals = heights_per_bar(&root, 2);
        assert!((totals[0] / totals[1] - 8.0).abs() < 1e-3);
    }

    #[test]
    fn svg_legend_lists_exactly_the_nonzero_components() {
        let names = ["base", "depend-fp", "branch", "mem-l2", "sync-join"];
        let v0 = [5.0, 0.0, 0.0, 1.0, 0.0];
        let v1 = [1.0, 0.0, f64::NAN, 0.0, 2.0];
        let bars = bars(&[("t0", &v0), ("t1", &v1)]);
        let root = parse_xml(&stacked_bars_svg("t", &names, &bars, true)).unwrap();
        // Top-down in reverse stacking order.
        assert_eq!(legend(&root), ["sync-join", "mem-l2", "base"]);
        let swatches: Vec<&str> = root
            .find_all("rect", "swatch")
            .iter()
            .map(|r| r.attr("data-component").unwrap())
            .collect();
        assert_eq!(swatches, ["sync-join", "mem-l2", "base"]);
        for r in root.find_all("rect", "swatch") {
            let name = r.attr("data-component").unwrap();
            assert_eq!(r.attr("fill"), Some(component_colour(name).as_str()));
        }
    }

    #[test]
    fn normalised_bars_have_the_same_total_height() {
        let names = ["base", "mem-l1d", "mem-dram", "imbalance-end"];
        let v0 = [10.0, 20.0, 30.0, 0.0];
        let v1 = [1000.0, 0.0, 7.0, 3.5];
        let v2 = [0.001, 0.0, 0.0, 0.0];
        let bars = bars(&[("2 cores", &v0), ("4 cores", &v1), ("8 cores", &v2)]);
        let root = parse_xml(&stacked_bars_svg("scaling", &names, &bars, true)).unwrap();
        let h = heights_per_bar(&root, 3);
        assert!(h[0] > 100.0);
        for (i, &x) in h.iter().enumerate() {
            assert!((x - h[0]).abs() < 0.01, "bar {i}: {x} vs {}", h[0]);
        }
        // Tick labels run 0 % … 100 %.
        let ticks: Vec<String> = root
            .find_all("text", "tick-label")
            .iter()
            .map(|t| t.text.clone())
            .collect();
        assert_eq!(ticks.first().map(String::as_str), Some("0 %"));
        assert_eq!(ticks.last().map(String::as_str), Some("100 %"));
        // Absolute mode does not equalise them.
        let root = parse_xml(&stacked_bars_svg("scaling", &names, &bars, false)).unwrap();
        let h = heights_per_bar(&root, 3);
        assert!(h[1] > 10.0 * h[0]);
    }

    #[test]
    fn svg_and_text_are_deterministic() {
        let v0 = [1.5, 2.25, 3.0, 0.0, 7.0];
        let v1 = [0.1, 0.0, 9.0, 1.0, 2.0];
        let bars = bars(&[("thread 0", &v0), ("thread 1", &v1)]);
        let names = &NAMES[..5];
        for normalised in [false, true] {
            let a = stacked_bars_svg("x", names, &bars, normalised);
            let b = stacked_bars_svg("x", names, &bars, normalised);
            assert_eq!(a, b);
        }
        assert_eq!(text_bars(names, &bars, 30), text_bars(names, &bars, 30));
    }

    #[test]
    fn svg_escapes_labels_and_titles() {
        let v = [1.0];
        let bars = [Bar {
            label: "a<b&\"c\"".into(),
            values: &v,
        }];
        let svg = stacked_bars_svg("<fft> & 'co'", &["base"], &bars, false);
        assert!(svg.contains("a&lt;b&amp;&quot;c&quot;"), "{svg}");
        assert!(!svg.contains("a<b"));
        assert!(svg.contains("&lt;fft&gt; &amp; &apos;co&apos;"));
        let root = parse_xml(&svg).unwrap();
        let labels = root.find_all("text", "bar-label");
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].text, "a<b&\"c\"");
        assert_eq!(root.find_all("text", "title")[0].text, "<fft> & 'co'");
    }

    #[test]
    fn svg_colours_are_fixed_per_component_and_distinct() {
        let v = [1.0, 2.0, 3.0];
        let bars = [Bar {
            label: "t".into(),
            values: &v,
        }];
        let a = parse_xml(&stacked_bars_svg(
            "a",
            &["base", "mem-l2", "sync-cond"],
            &bars,
            false,
        ))
        .unwrap();
        let b = parse_xml(&stacked_bars_svg(
            "b",
            &["sync-cond", "base", "mem-l2"],
            &bars,
            false,
        ))
        .unwrap();
        for name in ["base", "mem-l2", "sync-cond"] {
            assert_eq!(
                seg(&a, 0, name).attr("fill"),
                seg(&b, 0, name).attr("fill"),
                "{name}"
            );
        }
        let mut colours: Vec<String> = NAMES.iter().map(|n| component_colour(n)).collect();
        colours.push(component_colour("dispatch-width"));
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), NAMES.len() + 1);
        // Unknown names get a stable, well-formed colour.
        let c = component_colour("something-new");
        assert_eq!(c, component_colour("something-new"));
        assert!(c.len() == 7 && c.starts_with('#'));
        assert!(c[1..].chars().all(|ch| ch.is_ascii_hexdigit()));
    }

    #[test]
    fn svg_edge_cases_stay_well_formed() {
        // Zero bars.
        let root = parse_xml(&stacked_bars_svg("empty", NAMES, &[], false)).unwrap();
        assert!(root.find_all("rect", "seg").is_empty());
        assert!(legend(&root).is_empty());
        // No names at all.
        let v = [1.0];
        let bars = [Bar {
            label: "x".into(),
            values: &v,
        }];
        parse_xml(&stacked_bars_svg("", &[], &bars, true)).unwrap();
        // All-zero, NaN, negative, infinite, short and long value slices.
        let zero = [0.0; 18];
        let bad = [f64::NAN, -5.0, f64::INFINITY, f64::NEG_INFINITY, 3.0];
        let long = [1.0; 40];
        let huge = [f64::MAX, f64::MAX, f64::MAX];
        let bars = [
            Bar {
                label: "zero".into(),
                values: &zero,
            },
            Bar {
                label: "bad".into(),
                values: &bad,
            },
            Bar {
                label: "long".into(),
                values: &long,
            },
            Bar {
                label: "short".into(),
                values: &[],
            },
        ];
        for normalised in [false, true] {
            let svg = stacked_bars_svg("edge", NAMES, &bars, normalised);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            let root = parse_xml(&svg).unwrap();
            // bad: only the 3.0; long: the first 18 values.
            assert_eq!(root.find_all("rect", "seg").len(), 1 + NAMES.len());
            let hb = [Bar {
                label: "huge".into(),
                values: &huge,
            }];
            let svg = stacked_bars_svg("huge", NAMES, &hb, normalised);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            parse_xml(&svg).unwrap();
            let zb = [Bar {
                label: "z".into(),
                values: &zero,
            }];
            let root = parse_xml(&stacked_bars_svg("z", NAMES, &zb, normalised)).unwrap();
            assert!(root.find_all("rect", "seg").is_empty());
            assert!(legend(&root).is_empty());
        }
        // Tiny values.
        for tiny in [[1e-300, 5e-324], [0.0, 5e-324]] {
            for normalised in [false, true] {
                let tb = [Bar {
                    label: "tiny".into(),
                    values: &tiny,
                }];
                let svg = stacked_bars_svg("tiny", NAMES, &tb, normalised);
                assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
                parse_xml(&svg).unwrap();
            }
        }
    }

    #[test]
    fn svg_many_bars_and_long_labels() {
        let v = [3.0, 1.0, 2.0];
        let long_label = "x".repeat(1000) + "<&>\u{0}\n";
        let few: Vec<Bar> = (0..4)
            .map(|i| Bar {
                label: format!("thread {i}"),
                values: &v,
            })
            .collect();
        let many: Vec<Bar> = (0..500)
            .map(|i| Bar {
                label: if i == 7 {
                    long_label.clone()
                } else {
                    format!("thread {i}")
                },
                values: &v,
            })
            .collect();
        let names = ["base", "mem-l3", "sync-barrier"];
        let svg_few = stacked_bars_svg("few", &names, &few, true);
        let svg_many = stacked_bars_svg("many", &names, &many, true);
        let width = |n: &Node| num(n, "width");
        let few_root = parse_xml(&svg_few).unwrap();
        let root = parse_xml(&svg_many).unwrap();
        assert!(width(&root) > 4.0 * width(&few_root));
        assert_eq!(root.find_all("rect", "seg").len(), 1500);
        let labels = root.find_all("text", "bar-label");
        assert!(!labels.is_empty() && labels.len() < 500, "{}", labels.len());
        assert!(labels.iter().all(|l| l.text.chars().count() <= 28));
        assert!(labels.iter().all(|l| l.attr("transform").is_some()));
        // Short labels in a small chart stay horizontal.
        assert!(
            few_root
                .find_all("text", "bar-label")
                .iter()
                .all(|l| l.attr("transform").is_none())
        );
        // Bars stay inside the drawing.
        for r in root.find_all("rect", "seg") {
            assert!(num(r, "x") >= 0.0 && num(r, "x") + num(r, "width") <= width(&root));
        }
    }

    #[test]
    fn text_bars_have_exactly_width_characters() {
        let v0 = [5.0, 3.0, 2.0, 0.0];
        let v1 = [1.0, 1.0, 1.0, 1.0];
        let v2 = [0.0; 4];
        let v3 = [1e-9, 1e9, f64::NAN, -1.0];
        let bars = bars(&[
            ("thread 0", &v0),
            ("thread 10", &v1),
            ("idle", &v2),
            ("odd", &v3),
        ]);
        let names = ["base", "mem-l2", "sync-barrier", "imbalance-end"];
        for width in [0, 1, 3, 7, 40, 73] {
            let out = text_bars(&names, &bars, width);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), bars.len() + 1, "{out}");
            for line in &lines[..bars.len()] {
                assert_eq!(bar_part(line).chars().count(), width, "{line:?}");
            }
            // Label and total columns are aligned: all bars start at the same column.
            let starts: Vec<usize> = lines[..bars.len()]
                .iter()
                .map(|l| l.find('|').unwrap())
                .collect();
            assert!(starts.windows(2).all(|w| w[0] == w[1]), "{out}");
        }
    }

    #[test]
    fn text_bars_counts_follow_largest_remainder() {
        let names = ["base", "mem-l2", "sync-barrier"];
        let count = |bar: &str, c: char| bar.chars().filter(|&x| x == c).count();
        // 3.5 / 2.1 / 1.4 of 7: floors 3+2+1, the extra cell to the largest remainder (.5).
        let v = [5.0, 3.0, 2.0];
        let out = text_bars(
            &names,
            &[Bar {
                label: "t".into(),
                values: &v,
            }],
            7,
        );
        let bar = bar_part(out.lines().next().unwrap());
        assert_eq!(
            (count(bar, 'b'), count(bar, '2'), count(bar, 'S')),
            (4, 2, 1)
        );
        assert_eq!(bar, "bbbb22S");
        // Equal values: ties go to the earlier component.
        let v = [1.0, 1.0, 1.0];
        let out = text_bars(
            &names,
            &[Bar {
                label: "t".into(),
                values: &v,
            }],
            10,
        );
        assert_eq!(bar_part(out.lines().next().unwrap()), "bbbb222SSS");
        // Within rounding for arbitrary values, summing exactly to the width.
        let v = [0.37, 12.9, 3.3];
        for width in [5, 13, 50, 101] {
            let out = text_bars(
                &names,
                &[Bar {
                    label: "t".into(),
                    values: &v,
                }],
                width,
            );
            let bar = bar_part(out.lines().next().unwrap());
            let total: f64 = v.iter().sum();
            let mut sum = 0;
            for (j, c) in ['b', '2', 'S'].into_iter().enumerate() {
                let exact = v[j] / total * width as f64;
                let got = count(bar, c);
                assert!((got as f64 - exact).abs() < 1.0, "{c}: {got} vs {exact}");
                sum += got;
            }
            assert_eq!(sum, width);
        }
        assert_eq!(largest_remainder(&[0.0, 0.0], 5), vec![0, 0]);
        assert_eq!(largest_remainder(&[0.0, 2.0, 0.0], 5), vec![0, 5, 0]);
    }

    #[test]
    fn text_bars_legend_maps_chars_to_present_names() {
        let v0 = [4.0, 0.0, 2.0, 0.0, 1.0];
        let v1 = [1.0, 0.0, 0.0, 0.0, 1.0];
        let bars = bars(&[("thread 0", &v0), ("thread 1", &v1)]);
        let names = [
            "base",
            "depend-int",
            "mem-l2-neighbor",
            "mem-dram",
            "sync-crit-sect",
        ];
        let out = text_bars(&names, &bars, 20);
        let legend = out.lines().last().unwrap();
        assert_eq!(legend, "legend: b=base @=mem-l2-neighbor C=sync-crit-sect");
        for line in out.lines().take(2) {
            for c in bar_part(line).chars() {
                assert!(legend.contains(&format!(" {c}=")), "{c} not in {legend}");
            }
        }
        // Every known component has its own character.
        let mut chars = assign_chars(NAMES);
        chars.sort_unstable();
        chars.dedup();
        assert_eq!(chars.len(), NAMES.len());
        // Unknown or repeated names fall back to unused characters.
        let chars = assign_chars(&["base", "base", "weird", "mem-l2"]);
        assert_eq!(chars[0], 'b');
        assert_eq!(chars[3], '2');
        assert!(chars[1] != chars[2] && !['b', '2'].contains(&chars[1]));
        assert!(!['b', '2'].contains(&chars[2]));
    }

    #[test]
    fn text_bars_totals_labels_and_edge_cases() {
        let v0 = [1_000_000.0, 234_567.0];
        let v1 = [12.0, 0.0];
        let bars = bars(&[("thread 0", &v0), ("thread 12", &v1)]);
        let out = text_bars(&["base", "mem-l3"], &bars, 10);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "thread 0   1,234,567 cyc |bbbbbbbb33|");
        assert_eq!(lines[1], "thread 12         12 cyc |bbbbbbbbbb|");
        assert_eq!(text_bars(NAMES, &[], 10), "");
        // Zero bar is blank; NaN and negatives count as zero; control characters flattened.
        let zero = [0.0, f64::NAN, -3.0];
        let long = "y".repeat(500) + "\nnext";
        let bars = [
            Bar {
                label: "a\tb\nc".into(),
                values: &zero,
            },
            Bar {
                label: long,
                values: &zero,
            },
        ];
        let out = text_bars(&["base", "mem-l3", "branch"], &bars, 6);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(bar_part(lines[0]), "      ");
        assert!(lines[0].starts_with("a b c "));
        assert!(
            lines[1].contains('…') && lines[1].chars().count() < 80,
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "legend: (all components are zero)");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(12_345.0), "12,345");
    }

    #[test]
    fn axis_is_nice() {
        assert_eq!(nice_axis(1_234_567.0), (1_250_000.0, 250_000.0));
        assert_eq!(nice_axis(100.0), (100.0, 20.0));
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        let unit = AxisUnit::for_max(1_250_000.0, false);
        assert_eq!(unit.format(250_000.0, 250_000.0), "0.25M");
        assert_eq!(unit.format(1_000_000.0, 250_000.0), "1.00M");
        assert_eq!(unit.format(0.0, 250_000.0), "0");
    }
}
