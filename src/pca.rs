//! `isim pca`: the scaling analysis of the cycle-stacks paper (§2.4–§2.5, §4.2–§4.3) over many
//! runs. Each run of the given sweep or run directories becomes a row (a thread group of a
//! heterogeneous run becomes a row of its own) holding the normalised aggregated stack of its
//! threads doing real work; `accounting::pca` finds the principal components (covariance PCA,
//! zero-variance columns dropped — see its docs for why), and the runs are clustered with average
//! linkage on their scores in the leading components that explain `--variance` of the total
//! (90 % by default, as in the paper's Fig. 6), Euclidean distance.
//!
//! Outputs in `--out`: `pca.json` (rows, components, loadings, scores, merges and
//! `report_tables`), `pca.svg` (PC 1 against PC 2, each workload's core counts joined from the
//! smallest to the largest, Fig. 8 style) and `dendrogram.svg` (Fig. 6 style).

use std::path::{Path, PathBuf};

use accounting::chart::dendrogram::dendrogram_svg;
use accounting::chart::scatter::{ScatterPoint, scatter_svg};
use accounting::cluster::{Merge, average_linkage, leaf_order};
use accounting::pca::{Pca, PcaOptions};
use accounting::table::ReportTable;
use anyhow::{Context, Result, bail};
use clap::Args;
use sim_core::{COMPONENTS, Component};

use crate::dirs::pca::{self as files, PcaComponent, PcaFile, PcaRow, SCHEMA};
use crate::dirs::sweep::{ARGS_FILE, SweepFile, is_sweep_dir};
use crate::fsutil::write_atomic;
use crate::stacks::{self, RunStacks};

/// `isim pca` arguments.
#[derive(Args, Debug, Clone)]
pub struct PcaArgs {
    /// Sweep directories (`isim sweep`) and run directories (`isim run`).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Keep only runs with these core counts, comma-separated (e.g. `4,16`).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub cores: Vec<u32>,
    /// Scale every component to unit variance (correlation PCA) instead of only centring it.
    #[arg(long)]
    pub standardize: bool,
    /// Cluster on the leading components that explain this share of the variance.
    #[arg(long, default_value_t = 0.9, value_name = "FRACTION")]
    pub variance: f64,
    /// Output directory for pca.json, pca.svg and dendrogram.svg.
    #[arg(long = "out", short = 'o', default_value = "isim-pca")]
    pub out: PathBuf,
    /// What the lines of pca.svg join: a workload's runs across core counts (`cores`, the
    /// cycle-stacks paper's Fig. 8) or across input sizes at each core count (`sizes`, Fig. 9:
    /// the cross marks the largest input).
    #[arg(long, value_enum, default_value_t = Join::Cores)]
    pub join: Join,
}

/// What a series of the scatter plot joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Join {
    /// One series per workload (size, config, group) across core counts.
    Cores,
    /// One series per workload (config, group) and core count across input sizes.
    Sizes,
}

/// One row of the data matrix.
#[derive(Debug, Clone)]
pub struct Row {
    /// Label in tables and charts, e.g. `lu-owner 16c`.
    pub label: String,
    /// The series it belongs to (its label without the core count, or without the size with
    /// `--join sizes`): joined in `pca.svg`.
    pub series: String,
    /// The run directory.
    pub dir: PathBuf,
    /// Workload name.
    pub workload: String,
    /// Thread group, for a heterogeneous run.
    pub group: Option<String>,
    /// Workload size, if recorded.
    pub size: Option<u64>,
    /// Config label, for runs of a sweep.
    pub config: Option<String>,
    /// Core count.
    pub cores: u32,
    /// Where it lies along its series' line: its core count, or its size (`--join sizes`).
    pub order: f64,
    /// Each component's share of the aggregated stack.
    pub shares: [f64; COMPONENTS],
}

/// A run to turn into rows, with where it came from.
struct Source<'a> {
    run: &'a RunStacks,
    config: Option<&'a str>,
}

/// The runs of `dirs` (sweep or run directories), each with its config label if it belongs
/// to a sweep.
fn load_runs(dirs: &[PathBuf]) -> Result<Vec<(RunStacks, Option<String>)>> {
    let mut out = Vec::new();
    for d in dirs {
        if is_sweep_dir(d) {
            let s = SweepFile::open(d)?;
            for r in &s.runs {
                out.push((stacks::load(&d.join(&r.dir))?, Some(r.config.clone())));
            }
        } else if d.join(crate::dirs::run::SUMMARY).is_file() {
            out.push((stacks::load(d)?, None));
        } else if d.is_dir() {
            bail!(
                "{}: neither a sweep directory ({}) nor a run directory (summary.json)",
                d.display(),
                ARGS_FILE
            );
        } else {
            bail!("{}: no such directory", d.display());
        }
    }
    Ok(out)
}

/// The rows of the runs in `dirs` (sweep or run directories), keeping only `cores` if given,
/// in series as `join` says.
pub fn collect_rows(dirs: &[PathBuf], cores: &[u32], join: Join) -> Result<Vec<Row>> {
    let loaded = load_runs(dirs)?;
    let src = loaded.iter().map(|(run, config)| Source {
        run,
        config: config.as_deref(),
    });
    Ok(rows_of(src.collect(), cores, join))
}

/// The rows of one finished sweep, its `sweep.json` and runs (in its order) already read (for
/// the report).
pub fn sweep_rows(sweep: &SweepFile, runs: &[RunStacks]) -> Vec<Row> {
    let src = sweep.runs.iter().zip(runs).map(|(r, run)| Source {
        run,
        config: Some(&r.config),
    });
    rows_of(src.collect(), &[], Join::Cores)
}

fn rows_of(src: Vec<Source>, cores: &[u32], join: Join) -> Vec<Row> {
    let src: Vec<Source> = src
        .into_iter()
        .filter(|s| cores.is_empty() || cores.contains(&s.run.cores))
        .collect();
    // A size goes into labels only for workloads seen at more than one size.
    let multi_size = |w: &str| {
        let mut sizes: Vec<Option<u64>> = src
            .iter()
            .filter(|s| s.run.workload == w)
            .map(|s| s.run.size())
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes.len() > 1
    };
    let mut configs: Vec<Option<&str>> = src.iter().map(|s| s.config).collect();
    configs.sort_unstable();
    configs.dedup();
    let mut rows = Vec::new();
    for s in &src {
        let r = s.run;
        let mut base = vec![r.workload.clone()];
        let size_tag = (multi_size(&r.workload) || join == Join::Sizes)
            .then(|| r.size().map(|z| format!("s{z}")))
            .flatten();
        if join == Join::Cores
            && let Some(z) = &size_tag
        {
            base.push(z.clone());
        }
        if configs.len() > 1
            && let Some(c) = &s.config
        {
            base.push(c.to_string());
        }
        if join == Join::Sizes {
            base.push(format!("{}c", r.cores));
        }
        let base = base.join(" ");
        let (tail, order) = match join {
            Join::Cores => (format!("{}c", r.cores), f64::from(r.cores)),
            Join::Sizes => (
                size_tag.clone().unwrap_or_else(|| "s?".to_string()),
                r.size().map_or(0.0, |z| z as f64),
            ),
        };
        let mut push = |group: Option<&str>, shares: [f64; COMPONENTS]| {
            let series = match group {
                Some(g) => format!("{}:{g}{}", r.workload, &base[r.workload.len()..]),
                None => base.clone(),
            };
            rows.push(Row {
                label: format!("{series} {tail}"),
                series,
                order,
                dir: r.dir.clone(),
                workload: r.workload.clone(),
                group: group.map(str::to_string),
                size: r.size(),
                config: s.config.map(str::to_string),
                cores: r.cores,
                shares,
            });
        };
        if r.aggregate.heterogeneous() {
            for g in r.aggregate.working_groups() {
                push(Some(&g.name), g.aggregate.shares());
            }
        } else {
            push(None, r.aggregate.overall.shares());
        }
    }
    // Same label twice (e.g. the same workload from two sweeps with other seeds): number them.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &mut rows {
        let k = seen.entry(r.label.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            r.label = format!("{} #{k}", r.label);
            r.series = format!("{} #{k}", r.series);
        }
    }
    rows
}

/// A finished analysis.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The rows.
    pub rows: Vec<Row>,
    /// The PCA.
    pub pca: Pca,
    /// Components the clustering used.
    pub clustered_on: usize,
    /// Average-linkage merges over the rows.
    pub merges: Vec<Merge>,
}

impl Analysis {
    /// Runs PCA and clustering over `rows`.
    pub fn of(rows: Vec<Row>, opts: PcaOptions, variance: f64) -> Result<Analysis> {
        if !(variance > 0.0 && variance <= 1.0) {
            bail!("--variance {variance}: expected a share in (0, 1], e.g. 0.9");
        }
        let data: Vec<Vec<f64>> = rows.iter().map(|r| r.shares.to_vec()).collect();
        let pca = Pca::fit(&Component::NAMES, &data, opts)?;
        let q = pca.components_for(variance);
        let pts: Vec<Vec<f64>> = pca.scores.iter().map(|s| s[..q].to_vec()).collect();
        let merges = average_linkage(&pts);
        Ok(Analysis {
            rows,
            pca,
            clustered_on: q,
            merges,
        })
    }

    /// The scatter plot of PC 1 against PC 2 (PC 1 against itself-zero if there is only one).
    pub fn scatter_svg(&self) -> String {
        let p = &self.pca;
        let has2 = p.components() > 1;
        let points: Vec<ScatterPoint> = self
            .rows
            .iter()
            .zip(&p.scores)
            .map(|(r, s)| ScatterPoint {
                label: r.label.clone(),
                series: r.series.clone(),
                order: r.order,
                x: s[0],
                y: if has2 { s[1] } else { 0.0 },
            })
            .collect();
        let axis = |k: usize| {
            format!(
                "{} — {:.1} % of variance",
                p.component_title(k),
                100.0 * p.explained[k]
            )
        };
        scatter_svg(
            &format!(
                "PCA of normalised cycle stacks: PC 1 and PC 2 explain {:.1} %",
                100.0 * p.cumulative[if has2 { 1 } else { 0 }]
            ),
            &axis(0),
            &if has2 {
                axis(1)
            } else {
                "(one component)".into()
            },
            &points,
        )
    }

    /// The dendrogram.
    pub fn dendrogram_svg(&self) -> String {
        let labels: Vec<String> = self.rows.iter().map(|r| r.label.clone()).collect();
        dendrogram_svg(
            &format!(
                "Average-linkage clustering on {} ({:.1} % of variance)",
                if self.clustered_on == 1 {
                    "PC 1".to_string()
                } else {
                    format!("PC 1–{}", self.clustered_on)
                },
                100.0 * self.pca.cumulative[self.clustered_on - 1]
            ),
            &labels,
            &self.merges,
        )
    }

    /// The tables: variance, loadings (Table 5) and scores.
    pub fn tables(&self) -> Vec<ReportTable> {
        let p = &self.pca;
        let k = p.components().min(6);
        let mut scores = ReportTable {
            title: "PCA scores per run".into(),
            columns: std::iter::once("run".to_string())
                .chain((0..k).map(|i| format!("PC {}", i + 1)))
                .collect(),
            rows: Vec::new(),
        };
        for (r, s) in self.rows.iter().zip(&p.scores) {
            let mut row = vec![r.label.clone()];
            row.extend(s[..k].iter().map(|v| format!("{v:.3}")));
            scores.rows.push(row);
        }
        vec![p.variance_table(), p.loadings_table(k), scores]
    }

    /// `pca.json`.
    pub fn file(&self) -> PcaFile {
        let p = &self.pca;
        PcaFile {
            schema: SCHEMA.to_string(),
            standardized: p.standardized,
            columns: p.columns.clone(),
            dropped_columns: p.dropped.clone(),
            means: p.means.clone(),
            scales: p.scales.clone(),
            rows: self
                .rows
                .iter()
                .zip(&p.scores)
                .map(|(r, s)| PcaRow {
                    label: r.label.clone(),
                    series: r.series.clone(),
                    dir: r.dir.display().to_string(),
                    workload: r.workload.clone(),
                    group: r.group.clone(),
                    size: r.size,
                    config: r.config.clone(),
                    cores: r.cores,
                    shares: Component::NAMES
                        .iter()
                        .zip(r.shares)
                        .map(|(n, v)| (n.to_string(), v))
                        .collect(),
                    scores: s.clone(),
                })
                .collect(),
            components: (0..p.components())
                .map(|k| PcaComponent {
                    pc: k + 1,
                    main_contributor: p.main_contributor(k).to_string(),
                    variance: p.variances[k],
                    explained: p.explained[k],
                    cumulative: p.cumulative[k],
                    loadings: p
                        .columns
                        .iter()
                        .cloned()
                        .zip(p.loadings[k].iter().copied())
                        .collect(),
                })
                .collect(),
            clustered_on_components: self.clustered_on,
            dendrogram: self.merges.clone(),
            leaf_order: leaf_order(&self.merges, self.rows.len()),
            report_tables: self.tables(),
        }
    }

    /// Writes `pca.json`, `pca.svg` and `dendrogram.svg` into `out` (each atomically).
    pub fn write(&self, out: &Path) -> Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        write_atomic(
            &out.join(files::PCA),
            serde_json::to_string_pretty(&self.file())?.as_bytes(),
        )?;
        write_atomic(&out.join(files::SCATTER_SVG), self.scatter_svg().as_bytes())?;
        write_atomic(
            &out.join(files::DENDROGRAM_SVG),
            self.dendrogram_svg().as_bytes(),
        )?;
        Ok(())
    }
}

/// `isim pca` on the command line.
pub fn cli(args: &PcaArgs) -> Result<()> {
    let rows = collect_rows(&args.dirs, &args.cores, args.join)?;
    if rows.is_empty() {
        bail!("no runs found (with --cores {:?})", args.cores);
    }
    let a = Analysis::of(
        rows,
        PcaOptions {
            standardize: args.standardize,
        },
        args.variance,
    )?;
    a.write(&args.out)?;
    for t in a.tables() {
        println!("{}", t.render_text());
    }
    if !a.pca.dropped.is_empty() {
        println!("dropped (zero variance): {}", a.pca.dropped.join(", "));
    }
    println!(
        "{} runs; clustered on {} component{}; wrote {}/pca.json, pca.svg, dendrogram.svg",
        a.rows.len(),
        a.clustered_on,
        if a.clustered_on == 1 { "" } else { "s" },
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use accounting::pca::PcaError;

    /// The report tells "all runs alike" apart from real failures by the error's type, so
    /// the PCA's own error must survive `Analysis::of`.
    #[test]
    fn runs_that_are_all_alike_are_a_typed_no_variance_error() {
        let row = |cores| Row {
            label: format!("w {cores}c"),
            series: "w".into(),
            dir: PathBuf::from("r"),
            workload: "w".into(),
            group: None,
            size: None,
            config: None,
            cores,
            order: f64::from(cores),
            shares: [1.0 / COMPONENTS as f64; COMPONENTS],
        };
        let e = Analysis::of(vec![row(2), row(4)], PcaOptions::default(), 0.9).unwrap_err();
        assert!(
            matches!(e.downcast_ref(), Some(PcaError::NoVariance)),
            "{e:#}"
        );
        assert!(e.to_string().contains("nothing for PCA to explain"), "{e}");
    }
}
