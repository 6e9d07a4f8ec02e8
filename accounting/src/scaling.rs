//! Aggregated cycle stacks and scaling tables (cycle-stacks paper §2.3 and §4.3).
//!
//! A run yields one cycle stack per thread; to compare runs we reduce them to one stack per run
//! (or per thread group). Only threads doing *real work* count: a thread that spends more than
//! half of its cycles in the synchronization and imbalance components (`sync-*`,
//! `imbalance-*`, i.e. [`Component::is_sync`]) — a main thread that only creates and joins its
//! workers, a thread created late or finished early — is left out, and the stacks of the rest are
//! added component by component. Threads are also grouped (by the caller: the `isim` package
//! groups them by the top-level function they start in) and each group is aggregated the same
//! way, so that a heterogeneous workload (threads running different code) can be treated as
//! several homogeneous ones. If no thread of a run (or group) does real work, every thread is summed and the
//! aggregate says so, rather than producing an empty stack.
//!
//! A scaling table lists, per core count of a sweep, the run's cycles, the speedup over the
//! smallest core count, the parallel efficiency and the share of each component in the
//! aggregated stack. Speedup means what the problem's [`Scaling`] makes it mean: for a problem of
//! fixed size (strong scaling) the ratio of times; for one whose work grows with the threads
//! (weak scaling) the ratio of times is the efficiency, and the *scaled* speedup multiplies it by
//! the growth in threads (Gustafson's). Everything here is plain data in and out; reading run directories and
//! writing files is the `isim` package's job.

use sim_core::{COMPONENTS, Component, CycleStack};

/// A thread that spends more than this share of its cycles in synchronization and imbalance
/// does not do real work (§2.3: "more than half of their time").
pub const REAL_WORK_MAX_SYNC: f64 = 0.5;

/// One thread's cycle stack and the group it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadStack {
    /// Thread id.
    pub thread: u32,
    /// Thread group (threads running the same code share a group name).
    pub group: String,
    /// The thread's cycle stack.
    pub stack: CycleStack,
}

/// The share of `stack`'s cycles spent in synchronization and imbalance (0 for an empty stack).
pub fn sync_share(stack: &CycleStack) -> f64 {
    let total = stack.total();
    if total > 0.0 {
        stack.sync() / total
    } else {
        0.0
    }
}

/// Whether a thread with this stack does real work: it has cycles, and at most
/// [`REAL_WORK_MAX_SYNC`] of them are synchronization or imbalance.
pub fn does_real_work(stack: &CycleStack) -> bool {
    stack.total() > 0.0 && sync_share(stack) <= REAL_WORK_MAX_SYNC
}

/// The aggregated stack of a set of threads.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// Threads whose stacks were added, ascending.
    pub threads: Vec<u32>,
    /// True if no thread did real work, so that `threads` holds every thread instead.
    pub no_real_work: bool,
    /// The component-wise sum.
    pub stack: CycleStack,
}

impl Aggregate {
    /// Aggregates `threads` (all of them if none does real work).
    pub fn of<'a>(threads: impl IntoIterator<Item = &'a ThreadStack> + Clone) -> Aggregate {
        let working: Vec<&ThreadStack> = threads
            .clone()
            .into_iter()
            .filter(|t| does_real_work(&t.stack))
            .collect();
        let no_real_work = working.is_empty();
        let chosen: Vec<&ThreadStack> = if no_real_work {
            threads.into_iter().collect()
        } else {
            working
        };
        let mut stack = CycleStack::default();
        let mut ids = Vec::with_capacity(chosen.len());
        for t in chosen {
            for (s, v) in stack.0.iter_mut().zip(t.stack.0) {
                *s += v;
            }
            ids.push(t.thread);
        }
        ids.sort_unstable();
        Aggregate {
            threads: ids,
            no_real_work,
            stack,
        }
    }

    /// Each component's share of the aggregated cycles.
    pub fn shares(&self) -> [f64; COMPONENTS] {
        shares(&self.stack)
    }
}

/// One thread group of a run and its aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupAggregate {
    /// Group name.
    pub name: String,
    /// Every thread of the group, ascending.
    pub members: Vec<u32>,
    /// The aggregate over the group's threads that do real work.
    pub aggregate: Aggregate,
}

/// A run reduced to aggregated stacks: one over all threads doing real work, and one per thread
/// group.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAggregate {
    /// Over every thread of the run.
    pub overall: Aggregate,
    /// The stacks of every thread, whether it does real work or not, summed.
    pub all: CycleStack,
    /// How many threads that is.
    pub all_threads: usize,
    /// Per thread group, sorted by name.
    pub groups: Vec<GroupAggregate>,
}

impl RunAggregate {
    /// Aggregates a run's threads, overall and per group.
    pub fn of(threads: &[ThreadStack]) -> RunAggregate {
        let mut names: Vec<&str> = threads.iter().map(|t| t.group.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let groups = names
            .into_iter()
            .map(|name| {
                let members = threads.iter().filter(|t| t.group == name);
                let mut ids: Vec<u32> = members.clone().map(|t| t.thread).collect();
                ids.sort_unstable();
                GroupAggregate {
                    name: name.to_string(),
                    members: ids,
                    aggregate: Aggregate::of(members),
                }
            })
            .collect();
        let mut all = CycleStack::default();
        for t in threads {
            for (s, v) in all.0.iter_mut().zip(t.stack.0) {
                *s += v;
            }
        }
        RunAggregate {
            overall: Aggregate::of(threads),
            all,
            all_threads: threads.len(),
            groups,
        }
    }

    /// The groups that do real work (at least one member does).
    pub fn working_groups(&self) -> impl Iterator<Item = &GroupAggregate> {
        self.groups.iter().filter(|g| !g.aggregate.no_real_work)
    }

    /// True if more than one thread group does real work: the workload is heterogeneous and
    /// is best analysed per group.
    pub fn heterogeneous(&self) -> bool {
        self.working_groups().count() > 1
    }
}

/// Each component's share of `stack`'s total (all zero for an empty stack).
pub fn shares(stack: &CycleStack) -> [f64; COMPONENTS] {
    let total = stack.total();
    let mut out = [0.0; COMPONENTS];
    if total > 0.0 {
        for (o, v) in out.iter_mut().zip(stack.0) {
            *o = v / total;
        }
    }
    out
}

/// One core count of a sweep series.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingPoint {
    /// Core (and thread) count.
    pub cores: u32,
    /// The run's cycles (ROI start to the last thread's end).
    pub cycles: f64,
    /// The aggregated stack to take shares from.
    pub stack: CycleStack,
}

/// How a sweep's problem relates to its thread count, which decides what its speedup means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scaling {
    /// The problem has the same size at every thread count (strong scaling): speedup is
    /// `T(smallest) / T(n)`, efficiency that divided by `n / smallest`.
    Strong,
    /// Each thread's share of the work is fixed, so the problem grows with the threads (weak
    /// scaling): efficiency is `T(smallest) / T(n)` (1 when time stays flat), the scaled
    /// speedup that times `n / smallest`.
    Weak,
}

impl Scaling {
    /// What the table's speedup column is called.
    pub fn speedup_name(self) -> &'static str {
        match self {
            Scaling::Strong => "speedup",
            Scaling::Weak => "scaled speedup",
        }
    }

    /// How the table's title says which scaling it shows.
    pub fn describe(self) -> &'static str {
        match self {
            Scaling::Strong => "fixed-size problem, strong scaling",
            Scaling::Weak => "work grows with the threads, weak scaling",
        }
    }
}

/// One row of a scaling table.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingRow {
    /// Core count.
    pub cores: u32,
    /// The run's cycles.
    pub cycles: f64,
    /// Strong scaling: cycles at the smallest core count divided by these cycles; weak: the
    /// scaled speedup, that ratio times `cores / smallest`.
    pub speedup: f64,
    /// Speedup divided by the growth in cores, `speedup × smallest / cores` (for weak scaling
    /// the plain ratio of cycles); 1 is perfect scaling.
    pub efficiency: f64,
    /// Each component's share of the aggregated stack.
    pub shares: [f64; COMPONENTS],
}

/// The scaling table of one series, sorted by core count; speedup and efficiency are relative to
/// the smallest core count in `points` (the classic definitions when it is 1), with the meaning
/// `scaling` gives them.
pub fn scaling_rows(points: &[ScalingPoint], scaling: Scaling) -> Vec<ScalingRow> {
    let mut pts: Vec<&ScalingPoint> = points.iter().collect();
    pts.sort_by_key(|p| p.cores);
    let Some(base) = pts.first() else {
        return Vec::new();
    };
    let (base_cores, base_cycles) = (base.cores, base.cycles);
    pts.into_iter()
        .map(|p| {
            let ratio = if p.cycles > 0.0 {
                base_cycles / p.cycles
            } else {
                0.0
            };
            let growth = if base_cores > 0 {
                f64::from(p.cores) / f64::from(base_cores)
            } else {
                0.0
            };
            let (speedup, efficiency) = match scaling {
                Scaling::Strong if growth > 0.0 => (ratio, ratio / growth),
                Scaling::Strong => (ratio, 0.0),
                Scaling::Weak => (ratio * growth, ratio),
            };
            ScalingRow {
                cores: p.cores,
                cycles: p.cycles,
                speedup,
                efficiency,
                shares: shares(&p.stack),
            }
        })
        .collect()
}

/// A run of a series for its speedup stack: every thread's stack summed, and how many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StackPoint {
    /// Core count.
    pub cores: u32,
    /// The run's cycles.
    pub cycles: f64,
    /// Every thread's stack, summed.
    pub all: CycleStack,
    /// Threads summed.
    pub threads: usize,
}

/// The speedup stack of a run: where the gap between the ideal speedup and the achieved one
/// goes, component by component, over all threads (not only those doing real work).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedupStack {
    /// The ideal speedup over the smallest core count `b`: `P / b`.
    pub ideal: f64,
    /// The speedup ([`ScalingRow::speedup`]: scaled for weak scaling).
    pub speedup: f64,
    /// Per component, its share of `ideal − speedup`, in cores (negative where the
    /// component shrank faster than the threads grew: a working set that now fits in cache).
    pub components: [f64; COMPONENTS],
}

/// The speedup stack of `run` against `base` (the smallest core count `b` of its series).
/// With `avg(c)` a component's cycles per thread (every thread's stack spans the run, so they
/// add up to the run's cycles `T`): strong scaling gives component `c`
/// `((P/b)·avg_P(c) − avg_b(c)) / T_P`, which add up to `P/b − T_b/T_P`; weak scaling
/// `(P/b)·(avg_P(c) − avg_b(c)) / T_P`, which add up to `P/b − (P/b)·T_b/T_P`. A component
/// whose cycles per thread stay as they were at `b` (strong: scaled down by `b/P`) costs no
/// speedup.
pub fn speedup_stack(base: &StackPoint, run: &StackPoint, scaling: Scaling) -> SpeedupStack {
    let growth = f64::from(run.cores) / f64::from(base.cores.max(1));
    let avg = |p: &StackPoint, j: usize| p.all.0[j] / p.threads.max(1) as f64;
    let t = if run.cycles > 0.0 { run.cycles } else { 1.0 };
    let mut components = [0.0; COMPONENTS];
    for (j, c) in components.iter_mut().enumerate() {
        *c = match scaling {
            Scaling::Strong => (growth * avg(run, j) - avg(base, j)) / t,
            Scaling::Weak => growth * (avg(run, j) - avg(base, j)) / t,
        };
    }
    let ratio = base.cycles / t;
    SpeedupStack {
        ideal: growth,
        speedup: match scaling {
            Scaling::Strong => ratio,
            Scaling::Weak => ratio * growth,
        },
        components,
    }
}

/// Indices of the components that are non-zero in at least one of `stacks`, in component order
/// (the columns worth showing).
pub fn present_components<'a>(stacks: impl IntoIterator<Item = &'a CycleStack>) -> Vec<usize> {
    let mut any = [false; COMPONENTS];
    for s in stacks {
        for (a, v) in any.iter_mut().zip(s.0) {
            *a |= v > 0.0;
        }
    }
    (0..COMPONENTS).filter(|&j| any[j]).collect()
}

/// The name of component index `j`.
pub fn component_name(j: usize) -> &'static str {
    Component::NAMES[j]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(pairs: &[(Component, f64)]) -> CycleStack {
        let mut s = CycleStack::default();
        for &(c, v) in pairs {
            s.add(c, v);
        }
        s
    }

    fn thread(id: u32, group: &str, pairs: &[(Component, f64)]) -> ThreadStack {
        ThreadStack {
            thread: id,
            group: group.into(),
            stack: stack(pairs),
        }
    }

    #[test]
    fn real_work_is_at_most_half_in_sync_including_imbalance() {
        use Component::*;
        assert!(does_real_work(&stack(&[(Base, 50.0), (SyncBarrier, 50.0)])));
        assert!(!does_real_work(&stack(&[
            (Base, 49.0),
            (SyncBarrier, 50.0),
            (ImbalanceEnd, 1.0)
        ])));
        assert!(!does_real_work(&stack(&[
            (Base, 10.0),
            (ImbalanceStart, 90.0)
        ])));
        assert!(!does_real_work(&CycleStack::default()));
        assert_eq!(sync_share(&CycleStack::default()), 0.0);
    }

    #[test]
    fn aggregates_skip_idle_threads_and_split_groups() {
        use Component::*;
        // Thread 0 only creates and joins (mostly sync-join); 1 and 2 compute; 3 runs other
        // code.
        let threads = [
            thread(0, "main", &[(Base, 10.0), (SyncJoin, 90.0)]),
            thread(
                1,
                "worker",
                &[(Base, 60.0), (MemDram, 30.0), (SyncBarrier, 10.0)],
            ),
            thread(
                2,
                "worker",
                &[(Base, 70.0), (MemDram, 20.0), (SyncBarrier, 10.0)],
            ),
            thread(3, "writer", &[(DependInt, 80.0), (SyncBarrier, 20.0)]),
        ];
        let r = RunAggregate::of(&threads);
        assert_eq!(r.overall.threads, vec![1, 2, 3]);
        assert!(!r.overall.no_real_work);
        assert_eq!(r.overall.stack.get(Base), 130.0);
        assert_eq!(r.overall.stack.get(DependInt), 80.0);
        assert_eq!(r.overall.stack.get(SyncJoin), 0.0);
        assert_eq!(r.overall.stack.total(), 300.0);
        let names: Vec<&str> = r.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["main", "worker", "writer"]);
        // The main group does no real work: it keeps its thread, flagged.
        assert!(r.groups[0].aggregate.no_real_work);
        assert_eq!(r.groups[0].aggregate.threads, vec![0]);
        assert_eq!(r.groups[1].members, vec![1, 2]);
        assert_eq!(r.groups[1].aggregate.stack.get(MemDram), 50.0);
        assert!(r.heterogeneous());
        let w: Vec<&str> = r.working_groups().map(|g| g.name.as_str()).collect();
        assert_eq!(w, ["worker", "writer"]);
        let sh = r.groups[1].aggregate.shares();
        assert!((sh[Base as usize] - 130.0 / 200.0).abs() < 1e-12);
        assert!((sh.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // One working group: homogeneous.
        let r = RunAggregate::of(&threads[..3]);
        assert!(!r.heterogeneous());
        // Nobody works: everything is summed and flagged.
        let idle = [
            thread(0, "a", &[(SyncJoin, 9.0), (Base, 1.0)]),
            thread(1, "a", &[(SyncCond, 8.0), (Base, 2.0)]),
        ];
        let r = RunAggregate::of(&idle);
        assert!(r.overall.no_real_work);
        assert_eq!(r.overall.threads, vec![0, 1]);
        assert_eq!(r.overall.stack.total(), 20.0);
    }

    #[test]
    fn scaling_rows_are_relative_to_the_smallest_core_count() {
        use Component::*;
        let p = |cores, cycles: f64| ScalingPoint {
            cores,
            cycles,
            stack: stack(&[(Base, cycles * 0.75), (SyncBarrier, cycles * 0.25)]),
        };
        let rows = scaling_rows(&[p(8, 150.0), p(2, 400.0), p(4, 250.0)], Scaling::Strong);
        let cores: Vec<u32> = rows.iter().map(|r| r.cores).collect();
        assert_eq!(cores, [2, 4, 8]);
        assert_eq!(rows[0].speedup, 1.0);
        assert_eq!(rows[0].efficiency, 1.0);
        assert_eq!(rows[1].speedup, 1.6);
        assert_eq!(rows[1].efficiency, 0.8);
        assert!((rows[2].speedup - 400.0 / 150.0).abs() < 1e-12);
        assert!((rows[2].efficiency - 400.0 / 150.0 / 4.0).abs() < 1e-12);
        assert_eq!(rows[2].shares[Base as usize], 0.75);
        assert_eq!(rows[2].shares[SyncBarrier as usize], 0.25);
        assert!(scaling_rows(&[], Scaling::Strong).is_empty());
        // Weak scaling: the ratio of times is the efficiency, the scaled speedup grows with it.
        let weak = scaling_rows(&[p(8, 500.0), p(2, 400.0), p(4, 400.0)], Scaling::Weak);
        assert_eq!(weak[0].speedup, 1.0);
        assert_eq!(weak[0].efficiency, 1.0);
        assert_eq!(weak[1].speedup, 2.0);
        assert_eq!(weak[1].efficiency, 1.0);
        assert_eq!(weak[2].efficiency, 0.8);
        assert!((weak[2].speedup - 3.2).abs() < 1e-12);
        let stacks = [p(1, 4.0).stack, CycleStack::default()];
        let present = present_components(&stacks);
        assert_eq!(present, vec![Base as usize, SyncBarrier as usize]);
        assert_eq!(component_name(Base as usize), "base");
    }
}
