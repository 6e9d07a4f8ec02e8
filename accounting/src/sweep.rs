//! The scaling analysis of a core-count sweep (cycle-stacks paper §2.3, §4.3), from plain data:
//! the runs' aggregated stacks are grouped into series (one per config × size, plus one per
//! thread group doing real work when a run is heterogeneous, §2.3 treating each group as a
//! workload of its own), each series becomes a scaling table ([`crate::scaling::scaling_rows`]),
//! and the stacks become the bars of the scaling chart. Reading run directories and writing
//! `sweep.json` and `scaling.svg` is the `isim` package's job.

use sim_core::{Component, CycleStack};

use crate::scaling::{
    RunAggregate, Scaling, ScalingPoint, ScalingRow, present_components, scaling_rows,
};
use crate::table::ReportTable;

/// What the analysis needs to know of a sweep besides its runs.
#[derive(Debug, Clone, Copy)]
pub struct SweepShape<'a> {
    /// Workload name (leads every series name).
    pub workload: &'a str,
    /// Config labels, in the sweep's order.
    pub configs: &'a [&'a str],
    /// Sizes, in the sweep's order.
    pub sizes: &'a [u64],
    /// Whether the problem keeps its size or grows with the threads.
    pub scaling: Scaling,
}

/// One run of a sweep.
#[derive(Debug, Clone, Copy)]
pub struct SweepPoint<'a> {
    /// Index of its config in [`SweepShape::configs`].
    pub config: usize,
    /// Workload size.
    pub size: u64,
    /// Cores of its machine (and threads).
    pub cores: u32,
    /// Its cycles.
    pub cycles: f64,
    /// Its aggregated stacks, overall and per thread group.
    pub aggregate: &'a RunAggregate,
}

/// One series: a config and size (and thread group) across the core counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Index of its config in [`SweepShape::configs`].
    pub config: usize,
    /// Workload size.
    pub size: u64,
    /// Thread group, for a heterogeneous workload's per-group series.
    pub group: Option<String>,
    /// One row per core count, ascending.
    pub rows: Vec<SeriesRow>,
}

/// One core count of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRow {
    /// Cycles, speedup, efficiency and shares.
    pub scaling: ScalingRow,
    /// How many threads of the series do real work at this core count.
    pub working_threads: usize,
}

/// A sweep's scaling analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAnalysis {
    /// The series, per config, then size, the overall series before its groups'.
    pub series: Vec<Series>,
    /// A scaling table per series, in the same order.
    pub tables: Vec<ReportTable>,
    /// The bars of the scaling chart, `(label, one value per component)`, an empty label with
    /// no values between series; for a heterogeneous workload the per-group series replace the
    /// overall one.
    pub bars: Vec<(String, Vec<f64>)>,
}

/// A series before its table: `(run, its aggregated stack, the threads summed into it)`.
struct Points<'a> {
    config: usize,
    size: u64,
    group: Option<String>,
    points: Vec<(&'a SweepPoint<'a>, CycleStack, Vec<u32>)>,
}

/// The series of `runs` (in plan order: config, then size, then core count).
fn series_of<'a>(shape: &SweepShape, runs: &'a [SweepPoint<'a>]) -> Vec<Points<'a>> {
    let mut series = Vec::new();
    for config in 0..shape.configs.len() {
        for &size in shape.sizes {
            let members: Vec<&SweepPoint> = runs
                .iter()
                .filter(|r| r.config == config && r.size == size)
                .collect();
            series.push(Points {
                config,
                size,
                group: None,
                points: members
                    .iter()
                    .map(|&r| {
                        let o = &r.aggregate.overall;
                        (r, o.stack, o.threads.clone())
                    })
                    .collect(),
            });
            // Heterogeneous: a series per working group (as a workload of its own, §2.3).
            if members.iter().any(|r| r.aggregate.heterogeneous()) {
                let mut names: Vec<&str> = members
                    .iter()
                    .flat_map(|r| r.aggregate.working_groups().map(|g| g.name.as_str()))
                    .collect();
                names.sort_unstable();
                names.dedup();
                for g in names {
                    series.push(Points {
                        config,
                        size,
                        group: Some(g.to_string()),
                        points: members
                            .iter()
                            .filter_map(|&r| {
                                let ga = r.aggregate.groups.iter().find(|x| x.name == g)?;
                                Some((r, ga.aggregate.stack, ga.aggregate.threads.clone()))
                            })
                            .collect(),
                    });
                }
            }
        }
    }
    series
}

/// The scaling analysis of a complete sweep's `runs`.
pub fn analyze(shape: &SweepShape, runs: &[SweepPoint]) -> SweepAnalysis {
    let series = series_of(shape, runs);
    let present = present_components(series.iter().flat_map(|s| s.points.iter().map(|p| &p.1)));
    let multi_cfg = shape.configs.len() > 1;
    let multi_size = shape.sizes.len() > 1;
    let series_name = |s: &Points| {
        let mut parts = vec![shape.workload.to_string()];
        if multi_cfg {
            parts.push(shape.configs[s.config].to_string());
        }
        if multi_size {
            parts.push(format!("size {}", s.size));
        }
        if let Some(g) = &s.group {
            parts.push(format!("group {g}"));
        }
        parts.join(", ")
    };

    let mut out = SweepAnalysis {
        series: Vec::new(),
        tables: Vec::new(),
        bars: Vec::new(),
    };
    for s in &series {
        let points: Vec<ScalingPoint> = s
            .points
            .iter()
            .map(|(r, stack, _)| ScalingPoint {
                cores: r.cores,
                cycles: r.cycles,
                stack: *stack,
            })
            .collect();
        let rows = scaling_rows(&points, shape.scaling);
        let base = rows.first().map_or(1, |r| r.cores);
        let speedup = shape.scaling.speedup_name();
        let mut cols: Vec<String> = vec![
            "cores".into(),
            "cycles".into(),
            if base == 1 {
                speedup.into()
            } else {
                format!("{speedup} vs {base}")
            },
            "efficiency".into(),
            "working threads".into(),
        ];
        cols.extend(
            present
                .iter()
                .map(|&j| format!("{} %", Component::NAMES[j])),
        );
        let mut t = ReportTable {
            title: format!(
                "Scaling: {} ({}; shares of the aggregated stack of threads doing real work)",
                series_name(s),
                shape.scaling.describe()
            ),
            columns: cols,
            rows: Vec::new(),
        };
        let mut series_rows = Vec::new();
        for row in rows {
            let threads = s
                .points
                .iter()
                .find(|p| p.0.cores == row.cores)
                .map_or(0, |p| p.2.len());
            let mut r = vec![
                row.cores.to_string(),
                format!("{:.0}", row.cycles),
                format!("{:.2}", row.speedup),
                format!("{:.2}", row.efficiency),
                format!("{threads}/{}", row.cores),
            ];
            r.extend(
                present
                    .iter()
                    .map(|&j| format!("{:.1}", 100.0 * row.shares[j])),
            );
            t.rows.push(r);
            series_rows.push(SeriesRow {
                scaling: row,
                working_threads: threads,
            });
        }
        out.series.push(Series {
            config: s.config,
            size: s.size,
            group: s.group.clone(),
            rows: series_rows,
        });
        // The chart: per-group series replace the overall one for heterogeneous workloads.
        let heterogeneous = series
            .iter()
            .any(|o| o.group.is_some() && o.config == s.config && o.size == s.size);
        if s.group.is_some() || !heterogeneous {
            if !out.bars.is_empty() {
                out.bars.push((String::new(), Vec::new())); // a gap between series
            }
            let prefix = if series.len() > 1 {
                let mut p = Vec::new();
                if multi_cfg {
                    p.push(shape.configs[s.config].to_string());
                }
                if multi_size {
                    p.push(format!("s{}", s.size));
                }
                if let Some(g) = &s.group {
                    p.push(g.clone());
                }
                if p.is_empty() {
                    String::new()
                } else {
                    format!("{} ", p.join(" "))
                }
            } else {
                String::new()
            };
            let mut pts: Vec<_> = s.points.iter().collect();
            pts.sort_by_key(|p| p.0.cores);
            for p in pts {
                out.bars.push((
                    format!(
                        "{prefix}{} core{}",
                        p.0.cores,
                        if p.0.cores == 1 { "" } else { "s" }
                    ),
                    p.1.0.to_vec(),
                ));
            }
        }
        out.tables.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::ThreadStack;

    fn run(threads: &[(&str, f64, f64)]) -> RunAggregate {
        let t: Vec<ThreadStack> = threads
            .iter()
            .enumerate()
            .map(|(i, &(group, base, barrier))| {
                let mut stack = CycleStack::default();
                stack.add(Component::Base, base);
                stack.add(Component::SyncBarrier, barrier);
                ThreadStack {
                    thread: i as u32,
                    group: group.into(),
                    stack,
                }
            })
            .collect();
        RunAggregate::of(&t)
    }

    #[test]
    fn a_homogeneous_sweep_is_one_series_with_a_row_and_a_bar_per_core_count() {
        let one = run(&[("w", 100.0, 0.0)]);
        let two = run(&[("main", 1.0, 60.0), ("w", 50.0, 10.0), ("w", 50.0, 10.0)]);
        let runs = [
            SweepPoint {
                config: 0,
                size: 8,
                cores: 1,
                cycles: 100.0,
                aggregate: &one,
            },
            SweepPoint {
                config: 0,
                size: 8,
                cores: 2,
                cycles: 61.0,
                aggregate: &two,
            },
        ];
        let shape = SweepShape {
            workload: "w",
            configs: &["default"],
            sizes: &[8],
            scaling: Scaling::Strong,
        };
        let a = analyze(&shape, &runs);
        assert_eq!(a.series.len(), 1);
        assert_eq!(a.series[0].rows[1].working_threads, 2);
        assert_eq!(a.tables.len(), 1);
        let t = &a.tables[0];
        assert_eq!(
            t.title,
            "Scaling: w (fixed-size problem, strong scaling; shares of the aggregated stack of \
             threads doing real work)"
        );
        assert_eq!(
            t.columns,
            [
                "cores",
                "cycles",
                "speedup",
                "efficiency",
                "working threads",
                "base %",
                "sync-barrier %"
            ]
        );
        assert_eq!(
            t.rows[1],
            ["2", "61", "1.64", "0.82", "2/2", "83.3", "16.7"]
        );
        let labels: Vec<&str> = a.bars.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(labels, ["1 core", "2 cores"]);
        // The same runs as a problem growing with the threads: the table says so, and its
        // speedup is the scaled one (time ratio 100/61 times the growth 2).
        let weak = analyze(
            &SweepShape {
                scaling: Scaling::Weak,
                ..shape
            },
            &runs,
        );
        let t = &weak.tables[0];
        assert!(
            t.title
                .contains("work grows with the threads, weak scaling"),
            "{}",
            t.title
        );
        assert_eq!(t.columns[2], "scaled speedup");
        assert_eq!(t.rows[1][2..4], ["3.28", "1.64"]);
    }

    #[test]
    fn heterogeneous_runs_get_a_series_per_working_group_which_replace_the_overall_bars() {
        let het = run(&[("reader", 90.0, 10.0), ("writer", 70.0, 30.0)]);
        let runs = [SweepPoint {
            config: 1,
            size: 4,
            cores: 2,
            cycles: 100.0,
            aggregate: &het,
        }];
        let shape = SweepShape {
            workload: "pipe",
            configs: &["a", "b"],
            sizes: &[4],
            scaling: Scaling::Strong,
        };
        let a = analyze(&shape, &runs);
        let groups: Vec<(usize, Option<&str>)> = a
            .series
            .iter()
            .map(|s| (s.config, s.group.as_deref()))
            .collect();
        assert_eq!(
            groups,
            [
                (0, None),
                (1, None),
                (1, Some("reader")),
                (1, Some("writer"))
            ]
        );
        assert!(a.series[0].rows.is_empty());
        assert_eq!(
            a.tables[2].title,
            "Scaling: pipe, b, group reader (fixed-size problem, strong scaling; shares of the \
             aggregated stack of threads doing real work)"
        );
        assert_eq!(a.tables[1].columns[2], "speedup vs 2");
        let labels: Vec<&str> = a.bars.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(labels, ["b reader 2 cores", "", "b writer 2 cores"]);
    }
}
