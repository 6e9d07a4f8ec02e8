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
//! The Fig. 8-style scatter plot of the scores is [`crate::chart::scatter`]'s.

use nalgebra::DMatrix;

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
}
