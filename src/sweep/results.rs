//! The end of a complete sweep, wherever its runs ran (on this host, or as Slurm tasks): the
//! runs' stacks read back, their scaling analysis (`accounting::sweep`), and the results written
//! as `sweep.json` ([`SweepFile`]) and `scaling.svg`.

use std::path::{Path, PathBuf};

use accounting::render::{self, stacked_bars_svg};
use accounting::sweep::{SweepAnalysis, SweepPoint, SweepShape, analyze};
use accounting::table::ReportTable;
use anyhow::Result;
use sim_core::Component;

use super::plan::PlannedRun;
use crate::dirs::sweep::{
    SCALING_SVG, SCHEMA, SweepConfig, SweepFile, SweepGroup, SweepRun, SweepSeries, SweepSeriesRow,
    SweepSpec, SweepSpeedupStack, by_component,
};
use crate::fsutil::write_atomic;
use crate::stacks::{self, RunStacks};

/// A finished sweep.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// The sweep directory.
    pub dir: PathBuf,
    /// Ids of the runs executed now, in plan order.
    pub executed: Vec<String>,
    /// Ids of the runs found complete and reused, in plan order.
    pub reused: Vec<String>,
    /// The scaling tables (one per series).
    pub tables: Vec<ReportTable>,
}

/// The end of a complete sweep, wherever its runs ran: the scaling analysis, written as
/// `sweep.json` and `scaling.svg`. `reused` are the runs found complete when this command
/// started; the others count as executed by it.
pub(crate) fn finish(spec: &SweepSpec, dir: &Path, reused: Vec<String>) -> Result<SweepOutcome> {
    let plan = spec.plan();
    let executed: Vec<String> = plan
        .iter()
        .filter(|r| !reused.contains(&r.id))
        .map(|r| r.id.clone())
        .collect();
    let loaded: Vec<RunStacks> = plan
        .iter()
        .map(|r| stacks::load(&r.dir(dir)))
        .collect::<Result<_>>()?;
    let labels: Vec<&str> = spec.configs.iter().map(|c| c.label.as_str()).collect();
    let shape = SweepShape {
        workload: &spec.workload,
        configs: &labels,
        sizes: &spec.sizes,
        scaling: spec.scaling(),
    };
    let points: Vec<SweepPoint> = plan
        .iter()
        .zip(&loaded)
        .map(|(r, s)| SweepPoint {
            config: r.config,
            size: r.size,
            cores: s.cores,
            cycles: s.cycles,
            aggregate: &s.aggregate,
        })
        .collect();
    let analysis = analyze(&shape, &points);
    results_file(spec, dir, &plan, &loaded, &analysis).write(dir)?;
    write_atomic(
        &dir.join(SCALING_SVG),
        scaling_svg(&spec.workload, &analysis.bars).as_bytes(),
    )?;
    Ok(SweepOutcome {
        dir: dir.to_path_buf(),
        executed,
        reused,
        tables: analysis.tables,
    })
}

/// `sweep.json` of the sweep `spec` in `dir`: its `plan`, the runs' stacks `loaded` (in plan
/// order) and their analysis.
fn results_file(
    spec: &SweepSpec,
    dir: &Path,
    plan: &[PlannedRun],
    loaded: &[RunStacks],
    analysis: &SweepAnalysis,
) -> SweepFile {
    let runs = plan
        .iter()
        .zip(loaded)
        .map(|(r, s)| {
            let a = &s.aggregate;
            SweepRun {
                aggregate: by_component(&a.overall.stack.0),
                command: spec.command(r, dir),
                config: spec.configs[r.config].label.clone(),
                cores: r.cores,
                cycles: s.cycles,
                dir: PathBuf::from(format!("runs/{}", r.id)),
                groups: a
                    .groups
                    .iter()
                    .map(|g| SweepGroup {
                        aggregate: by_component(&g.aggregate.stack.0),
                        members: g.members.clone(),
                        name: g.name.clone(),
                        shares: by_component(&g.aggregate.shares()),
                        working_threads: if g.aggregate.no_real_work {
                            Vec::new()
                        } else {
                            g.aggregate.threads.clone()
                        },
                    })
                    .collect(),
                heterogeneous: a.heterogeneous(),
                id: r.id.clone(),
                instructions: s.instructions,
                no_real_work: a.overall.no_real_work,
                shares: by_component(&a.overall.shares()),
                size: r.size,
                working_threads: a.overall.threads.clone(),
            }
        })
        .collect();
    let series = analysis
        .series
        .iter()
        .map(|s| SweepSeries {
            config: spec.configs[s.config].label.clone(),
            group: s.group.clone(),
            rows: s
                .rows
                .iter()
                .map(|r| SweepSeriesRow {
                    cores: r.scaling.cores,
                    cycles: r.scaling.cycles,
                    efficiency: r.scaling.efficiency,
                    shares: by_component(&r.scaling.shares),
                    speedup: r.scaling.speedup,
                    working_threads: r.working_threads,
                    speedup_stack: r.speedup_stack.map(|st| SweepSpeedupStack {
                        ideal: st.ideal,
                        gap: st.ideal - st.speedup,
                        components: by_component(&st.components),
                    }),
                })
                .collect(),
            size: s.size,
        })
        .collect();
    SweepFile {
        configs: spec
            .configs
            .iter()
            .map(|c| SweepConfig {
                label: c.label.clone(),
                path: c.path.clone(),
            })
            .collect(),
        cores: spec.cores.clone(),
        report_tables: analysis.tables.clone(),
        runs,
        scaling: spec.scaling(),
        schema: SCHEMA.to_string(),
        seed: spec.seed,
        series,
        sets: spec.sets.clone(),
        sizes: spec.sizes.clone(),
        workload: spec.workload.clone(),
    }
}

/// `scaling.svg`: the normalised stacks of the analysis's bars.
fn scaling_svg(workload: &str, bars: &[(String, Vec<f64>)]) -> String {
    stacked_bars_svg(
        &format!("Scaling of {workload}: normalised cycle stacks of threads doing real work"),
        &Component::NAMES,
        &render::bars(bars),
        true,
    )
}
