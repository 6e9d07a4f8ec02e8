//! The first probe collector: per-instruction attribution. For every static instruction and
//! thread it counts executions, misses per cache level, where its loads were served, branch
//! mispredictions and the critical-path cycles charged to it; and for every thread it records
//! the barrier-to-barrier sections (start, arrival, release) that LIME analyses.
//!
//! It also finds where each thread's own code starts (its start routine, past a runtime's
//! trampolines: [`Attribution::starts`]), for the thread groups of the scaling analyses.
//!
//! Counters live in flat per-thread arrays indexed by static index, sized once: recording an
//! instruction is a few additions, no allocation and no hashing.

use serde::{Deserialize, Serialize};
use sim_core::core::InstResult;
use sim_core::{Observer, ThreadObserver};

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

/// Marks a thread start not seen yet.
const UNSEEN: u32 = u32::MAX;

/// Per-PC attribution and barrier sections.
#[derive(Debug, Clone)]
pub struct Attribution {
    /// `per_thread[t][sidx]`.
    pub per_thread: Vec<Vec<PcCounters>>,
    /// `sections[t]`: the thread's sections in order.
    pub sections: Vec<Vec<SectionVisit>>,
    last_release: Vec<f64>,
    /// Per static instruction: whether it is the program's own code (see [`Attribution::starts`]).
    own_code: Vec<bool>,
    /// Per thread: its first timed instruction and its first timed own-code instruction.
    first: Vec<[u32; 2]>,
}

impl Attribution {
    /// Counters for `threads` threads over a program of `statics` instructions.
    pub fn new(threads: usize, statics: usize) -> Attribution {
        Attribution {
            per_thread: vec![vec![PcCounters::default(); statics]; threads],
            sections: vec![Vec::new(); threads],
            last_release: vec![0.0; threads],
            own_code: Vec::new(),
            first: vec![[UNSEEN; 2]; threads],
        }
    }

    /// Also finds where each thread's own code starts: `own_code[sidx]` says whether an
    /// instruction is the program's own (not a runtime's or a system library's).
    pub fn with_own_code(mut self, own_code: Vec<bool>) -> Attribution {
        self.own_code = own_code;
        self
    }

    /// Per thread, the static index of the first timed instruction that is the program's own
    /// code, else of its first timed instruction (`None`: it executed none).
    pub fn starts(&self) -> Vec<Option<u32>> {
        self.first
            .iter()
            .map(|&[first, own]| [own, first].into_iter().find(|&s| s != UNSEEN))
            .collect()
    }
}

/// One thread's part of an [`Attribution`]: its counters and its start.
pub struct AttributionPart<'a> {
    counters: &'a mut [PcCounters],
    first: &'a mut [u32; 2],
    own_code: &'a [bool],
}

impl AttributionPart<'_> {
    /// The thread's own code has not started yet: does it at `sidx`?
    #[cold]
    fn note_start(&mut self, sidx: u32) {
        if self.first[0] == UNSEEN {
            self.first[0] = sidx;
        }
        if self.own_code.get(sidx as usize).copied().unwrap_or(false) {
            self.first[1] = sidx;
        }
    }
}

impl ThreadObserver for AttributionPart<'_> {
    #[inline(always)]
    fn inst(&mut self, sidx: u32, r: &InstResult, _stack: &sim_core::CycleStack) {
        if self.first[1] == UNSEEN {
            self.note_start(sidx);
        }
        let c = &mut self.counters[sidx as usize];
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
}

impl Observer for Attribution {
    type Part<'a> = AttributionPart<'a>;
    const STACKS: bool = false;

    fn parts(&mut self) -> Option<Vec<AttributionPart<'_>>> {
        let own_code = &self.own_code[..];
        Some(
            self.per_thread
                .iter_mut()
                .zip(self.first.iter_mut())
                .map(|(counters, first)| AttributionPart {
                    counters,
                    first,
                    own_code,
                })
                .collect(),
        )
    }

    #[inline(always)]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, stack: &sim_core::CycleStack) {
        let t = tid as usize;
        AttributionPart {
            counters: &mut self.per_thread[t],
            first: &mut self.first[t],
            own_code: &self.own_code,
        }
        .inst(sidx, r, stack);
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

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::CycleStack;

    /// A thread's start is its first own-code instruction, past a runtime's (here sidx 0 and
    /// 1); a thread running no own code falls back to its first instruction; one that ran
    /// nothing has none.
    #[test]
    fn starts_skip_runtime_code_and_fall_back_to_the_first_instruction() {
        let mut a = Attribution::new(3, 4).with_own_code(vec![false, false, true, true]);
        let s = CycleStack::default();
        let r = InstResult::default();
        for sidx in [0, 1, 3, 2] {
            a.inst(0, sidx, &r, &s);
        }
        for sidx in [1, 0] {
            a.inst(1, sidx, &r, &s);
        }
        assert_eq!(a.starts(), [Some(3), Some(1), None]);
        assert_eq!(
            a.per_thread[0][2].execs, 1,
            "counting goes on after the start"
        );
    }
}
