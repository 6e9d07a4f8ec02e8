//! `isim parashare RUN_DIR`: re-simulates a run directory with the ParaShares collector
//! (`accounting::parashare`), ranks its basic blocks by their share of parallel execution,
//! prints the ranking (a table, or JSON with `--json`) and writes `RUN_DIR/parashare.json`
//! atomically (a temporary file in the directory, then a rename). The replay is deterministic,
//! so the ranking describes exactly the run that was recorded; `docs/output.md` documents the
//! JSON.

use std::path::PathBuf;

use accounting::parashare::{Analysis, Collector, Weight, analyze};
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
}

/// The document written to `parashare.json`.
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    run_dir: String,
    workload: &'a str,
    #[serde(flatten)]
    analysis: &'a Analysis,
    report_tables: Vec<ReportTable>,
}

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
    let doc = Document {
        schema: SCHEMA,
        run_dir: rd.dir.display().to_string(),
        workload: &rd.workload,
        analysis: &analysis,
        report_tables: vec![analysis.table(args.top)],
    };
    let json = serde_json::to_string_pretty(&doc)?;
    let out = rd.dir.join("parashare.json");
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
        println!(
            "host: {secs:.2} s replay, {:.1} simulated MIPS",
            insts as f64 / secs.max(1e-9) / 1e6
        );
        println!("wrote {}", out.display());
    }
    Ok(())
}
