//! Principal component analysis of normalised cycle stacks (cycle-stacks paper §2.4, Table 5,
//! Figs. 7–8).
//!
//! Rows are runs (workload × input × core count × config, or a thread group of one), columns
//! are cycle-stack components, values are each component's share of the aggregated stack.
//! The choices, and why:
//!
//! * **Columns are centred, not scaled** by default (covariance PCA). Every column is a
//!   share of the same cycles, so they share a unit and their variances are comparable; scaling
//!   each to unit variance would blow a component that is almost always zero (a few
//!   `mem-l1-neighbor` cycles) up to the weight of `base`, and the leading components would
//!   describe noise. The paper's loadings (depend-fp 0.85 on PC1, mem-dram 0.94 on PC2) have
//!   this shape. [`PcaOptions::standardize`] gives correlation PCA for those who want it.
//! * **Columns with zero variance are dropped** (all-zero ones, like `sync-cond` in a
//!   workload without condition variables, and any other constant column): they carry no
//!   information, would need a division by zero when standardising, and would only add rows
//!   of zeros to the loadings. [`Pca::dropped`] names them.
//! * Components are computed by a singular value decomposition of the centred (and optionally
//!   scaled) matrix (nalgebra): loadings are the right singular vectors, the variance of a
//!   component is σ²/(n − 1), and scores are the centred rows projected on the loadings.
//!   Components beyond the matrix's numerical rank (variance below 1e-12 of the total) are
//!   left out: their directions are arbitrary.
//! * The sign of a component is arbitrary; it is fixed so that the loading largest in
//!   magnitude is positive, which makes output deterministic.
//!
//! [`scatter_svg`] draws the Fig. 8-style plot: rows in the plane of two components, the
//! points of one series (a workload at several core counts) joined from the smallest to the
//! largest core count, the largest marked with a cross.

use std::fmt::Write as _;

use nalgebra::DMatrix;

use crate::plot::{nice_range, series_colour, svg_open, tick_label, ticks};
use crate::render::xml_escape;
use crate::table::ReportTable;

/// How to prepare the columns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcaOptions {
    /// Scale every column to unit variance (correlation PCA) after centring.
    pub standardize: bool,
}

/// Why a PCA could not be computed.
#[derive(Debug, Clone, PartialEq)]
pub enum PcaError {
    /// Fewer than two rows: there is no variance to analyse.
    TooFewRows(usize),
    /// A row does not have one value per column.
    Ragged {
        /// Row index.
        row: usize,
        /// Its length.
        len: usize,
        /// The number of columns.
        expected: usize,
    },
    /// A value is NaN or infinite.
    NotFinite {
        /// Row index.
        row: usize,
        /// Column name.
        column: String,
    },
    /// Every column is constant.
    NoVariance,
}

impl std::fmt::Display for PcaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PcaError::TooFewRows(n) => write!(
                f,
                "PCA needs at least two rows (runs), got {n}: give more runs, core counts or workloads"
            ),
            PcaError::Ragged { row, len, expected } => {
                write!(f, "row {row} has {len} values, expected {expected}")
            }
            PcaError::NotFinite { row, column } => {
                write!(
                    f,
                    "row {row}, column {column}: value is not a finite number"
                )
            }
            PcaError::NoVariance => write!(
                f,
                "every column is the same in all rows: there is nothing for PCA to explain"
            ),
        }
    }
}

impl std::error::Error for PcaError {}

/// A fitted PCA.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    /// Columns kept, in input order.
    pub columns: Vec<String>,
    /// Columns dropped for having zero variance, in input order.
    pub dropped: Vec<String>,
    /// Whether columns were scaled to unit variance.
    pub standardized: bool,
    /// Mean of each kept column.
    pub means: Vec<f64>,
    /// What each kept column was divided by after centring (1 unless standardised).
    pub scales: Vec<f64>,
    /// Variance of each principal component, descending.
    pub variances: Vec<f64>,
    /// Share of the total variance of each component.
    pub explained: Vec<f64>,
    /// Cumulative share up to and including each component.
    pub cumulative: Vec<f64>,
    /// `loadings[k][j]`: weight of kept column `j` in component `k` (unit vectors).
    pub loadings: Vec<Vec<f64>>,
    /// `scores[i][k]`: row `i` projected on component `k`.
    pub scores: Vec<Vec<f64>>,
}

/// Components whose variance is below this share of the total are numerical noise.
const RANK_TOLERANCE: f64 = 1e-12;

impl Pca {
    /// Fits a PCA to `rows` (one value per entry of `columns` each).
    pub fn fit(columns: &[&str], rows: &[Vec<f64>], opts: PcaOptions) -> Result<Pca, PcaError> {
        let n = rows.len();
        if n < 2 {
            return Err(PcaError::TooFewRows(n));
        }
        for (i, r) in rows.iter().enumerate() {
            if r.len() != columns.len() {
                return Err(PcaError::Ragged {
                    row: i,
                    len: r.len(),
                    expected: columns.len(),
                });
            }
            if let Some(j) = r.iter().position(|v| !v.is_finite()) {
                return Err(PcaError::NotFinite {
                    row: i,
                    column: columns[j].to_string(),
                });
            }
        }
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        let mut means = Vec::new();
        let mut scales = Vec::new();
        for (j, name) in columns.iter().enumerate() {
            let mean = rows.iter().map(|r| r[j]).sum::<f64>() / n as f64;
            let var = rows.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            // Constant up to rounding: relative to the column's magnitude, or exactly zero.
            let scale_ref = rows.iter().map(|r| r[j].abs()).fold(0.0, f64::max);
            if var <= (scale_ref * 1e-12).powi(2) {
                dropped.push(name.to_string());
            } else {
                kept.push(j);
                means.push(mean);
                scales.push(if opts.standardize { var.sqrt() } else { 1.0 });
            }
        }
        if kept.is_empty() {
            return Err(PcaError::NoVariance);
        }
        let p = kept.len();
        let x = DMatrix::from_fn(n, p, |i, k| (rows[i][kept[k]] - means[k]) / scales[k]);
        let svd = x.clone().svd(false, true);
        let v_t = svd.v_t.expect("SVD was asked for V^T");
        let sv = &svd.singular_values;
        let mut order: Vec<usize> = (0..sv.len()).collect();
        order.sort_by(|&a, &b| sv[b].total_cmp(&sv[a]).then(a.cmp(&b)));
        let total: f64 = sv.iter().map(|s| s * s).sum();
        let mut variances = Vec::new();
        let mut loadings = Vec::new();
        for &k in &order {
            let s2 = sv[k] * sv[k];
            if total <= 0.0 || s2 <= RANK_TOLERANCE * total {
                continue;
            }
            let mut w: Vec<f64> = (0..p).map(|j| v_t[(k, j)]).collect();
            // Deterministic sign: the largest-magnitude weight is positive.
            let big = (0..p)
                .max_by(|&a, &b| w[a].abs().total_cmp(&w[b].abs()).then(b.cmp(&a)))
                .expect("p > 0");
            if w[big] < 0.0 {
                w.iter_mut().for_each(|v| *v = -*v);
            }
            variances.push(s2 / (n - 1) as f64);
            loadings.push(w);
        }
        let var_total: f64 = variances.iter().sum();
        let explained: Vec<f64> = variances.iter().map(|v| v / var_total).collect();
        let mut acc = 0.0;
        let cumulative = explained
            .iter()
            .map(|e| {
                acc += e;
                acc.min(1.0)
            })
            .collect();
        let scores = (0..n)
            .map(|i| {
                loadings
                    .iter()
                    .map(|w| (0..p).map(|j| x[(i, j)] * w[j]).sum())
                    .collect()
            })
            .collect();
        Ok(Pca {
            columns: kept.iter().map(|&j| columns[j].to_string()).collect(),
            dropped,
            standardized: opts.standardize,
            means,
            scales,
            variances,
            explained,
            cumulative,
            loadings,
            scores,
        })
    }

    /// Number of principal components.
    pub fn components(&self) -> usize {
        self.variances.len()
    }

    /// The smallest number of components whose cumulative share reaches `fraction` (at least
    /// one, at most all).
    pub fn components_for(&self, fraction: f64) -> usize {
        let k = self
            .cumulative
            .iter()
            .position(|&c| c >= fraction - 1e-12)
            .map_or(self.components(), |i| i + 1);
        k.clamp(1.min(self.components()), self.components())
    }

    /// The column with the largest weight in component `k` (its "main contributor").
    pub fn main_contributor(&self, k: usize) -> &str {
        let w = &self.loadings[k];
        let j = (0..w.len())
            .max_by(|&a, &b| w[a].abs().total_cmp(&w[b].abs()).then(b.cmp(&a)))
            .expect("a component has weights");
        &self.columns[j]
    }

    /// "PC 1 (depend-fp)" — a component's name with its main contributor.
    pub fn component_title(&self, k: usize) -> String {
        format!("PC {} ({})", k + 1, self.main_contributor(k))
    }

    /// Per component: variance, share and cumulative share, in percent.
    pub fn variance_table(&self) -> ReportTable {
        let mut t = ReportTable::new(
            format!(
                "Principal components ({} PCA over {} columns)",
                if self.standardized {
                    "correlation"
                } else {
                    "covariance"
                },
                self.columns.len()
            ),
            &[
                "component",
                "main contributor",
                "variance",
                "explained %",
                "cumulative %",
            ],
        );
        for k in 0..self.components() {
            t.rows.push(vec![
                format!("PC {}", k + 1),
                self.main_contributor(k).to_string(),
                format!("{:.3e}", self.variances[k]),
                format!("{:.2}", 100.0 * self.explained[k]),
                format!("{:.2}", 100.0 * self.cumulative[k]),
            ]);
        }
        t
    }

    /// The paper's Table 5: cumulative variance, then one row per kept column with its weight
    /// in each of the first `k` components (`—` where |w| < 0.01, as in the paper).
    pub fn loadings_table(&self, k: usize) -> ReportTable {
        let k = k.min(self.components());
        let mut cols = vec!["component".to_string()];
        cols.extend((0..k).map(|i| format!("PC {}", i + 1)));
        let mut rows = vec![{
            let mut r = vec!["cum. variance %".to_string()];
            r.extend((0..k).map(|i| format!("{:.2}", 100.0 * self.cumulative[i])));
            r
        }];
        for (j, name) in self.columns.iter().enumerate() {
            let mut r = vec![name.clone()];
            for w in &self.loadings[..k] {
                r.push(if w[j].abs() < 0.01 {
                    "—".to_string()
                } else {
                    format!("{:.2}", w[j])
                });
            }
            rows.push(r);
        }
        ReportTable {
            title: "PCA loadings (weights of each component)".to_string(),
            columns: cols,
            rows,
        }
    }
}

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

    let mut s = svg_open(width, height);
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{:.1}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        left,
        xml_escape(title)
    );
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

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Equal up to sign, element-wise within `tol`.
    fn same_up_to_sign(a: &[f64], b: &[f64], tol: f64) -> bool {
        let plus = a.iter().zip(b).all(|(x, y)| (x - y).abs() < tol);
        let minus = a.iter().zip(b).all(|(x, y)| (x + y).abs() < tol);
        plus || minus
    }

    /// A matrix with a known rank-2 structure: rows = offset + t1_i v1 + t2_i v2 with v1 ⊥ v2
    /// unit vectors and t1, t2 centred and orthogonal, so that the principal components are
    /// exactly v1 and v2, with variances |t|²/(n−1). Column 5 is constant, column 6 all zero.
    #[test]
    fn pca_recovers_a_known_rank_two_structure() {
        let v1 = [0.5, 0.5, 0.5, 0.5, 0.0, 0.0];
        let v2 = [0.5, -0.5, 0.5, -0.5, 0.0, 0.0];
        let offset = [0.20, 0.10, 0.30, 0.05, 0.35, 0.0];
        let t1 = [3.0, -3.0, 3.0, -3.0, 1.0, -1.0, 0.0, 0.0];
        let t2 = [1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0];
        assert_eq!(t1.iter().sum::<f64>(), 0.0);
        assert_eq!(t2.iter().sum::<f64>(), 0.0);
        assert_eq!(dot(&t1, &t2), 0.0);
        let rows: Vec<Vec<f64>> = (0..8)
            .map(|i| {
                (0..6)
                    .map(|j| offset[j] + t1[i] * v1[j] + t2[i] * v2[j])
                    .collect()
            })
            .collect();
        let names = ["a", "b", "c", "d", "const", "zero"];
        let pca = Pca::fit(&names, &rows, PcaOptions::default()).unwrap();
        assert_eq!(pca.columns, ["a", "b", "c", "d"]);
        assert_eq!(pca.dropped, ["const", "zero"]);
        assert_eq!(pca.components(), 2, "rank 2: {:?}", pca.variances);
        let (n1, n2) = (dot(&t1, &t1), dot(&t2, &t2)); // 38 and 12
        assert!((pca.variances[0] - n1 / 7.0).abs() < 1e-9);
        assert!((pca.variances[1] - n2 / 7.0).abs() < 1e-9);
        assert!((pca.explained[0] - n1 / (n1 + n2)).abs() < 1e-12);
        assert!((pca.cumulative[1] - 1.0).abs() < 1e-12);
        assert!(same_up_to_sign(&pca.loadings[0], &v1[..4], 1e-9));
        assert!(same_up_to_sign(&pca.loadings[1], &v2[..4], 1e-9));
        // Scores are the t vectors (same sign as the loadings' flip).
        let s1: Vec<f64> = pca.scores.iter().map(|r| r[0]).collect();
        let s2: Vec<f64> = pca.scores.iter().map(|r| r[1]).collect();
        assert!(same_up_to_sign(&s1, &t1, 1e-9));
        assert!(same_up_to_sign(&s2, &t2, 1e-9));
        assert_eq!(pca.components_for(0.5), 1);
        assert_eq!(pca.components_for(0.99), 2);
        // Table 5 shape: a cumulative row, then one row per kept column.
        let t = pca.loadings_table(6);
        assert_eq!(t.columns, ["component", "PC 1", "PC 2"]);
        assert_eq!(t.rows[0], ["cum. variance %", "76.00", "100.00"]);
        assert_eq!(t.rows.len(), 5);
        assert_eq!(pca.variance_table().rows.len(), 2);
    }

    /// The SVD route agrees with an eigendecomposition of the covariance (or correlation)
    /// matrix computed independently, on irregular data.
    #[test]
    fn pca_matches_the_eigendecomposition_of_the_covariance() {
        let mut state = 0x1234_5678_u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let rows: Vec<Vec<f64>> = (0..11)
            .map(|_| {
                let a = rnd();
                vec![a, 2.0 * a + 0.1 * rnd(), rnd() * 0.01, rnd(), 0.0]
            })
            .collect();
        let names = ["w", "x", "y", "z", "never"];
        for standardize in [false, true] {
            let pca = Pca::fit(&names, &rows, PcaOptions { standardize }).unwrap();
            assert_eq!(pca.dropped, ["never"]);
            let p = 4;
            let n = rows.len() as f64;
            let mean: Vec<f64> = (0..p)
                .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n)
                .collect();
            let sd: Vec<f64> = (0..p)
                .map(|j| {
                    (rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
                })
                .collect();
            let z =
                |r: &Vec<f64>, j: usize| (r[j] - mean[j]) / if standardize { sd[j] } else { 1.0 };
            let cov = nalgebra::DMatrix::from_fn(p, p, |a, b| {
                rows.iter().map(|r| z(r, a) * z(r, b)).sum::<f64>() / (n - 1.0)
            });
            let eig = cov.symmetric_eigen();
            let mut idx: Vec<usize> = (0..p).collect();
            idx.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
            assert_eq!(pca.components(), p);
            for (k, &e) in idx.iter().enumerate() {
                assert!(
                    (pca.variances[k] - eig.eigenvalues[e]).abs() < 1e-10,
                    "{standardize} PC{k}: {} vs {}",
                    pca.variances[k],
                    eig.eigenvalues[e]
                );
                let v: Vec<f64> = (0..p).map(|j| eig.eigenvectors[(j, e)]).collect();
                assert!(same_up_to_sign(&pca.loadings[k], &v, 1e-7), "{k}");
                let big = pca.loadings[k]
                    .iter()
                    .copied()
                    .max_by(|a, b| a.abs().total_cmp(&b.abs()))
                    .unwrap();
                assert!(big > 0.0);
            }
            if standardize {
                // Correlation PCA: the variances sum to the number of columns.
                assert!((pca.variances.iter().sum::<f64>() - 4.0).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn pca_rejects_bad_input() {
        let names = ["a", "b"];
        assert_eq!(
            Pca::fit(&names, &[vec![1.0, 2.0]], PcaOptions::default()),
            Err(PcaError::TooFewRows(1))
        );
        assert!(matches!(
            Pca::fit(&names, &[vec![1.0, 2.0], vec![1.0]], PcaOptions::default()),
            Err(PcaError::Ragged { row: 1, .. })
        ));
        assert!(matches!(
            Pca::fit(
                &names,
                &[vec![1.0, f64::NAN], vec![1.0, 2.0]],
                PcaOptions::default()
            ),
            Err(PcaError::NotFinite { row: 0, .. })
        ));
        assert_eq!(
            Pca::fit(
                &names,
                &[vec![1.0, 2.0], vec![1.0, 2.0]],
                PcaOptions::default()
            ),
            Err(PcaError::NoVariance)
        );
    }

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
