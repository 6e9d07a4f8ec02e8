//! `isim locks RUN_DIR`: the lock analysis of a run (`accounting::locks`). The run is
//! replayed with the lock collector attached (deterministic: the same cycles as the run), and
//! each mutex is reported with the source lines that take it, the cycles threads waited for
//! it, how often they waited, how long it was held, what its releases cost, and the critical
//! sections the waiting was spent behind; `locks.json` is written into the run directory.
//! The waits and release costs of all locks add up to the run's `sync-crit-sect`, which the
//! report prints beside them.
//!
//! A lock is named by the data symbol that holds its word (`hot`, `.gomp_critical_user_big`,
//! `shared` in `Pool::shared`), when the traced program's file is still at its path: the
//! trace keeps code addresses, not where the program was loaded, so the load address is found
//! from the program's function symbols and the lowest address the trace ran in each (the
//! entry of a called function), the value most functions agree on, page-aligned. A lock no
//! symbol holds (one in the heap or on a stack) is named by where its word was first written,
//! which is where the program made or initialised it: the trace's first store to the word,
//! in the lowest-numbered thread that stored to it, located at that thread's last instruction
//! of the program's own code before it (the call into `calloc`, `pthread_mutex_init` or a
//! constructor: `first written at tree_locks.c:25 (new_node)`, its `calloc`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;

use accounting::locks::{Lock, LockCollector};
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use sim_core::Component;
use sim_frontend::Trace;
use sim_frontend::model::{Batch, Program, Record};

use crate::progress::spinner;
use crate::run::RunDir;

/// Schema of `locks.json`.
pub const SCHEMA: &str = "isim-locks/1";

/// `isim locks`.
#[derive(Args, Debug)]
pub struct LocksArgs {
    /// A run directory written by `isim run`.
    pub run_dir: PathBuf,
    /// Locks listed (most waited for first).
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print the JSON report instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `locks.json`.
#[derive(Debug, Serialize)]
pub struct LocksReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The run directory.
    pub run: String,
    /// The run's thread-cycles (the threads' cycles summed).
    pub thread_cycles: f64,
    /// The run's `sync-crit-sect` cycles, summed over its threads.
    pub sync_crit_sect_cycles: f64,
    /// The locks' waits and release costs, summed: equal to `sync_crit_sect_cycles` up to
    /// rounding.
    pub lock_cycles: f64,
    /// Every lock taken with timing, most waited for first.
    pub locks: Vec<LockRow>,
}

/// One lock in `locks.json`.
#[derive(Debug, Serialize)]
pub struct LockRow {
    /// The lock word's address, in hex.
    pub addr: String,
    /// For a lock no data symbol holds: the program's own source line (and function) that
    /// led to the first store to its word (`file:line (function)`), if the trace has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_written_at: Option<String>,
    /// How the report names it: the data symbol holding it (else its address) and the
    /// source line that waited most for it.
    pub name: String,
    /// Acquisitions.
    pub acquisitions: u64,
    /// Of those, the ones that waited.
    pub contended: u64,
    /// Cycles threads waited to acquire it.
    pub wait_cycles: f64,
    /// Its waits and release costs as a share of the run's `sync-crit-sect`.
    pub share_of_sync_crit_sect: f64,
    /// Cycles its releases cost their threads (futex wakes).
    pub release_cycles: f64,
    /// Cycles it was held, from each acquisition to its release.
    pub hold_cycles: f64,
    /// Threads that took it.
    pub threads: u32,
    /// Source lines that take it, most waiting first.
    pub sites: Vec<SiteRow>,
    /// Critical sections (acquiring line – releasing line) waited behind, most first.
    pub waited_behind: Vec<BlamedRow>,
}

/// A source line taking a lock.
#[derive(Debug, Serialize)]
pub struct SiteRow {
    /// `file:line` (else the instruction's address).
    pub location: String,
    /// The function the line is in.
    pub function: String,
    /// Acquisitions from it.
    pub acquisitions: u64,
    /// Of those, the ones that waited.
    pub contended: u64,
    /// Cycles they waited.
    pub wait_cycles: f64,
}

/// A critical section waited behind.
#[derive(Debug, Serialize)]
pub struct BlamedRow {
    /// Where the section took the lock.
    pub acquired_at: String,
    /// Where it released it.
    pub released_at: String,
    /// Waits granted when it ended.
    pub waits: u64,
    /// Their cycles.
    pub wait_cycles: f64,
}

/// The traced program's data symbols at their run-time addresses: `(start, size, name)`,
/// sorted. Empty when the program's file is gone or the load address cannot be told.
fn data_symbols(rd: &RunDir) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let p = &rd.trace.program;
    let Ok(data) = std::fs::read(&rd.trace.meta.workload) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    // Each function's lowest address in the trace.
    let mut lowest: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, inst) in p.insts.iter().enumerate() {
        if let Some(f) = p.function_name(i as u32) {
            let e = lowest.entry(f).or_insert(u64::MAX);
            *e = (*e).min(inst.pc);
        }
    }
    let mut votes: BTreeMap<u64, usize> = BTreeMap::new();
    let mut data_syms = Vec::new();
    for s in file.symbols() {
        let Ok(name) = s.name() else { continue };
        match s.kind() {
            SymbolKind::Text if s.size() > 0 => {
                let shown = addr2line::demangle_auto(name.into(), None);
                if let Some(&pc) = lowest.get(shown.as_ref()) {
                    if let Some(base) = pc.checked_sub(s.address()) {
                        *votes.entry(base).or_default() += 1;
                    }
                }
            }
            SymbolKind::Data if s.size() > 0 => {
                let shown = addr2line::demangle_auto(name.into(), None).into_owned();
                data_syms.push((s.address(), s.size(), shown));
            }
            _ => {}
        }
    }
    let best = votes
        .iter()
        .max_by_key(|&(b, n)| (*n, std::cmp::Reverse(*b)));
    let Some((&base, &n)) = best else {
        return Vec::new();
    };
    if n < 2 || base % 4096 != 0 {
        return Vec::new();
    }
    let mut out: Vec<(u64, u64, String)> = data_syms
        .into_iter()
        .map(|(a, size, name)| (a + base, size, name))
        .collect();
    out.sort();
    out
}

/// The data symbol holding `addr`, with the offset when it is not the symbol's start.
fn symbol_of(symbols: &[(u64, u64, String)], addr: u64) -> Option<String> {
    let i = symbols.partition_point(|s| s.0 <= addr).checked_sub(1)?;
    let (start, size, name) = &symbols[i];
    (addr < start + size).then(|| match addr - start {
        0 => name.clone(),
        off => format!("{name}+{off:#x}"),
    })
}

fn location(p: &Program, sidx: u32) -> String {
    p.file_line(sidx)
        .unwrap_or_else(|| format!("{:#x}", p.insts[sidx as usize].pc))
}

fn function(p: &Program, sidx: u32) -> String {
    p.function_name(sidx).unwrap_or("?").to_owned()
}

/// The report of `locks`, collected from a run of `rd` with `sync_crit_sect` and
/// `thread_cycles` from its result.
fn report(
    rd: &RunDir,
    locks: Vec<Lock>,
    sync_crit_sect: f64,
    thread_cycles: f64,
) -> Result<LocksReport> {
    let p = &rd.trace.program;
    let symbols = data_symbols(rd);
    let unnamed: Vec<u64> = locks
        .iter()
        .map(|l| l.addr)
        .filter(|&a| symbol_of(&symbols, a).is_none())
        .collect();
    let first = first_writes(&rd.trace, unnamed)?;
    let share = |c: f64| {
        if sync_crit_sect > 0.0 {
            c / sync_crit_sect
        } else {
            0.0
        }
    };
    let lock_cycles = locks.iter().map(|l| l.wait_cycles + l.release_cycles).sum();
    let rows = locks
        .into_iter()
        .map(|l| {
            // Sites on one source line are one site (a call inlined or unrolled twice).
            let mut by_line: BTreeMap<String, SiteRow> = BTreeMap::new();
            let mut order = Vec::new();
            for s in &l.sites {
                let loc = location(p, s.sidx);
                let row = by_line.entry(loc.clone()).or_insert_with(|| {
                    order.push(loc.clone());
                    SiteRow {
                        location: loc,
                        function: function(p, s.sidx),
                        acquisitions: 0,
                        contended: 0,
                        wait_cycles: 0.0,
                    }
                });
                row.acquisitions += s.acquisitions;
                row.contended += s.contended;
                row.wait_cycles += s.wait_cycles;
            }
            let mut sites: Vec<SiteRow> = order.iter().filter_map(|k| by_line.remove(k)).collect();
            sites.sort_by(|a, b| b.wait_cycles.total_cmp(&a.wait_cycles));
            let mut behind: BTreeMap<(String, String), BlamedRow> = BTreeMap::new();
            for b in &l.blamed {
                let key = (location(p, b.acquire_sidx), location(p, b.release_sidx));
                let row = behind.entry(key.clone()).or_insert_with(|| BlamedRow {
                    acquired_at: key.0,
                    released_at: key.1,
                    waits: 0,
                    wait_cycles: 0.0,
                });
                row.waits += b.waits;
                row.wait_cycles += b.wait_cycles;
            }
            let mut waited_behind: Vec<BlamedRow> = behind.into_values().collect();
            waited_behind.sort_by(|a, b| b.wait_cycles.total_cmp(&a.wait_cycles));
            let addr = format!("{:#x}", l.addr);
            let first_written_at = first
                .get(&l.addr)
                .map(|&sidx| format!("{} ({})", location(p, sidx), function(p, sidx)));
            let what = match (symbol_of(&symbols, l.addr), &first_written_at) {
                (Some(symbol), _) => symbol,
                (None, Some(at)) => format!("{addr} (first written at {at})"),
                (None, None) => addr.clone(),
            };
            let name = match sites.first() {
                Some(s) => format!("{what} taken at {}", s.location),
                None => what,
            };
            LockRow {
                addr,
                first_written_at,
                name,
                acquisitions: l.acquisitions,
                contended: l.contended,
                wait_cycles: l.wait_cycles,
                share_of_sync_crit_sect: share(l.wait_cycles + l.release_cycles),
                release_cycles: l.release_cycles,
                hold_cycles: l.hold_cycles,
                threads: l.threads,
                sites,
                waited_behind,
            }
        })
        .collect();
    Ok(LocksReport {
        schema: SCHEMA,
        run: rd.dir.display().to_string(),
        thread_cycles,
        sync_crit_sect_cycles: sync_crit_sect,
        lock_cycles,
        locks: rows,
    })
}

/// For each lock word in `words` (4 bytes from each address): the static index of the last
/// instruction of the program's own code ([`Program::own_code`]) before the trace's first
/// store to it, in the lowest-numbered thread that stored to it after running some of the
/// program's own code — the call that led into the library code that wrote it, or the store
/// itself in the program's code. Words no such store reached are left out. One pass over
/// the trace's streams, a binary search per store.
fn first_writes(trace: &Trace, mut words: Vec<u64>) -> Result<HashMap<u64, u32>> {
    let mut found = HashMap::new();
    if words.is_empty() {
        return Ok(found);
    }
    words.sort_unstable();
    words.dedup();
    let own = trace.program.own_code();
    let mut batch = Batch::default();
    for tid in 0..trace.thread_count() {
        if found.len() == words.len() {
            break;
        }
        let mut last_own: Option<u32> = None;
        let mut s = trace.stream_readahead(tid, 4)?;
        while s.next_batch(&mut batch)? {
            for r in &batch.records {
                let Record::Inst(i) = r else { continue };
                if own.get(i.sidx as usize).copied().unwrap_or(false) {
                    last_own = Some(i.sidx);
                }
                let Some(site) = last_own else { continue };
                for m in batch.mem_of(i).iter().filter(|m| m.write) {
                    // The words overlapping [addr, addr + size): from the first one that
                    // ends after addr.
                    let end = m.addr.saturating_add(u64::from(m.size));
                    let k = words.partition_point(|&w| w.saturating_add(4) <= m.addr);
                    for &w in words[k..].iter().take_while(|&&w| w < end) {
                        found.entry(w).or_insert(site);
                    }
                }
            }
        }
    }
    Ok(found)
}

/// The report as text: a summary line, then the top locks with their sites and the critical
/// sections waited behind.
pub fn render(r: &LocksReport, top: usize) -> String {
    let mut s = String::new();
    let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
    let contended = r.locks.iter().filter(|l| l.contended > 0).count();
    let _ = writeln!(
        s,
        "{} lock(s), {contended} contended; threads spend {:.0} cycles in sync-crit-sect \
         ({:.1}% of the run's thread-cycles); the locks' waits and releases: {:.0} cycles",
        r.locks.len(),
        r.sync_crit_sect_cycles,
        pct(r.sync_crit_sect_cycles, r.thread_cycles),
        r.lock_cycles
    );
    for (i, l) in r.locks.iter().take(top).enumerate() {
        let _ = writeln!(
            s,
            "\n#{} {}: {} acquisitions by {} thread(s), {} waited; wait {:.0} cycles, \
             releases {:.0} ({:.1}% of sync-crit-sect); held {:.0} cycles",
            i + 1,
            l.name,
            l.acquisitions,
            l.threads,
            l.contended,
            l.wait_cycles,
            l.release_cycles,
            100.0 * l.share_of_sync_crit_sect,
            l.hold_cycles
        );
        for site in &l.sites {
            let _ = writeln!(
                s,
                "  taken at {} ({}): {} acquisitions, {} waited, {:.0} cycles",
                site.location, site.function, site.acquisitions, site.contended, site.wait_cycles
            );
        }
        for b in l.waited_behind.iter().take(3) {
            let _ = writeln!(
                s,
                "  waited behind the section {} .. {}: {} waits, {:.0} cycles",
                b.acquired_at, b.released_at, b.waits, b.wait_cycles
            );
        }
    }
    if r.locks.len() > top {
        let _ = writeln!(s, "\n... {} more (--top)", r.locks.len() - top);
    }
    s
}

/// `isim locks`.
pub fn main(a: &LocksArgs) -> Result<()> {
    let rd = RunDir::open(&a.run_dir)?;
    let collector = LockCollector::new(rd.trace.thread_count() as usize);
    let pb = spinner(format!("locks: simulating {}", rd.dir.display()));
    let r = rd.replay(&[], &[], collector, |n| {
        pb.set_message(format!("locks: simulating, {n} instructions"))
    });
    pb.finish_and_clear();
    let (result, collector) = r?;
    let sync: f64 = result
        .threads
        .iter()
        .map(|t| t.stack.get(Component::SyncCritSect))
        .sum();
    let thread_cycles: f64 = result.threads.iter().map(|t| t.cycles).sum();
    let rep = report(&rd, collector.finish(), sync, thread_cycles)?;
    let json = serde_json::to_string_pretty(&rep)?;
    crate::fsutil::write_atomic(&rd.dir.join("locks.json"), json.as_bytes())?;
    if a.json {
        println!("{json}");
    } else {
        print!("{}", render(&rep, a.top));
        println!("\nwrote {}", rd.dir.join("locks.json").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_named_by_the_symbol_that_holds_it() {
        let syms = vec![(0x1000, 40, "a".to_string()), (0x1040, 8, "b".to_string())];
        assert_eq!(symbol_of(&syms, 0x1000).as_deref(), Some("a"));
        assert_eq!(symbol_of(&syms, 0x1008).as_deref(), Some("a+0x8"));
        assert_eq!(symbol_of(&syms, 0x1028), None, "between the symbols");
        assert_eq!(symbol_of(&syms, 0x1047).as_deref(), Some("b+0x7"));
        assert_eq!(symbol_of(&syms, 0x1048), None);
        assert_eq!(symbol_of(&syms, 0xfff), None);
    }
}
