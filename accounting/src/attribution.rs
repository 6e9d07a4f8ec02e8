//! The first probe collector: per-instruction attribution. For every static instruction and
//! thread it counts executions, misses per cache level, where its loads were served, branch
//! mispredictions and the critical-path cycles charged to it; and for every thread it records
//! the barrier-to-barrier sections (start, arrival, release) that LIME analyses.
//!
//! Counters live in flat per-thread arrays indexed by static index, sized once: recording an
//! instruction is a few additions, no allocation and no hashing.

use serde::{Deserialize, Serialize};
use sim_core::Observer;
use sim_core::core::InstResult;

/// Counters of one static instruction in one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PcCounters {
    /// Executions.
    pub execs: u64,
    /// Misses of its accesses in L1, L2, L3.
    pub misses: [u64; 3],
    /// Loads by where they were served (`sim_memory::Served` order).
    pub served: [u64; 7],
    /// Mispredictions (branches only).
    pub mispredictions: u64,
    /// Critical-path cycles charged at insertion.
    pub critical_cycles: f64,
}

/// One thread's stay in one barrier-delimited section.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SectionVisit {
    /// Static index of the barrier call site closing the section.
    pub site: u32,
    /// When the thread entered the section (the previous release, or its start).
    pub start: f64,
    /// When it arrived at the closing barrier.
    pub arrival: f64,
    /// When the barrier released it.
    pub release: f64,
}

/// Per-PC attribution and barrier sections.
#[derive(Debug, Clone)]
pub struct Attribution {
    /// `per_thread[t][sidx]`.
    pub per_thread: Vec<Vec<PcCounters>>,
    /// `sections[t]`: the thread's sections in order.
    pub sections: Vec<Vec<SectionVisit>>,
    last_release: Vec<f64>,
}

impl Attribution {
    /// Counters for `threads` threads over a program of `statics` instructions.
    pub fn new(threads: usize, statics: usize) -> Attribution {
        Attribution {
            per_thread: vec![vec![PcCounters::default(); statics]; threads],
            sections: vec![Vec::new(); threads],
            last_release: vec![0.0; threads],
        }
    }
}

impl Observer for Attribution {
    #[inline]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, _stack: &sim_core::CycleStack) {
        let c = &mut self.per_thread[tid as usize][sidx as usize];
        c.execs += 1;
        for i in 0..3 {
            c.misses[i] += r.misses[i] as u64;
        }
        if let Some(s) = r.served {
            c.served[s as usize] += 1;
        }
        c.mispredictions += r.mispredicted as u64;
        c.critical_cycles += r.critical;
    }

    fn barrier(&mut self, tid: u32, site: u32, arrival: f64, release: f64) {
        let t = tid as usize;
        self.sections[t].push(SectionVisit {
            site,
            start: self.last_release[t],
            arrival,
            release,
        });
        self.last_release[t] = release;
    }
}
