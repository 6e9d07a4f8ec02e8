//! `isim profile RUN_DIR --aggregate none|sum|set|key|calltree`: re-simulates a run directory
//! with the call-path profile collector (`accounting::profile`), aggregates the per-thread
//! profiles with one of the Score-P paper's strategies (`accounting::aggregate`), prints the
//! call-path tree with metrics per aggregated location (or JSON with `--json`), writes
//! `RUN_DIR/profile-<strategy>.json` atomically (`profile-<strategy>-block.json` with
//! `--block-level`) and, with `--cube OUT.cubex`, a CUBE4 archive (`accounting::cube`).
//!
//! `isim profile --compression-table [-w WORKLOAD] [--threads 8,16,...] [-s SIZE]` instead
//! generates and simulates the workload at each thread count and prints, per strategy, the
//! number of values and the bytes of the `.cubex` export (the paper's Figs. 3–4).

use std::path::{Path, PathBuf};

use accounting::aggregate::{Aggregated, Data, Strategy, aggregate, thread_ranges, work_time};
use accounting::cube::Compression;
use accounting::profile::{
    M_COMPONENT, M_CYCLES, M_INSTRUCTIONS, M_MISSES, M_SYNC, M_VISITS, M_WORK, METRIC_DEFS,
    Profile, ProfileCollector, Values,
};
use accounting::table::ReportTable;
use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use sim_core::{COMPONENTS, Component, RunResult};

use crate::fsutil::write_atomic;
use crate::run::{RunDir, RunRequest};

/// Schema identifier written into `profile-<strategy>.json`.
pub const SCHEMA: &str = "isim-profile/1";

/// Thread counts of the compression table when none are given.
pub const DEFAULT_TABLE_THREADS: [u32; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];
/// Workload size of the compression table when none is given (small, so 1,024 threads take
/// seconds).
pub const DEFAULT_TABLE_SIZE: u64 = 4;

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse()
}

/// Arguments of `isim profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Run directory written by `isim run`.
    #[arg(required_unless_present = "compression_table")]
    pub run_dir: Option<PathBuf>,
    /// Aggregation strategy: none (one location per thread), sum, set (sum, min, max, visiting
    /// threads, sum of squares), key (initial, slowest, fastest thread and the rest summed) or
    /// calltree (threads grouped by the call paths they visited).
    #[arg(long, default_value = "none", value_parser = parse_strategy)]
    pub aggregate: Strategy,
    /// Also write the aggregated profile as a CUBE4 archive (opens in the Cube tools).
    #[arg(long, value_name = "OUT.cubex")]
    pub cube: Option<PathBuf>,
    /// Store the archive's values uncompressed (`CUBEX.DATA`) instead of in zlib chunks
    /// (`ZCUBEX.DATA`, as CUBE and Score-P write them).
    #[arg(long, requires = "cube")]
    pub uncompressed: bool,
    /// Print JSON (the contents of profile-<strategy>.json) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// End call paths in basic blocks instead of functions.
    #[arg(long)]
    pub block_level: bool,
    /// Print the compression table instead: values and .cubex bytes per strategy for the
    /// workload generated at each --threads count.
    #[arg(long, conflicts_with_all = ["run_dir", "cube", "json"])]
    pub compression_table: bool,
    /// Workload of the compression table.
    #[arg(
        long,
        short = 'w',
        default_value = "serial-phases",
        requires = "compression_table"
    )]
    pub workload: String,
    /// Thread counts of the compression table, comma-separated.
    #[arg(
        long,
        short = 't',
        value_delimiter = ',',
        requires = "compression_table"
    )]
    pub threads: Vec<u32>,
    /// Workload size of the compression table (default 4).
    #[arg(long, short = 's', requires = "compression_table")]
    pub size: Option<u64>,
}

/// Replays `rd` with the profile collector.
pub fn collect(
    rd: &RunDir,
    block_level: bool,
    progress: impl FnMut(u64),
) -> Result<(RunResult, Profile)> {
    let c = ProfileCollector::new(
        &rd.trace.program,
        rd.trace.thread_count() as usize,
        block_level,
    );
    let (result, c) = rd.replay(&[], &[], c, progress)?;
    let p = c.finish(&result);
    Ok((result, p))
}

fn num(x: f64) -> String {
    format!("{x:.0}")
}

fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.1}%", 100.0 * part / whole)
    } else {
        "-".into()
    }
}

/// The largest cycle-stack component of `v` and its share of `v`'s cycles.
fn top_component(v: &Values) -> String {
    let (mut best, mut bv) = (None, 0.0);
    for c in 0..COMPONENTS {
        if v[M_COMPONENT + c] > bv {
            bv = v[M_COMPONENT + c];
            best = Some(c);
        }
    }
    match best {
        Some(c) => format!("{} {}", Component::NAMES[c], pct(bv, v[M_CYCLES])),
        None => "-".into(),
    }
}

/// Inclusive values: each node's values plus its descendants'.
fn inclusive(p: &Profile, vals: &[Values]) -> Vec<Values> {
    let mut inc = vals.to_vec();
    // Parents precede children in node order, so one reverse pass suffices.
    for n in (1..p.nodes.len()).rev() {
        if let Some(parent) = p.nodes[n].parent {
            let child = inc[n];
            for (a, b) in inc[parent as usize].iter_mut().zip(child) {
                *a += b;
            }
        }
    }
    inc
}

fn indent(p: &Profile, node: u32, depth: usize) -> String {
    format!(
        "{}{}",
        "  ".repeat(depth),
        p.regions[p.nodes[node as usize].region as usize].name
    )
}

/// The main table: per location, the call-path tree (paths the location visited) with
/// exclusive metrics, inclusive cycles and the largest component.
pub fn main_table(p: &Profile, a: &Aggregated) -> ReportTable {
    match &a.data {
        Data::Locations(locs) => {
            let mut t = ReportTable::new(
                format!(
                    "Call-path profile, {} aggregation: exclusive values per location",
                    a.strategy
                ),
                &[
                    "call path",
                    "location",
                    "visits",
                    "instructions",
                    "cycles incl",
                    "cycles",
                    "% of location",
                    "work",
                    "sync",
                    "L1 misses",
                    "L2 misses",
                    "L3 misses",
                    "top component",
                ],
            );
            let order = p.preorder();
            for (l, vals) in a.locations.iter().zip(locs) {
                let inc = inclusive(p, vals);
                let total = inc[0][M_CYCLES];
                for &(n, depth) in &order {
                    let (v, i) = (&vals[n as usize], &inc[n as usize]);
                    if i[M_VISITS] == 0.0 && i[M_CYCLES] == 0.0 {
                        continue;
                    }
                    t.rows.push(vec![
                        indent(p, n, depth),
                        l.name.clone(),
                        num(v[M_VISITS]),
                        num(v[M_INSTRUCTIONS]),
                        num(i[M_CYCLES]),
                        num(v[M_CYCLES]),
                        pct(v[M_CYCLES], total),
                        num(v[M_WORK]),
                        num(v[M_SYNC]),
                        num(v[M_MISSES]),
                        num(v[M_MISSES + 1]),
                        num(v[M_MISSES + 2]),
                        top_component(v),
                    ]);
                }
            }
            t
        }
        Data::Set(stats) => {
            let mut t = ReportTable::new(
                format!(
                    "Call-path profile, set aggregation over {} threads: exclusive values; n = threads that visited, \
                     min/max over all threads (0 for a thread that did not visit), mean and sd over the n",
                    a.thread_count
                ),
                &[
                    "call path",
                    "n",
                    "cycles sum",
                    "cycles min",
                    "cycles max",
                    "cycles mean",
                    "cycles sd",
                    "sync sum",
                    "sync min",
                    "sync max",
                    "instructions sum",
                    "instructions min",
                    "instructions max",
                    "visits sum",
                ],
            );
            for (n, depth) in p.preorder() {
                let s = &stats[n as usize];
                if s.n == 0 && s.sum[M_CYCLES] == 0.0 {
                    continue;
                }
                let k = s.n.max(1) as f64;
                let mean = s.sum[M_CYCLES] / k;
                let sd = (s.sum2[M_CYCLES] / k - mean * mean).max(0.0).sqrt();
                t.rows.push(vec![
                    indent(p, n, depth),
                    s.n.to_string(),
                    num(s.sum[M_CYCLES]),
                    num(s.min[M_CYCLES]),
                    num(s.max[M_CYCLES]),
                    num(mean),
                    num(sd),
                    num(s.sum[M_SYNC]),
                    num(s.min[M_SYNC]),
                    num(s.max[M_SYNC]),
                    num(s.sum[M_INSTRUCTIONS]),
                    num(s.min[M_INSTRUCTIONS]),
                    num(s.max[M_INSTRUCTIONS]),
                    num(s.sum[M_VISITS]),
                ]);
            }
            t
        }
    }
}

/// The locations table: each location's threads and their work and sync cycles.
pub fn locations_table(p: &Profile, a: &Aggregated) -> ReportTable {
    let mut t = ReportTable::new(
        format!("Locations of the {} aggregation", a.strategy),
        &[
            "location",
            "threads",
            "members",
            "work cycles",
            "sync cycles",
            "instructions",
        ],
    );
    for l in &a.locations {
        let (mut work, mut sync, mut insts) = (0.0, 0.0, 0.0);
        for th in p.threads.iter().filter(|th| l.threads.contains(&th.thread)) {
            let tot = p.thread_total(th.thread as usize);
            work += tot[M_WORK];
            sync += tot[M_SYNC];
            insts += tot[M_INSTRUCTIONS];
        }
        t.rows.push(vec![
            l.name.clone(),
            l.threads.len().to_string(),
            thread_ranges(&l.threads),
            num(work),
            num(sync),
            num(insts),
        ]);
    }
    t
}

#[derive(Serialize)]
struct NodeOut {
    id: u32,
    parent: Option<u32>,
    region: u32,
    path: String,
}

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    run_dir: String,
    workload: &'a str,
    strategy: Strategy,
    block_level: bool,
    thread_count: u32,
    metrics: Vec<&'static str>,
    regions: &'a [accounting::profile::Region],
    call_tree: Vec<NodeOut>,
    locations: &'a [accounting::aggregate::Location],
    /// Work cycles of every thread (what KEY ranks by).
    work_cycles: Vec<f64>,
    data: &'a Data,
    report_tables: Vec<ReportTable>,
}

/// The JSON document of `profile-<strategy>.json`.
pub fn document(rd_dir: &Path, workload: &str, p: &Profile, a: &Aggregated) -> Result<String> {
    let doc = Document {
        schema: SCHEMA,
        run_dir: rd_dir.display().to_string(),
        workload,
        strategy: a.strategy,
        block_level: p.block_level,
        thread_count: a.thread_count,
        metrics: METRIC_DEFS.iter().map(|m| m.name).collect(),
        regions: &p.regions,
        call_tree: (0..p.nodes.len() as u32)
            .map(|n| NodeOut {
                id: n,
                parent: p.nodes[n as usize].parent,
                region: p.nodes[n as usize].region,
                path: p.path_name(n),
            })
            .collect(),
        locations: &a.locations,
        work_cycles: (0..p.threads.len()).map(|t| work_time(p, t)).collect(),
        data: &a.data,
        report_tables: vec![main_table(p, a), locations_table(p, a)],
    };
    Ok(serde_json::to_string_pretty(&doc)?)
}

/// One row of the compression table: one strategy at one thread count.
#[derive(Debug, Clone, Serialize)]
pub struct CompressionRow {
    /// Threads of the run.
    pub threads: u32,
    /// Call paths (nodes of the call tree).
    pub paths: usize,
    /// The strategy.
    pub strategy: Strategy,
    /// Locations of the aggregated profile.
    pub locations: usize,
    /// Scalar values stored ([`Aggregated::value_entries`]).
    pub values: usize,
    /// Bytes of the `.data` members of the CUBE export, uncompressed (the stored values).
    pub data_bytes: usize,
    /// The same members zlib-compressed, as CUBE writes them (the paper's file sizes).
    pub zlib_data_bytes: usize,
    /// Bytes of the whole `.cubex` archive, compressed.
    pub cubex_bytes: usize,
}

/// Profile sizes of every strategy for one profile.
pub fn sizes(p: &Profile, workload: &str) -> Result<Vec<CompressionRow>> {
    Strategy::ALL
        .iter()
        .map(|&s| {
            let a = aggregate(p, s);
            Ok(CompressionRow {
                threads: p.threads.len() as u32,
                paths: p.nodes.len(),
                strategy: s,
                locations: a.locations.len(),
                values: a.value_entries(),
                data_bytes: accounting::cube::data_bytes(p, &a, Compression::None),
                zlib_data_bytes: accounting::cube::data_bytes(p, &a, Compression::Zlib),
                cubex_bytes: accounting::cube::cubex(p, &a, workload, Compression::Zlib)?.len(),
            })
        })
        .collect()
}

/// Removes a scratch directory when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Generates and simulates `workload` at each thread count (size `size`) in a scratch
/// directory, profiles it and measures every strategy's size.
pub fn compression_rows(
    workload: &str,
    threads: &[u32],
    size: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<CompressionRow>> {
    let scratch = Scratch(std::env::temp_dir().join(format!(
        "isim-compression-{}-{}",
        std::process::id(),
        workload
    )));
    std::fs::create_dir_all(&scratch.0)
        .with_context(|| format!("cannot create {}", scratch.0.display()))?;
    let mut rows = Vec::new();
    for &n in threads {
        progress(&format!("{workload}: {n} threads"));
        let out = scratch.0.join(format!("run-{n}"));
        let req = RunRequest {
            workload: Some(workload.to_string()),
            threads: Some(n),
            size: Some(size),
            seed: 1,
            out: out.clone(),
            ..RunRequest::default()
        };
        crate::run::run(&req, |_| {})?;
        let rd = RunDir::open(&out)?;
        let (_, p) = collect(&rd, false, |_| {})?;
        rows.extend(sizes(&p, workload)?);
        std::fs::remove_dir_all(&out).ok();
    }
    Ok(rows)
}

/// The compression table: per thread count and strategy, locations, values, data bytes and
/// archive bytes, and the compression ratio against `none` (values and data bytes).
pub fn compression_table(workload: &str, size: u64, rows: &[CompressionRow]) -> ReportTable {
    let mut t = ReportTable::new(
        format!(
            "Profile size per aggregation strategy ({workload}, size {size}): values = scalars stored, \
             data = bytes of the .data members (raw, and zlib-compressed as CUBE writes them), \
             cubex = bytes of the compressed archive, ratio = none / strategy"
        ),
        &[
            "threads",
            "strategy",
            "paths",
            "locations",
            "values",
            "data bytes",
            "zlib data bytes",
            "cubex bytes",
            "values ratio",
            "data ratio",
            "zlib ratio",
        ],
    );
    for r in rows {
        let none = rows
            .iter()
            .find(|x| x.threads == r.threads && x.strategy == Strategy::None)
            .unwrap_or(r);
        t.rows.push(vec![
            r.threads.to_string(),
            r.strategy.to_string(),
            r.paths.to_string(),
            r.locations.to_string(),
            r.values.to_string(),
            r.data_bytes.to_string(),
            r.zlib_data_bytes.to_string(),
            r.cubex_bytes.to_string(),
            format!("{:.1}", none.values as f64 / r.values.max(1) as f64),
            format!("{:.1}", none.data_bytes as f64 / r.data_bytes.max(1) as f64),
            format!(
                "{:.1}",
                none.zlib_data_bytes as f64 / r.zlib_data_bytes.max(1) as f64
            ),
        ]);
    }
    t
}

/// Runs `isim profile`.
pub fn main(args: ProfileArgs) -> Result<()> {
    if args.compression_table {
        let threads = if args.threads.is_empty() {
            DEFAULT_TABLE_THREADS.to_vec()
        } else {
            args.threads.clone()
        };
        let size = args.size.unwrap_or(DEFAULT_TABLE_SIZE);
        let pb = crate::progress::spinner("profiling".into());
        let rows = compression_rows(&args.workload, &threads, size, |m| {
            pb.set_message(format!("profiling {m}"))
        });
        pb.finish_and_clear();
        print!(
            "{}",
            compression_table(&args.workload, size, &rows?).render_text()
        );
        return Ok(());
    }
    let Some(dir) = &args.run_dir else {
        bail!("give a run directory (or --compression-table)");
    };
    let rd = RunDir::open(dir)?;
    let pb = crate::progress::spinner("replaying with the profile collector".into());
    let start = std::time::Instant::now();
    let r = collect(&rd, args.block_level, |n| {
        pb.set_message(format!(
            "replaying with the profile collector: {n} instructions"
        ))
    });
    pb.finish_and_clear();
    let (result, p) = r?;
    let secs = start.elapsed().as_secs_f64();
    let a = aggregate(&p, args.aggregate);
    let json = document(&rd.dir, &rd.workload, &p, &a)?;
    let suffix = if args.block_level { "-block" } else { "" };
    let out = rd.dir.join(format!("profile-{}{suffix}.json", a.strategy));
    write_atomic(&out, json.as_bytes())?;
    if let Some(c) = &args.cube {
        let compression = if args.uncompressed {
            Compression::None
        } else {
            Compression::Zlib
        };
        let bytes = accounting::cube::cubex(&p, &a, &rd.workload, compression)
            .with_context(|| format!("cannot build {}", c.display()))?;
        write_atomic(c, &bytes)?;
    }
    if args.json {
        println!("{json}");
        return Ok(());
    }
    let insts: u64 = result.threads.iter().map(|t| t.instructions).sum();
    println!(
        "profile of {} ({}, {} threads, {} call paths{}), {} aggregation: {} location(s), {} values\n",
        rd.dir.display(),
        rd.workload,
        p.threads.len(),
        p.nodes.len(),
        if p.block_level { ", block level" } else { "" },
        a.strategy,
        a.locations.len(),
        a.value_entries()
    );
    print!("{}", main_table(&p, &a).render_text());
    println!();
    print!("{}", locations_table(&p, &a).render_text());
    println!(
        "\nhost: {secs:.2} s replay, {:.1} simulated MIPS",
        insts as f64 / secs.max(1e-9) / 1e6
    );
    println!("wrote {}", out.display());
    if let Some(c) = &args.cube {
        println!("wrote {}", c.display());
    }
    Ok(())
}
