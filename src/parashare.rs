//! `isim parashare RUN_DIR`: re-simulates a run directory with the ParaShares collector
//! (`accounting::parashare`), ranks its basic blocks by their share of parallel execution,
//! prints the ranking (a table, or JSON with `--json`) and writes `RUN_DIR/parashare.json` and
//! the chart of every block's share `RUN_DIR/parashare.svg` (the paper's Fig. 2) atomically (a
//! temporary file in the directory, then a rename); `--against BASE_RUN_DIR` compares the top
//! blocks with another run of the program (Fig. 6). The replay is deterministic,
//! so the ranking describes exactly the run that was recorded; `docs/output.md` documents the
//! JSON.

use std::path::PathBuf;

use accounting::chart::shares::{ShareBar, shares_svg};
use accounting::parashare::{Analysis, Collector, Overlap, Weight, analyze};
use accounting::table::ReportTable;
use anyhow::Result;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::fsutil::write_atomic;
use crate::run::RunDir;

/// Schema identifier written into `parashare.json`.
pub const SCHEMA: &str = "isim-parashare/1";

/// The block weight, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightArg {
    /// Static instruction count of the block.
    Instructions,
    /// Sum of the ParaShares paper's latency factors over the block's instructions
    /// (conditional branch 2, add 1, divide 30, …; docs/output.md lists them).
    Latency,
    /// Sum of the machine's own `core.latency` values over the block's instructions.
    ConfigLatency,
    /// Simulated critical-path cycles of each execution, divided by the running threads.
    Cycles,
}

impl From<WeightArg> for Weight {
    fn from(w: WeightArg) -> Weight {
        match w {
            WeightArg::Instructions => Weight::Instructions,
            WeightArg::Latency => Weight::Latency,
            WeightArg::ConfigLatency => Weight::ConfigLatency,
            WeightArg::Cycles => Weight::Cycles,
        }
    }
}

/// Arguments of `isim parashare`.
#[derive(Debug, Args)]
pub struct ParashareArgs {
    /// Run directory written by `isim run`.
    pub run_dir: PathBuf,
    /// What a block weighs.
    #[arg(long, value_enum, default_value_t = WeightArg::Instructions)]
    pub weight: WeightArg,
    /// Blocks to show in the table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Print JSON (the contents of parashare.json) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also compare the top blocks with another run of the same executable (another thread
    /// count or input, the paper's Fig. 6): how many of the blocks holding 90 % here also do
    /// there, and where the base run's top blocks rank here.
    #[arg(long, value_name = "BASE_RUN_DIR")]
    pub against: Option<PathBuf>,
}

/// The document written to `parashare.json`.
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    run_dir: String,
    workload: &'a str,
    #[serde(flatten)]
    analysis: &'a Analysis,
    #[serde(skip_serializing_if = "Option::is_none")]
    against: Option<Overlap>,
    report_tables: Vec<ReportTable>,
}

/// The name of the chart of every block's share (the paper's Fig. 2) in the run directory.
pub const CHART: &str = "parashare.svg";

/// Replays `rd` with the collector and analyses the result; also returns the instructions
/// simulated and the host seconds the replay took.
pub fn collect(
    rd: &RunDir,
    weight: Weight,
    progress: impl FnMut(u64),
) -> Result<(Analysis, u64, f64)> {
    let program = &rd.trace.program;
    let collector = Collector::new(program, rd.trace.thread_count() as usize);
    let start = std::time::Instant::now();
    let (result, collector) = rd.replay(&[], &[], collector, progress)?;
    let pbv = collector.finish();
    let secs = start.elapsed().as_secs_f64();
    let latency = match weight {
        Weight::ConfigLatency => rd.machine.core.latency.by_class().map(f64::from),
        _ => accounting::parashare::paper_latency_factors(),
    };
    let insts = result.threads.iter().map(|t| t.instructions).sum();
    Ok((analyze(&pbv, program, &latency, weight), insts, secs))
}

/// Runs `isim parashare`.
pub fn main(args: ParashareArgs) -> Result<()> {
    let rd = RunDir::open(&args.run_dir)?;
    let pb = crate::progress::spinner("replaying with the ParaShares collector".into());
    let r = collect(&rd, args.weight.into(), |n| {
        pb.set_message(format!(
            "replaying with the ParaShares collector: {n} instructions"
        ))
    });
    pb.finish_and_clear();
    let (analysis, insts, secs) = r?;
    let against = match &args.against {
        Some(base) => {
            let brd = RunDir::open(base)?;
            if brd.workload != rd.workload {
                anyhow::bail!(
                    "--against {}: a run of {}, not of this run's {} (blocks are matched by PC, \
                     so both runs must come from one executable)",
                    base.display(),
                    brd.workload,
                    rd.workload
                );
            }
            let (b, _, _) = collect(&brd, args.weight.into(), |_| {})?;
            Some(analysis.overlap(&b, &base.display().to_string()))
        }
        None => None,
    };
    let doc = Document {
        schema: SCHEMA,
        run_dir: rd.dir.display().to_string(),
        workload: &rd.workload,
        analysis: &analysis,
        against: against.clone(),
        report_tables: vec![analysis.table(args.top)],
    };
    let json = serde_json::to_string_pretty(&doc)?;
    let out = rd.dir.join("parashare.json");
    let bars: Vec<ShareBar> = analysis
        .blocks
        .iter()
        .map(|b| ShareBar {
            label: format!(
                "rank {}: {} {}",
                b.rank,
                b.function.as_deref().unwrap_or("?"),
                b.lines
            ),
            share: b.share,
        })
        .collect();
    let chart = rd.dir.join(CHART);
    write_atomic(
        &chart,
        shares_svg(
            &format!(
                "ParaShares of {} by {}, {} threads",
                rd.workload,
                analysis.weight.name(),
                analysis.threads
            ),
            &bars,
        )
        .as_bytes(),
    )?;
    write_atomic(&out, json.as_bytes())?;
    if args.json {
        println!("{json}");
    } else {
        println!(
            "ParaShares of {} ({}, {} threads), weight: {}\n",
            rd.dir.display(),
            rd.workload,
            analysis.threads,
            analysis.weight.name()
        );
        print!("{}", analysis.render_text(args.top));
        if let Some(o) = &against {
            print!("{}", o.render_text());
        }
        println!(
            "host: {secs:.2} s replay, {:.1} simulated MIPS",
            insts as f64 / secs.max(1e-9) / 1e6
        );
        println!("wrote {} and {}", out.display(), chart.display());
    }
    Ok(())
}
