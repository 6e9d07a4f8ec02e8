//! `isim trace-info`: what a trace holds — header, static table, and per thread the counts of
//! instructions, memory operands, branches and every marker kind. A trace of format v2 or
//! later stores those counts in its tables, so they are read in the time it takes to open the
//! file; with `--verify` (and always for a v1 trace) every stream is decoded and counted,
//! which checks the whole file, and then the decoded counts must equal the stored ones.

use serde::Serialize;
use sim_frontend::model::{Batch, Marker, Record};
use sim_frontend::{Trace, TraceError};

/// Bytes per instruction to three significant digits ("0.00412", "1.50", "12.3"): traces of
/// a few bytes per thousand instructions printed as "0.00" said nothing.
pub fn per_instruction(bytes: u64, instructions: u64) -> String {
    if instructions == 0 || bytes == 0 {
        return "0".into();
    }
    let x = bytes as f64 / instructions as f64;
    let decimals = (2 - x.log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// Counts for one thread.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ThreadCounts {
    /// Thread id.
    pub thread: u32,
    /// Dynamic instructions.
    pub instructions: u64,
    /// Memory read operands.
    pub loads: u64,
    /// Memory write operands.
    pub stores: u64,
    /// Branch instructions of every kind.
    pub branches: u64,
    /// Branches that were taken.
    pub taken_branches: u64,
    /// Markers by kind, in [`Marker::KIND_NAMES`] order.
    pub markers: std::collections::BTreeMap<&'static str, u64>,
}

/// Everything `trace-info` reports.
#[derive(Debug, Clone, Serialize)]
pub struct TraceInfo {
    /// Trace file.
    pub file: String,
    /// File size in bytes.
    pub bytes: u64,
    /// ISA.
    pub isa: String,
    /// Workload name.
    pub workload: String,
    /// Workload parameters.
    pub params: Vec<(String, String)>,
    /// Producer.
    pub producer: String,
    /// Static instructions.
    pub static_instructions: usize,
    /// Functions in the source map.
    pub functions: usize,
    /// Files in the source map.
    pub files: usize,
    /// Trace format version.
    pub format_version: u16,
    /// Whether every stream was decoded (a full check of the file) rather than its stored
    /// counts read.
    pub verified: bool,
    /// Per-thread counts.
    pub threads: Vec<ThreadCounts>,
}

impl TraceInfo {
    /// Total dynamic instructions.
    pub fn instructions(&self) -> u64 {
        self.threads.iter().map(|t| t.instructions).sum()
    }

    /// The counts `trace` stores (format v2 and later), without decoding; `None` for a v1 trace.
    pub fn stored(trace: &Trace) -> Result<Option<TraceInfo>, TraceError> {
        let mut threads = Vec::with_capacity(trace.threads.len());
        for (tid, d) in trace.threads.iter().enumerate() {
            let Some(k) = &d.counts else {
                return Ok(None);
            };
            threads.push(ThreadCounts {
                thread: tid as u32,
                instructions: d.instructions,
                loads: k.loads,
                stores: k.stores,
                branches: k.branches,
                taken_branches: k.taken,
                markers: Marker::KIND_NAMES.iter().copied().zip(k.markers).collect(),
            });
        }
        Self::with_threads(trace, threads, false).map(Some)
    }

    /// Decodes every stream of `trace`; `progress` gets the records decoded so far. For a v2
    /// trace the counts must equal those its tables store.
    pub fn collect(trace: &Trace, mut progress: impl FnMut(u64)) -> Result<TraceInfo, TraceError> {
        let mut threads = Vec::with_capacity(trace.threads.len());
        let mut batch = Batch::default();
        let mut done = 0u64;
        let insts = &trace.program.insts;
        for tid in 0..trace.thread_count() {
            let mut c = ThreadCounts {
                thread: tid,
                ..Default::default()
            };
            let mut markers = [0u64; Marker::KINDS];
            let mut s = trace.stream_readahead(tid, 4)?;
            while s.next_batch(&mut batch)? {
                for r in &batch.records {
                    match r {
                        Record::Inst(i) => {
                            c.instructions += 1;
                            for m in batch.mem_of(i) {
                                if m.write {
                                    c.stores += 1;
                                } else {
                                    c.loads += 1;
                                }
                            }
                            if insts[i.sidx as usize].branch.is_branch() {
                                c.branches += 1;
                                c.taken_branches += i.taken as u64;
                            }
                        }
                        Record::Marker(m) => markers[m.kind_index()] += 1,
                    }
                }
                done += batch.records.len() as u64;
                progress(done);
            }
            c.markers = Marker::KIND_NAMES.iter().copied().zip(markers).collect();
            threads.push(c);
        }
        let info = Self::with_threads(trace, threads, true)?;
        if let Some(stored) = Self::stored(trace)? {
            for (d, s) in info.threads.iter().zip(&stored.threads) {
                if d != s {
                    return Err(TraceError::at(
                        trace.path(),
                        Some(d.thread),
                        0,
                        format!(
                            "the stream decodes to other counts than the tables store (decoded {d:?}, stored {s:?})"
                        ),
                    ));
                }
            }
        }
        Ok(info)
    }

    fn with_threads(
        trace: &Trace,
        threads: Vec<ThreadCounts>,
        verified: bool,
    ) -> Result<TraceInfo, TraceError> {
        let bytes = std::fs::metadata(trace.path())
            .map_err(|e| TraceError::io(trace.path(), 0, "cannot stat", e))?
            .len();
        let insts = &trace.program.insts;
        Ok(TraceInfo {
            file: trace.path().display().to_string(),
            bytes,
            isa: trace.meta.isa.clone(),
            workload: trace.meta.workload.clone(),
            params: trace.meta.params.clone(),
            producer: trace.meta.producer.clone(),
            static_instructions: insts.len(),
            functions: trace.program.source.functions.len(),
            files: trace.program.source.files.len(),
            format_version: trace.version(),
            verified,
            threads,
        })
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let n = self.instructions();
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(o, "trace       {}", self.file);
        let _ = writeln!(
            o,
            "format      isim trace v{}, {} bytes ({} bytes per instruction){}",
            self.format_version,
            self.bytes,
            per_instruction(self.bytes, n),
            if self.verified {
                ", every record decoded and checked"
            } else {
                ", counts as stored (--verify decodes and checks every record)"
            }
        );
        let _ = writeln!(o, "workload    {} ({})", self.workload, params.join(" "));
        let _ = writeln!(o, "isa         {}", self.isa);
        let _ = writeln!(o, "producer    {}", self.producer);
        let _ = writeln!(
            o,
            "static      {} instructions, {} functions, {} files",
            self.static_instructions, self.functions, self.files
        );
        let _ = writeln!(o, "threads     {}", self.threads.len());
        let _ = writeln!(o, "instructions {n}");
        let _ = writeln!(o);
        let cols = TABLE_MARKERS;
        let _ = write!(
            o,
            "{:>6} {:>12} {:>10} {:>10} {:>10} {:>10}",
            "thread", "instructions", "loads", "stores", "branches", "taken"
        );
        for c in cols {
            let _ = write!(o, " {:>7}", marker_heading(c));
        }
        let _ = writeln!(o);
        for t in &self.threads {
            let _ = write!(
                o,
                "{:>6} {:>12} {:>10} {:>10} {:>10} {:>10}",
                t.thread, t.instructions, t.loads, t.stores, t.branches, t.taken_branches
            );
            for c in cols {
                let _ = write!(o, " {:>7}", t.markers.get(c).copied().unwrap_or(0));
            }
            let _ = writeln!(o);
        }
        o
    }
}

/// The marker kinds (`Marker::KIND_NAMES`) the per-thread tables of `isim trace-info` and
/// `isim trace` count, in their column order: one list, so both tables have the same columns.
pub(crate) const TABLE_MARKERS: [&str; 16] = [
    "barrier",
    "mutex-lock",
    "rw-lock",
    "mutex-unlock",
    "cond-wait",
    "cond-signal",
    "cond-broadcast",
    "sem-wait",
    "sem-post",
    "futex-wait",
    "futex-wake",
    "create",
    "join",
    "roi-begin",
    "roi-end",
    "section-begin",
];

/// The short column heading of a marker kind in the per-thread tables of `isim trace-info` and
/// `isim trace` (`cond-broadcast` → `cbcast`).
pub(crate) fn marker_heading(kind: &str) -> &str {
    match kind {
        "mutex-lock" => "lock",
        "mutex-unlock" => "unlock",
        "rw-lock" => "rwlock",
        "sem-wait" => "swait",
        "sem-post" => "spost",
        "cond-wait" => "cwait",
        "cond-signal" => "csig",
        "cond-broadcast" => "cbcast",
        "roi-begin" => "roi+",
        "roi-end" => "roi-",
        "section-begin" => "sect",
        "futex-wait" => "fwait",
        "futex-wake" => "fwake",
        other => other,
    }
}
