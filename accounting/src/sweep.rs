//! The scaling analysis of a core-count sweep (cycle-stacks paper §2.3, §4.3), from plain data:
//! the runs' aggregated stacks are grouped into series (one per config × size, plus one per
//! thread group doing real work when a run is heterogeneous, §2.3 treating each group as a
//! workload of its own), each series becomes a scaling table ([`crate::scaling::scaling_rows`]),
//! and the stacks become the bars of the scaling chart. Reading run directories and writing
//! `sweep.json` and `scaling.svg` is the `isim` package's job.

use sim_core::{Component, CycleStack};

use crate::scaling::{
    RunAggregate, Scaling, ScalingPoint, ScalingRow, SpeedupStack, StackPoint, present_components,
    scaling_rows, speedup_stack,
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
    /// The run's speedup stack over all its threads (the overall series only).
    pub speedup_stack: Option<SpeedupStack>,
}

/// A sweep's scaling analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAnalysis {
    /// The series, per config, then size, the overall series before its groups'.
    pub series: Vec<Series>,
    /// A scaling table per series, in the same order, each overall series' followed by its
    /// speedup stack table.
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
        let stack_points: Vec<StackPoint> = s
            .points
            .iter()
            .map(|(r, _, _)| StackPoint {
                cores: r.cores,
                cycles: r.cycles,
                all: r.aggregate.all,
                threads: r.aggregate.all_threads,
            })
            .collect();
        let stack_base = stack_points.iter().min_by_key(|p| p.cores).copied();
        let mut gap_table = ReportTable {
            title: format!(
                "Speedup stack: {} (all threads; the gap between the ideal {} and the {} in \
                 cores, per component)",
                series_name(s),
                if base == 1 {
                    "P".to_string()
                } else {
                    format!("P/{base}")
                },
                speedup
            ),
            columns: ["cores", speedup, "ideal", "gap"]
                .iter()
                .map(|c| c.to_string())
                .chain(present.iter().map(|&j| Component::NAMES[j].to_string()))
                .collect(),
            rows: Vec::new(),
        };
        let mut series_rows = Vec::new();
        for row in rows {
            let stack = match (&s.group, stack_base) {
                (None, Some(b)) => stack_points
                    .iter()
                    .find(|p| p.cores == row.cores)
                    .map(|p| speedup_stack(&b, p, shape.scaling)),
                _ => None,
            };
            if let Some(st) = &stack {
                let mut r = vec![
                    row.cores.to_string(),
                    format!("{:.2}", st.speedup),
                    format!("{:.2}", st.ideal),
                    format!("{:.2}", st.ideal - st.speedup),
                ];
                r.extend(present.iter().map(|&j| format!("{:.2}", st.components[j])));
                gap_table.rows.push(r);
            }
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
                speedup_stack: stack,
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
        if !gap_table.rows.is_empty() {
            out.tables.push(gap_table);
        }
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
        assert_eq!(a.tables.len(), 2, "the scaling table and the speedup stack");
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

    /// Threads whose stacks span their runs (as the engine's do): the speedup stack's
    /// components add up to the gap between the ideal speedup and the speedup, for strong and
    /// weak scaling, and say where it went (here: the barrier waiting, and the main thread's
    /// idle share of the two-core run; the base work per thread halves as it should).
    #[test]
    fn the_speedup_stack_adds_up_to_the_gap() {
        let one = run(&[("main", 2.0, 98.0), ("w", 100.0, 0.0)]);
        let two = run(&[("main", 1.0, 59.0), ("w", 50.0, 10.0), ("w", 50.0, 10.0)]);
        let runs =
            [(1, 100.0, &one), (2, 60.0, &two)].map(|(cores, cycles, aggregate)| SweepPoint {
                config: 0,
                size: 8,
                cores,
                cycles,
                aggregate,
            });
        for scaling in [Scaling::Strong, Scaling::Weak] {
            let shape = SweepShape {
                workload: "w",
                configs: &["default"],
                sizes: &[8],
                scaling,
            };
            let a = analyze(&shape, &runs);
            let st = a.series[0].rows[1].speedup_stack.expect("overall series");
            let sum: f64 = st.components.iter().sum();
            assert!(
                (sum - (st.ideal - st.speedup)).abs() < 1e-12,
                "{scaling:?}: {st:?}"
            );
            assert_eq!(st.ideal, 2.0);
            let base = a.series[0].rows[0].speedup_stack.unwrap();
            assert!(base.components.iter().all(|&c| c.abs() < 1e-12), "{base:?}");
            if scaling == Scaling::Strong {
                // avg per thread: base 101/3 against 51, barrier 79/3 against 49; T = 60.
                let b = (2.0 * 101.0 / 3.0 - 51.0) / 60.0;
                let w = (2.0 * 79.0 / 3.0 - 49.0) / 60.0;
                assert!((st.components[Component::Base.index()] - b).abs() < 1e-12);
                assert!((st.components[Component::SyncBarrier.index()] - w).abs() < 1e-12);
                assert_eq!(a.tables[1].rows[1][..4], ["2", "1.67", "2.00", "0.33"]);
            }
        }
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
        assert!(a.tables[2].title.starts_with("Speedup stack: pipe, b "));
        assert_eq!(
            a.tables[3].title,
            "Scaling: pipe, b, group reader (fixed-size problem, strong scaling; shares of the \
             aggregated stack of threads doing real work)"
        );
        assert_eq!(a.tables[1].columns[2], "speedup vs 2");
        let labels: Vec<&str> = a.bars.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(labels, ["b reader 2 cores", "", "b writer 2 cores"]);
    }
}
