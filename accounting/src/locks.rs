//! Lock analysis: per mutex, where it is taken, how long threads wait for it and hold it, and
//! which critical sections the waiting was spent behind — what a locks-and-waits profiler
//! shows, in simulated time. [`LockCollector`] hears the engine's acquisitions and releases
//! ([`sim_core::Observer::lock_acquired`], [`sim_core::Observer::lock_released`]);
//! [`LockCollector::finish`] ranks the locks by the cycles threads spent waiting for them.
//!
//! The waiting of an acquisition is everything its thread was charged to `sync-crit-sect`
//! from its request to the acquisition; a release's cost is what the release charged (a futex
//! wake). Together they are the run's whole `sync-crit-sect`: the figures add up to the cycle
//! stacks. A wait is blamed on the critical section that ended just before it was granted
//! (the previous holder's acquire and release instructions): with one waiter, the holder it
//! waited behind; with several, the last of those holders.

use std::collections::BTreeMap;

use serde::Serialize;
use sim_core::Observer;
use sim_core::engine::NoParts;

/// Per acquiring instruction (the lock call) of one lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Site {
    /// Static index of the instruction before the request.
    pub sidx: u32,
    /// Acquisitions from it.
    pub acquisitions: u64,
    /// Acquisitions that waited for a holder.
    pub contended: u64,
    /// Cycles its acquisitions waited (line moves included).
    pub wait_cycles: f64,
}

/// A critical section other threads waited behind: its acquire and release instructions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Blamed {
    /// Static index of the instruction before its acquisition (the lock call).
    pub acquire_sidx: u32,
    /// Static index of the instruction before its release (the unlock call).
    pub release_sidx: u32,
    /// Cycles of waits granted right after it ended.
    pub wait_cycles: f64,
    /// How many such waits.
    pub waits: u64,
}

/// One mutex, by the address of its lock word.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lock {
    /// The lock word's address.
    pub addr: u64,
    /// Acquisitions (recursive ones not counted).
    pub acquisitions: u64,
    /// Acquisitions that waited (asked while it was held, or through a futex call).
    pub contended: u64,
    /// Cycles threads waited to acquire it: for the lock word's line to come, and for the
    /// holders of the contended acquisitions.
    pub wait_cycles: f64,
    /// Cycles its releases cost their threads (futex wakes).
    pub release_cycles: f64,
    /// Cycles it was held, from each acquisition to its release.
    pub hold_cycles: f64,
    /// The threads that took it.
    pub threads: u32,
    /// Where it was taken, most waiting first (ties: the instruction order).
    pub sites: Vec<Site>,
    /// The critical sections waited behind, most waiting first.
    pub blamed: Vec<Blamed>,
}

#[derive(Default)]
struct Acc {
    acquisitions: u64,
    contended: u64,
    wait: f64,
    release: f64,
    hold: f64,
    threads: Vec<bool>,
    sites: BTreeMap<u32, Site>,
    blamed: BTreeMap<(u32, u32), Blamed>,
    /// The last critical section that ended: (acquire, release instruction).
    last: Option<(u32, u32)>,
}

/// Collects [`Lock`]s during a run (or a replay).
#[derive(Default)]
pub struct LockCollector {
    locks: BTreeMap<u64, Acc>,
    /// Per thread, the locks it holds: (lock, acquired at, acquire instruction).
    held: Vec<Vec<(u64, f64, u32)>>,
}

impl LockCollector {
    /// A collector for a run of `threads` threads.
    pub fn new(threads: usize) -> Self {
        LockCollector {
            locks: BTreeMap::new(),
            held: vec![Vec::new(); threads],
        }
    }

    /// The locks, most waited for first (ties: the lower address).
    pub fn finish(self) -> Vec<Lock> {
        let by_wait = |a: f64, b: f64| b.total_cmp(&a);
        let mut out: Vec<Lock> = self
            .locks
            .into_iter()
            .map(|(addr, a)| {
                let mut sites: Vec<Site> = a.sites.into_values().collect();
                sites.sort_by(|x, y| by_wait(x.wait_cycles, y.wait_cycles));
                let mut blamed: Vec<Blamed> = a.blamed.into_values().collect();
                blamed.sort_by(|x, y| by_wait(x.wait_cycles, y.wait_cycles));
                Lock {
                    addr,
                    acquisitions: a.acquisitions,
                    contended: a.contended,
                    wait_cycles: a.wait,
                    release_cycles: a.release,
                    hold_cycles: a.hold,
                    threads: a.threads.iter().filter(|&&t| t).count() as u32,
                    sites,
                    blamed,
                }
            })
            .collect();
        out.sort_by(|x, y| by_wait(x.wait_cycles, y.wait_cycles).then(x.addr.cmp(&y.addr)));
        out
    }
}

impl Observer for LockCollector {
    type Part<'a> = NoParts;
    const INSTS: bool = false;
    const STACKS: bool = false;

    fn lock_acquired(
        &mut self,
        tid: u32,
        addr: u64,
        site: u32,
        asked: f64,
        at: f64,
        contended: bool,
    ) {
        let a = self.locks.entry(addr).or_default();
        let wait = at - asked;
        a.acquisitions += 1;
        let t = tid as usize;
        if a.threads.len() <= t {
            a.threads.resize(t + 1, false);
        }
        a.threads[t] = true;
        let s = a.sites.entry(site).or_insert_with(|| Site {
            sidx: site,
            ..Site::default()
        });
        s.acquisitions += 1;
        a.wait += wait;
        s.wait_cycles += wait;
        if contended {
            a.contended += 1;
            s.contended += 1;
            if let Some((acq, rel)) = a.last {
                let b = a.blamed.entry((acq, rel)).or_insert_with(|| Blamed {
                    acquire_sidx: acq,
                    release_sidx: rel,
                    ..Blamed::default()
                });
                b.wait_cycles += wait;
                b.waits += 1;
            }
        }
        if self.held.len() <= t {
            self.held.resize(t + 1, Vec::new());
        }
        self.held[t].push((addr, at, site));
    }

    fn lock_released(&mut self, tid: u32, addr: u64, site: u32, at: f64, cost: f64) {
        let a = self.locks.entry(addr).or_default();
        a.release += cost;
        let held = self.held.get_mut(tid as usize);
        if let Some(held) = held
            && let Some(i) = held.iter().rposition(|h| h.0 == addr)
        {
            let (_, since, acq) = held.remove(i);
            a.hold += at - since;
            a.last = Some((acq, site));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads on one lock: the second waits behind the first's critical section, and
    /// the figures say so.
    #[test]
    fn a_wait_is_counted_at_its_site_and_blamed_on_the_section_before_it() {
        let mut c = LockCollector::new(2);
        c.lock_acquired(0, 0x10, 5, 100.0, 100.0, false);
        c.lock_acquired(1, 0x20, 9, 100.0, 100.0, false);
        c.lock_released(1, 0x20, 10, 110.0, 0.0);
        c.lock_released(0, 0x10, 7, 150.0, 30.0);
        c.lock_acquired(1, 0x10, 6, 120.0, 160.0, true);
        c.lock_released(1, 0x10, 8, 170.0, 0.0);
        let locks = c.finish();
        assert_eq!(locks.len(), 2);
        let l = &locks[0];
        assert_eq!((l.addr, l.acquisitions, l.contended), (0x10, 2, 1));
        assert_eq!(
            (l.wait_cycles, l.release_cycles, l.hold_cycles),
            (40.0, 30.0, 60.0)
        );
        assert_eq!(l.threads, 2);
        assert_eq!(l.sites[0].sidx, 6);
        assert_eq!(l.sites[0].wait_cycles, 40.0);
        assert_eq!(
            (
                l.blamed[0].acquire_sidx,
                l.blamed[0].release_sidx,
                l.blamed[0].waits
            ),
            (5, 7, 1)
        );
        assert_eq!(locks[1].wait_cycles, 0.0);
        assert!(locks[1].blamed.is_empty());
    }
}
