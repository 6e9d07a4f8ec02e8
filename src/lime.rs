//! `isim lime` and `isim whatif`: LIME's load-imbalance report for a run directory, and
//! what-if re-runs of the same trace — with the reported instructions' misses erased
//! (LIME §5.4, Fig. 5) or with machine settings changed — compared section by section.
//!
//! Both re-simulate the run directory (deterministic, so the baseline equals the original run)
//! with the LIME collector attached; `isim lime` writes `lime.json` into the run directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use accounting::lime::{
    self, CauseKind, Collector, LibraryCalls, LibraryEvents, Options, SectionKind, SectionResult,
};
use accounting::table::ReportTable;
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde::Serialize;
use sim_core::{Component, RunResult};
use sim_frontend::model::Program;
use sim_memory::Erasure;

use crate::progress::spinner;
use crate::run::RunDir;

/// Schema of `lime.json`.
pub const SCHEMA: &str = "isim-lime/1";

/// A run whose threads wait in sections for at most this share of its thread-cycles
/// (percent) is reported as balanced.
pub const BALANCED_PCT: f64 = 3.0;

/// Sections whose idle cycles are below this share of the run's thread-cycles (percent) are
/// listed in the sections table but their causes are not (they cost the run little).
pub const MINOR_PCT: f64 = 0.5;

/// Options shared by `isim lime` and `isim whatif erase`.
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Clustering threshold: merging stops when the largest correlation is below it.
    #[arg(long, default_value_t = 0.9, value_parser = parse_unit_interval)]
    pub threshold: f64,
    /// Significance level of the regression's F-tests.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Instances with less imbalance than this (percent) are not analysed (default 0: LIME
    /// analyses sections of 0.0-1.5 % imbalance too).
    #[arg(long, default_value_t = 0.0, value_name = "PERCENT")]
    pub min_imbalance: f64,
    /// The events that compete as causes: `paper` (LIME's: control-flow edges, L1 and L2
    /// misses) or `extended` (also L3 misses and branch mispredictions).
    #[arg(long, value_enum, default_value_t = Events::Paper)]
    pub events: Events,
}

/// `--events`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Events {
    /// Control-flow edges, L1 and L2 misses (the LIME paper's events).
    Paper,
    /// The paper's events plus L3 misses and branch mispredictions.
    Extended,
}

impl AnalysisArgs {
    fn options(&self) -> Options {
        Options {
            threshold: self.threshold,
            alpha: self.alpha,
            min_imbalance: self.min_imbalance / 100.0,
            events: match self.events {
                Events::Paper => lime::EventSet::Paper,
                Events::Extended => lime::EventSet::Extended,
            },
        }
    }
}

fn parse_unit_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number: expected a correlation in [-1, 1]"))?;
    if !(-1.0..=1.0).contains(&v) {
        return Err(format!(
            "{v} is out of range: expected a correlation in [-1, 1]"
        ));
    }
    Ok(v)
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number: expected a significance level in (0, 1)"))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!(
            "{v} is out of range: expected a significance level in (0, 1)"
        ));
    }
    Ok(v)
}

/// `isim lime RUN_DIR`.
#[derive(Args, Debug)]
pub struct LimeArgs {
    /// A run directory written by `isim run`.
    pub run_dir: PathBuf,
    /// Analysis options.
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Sections whose causes are listed (most idle first).
    #[arg(long, default_value_t = 3)]
    pub sections: usize,
    /// Causes listed per section.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print the JSON report instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `isim whatif ...`.
#[derive(Subcommand, Debug)]
pub enum WhatifCmd {
    /// Re-run with the misses of LIME's reported instructions erased (every access of theirs
    /// hits) and compare imbalance (LIME §5.4). With no selection, all three of --top 1,
    /// --min-score 0.1 and --all-significant (the Fig. 5 table).
    Erase(EraseArgs),
    /// Re-run with machine settings changed (`--set bus.width_bytes=64`) and compare.
    Set(SetArgs),
}

/// `isim whatif erase`.
#[derive(Args, Debug)]
pub struct EraseArgs {
    /// A run directory written by `isim run`.
    pub run_dir: PathBuf,
    /// Erase the N highest-scoring cache-miss causes.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Erase every cache-miss cause scoring above this.
    #[arg(long, value_name = "SCORE")]
    pub min_score: Option<f64>,
    /// Erase every cache-miss cause the regression found significant.
    #[arg(long)]
    pub all_significant: bool,
    /// The section to examine, by its location (e.g. `radix.c:35`); default: the section
    /// with the most idle cycles.
    #[arg(long, value_name = "FILE:LINE")]
    pub section: Option<String>,
    /// Analysis options.
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `isim whatif set`.
#[derive(Args, Debug)]
pub struct SetArgs {
    /// A run directory written by `isim run`.
    pub run_dir: PathBuf,
    /// Config overrides, e.g. `--set bus.width_bytes=64` (repeatable, at least one).
    #[arg(long = "set", value_name = "KEY=VALUE", required = true)]
    pub set: Vec<String>,
    /// The section to examine (default: every section with at least 1 % imbalance).
    #[arg(long, value_name = "FILE:LINE")]
    pub section: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Re-simulates `rd` with the LIME collector (and `sets`/`erase` applied) and analyses it.
pub fn analyze(
    rd: &RunDir,
    sets: &[String],
    erase: &[u64],
    opts: &Options,
    what: &str,
) -> Result<(RunResult, Vec<SectionResult>, LibraryCalls)> {
    analyze_erasing(rd, sets, erase, Erasure::Fill, opts, what)
}

/// [`analyze`] with the erased PCs' accesses behaving as `erasure` says.
pub fn analyze_erasing(
    rd: &RunDir,
    sets: &[String],
    erase: &[u64],
    erasure: Erasure,
    opts: &Options,
    what: &str,
) -> Result<(RunResult, Vec<SectionResult>, LibraryCalls)> {
    let collector = Collector::new(&rd.trace.program, rd.trace.thread_count() as usize);
    let pb = spinner(format!("{what}: simulating {}", rd.dir.display()));
    let r = rd.replay_erasing(sets, erase, erasure, collector, |n| {
        pb.set_message(format!("{what}: simulating, {n} instructions"))
    });
    pb.set_message(format!("{what}: analysing"));
    let mut strays = 0;
    let r = r.map(|(result, c)| {
        let library = c.library_calls();
        let mut instances;
        (instances, strays) = c.finish_counting_strays();
        merge_sites_by_location(&rd.trace.program, &mut instances);
        let mut sections = lime::analyze(&instances, opts);
        let ends: Vec<f64> = result.threads.iter().map(|t| t.end).collect();
        lime::count_idle_after_end(&mut sections, &instances, &ends);
        (result, sections, library)
    });
    pb.finish_and_clear();
    if strays > 0 {
        eprintln!(
            "warning: {strays} stretch(es) of a pool worker's own code ran outside every call \
             into the pool in this replay: they are in no section"
        );
    }
    r
}

/// One static section per source location: barrier or join calls on the same source line (a
/// loop the compiler peeled or unrolled, a macro expanded twice) close one section of the
/// source, so their instances are analysed together under the line's name, which is then
/// unique in the report. Each instance's site becomes the smallest static index of its line.
fn merge_sites_by_location(p: &Program, instances: &mut [lime::Instance]) {
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    for i in instances.iter() {
        names.entry(i.site).or_insert_with(|| location(p, i.site));
    }
    // Sites in increasing order: the first of each name is its smallest.
    let mut first: BTreeMap<&str, u32> = BTreeMap::new();
    for (&site, name) in &names {
        first.entry(name).or_insert(site);
    }
    for i in instances.iter_mut() {
        i.site = first[names[&i.site].as_str()];
    }
}

/// A cause as reported.
#[derive(Debug, Clone, Serialize)]
pub struct CauseRow {
    /// Rank (1 = strongest).
    pub rank: usize,
    /// Combined score.
    pub score: f64,
    /// Kind name.
    pub kind: &'static str,
    /// PC (hex).
    pub pc: String,
    /// Function.
    pub function: Option<String>,
    /// file:line, with `-> file:line` of the leader's strongest out-edge.
    pub location: String,
    /// Static index.
    pub sidx: u32,
    /// β of its cluster in the instance contributing the most (unbounded; the score takes at
    /// most 1 of it).
    pub beta: f64,
    /// The leader score s_v (LIME Eq. 1) there, for a control-flow leader.
    pub leader_score: Option<f64>,
    /// For a miss or misprediction cause at a user's call into a library (`memcpy`,
    /// `malloc`): the function called and where the events occurred. `None` for the
    /// program's own events.
    pub library: Option<LibraryCall>,
}

/// The library code a cause's events occurred in ([`CauseRow::library`]).
#[derive(Debug, Clone, Serialize)]
pub struct LibraryCall {
    /// The name the printout shows ([`LibraryCall::name`]).
    pub name: String,
    /// The function the user's line calls: the one most of its calls entered (named by a
    /// symbol; `null` for code no symbol names).
    pub called: Option<String>,
    /// The library functions whose events of the cause's kind are counted at the line, most
    /// first, with their counts over the run and all threads (code no symbol names is
    /// named by its object, `<libc.so.6>`).
    pub functions: Vec<LibraryShare>,
}

/// A library function's events counted at a user's call site ([`LibraryCall::functions`]).
#[derive(Debug, Clone, Serialize)]
pub struct LibraryShare {
    /// The library function.
    pub function: String,
    /// Its events of the cause's kind over the run, all threads.
    pub events: u64,
}

impl LibraryCall {
    /// The name a report shows: the function called, else the named function with the most
    /// events (a stripped library's exported entry point: `malloc`), else the object.
    fn name(called: Option<&str>, functions: &[LibraryShare]) -> String {
        let named = functions.iter().find(|f| !f.function.starts_with('<'));
        called
            .or(named.map(|f| f.function.as_str()))
            .or(functions.first().map(|f| f.function.as_str()))
            .unwrap_or("?")
            .to_string()
    }
}

impl CauseRow {
    /// The location with the library named when the cause's events occurred in library code
    /// the line called: `file:line in memcpy`.
    pub fn shown_location(&self) -> String {
        match &self.library {
            Some(l) => format!("{} in {}", self.location, l.name),
            None => self.location.clone(),
        }
    }
}

/// The library code whose events of `kind` are counted at own instruction `sidx`
/// ([`LibraryCall`]); `None` when there are none.
fn library_call(
    p: &Program,
    library: &LibraryCalls,
    sidx: u32,
    kind: CauseKind,
) -> Option<LibraryCall> {
    let k = match kind {
        CauseKind::L1Miss => 0,
        CauseKind::L2Miss => 1,
        CauseKind::L3Miss => 2,
        CauseKind::Mispredict => 3,
        CauseKind::ControlFlow | CauseKind::SerialCode => return None,
    };
    let mut by_function: BTreeMap<&str, u64> = BTreeMap::new();
    for e in library.called_from(sidx).filter(|e| e.counts[k] > 0) {
        *by_function
            .entry(p.function_name(e.sidx).unwrap_or("?"))
            .or_default() += e.counts[k];
    }
    if by_function.is_empty() {
        return None;
    }
    let mut functions: Vec<LibraryShare> = by_function
        .into_iter()
        .map(|(f, events)| LibraryShare {
            function: f.to_string(),
            events,
        })
        .collect();
    functions.sort_by(|a, b| {
        b.events
            .cmp(&a.events)
            .then_with(|| a.function.cmp(&b.function))
    });
    let called = library
        .entry(sidx)
        .and_then(|e| p.function_name(e))
        .filter(|f| !f.starts_with('<'))
        .map(str::to_string);
    Some(LibraryCall {
        name: LibraryCall::name(called.as_deref(), &functions),
        called,
        functions,
    })
}

/// "Rpt" counts of one cause type (LIME Table 2): above 0.1, all, and the best score.
#[derive(Debug, Clone, Serialize)]
pub struct Rpt {
    /// Causes scoring above 0.1.
    pub above: usize,
    /// All causes reported.
    pub all: usize,
    /// Highest score (if any).
    pub best: Option<f64>,
}

/// One section of the report.
#[derive(Debug, Clone, Serialize)]
pub struct SectionRow {
    /// file:line of the closing barrier or join call.
    pub location: String,
    /// Function of the closing call.
    pub function: Option<String>,
    /// `barrier` or `join`.
    pub kind: &'static str,
    /// Dynamic instances.
    pub instances: usize,
    /// Instances analysed.
    pub analysed: usize,
    /// Instances not analysed because fewer than three threads took part.
    pub not_analysed_too_few_threads: usize,
    /// Instances not analysed because their imbalance was below `min_imbalance`.
    pub not_analysed_below_threshold: usize,
    /// Imbalance (percent of thread-cycles spent idle).
    pub imbalance_pct: f64,
    /// Idle cycles summed over threads and instances.
    pub idle_cycles: f64,
    /// Share of all sections' idle cycles (percent).
    pub idle_share_pct: f64,
    /// Idle cycles as a share of the run's thread-cycles (run cycles × threads, percent):
    /// what the section's imbalance costs the run.
    pub idle_run_pct: f64,
    /// Ranked causes.
    pub causes: Vec<CauseRow>,
    /// Control-flow leaders.
    pub rpt_control_flow: Rpt,
    /// Cache misses (L1/L2/L3).
    pub rpt_cache_miss: Rpt,
    /// Branch mispredictions.
    pub rpt_mispredict: Rpt,
}

/// `lime.json`.
#[derive(Debug, Clone, Serialize)]
pub struct LimeReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// Workload of the run.
    pub workload: String,
    /// Threads.
    pub threads: u32,
    /// Options used.
    pub options: Options,
    /// Cycles of the run.
    pub run_cycles: f64,
    /// Idle cycles of all sections as a share of the run's thread-cycles (percent).
    pub idle_run_pct: f64,
    /// Every cycle the threads spent not running — synchronization of any kind (locks and
    /// condition variables too, which delimit no section) and before their start or after
    /// their end — as a share of the run's thread-cycles (percent).
    pub wait_run_pct: f64,
    /// The part of `wait_run_pct` outside the sections in which threads were not alive:
    /// before their start or after their end (`imbalance-start`, `imbalance-end`, less a
    /// joined child's idle time in its join section), the serial code of a program whose
    /// threads exist only around its parallel part (percent of the run's thread-cycles).
    pub not_alive_outside_run_pct: f64,
    /// True when `wait_run_pct` is at most [`BALANCED_PCT`]: the threads hardly wait, so no
    /// section's imbalance costs the run much, whatever its own imbalance.
    pub balanced: bool,
    /// Sections, most idle first.
    pub sections: Vec<SectionRow>,
    /// The same, as tables for `isim report`.
    pub report_tables: Vec<ReportTable>,
}

fn location(p: &Program, sidx: u32) -> String {
    p.file_line(sidx)
        .unwrap_or_else(|| format!("{:#x}", p.insts[sidx as usize].pc))
}

fn kind_name(k: SectionKind) -> &'static str {
    match k {
        SectionKind::Barrier => "barrier",
        SectionKind::Join => "join",
        SectionKind::Serial => "serial",
        SectionKind::Pool => "pool",
    }
}

fn rpt(causes: &[lime::Cause], f: impl Fn(CauseKind) -> bool) -> Rpt {
    let sel: Vec<f64> = causes
        .iter()
        .filter(|c| f(c.kind))
        .map(|c| c.score)
        .collect();
    Rpt {
        above: sel.iter().filter(|&&s| s > 0.1).count(),
        all: sel.len(),
        best: sel.iter().copied().reduce(f64::max),
    }
}

/// Builds the report from analysed sections.
pub fn report(
    rd: &RunDir,
    run: &RunResult,
    sections: &[SectionResult],
    library: &LibraryCalls,
    opts: &Options,
) -> LimeReport {
    let p = &rd.trace.program;
    let total_idle: f64 = sections.iter().map(|s| s.idle_cycles).sum();
    let run_thread_cycles = run.cycles * rd.trace.thread_count() as f64;
    let of_run = |idle: f64| {
        if run_thread_cycles > 0.0 {
            100.0 * idle / run_thread_cycles
        } else {
            0.0
        }
    };
    let rows: Vec<SectionRow> = sections
        .iter()
        .map(|s| SectionRow {
            location: location(p, s.site),
            function: p.function_name(s.site).map(str::to_string),
            kind: kind_name(s.kind),
            instances: s.instances,
            analysed: s.analysed,
            not_analysed_too_few_threads: s.too_few_threads,
            not_analysed_below_threshold: s.below_threshold,
            imbalance_pct: 100.0 * s.imbalance,
            idle_cycles: s.idle_cycles,
            idle_share_pct: if total_idle > 0.0 {
                100.0 * s.idle_cycles / total_idle
            } else {
                0.0
            },
            idle_run_pct: of_run(s.idle_cycles),
            causes: s
                .causes
                .iter()
                .enumerate()
                .map(|(i, c)| CauseRow {
                    rank: i + 1,
                    score: c.score,
                    kind: c.kind.name(),
                    pc: format!("{:#x}", p.insts[c.sidx as usize].pc),
                    function: p.function_name(c.sidx).map(str::to_string),
                    location: match c.edge_to {
                        Some(t) if t != lime::cfg::ENTRY && c.kind == CauseKind::ControlFlow => {
                            format!("{} -> {}", location(p, c.sidx), location(p, t))
                        }
                        _ => location(p, c.sidx),
                    },
                    sidx: c.sidx,
                    beta: c.beta,
                    leader_score: c.leader_score,
                    library: library_call(p, library, c.sidx, c.kind),
                })
                .collect(),
            rpt_control_flow: rpt(&s.causes, |k| k == CauseKind::ControlFlow),
            rpt_cache_miss: rpt(&s.causes, CauseKind::is_miss),
            rpt_mispredict: rpt(&s.causes, |k| k == CauseKind::Mispredict),
        })
        .collect();
    let mut tables = vec![ReportTable {
        title: "LIME: parallel sections".into(),
        columns: [
            "section",
            "type",
            "instances",
            "imbalance",
            "idle cycles",
            "idle share",
            "of run",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.location.clone(),
                    r.kind.to_string(),
                    r.instances.to_string(),
                    format!("{:.1}%", r.imbalance_pct),
                    format!("{:.0}", r.idle_cycles),
                    format!("{:.1}%", r.idle_share_pct),
                    format!("{:.1}%", r.idle_run_pct),
                ]
            })
            .collect(),
    }];
    for r in rows.iter().filter(|r| !r.causes.is_empty()) {
        tables.push(ReportTable {
            title: format!("LIME: causes of imbalance at {} ({})", r.location, r.kind),
            columns: ["rank", "score", "kind", "pc", "function", "location"]
                .map(String::from)
                .to_vec(),
            rows: r
                .causes
                .iter()
                .map(|c| {
                    vec![
                        c.rank.to_string(),
                        format!("{:.3}", c.score),
                        c.kind.to_string(),
                        c.pc.clone(),
                        c.function.clone().unwrap_or_default(),
                        c.shown_location(),
                    ]
                })
                .collect(),
        });
    }
    let idle_run_pct = of_run(total_idle);
    let wait_run_pct = of_run(run.threads.iter().map(|t| t.stack.sync()).sum());
    // Threads not alive outside the sections: a joined child's wait for its siblings is in
    // its join section's idle time already.
    let not_alive_outside_run_pct = of_run(
        run.threads
            .iter()
            .map(|t| t.stack.get(Component::ImbalanceStart) + t.stack.get(Component::ImbalanceEnd))
            .sum::<f64>()
            - sections.iter().map(|s| s.idle_after_end).sum::<f64>(),
    )
    .max(0.0);
    LimeReport {
        schema: SCHEMA,
        workload: rd.workload.clone(),
        threads: rd.trace.thread_count(),
        options: *opts,
        run_cycles: run.cycles,
        idle_run_pct,
        wait_run_pct,
        not_alive_outside_run_pct,
        balanced: wait_run_pct <= BALANCED_PCT,
        sections: rows,
        report_tables: tables,
    }
}

/// What waiting outside the sections was, of `outside` percent of the run's thread-cycles:
/// the part in which threads were not alive (`not_alive`: serial code before their creation
/// or after their end, which no section holds) and the rest (locks, condition variables,
/// joins and waits no section delimits). A share under 0.05 % is not named.
fn outside_split(outside: f64, not_alive: f64) -> String {
    let other = (outside - not_alive).max(0.0);
    let alive = format!("{other:.1}% in locks, condition variables, joins and other waits");
    if not_alive < 0.05 {
        alive
    } else {
        format!(
            "{not_alive:.1}% before threads started or after they ended (serial code; `not \
             alive` in `isim run`'s table) and {alive}"
        )
    }
}

fn fmt_rpt(r: &Rpt) -> String {
    match r.best {
        Some(b) => format!("{} ({}) best {:.2}", r.above, r.all, b),
        None => format!("{} ({}) -", r.above, r.all),
    }
}

/// The directory every source path among `locations` (`file:line`, or two joined by ` -> `)
/// lies in, ending in `/`, when they are absolute paths of a traced program (`""` otherwise):
/// the terminal report prints paths relative to it, so that columns stay readable, and says
/// so once; `lime.json` keeps them whole.
fn common_dir<'a>(locations: impl Iterator<Item = &'a str>) -> String {
    let mut dir: Option<String> = None;
    for loc in locations {
        for part in loc.split(" -> ") {
            let file = part.rsplit_once(':').map_or(part, |(f, _)| f);
            if !file.starts_with('/') {
                return String::new();
            }
            let parent = &file[..=file.rfind('/').unwrap_or(0)];
            dir = Some(match dir {
                None => parent.to_string(),
                Some(d) => {
                    let mut n = d
                        .bytes()
                        .zip(parent.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    while n > 0 && !d[..n].ends_with('/') {
                        n -= 1;
                    }
                    d[..n].to_string()
                }
            });
        }
    }
    match dir {
        Some(d) if d.len() > 1 => d,
        _ => String::new(),
    }
}

/// `loc` with the directory `dir` ([`common_dir`]) taken out of its paths.
fn relative(loc: &str, dir: &str) -> String {
    if dir.is_empty() {
        loc.to_string()
    } else {
        loc.replace(dir, "")
    }
}

/// The text rendering of a report.
pub fn render(rep: &LimeReport, sections: usize, top: usize) -> String {
    let mut s = String::new();
    let o = &rep.options;
    let dir = common_dir(rep.sections.iter().flat_map(|r| {
        std::iter::once(r.location.as_str()).chain(r.causes.iter().map(|c| c.location.as_str()))
    }));
    let short = |loc: &str| relative(loc, &dir);
    let floor = if o.min_imbalance > 0.0 {
        format!(
            "instances with < {}% imbalance not analysed",
            o.min_imbalance * 100.0
        )
    } else {
        format!(
            "every instance of {} or more threads analysed",
            lime::MIN_THREADS
        )
    };
    let _ = writeln!(
        s,
        "LIME: {} ({} threads); clustering threshold {}, alpha {}, {}, {floor}",
        rep.workload,
        rep.threads,
        o.threshold,
        o.alpha,
        match o.events {
            lime::EventSet::Paper => "the paper's events (control flow, L1 and L2 misses)",
            lime::EventSet::Extended =>
                "extended events (control flow, L1, L2 and L3 misses, mispredictions)",
        }
    );
    if rep.sections.is_empty() {
        let _ = writeln!(
            s,
            "no barrier-, join- or pool-delimited parallel sections in the run"
        );
        if rep.wait_run_pct > BALANCED_PCT {
            let _ = writeln!(
                s,
                "threads wait for {:.1}% of the run's thread-cycles: {}, which LIME does not \
                 analyse (`isim locks` ranks the locks, `isim profile` has the synchronization \
                 regions)",
                rep.wait_run_pct,
                outside_split(rep.wait_run_pct, rep.not_alive_outside_run_pct)
            );
        }
        return s;
    }
    if !dir.is_empty() {
        let _ = writeln!(s, "source paths below are relative to {dir}");
    }
    let w = rep
        .sections
        .iter()
        .map(|r| short(&r.location).chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    let _ = writeln!(
        s,
        "\n{:<w$} {:<8} {:>9} {:>10} {:>14} {:>10} {:>7}",
        "section", "type", "instances", "imbalance", "idle cycles", "idle share", "of run"
    );
    for r in &rep.sections {
        let _ = writeln!(
            s,
            "{:<w$} {:<8} {:>9} {:>9.1}% {:>14.0} {:>9.1}% {:>6.1}%",
            short(&r.location),
            r.kind,
            r.instances,
            r.imbalance_pct,
            r.idle_cycles,
            r.idle_share_pct,
            r.idle_run_pct
        );
    }
    if rep.balanced {
        let _ = writeln!(
            s,
            "\nbalanced: threads wait for {:.1}% of the run's thread-cycles in all (at most \
             {BALANCED_PCT}%); no section's imbalance costs the run much",
            rep.wait_run_pct
        );
    } else if rep.wait_run_pct - rep.idle_run_pct > BALANCED_PCT {
        let _ = writeln!(
            s,
            "\nthreads wait for {:.1}% of the run's thread-cycles: {:.1}% in these sections, \
             {} outside them (all shares of the run's thread-cycles); LIME analyses only \
             barrier-, join- and pool-delimited sections, `isim locks` ranks the locks",
            rep.wait_run_pct,
            rep.idle_run_pct,
            outside_split(
                rep.wait_run_pct - rep.idle_run_pct,
                rep.not_alive_outside_run_pct
            )
        );
    }
    let minor = rep
        .sections
        .iter()
        .filter(|r| r.idle_run_pct < MINOR_PCT)
        .count();
    for r in rep
        .sections
        .iter()
        .filter(|r| r.idle_run_pct >= MINOR_PCT)
        .take(sections)
    {
        let _ = writeln!(
            s,
            "\ncauses of imbalance at {} ({}, {} of {} instances analysed, imbalance {:.1}%, idle {:.1}% of the run)",
            short(&r.location),
            r.kind,
            r.analysed,
            r.instances,
            r.imbalance_pct,
            r.idle_run_pct
        );
        let mut skipped = Vec::new();
        if r.not_analysed_too_few_threads > 0 {
            skipped.push(format!(
                "{} with fewer than {} threads taking part (LIME correlates events across threads)",
                r.not_analysed_too_few_threads,
                lime::MIN_THREADS
            ));
        }
        if r.not_analysed_below_threshold > 0 {
            skipped.push(format!(
                "{} with imbalance below {}% (--min-imbalance)",
                r.not_analysed_below_threshold,
                o.min_imbalance * 100.0
            ));
        }
        if !skipped.is_empty() {
            let _ = writeln!(s, "  not analysed: {}", skipped.join("; "));
        }
        if r.analysed == 0 {
            continue;
        }
        if r.causes.is_empty() {
            let _ = writeln!(s, "  no significant cause among the events collected");
            continue;
        }
        let _ = writeln!(
            s,
            "{:>4} {:>7}  {:<20} {:<12} {:<18} location",
            "rank", "score", "kind", "pc", "function"
        );
        for c in r.causes.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>4} {:>7.3}  {:<20} {:<12} {:<18} {}",
                c.rank,
                c.score,
                c.kind,
                c.pc,
                c.function.as_deref().unwrap_or("?"),
                short(&c.shown_location())
            );
        }
        if r.causes.len() > top {
            let _ = writeln!(s, "  ... {} more (--top)", r.causes.len() - top);
        }
        let _ = writeln!(
            s,
            "Rpt, score > 0.1 (all): control flow {}; cache miss {}; mispredict {}",
            fmt_rpt(&r.rpt_control_flow),
            fmt_rpt(&r.rpt_cache_miss),
            fmt_rpt(&r.rpt_mispredict)
        );
    }
    if minor > 0 {
        let _ = writeln!(
            s,
            "\n{minor} section(s) idle for less than {MINOR_PCT}% of the run: causes not listed (lime.json has them)"
        );
    }
    s
}

fn write_json(dir: &Path, name: &str, text: &str) -> Result<()> {
    crate::fsutil::write_atomic(&dir.join(name), text.as_bytes())
}

/// `isim lime`.
pub fn main(a: &LimeArgs) -> Result<()> {
    let rd = RunDir::open(&a.run_dir)?;
    let opts = a.analysis.options();
    let (run, sections, library) = analyze(&rd, &[], &[], &opts, "lime")?;
    let rep = report(&rd, &run, &sections, &library, &opts);
    let json = serde_json::to_string_pretty(&rep)?;
    write_json(&rd.dir, "lime.json", &json)?;
    if a.json {
        println!("{json}");
    } else {
        print!("{}", render(&rep, a.sections, a.top));
        println!("\nwrote {}", rd.dir.join("lime.json").display());
    }
    Ok(())
}

/// One row of a what-if comparison.
#[derive(Debug, Clone, Serialize)]
pub struct WhatifRow {
    /// What changed.
    pub change: String,
    /// Instructions whose misses were erased (locations).
    pub erased: Vec<String>,
    /// Section location.
    pub section: String,
    /// Imbalance before (percent).
    pub imbalance_before: f64,
    /// Imbalance after (percent).
    pub imbalance_after: f64,
    /// Relative reduction of the imbalance (percent of before).
    pub reduction_pct: f64,
    /// Slowest thread's execution time in the section (summed over instances): before, after.
    pub slowest: (f64, f64),
    /// Fastest thread's: before, after.
    pub fastest: (f64, f64),
    /// Total run cycles: before, after.
    pub cycles: (f64, f64),
}

fn find_section<'a>(
    rd: &RunDir,
    sections: &'a [SectionResult],
    want: Option<&str>,
) -> Result<Vec<&'a SectionResult>> {
    let p = &rd.trace.program;
    match want {
        Some(loc) => {
            let found: Vec<&SectionResult> = sections
                .iter()
                .filter(|s| location(p, s.site) == loc)
                .collect();
            if found.is_empty() {
                let all: Vec<String> = sections.iter().map(|s| location(p, s.site)).collect();
                bail!(
                    "no parallel section at `{loc}` in {}: expected one of {}",
                    rd.dir.display(),
                    all.join(", ")
                );
            }
            Ok(found)
        }
        None => Ok(sections.iter().take(1).collect()),
    }
}

fn extremes(s: &SectionResult) -> (f64, f64) {
    let slow = s.thread_times.iter().map(|t| t.1).fold(0.0, f64::max);
    let fast = s
        .thread_times
        .iter()
        .map(|t| t.1)
        .fold(f64::INFINITY, f64::min);
    (slow, if fast.is_finite() { fast } else { 0.0 })
}

fn compare(
    rd: &RunDir,
    change: String,
    erased: Vec<String>,
    before: &SectionResult,
    before_cycles: f64,
    after: &[SectionResult],
    after_cycles: f64,
) -> WhatifRow {
    let a = after
        .iter()
        .find(|s| s.site == before.site && s.kind == before.kind);
    let (ib, ia) = (
        100.0 * before.imbalance,
        a.map_or(0.0, |a| 100.0 * a.imbalance),
    );
    let (bs, bf) = extremes(before);
    let (as_, af) = a.map_or((0.0, 0.0), extremes);
    WhatifRow {
        change,
        erased,
        section: location(&rd.trace.program, before.site),
        imbalance_before: ib,
        imbalance_after: ia,
        reduction_pct: if ib > 0.0 {
            100.0 * (ib - ia) / ib
        } else {
            0.0
        },
        slowest: (bs, as_),
        fastest: (bf, af),
        cycles: (before_cycles, after_cycles),
    }
}

/// Schema of `whatif-erase.json` and `whatif-set.json`.
pub const WHATIF_SCHEMA: &str = "isim-whatif/1";

/// `whatif-erase.json` / `whatif-set.json`: the last `isim whatif erase` / `set` of a run
/// directory, its rows and the same as a table for `isim report`.
#[derive(Debug, Clone, Serialize)]
pub struct WhatifFile<'a> {
    /// [`WHATIF_SCHEMA`].
    pub schema: &'static str,
    /// `erase` or `set`.
    pub kind: &'static str,
    /// One row per change and section.
    pub rows: &'a [WhatifRow],
    /// The rows as a table.
    pub report_tables: Vec<ReportTable>,
}

/// The what-if rows as a report table (the terminal's columns, before and after split).
fn whatif_table(rows: &[WhatifRow]) -> ReportTable {
    let mut t = ReportTable::new(
        "What-if: imbalance and time before and after",
        &[
            "change",
            "section",
            "imbalance before",
            "imbalance after",
            "reduction",
            "slowest thread before",
            "slowest thread after",
            "fastest thread before",
            "fastest thread after",
            "run cycles before",
            "run cycles after",
            "erased misses of",
        ],
    );
    for r in rows {
        t.rows.push(vec![
            r.change.clone(),
            r.section.clone(),
            format!("{:.1}%", r.imbalance_before),
            format!("{:.1}%", r.imbalance_after),
            format!("{:.1}%", r.reduction_pct),
            format!("{:.0}", r.slowest.0),
            format!("{:.0}", r.slowest.1),
            format!("{:.0}", r.fastest.0),
            format!("{:.0}", r.fastest.1),
            format!("{:.0}", r.cycles.0),
            format!("{:.0}", r.cycles.1),
            r.erased.join(", "),
        ]);
    }
    t
}

/// Writes `whatif-<kind>.json` into the run directory (replacing the previous one).
fn write_whatif(rd: &RunDir, kind: &'static str, rows: &[WhatifRow]) -> Result<PathBuf> {
    let file = WhatifFile {
        schema: WHATIF_SCHEMA,
        kind,
        rows,
        report_tables: vec![whatif_table(rows)],
    };
    let path = rd.dir.join(format!("whatif-{kind}.json"));
    crate::fsutil::write_atomic(&path, serde_json::to_string_pretty(&file)?.as_bytes())?;
    Ok(path)
}

fn render_whatif(rows: &[WhatifRow]) -> String {
    let mut s = String::new();
    let dir = common_dir(rows.iter().map(|r| r.section.as_str()));
    let short = |loc: &str| relative(loc, &dir);
    if !dir.is_empty() {
        let _ = writeln!(s, "source paths below are relative to {dir}");
    }
    let _ = writeln!(
        s,
        "{:<32} {:<16} {:>20} {:>10} {:>26} {:>26} {:>24}",
        "change",
        "section",
        "imbalance",
        "reduction",
        "slowest thread (cycles)",
        "fastest thread (cycles)",
        "run cycles"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<32} {:<16} {:>8.1}% -> {:>6.1}% {:>9.1}% {:>12.0} -> {:>10.0} {:>12.0} -> {:>10.0} {:>10.0} -> {:>10.0}",
            r.change,
            short(&r.section),
            r.imbalance_before,
            r.imbalance_after,
            r.reduction_pct,
            r.slowest.0,
            r.slowest.1,
            r.fastest.0,
            r.fastest.1,
            r.cycles.0,
            r.cycles.1
        );
    }
    for r in rows.iter().filter(|r| !r.erased.is_empty()) {
        let _ = writeln!(
            s,
            "{}: erased misses of {}",
            r.change,
            short(&r.erased.join(", "))
        );
    }
    s
}

/// Which of LIME's cache-miss causes to erase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    /// The N highest-scoring.
    Top(usize),
    /// Those scoring above the value.
    MinScore(f64),
    /// Every one the regression found significant.
    AllSignificant,
}

impl Selection {
    fn name(&self) -> String {
        match self {
            Selection::Top(n) => format!("top {n}"),
            Selection::MinScore(m) => format!("score > {m}"),
            Selection::AllSignificant => "all significant".into(),
        }
    }

    fn keeps(&self, rank: usize, c: &lime::Cause) -> bool {
        match *self {
            Selection::Top(n) => rank < n,
            Selection::MinScore(m) => c.score > m,
            Selection::AllSignificant => true,
        }
    }
}

/// The miss-erasure what-if (LIME §5.4): for the section at `section` (default: the most
/// idle), one re-run per selection with the selected cache-miss causes' misses erased.
pub fn erase_whatif(
    rd: &RunDir,
    opts: &Options,
    section: Option<&str>,
    selections: &[Selection],
) -> Result<Vec<WhatifRow>> {
    let (base, sections, library) = analyze(rd, &[], &[], opts, "baseline")?;
    let targets = find_section(rd, &sections, section)?;
    let p = &rd.trace.program;
    let mut rows = Vec::new();
    for target in targets {
        let misses: Vec<&lime::Cause> = target.causes.iter().filter(|c| c.kind.is_miss()).collect();
        if misses.is_empty() {
            bail!(
                "LIME reports no cache-miss cause at {} (its causes: {}): nothing to erase",
                location(p, target.site),
                if target.causes.is_empty() {
                    "none".to_string()
                } else {
                    target
                        .causes
                        .iter()
                        .take(3)
                        .map(|c| format!("{} at {}", c.kind.name(), location(p, c.sidx)))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
        for sel in selections {
            let mut sidxs: Vec<u32> = misses
                .iter()
                .enumerate()
                .filter(|(i, c)| sel.keeps(*i, c))
                .map(|(_, c)| c.sidx)
                .collect();
            sidxs.sort_unstable();
            sidxs.dedup();
            // A cause at a call into a library is that library code's misses: its
            // instructions that missed when called from there are erased too (wherever they
            // run: erasure is by instruction).
            let mut erased = Vec::new();
            let mut pcs = Vec::new();
            for &s in &sidxs {
                let inst = &p.insts[s as usize];
                pcs.push(inst.pc);
                let lib: Vec<&LibraryEvents> =
                    library.called_from(s).filter(|e| e.counts[0] > 0).collect();
                pcs.extend(lib.iter().map(|e| p.insts[e.sidx as usize].pc));
                let mut functions: Vec<&str> = lib
                    .iter()
                    .map(|e| p.function_name(e.sidx).unwrap_or("?"))
                    .collect();
                functions.sort_unstable();
                functions.dedup();
                erased.push(match lib.len() {
                    0 => format!("{} ({:#x})", location(p, s), inst.pc),
                    n => format!(
                        "{} ({:#x}) and the {n} library instruction(s) that missed when it \
                         called them ({})",
                        location(p, s),
                        inst.pc,
                        functions.join(", ")
                    ),
                });
            }
            pcs.sort_unstable();
            pcs.dedup();
            // Both semantics: isim's (the caches evolve as without erasure) and the paper's
            // (the erased accesses never leave the L1).
            for (erasure, suffix) in [(Erasure::Fill, ""), (Erasure::NoFill, ", no fill")] {
                let (after, after_sections) = if pcs.is_empty() {
                    (base.clone(), sections.clone())
                } else {
                    let quiet = Options {
                        min_imbalance: f64::INFINITY,
                        ..*opts
                    };
                    let (after, after_sections, _) =
                        analyze_erasing(rd, &[], &pcs, erasure, &quiet, &sel.name())?;
                    (after, after_sections)
                };
                rows.push(compare(
                    rd,
                    format!("erase {}{suffix}", sel.name()),
                    erased.clone(),
                    target,
                    base.cycles,
                    &after_sections,
                    after.cycles,
                ));
            }
        }
    }
    Ok(rows)
}

/// `isim whatif`.
pub fn whatif(cmd: &WhatifCmd) -> Result<()> {
    match cmd {
        WhatifCmd::Erase(a) => {
            let rd = RunDir::open(&a.run_dir)?;
            let mut selections = Vec::new();
            if let Some(n) = a.top {
                selections.push(Selection::Top(n));
            }
            if let Some(m) = a.min_score {
                selections.push(Selection::MinScore(m));
            }
            if a.all_significant {
                selections.push(Selection::AllSignificant);
            }
            if selections.is_empty() {
                selections = vec![
                    Selection::Top(1),
                    Selection::MinScore(0.1),
                    Selection::AllSignificant,
                ];
            }
            let rows = erase_whatif(
                &rd,
                &a.analysis.options(),
                a.section.as_deref(),
                &selections,
            )?;
            let path = write_whatif(&rd, "erase", &rows)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", render_whatif(&rows));
                println!("\nwrote {}", path.display());
            }
        }
        WhatifCmd::Set(a) => {
            let rd = RunDir::open(&a.run_dir)?;
            let opts = Options {
                min_imbalance: f64::INFINITY,
                ..Options::default()
            };
            let (base, sections, _) = analyze(&rd, &[], &[], &opts, "baseline")?;
            let (after, after_sections, _) = analyze(&rd, &a.set, &[], &opts, "what-if")?;
            let targets: Vec<&SectionResult> = match &a.section {
                Some(_) => find_section(&rd, &sections, a.section.as_deref())?,
                None => sections.iter().filter(|s| s.imbalance >= 0.01).collect(),
            };
            let change = a.set.join(" ");
            let rows: Vec<WhatifRow> = targets
                .into_iter()
                .map(|t| {
                    compare(
                        &rd,
                        change.clone(),
                        Vec::new(),
                        t,
                        base.cycles,
                        &after_sections,
                        after.cycles,
                    )
                })
                .collect();
            let path = write_whatif(&rd, "set", &rows)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                if rows.is_empty() {
                    println!(
                        "no section with at least 1% imbalance; run cycles {:.0} -> {:.0}",
                        base.cycles, after.cycles
                    );
                } else {
                    print!("{}", render_whatif(&rows));
                }
                println!("\nwrote {}", path.display());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_frontend::model::{OpClass, SrcLoc, StaticInst};

    /// A run without barrier or join sections whose threads wait (a worker pool on condition
    /// variables, like `xz -T4`) is told where that waiting is, not only that there is no
    /// section; one whose threads hardly wait is not.
    #[test]
    fn a_run_without_sections_says_how_much_its_threads_wait() {
        let mut rep = LimeReport {
            schema: SCHEMA,
            workload: "pool".into(),
            threads: 5,
            options: Options::default(),
            run_cycles: 1000.0,
            idle_run_pct: 0.0,
            wait_run_pct: 21.4,
            not_alive_outside_run_pct: 15.0,
            balanced: false,
            sections: Vec::new(),
            report_tables: Vec::new(),
        };
        let text = render(&rep, 5, 10);
        assert!(
            text.contains("no barrier-, join- or pool-delimited parallel sections"),
            "{text}"
        );
        assert!(
            text.contains(
                "threads wait for 21.4% of the run's thread-cycles: 15.0% before threads \
                 started or after they ended"
            ),
            "{text}"
        );
        assert!(
            text.contains("6.4% in locks, condition variables, joins and other waits"),
            "{text}"
        );
        rep.wait_run_pct = 1.0;
        rep.balanced = true;
        assert!(!render(&rep, 5, 10).contains("threads wait"));
    }

    /// A traced program's absolute paths print relative to their common directory; relative
    /// paths (generated workloads, programs compiled by relative path) print as they are.
    #[test]
    fn absolute_source_paths_print_relative_to_their_common_directory() {
        let locs = [
            "/src/app/lu.c:647",
            "/src/app/lu.c:52 -> /src/app/lu.c:53",
            "/src/app/util/b.c:3",
        ];
        assert_eq!(common_dir(locs.into_iter()), "/src/app/");
        assert_eq!(common_dir(["/src/app/lu.c:1"].into_iter()), "/src/app/");
        assert_eq!(common_dir(["lu.c:1", "/src/a.c:2"].into_iter()), "");
        assert_eq!(common_dir(["/a.c:1", "/b.c:2"].into_iter()), "");
        assert_eq!(common_dir(["/x/ab.c:1", "/x/ac.c:2"].into_iter()), "/x/");
        assert_eq!(common_dir(std::iter::empty()), "");
    }

    /// Two calls on one line (sites 1 and 3) become one section; a call on another line
    /// (site 2) and a call with no source line (site 4, named by its PC) stay apart.
    /// A library cause is named by the function called, else by the exported function among
    /// those its events occurred in (a stripped libc names `malloc` but not `_int_malloc`),
    /// else by the object.
    #[test]
    fn a_library_cause_is_named_by_the_call_then_the_named_function_then_the_object() {
        let share = |f: &str, events| LibraryShare {
            function: f.into(),
            events,
        };
        let stripped = [share("<libc.so.6>", 900), share("malloc", 40)];
        assert_eq!(LibraryCall::name(None, &stripped), "malloc");
        assert_eq!(LibraryCall::name(Some("calloc"), &stripped), "calloc");
        assert_eq!(
            LibraryCall::name(None, &[share("<libc.so.6>", 900)]),
            "<libc.so.6>"
        );
    }

    #[test]
    fn closing_calls_on_one_source_line_are_one_section() {
        let mut p = Program::default();
        p.source.files.push("lu.c".into());
        for (i, line) in [0u32, 647, 689, 647, 0].into_iter().enumerate() {
            let mut s = StaticInst::new(0x1000 + 4 * i as u64, 4, OpClass::Call);
            if line > 0 {
                s.loc = SrcLoc {
                    function: SrcLoc::UNKNOWN,
                    file: 0,
                    line,
                };
            }
            p.insts.push(s);
        }
        let inst = |site| lime::Instance {
            site,
            kind: SectionKind::Barrier,
            release: 0.0,
            threads: Vec::new(),
        };
        let mut v = vec![inst(3), inst(2), inst(1), inst(4), inst(3)];
        merge_sites_by_location(&p, &mut v);
        let sites: Vec<u32> = v.iter().map(|i| i.site).collect();
        assert_eq!(sites, [1, 2, 1, 4, 1]);
        assert_eq!(location(&p, 1), "lu.c:647");
        assert_eq!(location(&p, 4), "0x1010");
    }
}
