//! LIME's analysis (§3): per dynamic instance, then combined per static section (§3.6).
//!
//! Per instance: the per-thread execution times `T` (arrival − start) and event counts;
//! hardware events replaced by their Gram–Schmidt residuals against their superiors
//! (executions → L1 → L2 → L3 misses; executions → mispredictions); events constant across
//! threads dropped; UPGMA clustering on correlation; clusters with an edge are control-flow
//! clusters, the rest hardware clusters; forward-selection regression of `T` on the
//! clusters' averaged z-scores; final score `β·s_v` for each leader of a selected
//! control-flow cluster and `β` for each event of a selected hardware cluster.
//!
//! Per static section (named by its closing barrier/join call): a cause's score is the
//! average of its instance scores weighted by the instances' imbalance (an instance where it
//! was not reported counts 0). Instances whose imbalance is below `min_imbalance` are not
//! analysed: there is nothing to explain, and regression on cycle-level noise would only
//! explain noise.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cfg::{Cfg, leaders};
use super::cluster::upgma;
use super::collect::{Event, Instance, SectionKind};
use super::stats::{averaged_z, forward_selection, gram_schmidt, pearson, unit};

/// The fewest threads an instance needs to be analysed: events are correlated with time
/// across threads, and two threads leave no variance to explain.
pub const MIN_THREADS: usize = 3;

/// Which events compete as causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventSet {
    /// The paper's (LIME §3.2): control-flow edges and L1 and L2 misses.
    Paper,
    /// isim's extension: also L3 misses and branch mispredictions.
    Extended,
}

/// Analysis options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Clustering stops when the largest correlation is below this (LIME: 0.9).
    pub threshold: f64,
    /// Significance level of the regression's F-tests.
    pub alpha: f64,
    /// Instances with a smaller imbalance (fraction) are not analysed. Default 0, as LIME
    /// analyses sections of 0.0–1.5 % imbalance too (its Table 1).
    pub min_imbalance: f64,
    /// The events that compete as causes (default: the paper's).
    pub events: EventSet,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threshold: 0.9,
            alpha: 0.05,
            min_imbalance: 0.0,
            events: EventSet::Paper,
        }
    }
}

/// What a cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CauseKind {
    /// A control-flow leader: the branch whose decision introduces the imbalance.
    ControlFlow,
    /// L1 misses of an instruction.
    L1Miss,
    /// L2 misses.
    L2Miss,
    /// L3 misses.
    L3Miss,
    /// Branch mispredictions.
    Mispredict,
    /// The code of a serial section ([`SectionKind::Serial`]): a branch the one working
    /// thread ran, scored by its share of that thread's branch executions in the section.
    SerialCode,
}

impl CauseKind {
    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::ControlFlow => "control-flow leader",
            CauseKind::L1Miss => "L1 miss",
            CauseKind::L2Miss => "L2 miss",
            CauseKind::L3Miss => "L3 miss",
            CauseKind::Mispredict => "mispredict",
            CauseKind::SerialCode => "serial code",
        }
    }

    /// True for cache-miss causes (the ones miss erasure can remove).
    pub fn is_miss(self) -> bool {
        matches!(
            self,
            CauseKind::L1Miss | CauseKind::L2Miss | CauseKind::L3Miss
        )
    }
}

/// One reported cause in one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// Kind.
    pub kind: CauseKind,
    /// Static index of the instruction (the leader branch, or the missing instruction).
    pub sidx: u32,
    /// For a leader: the cluster out-edge's target branch with the highest correlation.
    pub edge_to: Option<u32>,
    /// Final score.
    pub score: f64,
    /// β of its cluster.
    pub beta: f64,
    /// Leader score `s_v` (control flow only).
    pub leader_score: Option<f64>,
}

/// The analysis of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceResult {
    /// Imbalance (fraction).
    pub imbalance: f64,
    /// Events after dropping constant ones.
    pub events: usize,
    /// Clusters formed.
    pub clusters: usize,
    /// Clusters the regression selected.
    pub selected: usize,
    /// R² of the regression.
    pub r2: f64,
    /// Causes, best first.
    pub causes: Vec<Cause>,
}

/// A factor of a final score, at most 1. LIME's β is a standardized regression coefficient,
/// which exceeds 1 when selected clusters are correlated with each other (one suppresses the
/// other), and its leader score s_v, a difference of correlations, can reach 2; a final score
/// is `min(β, 1) · min(s_v, 1)` for a leader and `min(β, 1)` for a hardware event, in (0, 1]:
/// how closely the threads' times follow the cause, times how much of that its decision
/// introduces. Reported causes have β > 0 and s_v > 0.
fn bounded(x: f64) -> f64 {
    x.min(1.0)
}

/// Analyses one instance; `cfg` is the control-flow graph of its static section.
pub fn analyze_instance(inst: &Instance, cfg: &Cfg, opts: &Options) -> InstanceResult {
    let imbalance = inst.imbalance();
    let empty = |events| InstanceResult {
        imbalance,
        events,
        clusters: 0,
        selected: 0,
        r2: 0.0,
        causes: Vec::new(),
    };
    let n = inst.threads.len();
    if n < MIN_THREADS || imbalance < opts.min_imbalance {
        return empty(0);
    }
    let times: Vec<f64> = inst.threads.iter().map(|t| t.time()).collect();
    // Dense per-thread vectors of every event.
    let mut dense: BTreeMap<Event, Vec<f64>> = BTreeMap::new();
    for (t, ts) in inst.threads.iter().enumerate() {
        for &(e, c) in &ts.events {
            dense.entry(e).or_insert_with(|| vec![0.0; n])[t] = c as f64;
        }
    }
    // Candidate events (edges and Gram–Schmidt residuals of hardware events) as unit vectors.
    let mut keys: Vec<Event> = Vec::new();
    let mut units: Vec<Vec<f64>> = Vec::new();
    const REL: f64 = 1e-9;
    let zero = vec![0.0; n];
    for (e, v) in &dense {
        match *e {
            // Edges from the entry (a thread's start, its return from synchronization or a
            // runtime) say where its role took it, not what its work decided: they are in the
            // graph, for the leader scores of their targets, and never candidates.
            Event::Edge { from, .. } if from == super::cfg::ENTRY => {}
            Event::Edge { .. } => {
                if let Some(u) = unit(v, super::stats::norm(&super::stats::centred(v)), REL) {
                    keys.push(*e);
                    units.push(u);
                }
            }
            Event::Exec(s) => {
                let exec = v.as_slice();
                let lv = |level| {
                    dense
                        .get(&Event::Miss { sidx: s, level })
                        .map_or(zero.as_slice(), |v| v.as_slice())
                };
                let has = |level| dense.contains_key(&Event::Miss { sidx: s, level });
                // The paper's events stop at the L2; the extension adds the L3.
                let top: u8 = match opts.events {
                    EventSet::Paper => 2,
                    EventSet::Extended => 3,
                };
                if (1..=top).any(has) {
                    let chain = [exec, lv(1), lv(2), lv(3)];
                    let res = gram_schmidt(&chain[..=top as usize]);
                    for level in 1..=top {
                        if !has(level) {
                            continue;
                        }
                        let orig =
                            super::stats::norm(&super::stats::centred(chain[level as usize]));
                        if let Some(u) = unit(&res[level as usize], orig, REL) {
                            keys.push(Event::Miss { sidx: s, level });
                            units.push(u);
                        }
                    }
                }
                let mispredicts = match opts.events {
                    EventSet::Paper => None,
                    EventSet::Extended => dense.get(&Event::Mispredict(s)),
                };
                if let Some(mp) = mispredicts {
                    let res = gram_schmidt(&[exec, mp]);
                    let orig = super::stats::norm(&super::stats::centred(mp));
                    if let Some(u) = unit(&res[1], orig, REL) {
                        keys.push(Event::Mispredict(s));
                        units.push(u);
                    }
                }
            }
            Event::Miss { .. } | Event::Mispredict(_) => {}
        }
    }
    let m = keys.len();
    if m == 0 {
        return empty(0);
    }
    let labels = upgma(&units, opts.threshold);
    let k = labels.iter().max().map_or(0, |&l| l + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        members[l].push(i);
    }
    let cluster_vectors: Vec<Vec<f64>> = members
        .iter()
        .map(|ms| {
            let vs: Vec<&[f64]> = ms.iter().map(|&i| units[i].as_slice()).collect();
            averaged_z(&vs)
        })
        .collect();
    let reg = forward_selection(&times, &cluster_vectors, opts.alpha);
    // Correlation of every CFG edge with T (0 when absent or constant in this instance).
    let corr_edge = |a: u32, b: u32| -> f64 {
        dense
            .get(&Event::Edge { from: a, to: b })
            .map_or(0.0, |v| pearson(v, &times))
    };
    // How often each branch ran in this instance, all threads together.
    let mut ran: BTreeMap<u32, f64> = BTreeMap::new();
    for (e, v) in &dense {
        if let Event::Edge { to, .. } = *e {
            *ran.entry(to).or_insert(0.0) += v.iter().sum::<f64>();
        }
    }
    let runs = |v: u32| ran.get(&v).copied().unwrap_or(0.0);
    let mut causes: Vec<Cause> = Vec::new();
    for (step, &beta) in reg.steps.iter().zip(&reg.beta) {
        // A cluster whose events come with shorter times (β ≤ 0: what the threads that
        // finished early did, such as the other arms of a `sections` switch) explains the
        // imbalance but does not cause it: a cause makes the threads that have it slower.
        if beta <= 0.0 {
            continue;
        }
        let ms = &members[step.index];
        let edges: Vec<(u32, u32)> = ms
            .iter()
            .filter_map(|&i| match keys[i] {
                Event::Edge { from, to } => Some((from, to)),
                _ => None,
            })
            .collect();
        if !edges.is_empty() {
            for l in leaders(cfg, &edges, corr_edge, runs) {
                // A leader whose decision does not raise the correlation with time (s_v ≤ 0)
                // does not introduce the imbalance.
                if l.vertex == super::cfg::ENTRY || l.score <= 0.0 {
                    continue;
                }
                causes.push(Cause {
                    kind: CauseKind::ControlFlow,
                    sidx: l.vertex,
                    edge_to: Some(l.best_out),
                    score: bounded(beta) * bounded(l.score),
                    beta,
                    leader_score: Some(l.score),
                });
            }
        } else {
            for &i in ms {
                let (kind, sidx) = match keys[i] {
                    Event::Miss { sidx, level: 1 } => (CauseKind::L1Miss, sidx),
                    Event::Miss { sidx, level: 2 } => (CauseKind::L2Miss, sidx),
                    Event::Miss { sidx, .. } => (CauseKind::L3Miss, sidx),
                    Event::Mispredict(sidx) => (CauseKind::Mispredict, sidx),
                    _ => continue,
                };
                causes.push(Cause {
                    kind,
                    sidx,
                    edge_to: None,
                    score: bounded(beta),
                    beta,
                    leader_score: None,
                });
            }
        }
    }
    // A leader in two clusters keeps its best score (Fig. 4's A).
    causes.sort_by(|a, b| {
        (a.kind, a.sidx)
            .cmp(&(b.kind, b.sidx))
            .then(b.score.total_cmp(&a.score))
    });
    causes.dedup_by(|a, b| (a.kind, a.sidx) == (b.kind, b.sidx));
    causes.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then((a.kind, a.sidx).cmp(&(b.kind, b.sidx)))
    });
    InstanceResult {
        imbalance,
        events: m,
        clusters: k,
        selected: reg.steps.len(),
        r2: reg.r2,
        causes,
    }
}

/// Fills each section's [`SectionResult::idle_after_end`] from `instances` (those
/// [`analyze`] was given) and `ends`, when each thread ended (by thread id): a section's
/// instances are those of its site and kind.
pub fn count_idle_after_end(sections: &mut [SectionResult], instances: &[Instance], ends: &[f64]) {
    let mut by_section: BTreeMap<(u32, SectionKind), f64> = BTreeMap::new();
    for i in instances {
        *by_section.entry((i.site, i.kind)).or_default() += i.idle_after_end(ends);
    }
    for s in sections {
        s.idle_after_end = by_section.get(&(s.site, s.kind)).copied().unwrap_or(0.0);
    }
}

/// One static section's combined result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionResult {
    /// Static index of the closing barrier/join call.
    pub site: u32,
    /// Barrier or join.
    pub kind: SectionKind,
    /// Dynamic instances.
    pub instances: usize,
    /// Instances analysed (imbalance at least `min_imbalance`, at least three threads).
    pub analysed: usize,
    /// Instances not analysed because fewer than three threads took part (the events are
    /// correlated across threads: two give no variance to explain).
    pub too_few_threads: usize,
    /// Instances of three threads or more not analysed because their imbalance was below
    /// `min_imbalance`.
    pub below_threshold: usize,
    /// Imbalance: idle cycles over thread-cycles of all instances (fraction).
    pub imbalance: f64,
    /// Idle cycles summed over instances and threads.
    pub idle_cycles: f64,
    /// Of `idle_cycles`, those after the idle thread ended ([`Instance::idle_after_end`]):
    /// 0 until [`count_idle_after_end`] is given the threads' ends.
    pub idle_after_end: f64,
    /// Thread-cycles of all instances (length × threads).
    pub thread_cycles: f64,
    /// Combined causes, best first.
    pub causes: Vec<Cause>,
    /// Per-thread execution time summed over instances (for what-if comparisons).
    pub thread_times: Vec<(u32, f64)>,
}

/// Groups instances by static section, analyses each, and combines them; sections are
/// ordered by idle cycles, most first.
pub fn analyze(instances: &[Instance], opts: &Options) -> Vec<SectionResult> {
    let mut by_site: BTreeMap<(u32, SectionKind), Vec<&Instance>> = BTreeMap::new();
    for i in instances {
        by_site.entry((i.site, i.kind)).or_default().push(i);
    }
    let mut out = Vec::new();
    for ((site, kind), insts) in by_site {
        let cfg = Cfg::new(insts.iter().flat_map(|i| {
            i.threads.iter().flat_map(|t| {
                t.events.iter().filter_map(|(e, _)| match *e {
                    Event::Edge { from, to } => Some((from, to)),
                    _ => None,
                })
            })
        }));
        let mut weight_sum = 0.0;
        // Per cause: its weighted score sum, the largest instance contribution, that
        // instance's details, and per out-edge the weighted scores of the instances naming it.
        type Acc = (f64, f64, Cause, BTreeMap<Option<u32>, f64>);
        let mut acc: BTreeMap<(CauseKind, u32), Acc> = BTreeMap::new();
        let mut analysed = 0;
        let (mut too_few_threads, mut below_threshold) = (0, 0);
        let mut idle = 0.0;
        let mut thread_cycles = 0.0;
        let mut times: BTreeMap<u32, f64> = BTreeMap::new();
        for inst in &insts {
            idle += inst.idle();
            thread_cycles += inst.length() * inst.threads.len() as f64;
            for t in &inst.threads {
                *times.entry(t.thread).or_insert(0.0) += t.time();
            }
            if kind == SectionKind::Serial {
                // No regression: one thread worked, the others waited for all of it. Its
                // branches, by how often it ran them, say where the serial time went.
                analysed += 1;
                for t in &inst.threads {
                    for &(e, n) in &t.events {
                        if let Event::Edge { to, .. } = e {
                            let c = acc.entry((CauseKind::SerialCode, to)).or_insert((
                                0.0,
                                0.0,
                                Cause {
                                    kind: CauseKind::SerialCode,
                                    sidx: to,
                                    edge_to: None,
                                    score: 0.0,
                                    beta: 0.0,
                                    leader_score: None,
                                },
                                BTreeMap::new(),
                            ));
                            c.0 += n as f64;
                            weight_sum += n as f64;
                        }
                    }
                }
                continue;
            }
            if inst.threads.len() < MIN_THREADS {
                too_few_threads += 1;
                continue;
            }
            let r = analyze_instance(inst, &cfg, opts);
            if r.imbalance < opts.min_imbalance {
                below_threshold += 1;
                continue;
            }
            analysed += 1;
            let w = r.imbalance;
            weight_sum += w;
            for c in r.causes {
                // Keep the details (β, s_v) of the instance contributing the most; the edge a
                // leader is reported with is the one its instances' scores favour in all
                // (where a decision's arms are taken by different threads from one instance
                // to the next, the arm that goes with the slow threads every time).
                let e = acc.entry((c.kind, c.sidx)).or_insert((
                    0.0,
                    f64::NEG_INFINITY,
                    c.clone(),
                    BTreeMap::new(),
                ));
                e.0 += w * c.score;
                *e.3.entry(c.edge_to).or_insert(0.0) += w * c.score;
                if w * c.score > e.1 {
                    e.1 = w * c.score;
                    e.2 = c;
                }
            }
        }
        let mut causes: Vec<Cause> = acc
            .into_values()
            .map(|(sum, _, mut c, votes)| {
                // The most voted edge; ties keep the top instance's, else the smallest.
                let kept = votes.get(&c.edge_to).copied().unwrap_or(f64::NEG_INFINITY);
                if let Some((&to, _)) = votes
                    .iter()
                    .filter(|e| *e.1 > kept)
                    .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
                {
                    c.edge_to = to;
                }
                c.score = if weight_sum > 0.0 {
                    sum / weight_sum
                } else {
                    0.0
                };
                c
            })
            .collect();
        causes.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then((a.kind, a.sidx).cmp(&(b.kind, b.sidx)))
        });
        out.push(SectionResult {
            site,
            kind,
            instances: insts.len(),
            analysed,
            too_few_threads,
            below_threshold,
            imbalance: if thread_cycles > 0.0 {
                idle / thread_cycles
            } else {
                0.0
            },
            idle_cycles: idle,
            idle_after_end: 0.0,
            thread_cycles,
            causes,
            thread_times: times.into_iter().collect(),
        });
    }
    out.sort_by(|a, b| {
        b.idle_cycles
            .total_cmp(&a.idle_cycles)
            .then(a.site.cmp(&b.site))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lime::cfg::ENTRY;
    use crate::lime::collect::ThreadSection;

    /// An instance of four threads starting at 0, with the given arrivals and per-thread
    /// counts of each event.
    fn instance(arrivals: [f64; 4], events: &[(Event, [u64; 4])]) -> Instance {
        let release = arrivals.iter().copied().fold(0.0, f64::max);
        let threads = (0..4)
            .map(|t| {
                let mut ev: Vec<(Event, u64)> = events.iter().map(|(e, c)| (*e, c[t])).collect();
                ev.sort_by_key(|a| a.0);
                ThreadSection {
                    thread: t as u32,
                    start: 0.0,
                    arrival: arrivals[t],
                    events: ev,
                }
            })
            .collect();
        Instance {
            site: 9,
            kind: SectionKind::Barrier,
            release,
            threads,
        }
    }

    const L1: Event = Event::Miss { sidx: 5, level: 1 };

    /// A control-flow instance through the whole pipeline: a loop at branch 1 whose "taken to
    /// 2" edge count grows with the thread's time and whose "taken to 3" edge shrinks. The two
    /// directions form two clusters (r = +1 inside each, −1 between); the regression picks the
    /// one positively related to T (β = 1, R² = 1); its leader is branch 1 — the loop's
    /// back edges 2→1 and 3→1 are excluded — with s_v = corr(1→2, T) − corr(ENTRY→1, T).
    /// The last thread enters the loop twice: ENTRY→1 = (1, 1, 1, 2), centred
    /// (−¼, −¼, −¼, ¾), against centred T (−150, −50, 50, 150): r = 150 / √(50000 × ¾) = √0.6.
    /// An edge from the entry is no candidate, so four events form the two clusters; the
    /// entry edge still counts as the loop's in-edge: s_v = 1 − √0.6 = 0.2254, and so is the
    /// final score β·s_v.
    #[test]
    fn a_control_flow_leader_scores_beta_times_its_leader_score() {
        let e = |from, to| Event::Edge { from, to };
        let inst = instance(
            [100.0, 200.0, 300.0, 400.0],
            &[
                (e(ENTRY, 1), [1, 1, 1, 2]),
                (e(1, 2), [1, 2, 3, 4]),
                (e(2, 1), [1, 2, 3, 4]),
                (e(1, 3), [4, 3, 2, 1]),
                (e(3, 1), [4, 3, 2, 1]),
            ],
        );
        let cfg = Cfg::new([(ENTRY, 1), (1, 2), (2, 1), (1, 3), (3, 1)]);
        let r = analyze_instance(&inst, &cfg, &Options::default());
        // Idle 300 + 200 + 100 + 0 over length 400 and 4 threads.
        assert_eq!(r.imbalance, 0.375);
        assert_eq!((r.events, r.clusters, r.selected), (4, 2, 1), "{r:?}");
        assert!((r.r2 - 1.0).abs() < 1e-9);
        assert_eq!(r.causes.len(), 1, "{:?}", r.causes);
        let c = &r.causes[0];
        assert_eq!(
            (c.kind, c.sidx, c.edge_to),
            (CauseKind::ControlFlow, 1, Some(2))
        );
        assert!((c.beta - 1.0).abs() < 1e-9, "{c:?}");
        let sv = 1.0 - 0.6f64.sqrt();
        assert!((c.leader_score.unwrap() - sv).abs() < 1e-9, "{c:?}");
        assert!((c.score - sv).abs() < 1e-9, "{c:?}");
    }

    /// LIME §3.6: instances of one static section are combined by their imbalance. Instance A
    /// (imbalance 0.375) is explained by the L1 misses of instruction 5 (score 1); instance B
    /// (imbalance 900 / 400 / 4 = 0.5625) has no varying event, so nothing is reported and
    /// the cause counts 0 there; instance C (imbalance 9 / 400 / 4 = 0.005625) is below the
    /// 1 % floor and not analysed, although its misses would explain it perfectly. Combined:
    /// 0.375 × 1 / (0.375 + 0.5625) = 0.4. The section's imbalance is its idle cycles over its
    /// thread-cycles: (600 + 900 + 9) / (3 × 4 × 400).
    #[test]
    fn instances_are_combined_weighted_by_their_imbalance() {
        let exec = (Event::Exec(5), [10, 10, 10, 10]);
        let a = instance([100.0, 200.0, 300.0, 400.0], &[exec, (L1, [1, 2, 3, 4])]);
        let b = instance([100.0, 100.0, 100.0, 400.0], &[exec, (L1, [5, 5, 5, 5])]);
        let c = instance([396.0, 397.0, 398.0, 400.0], &[exec, (L1, [1, 2, 3, 4])]);
        let opts = Options {
            min_imbalance: 0.01,
            ..Options::default()
        };
        let cfg = Cfg::default();
        let ra = analyze_instance(&a, &cfg, &opts);
        assert_eq!(ra.causes.len(), 1);
        assert_eq!(ra.causes[0].kind, CauseKind::L1Miss);
        assert!((ra.causes[0].score - 1.0).abs() < 1e-9, "{:?}", ra.causes);
        assert!(analyze_instance(&b, &cfg, &opts).causes.is_empty());
        assert_eq!(b.imbalance(), 0.5625);
        assert_eq!(c.imbalance(), 0.005625);

        let s = analyze(&[a, b, c], &opts);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!((s.site, s.instances, s.analysed), (9, 3, 2));
        assert_eq!((s.below_threshold, s.too_few_threads), (1, 0));
        assert_eq!(s.idle_cycles, 1509.0);
        assert!((s.imbalance - 1509.0 / 4800.0).abs() < 1e-15);
        assert_eq!(s.causes.len(), 1);
        assert!((s.causes[0].score - 0.4).abs() < 1e-9, "{:?}", s.causes);
        assert_eq!(
            s.thread_times,
            [(0, 596.0), (1, 697.0), (2, 798.0), (3, 1200.0)]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(200))]
        /// Scores are bounded (docs/output.md): over random instances of 3–8 threads with
        /// random times, edges (a small graph) and misses, every reported cause of an instance
        /// and of the combined section scores in (0, 1] (a serial section's shares in [0, 1]).
        #[test]
        fn every_reported_score_is_in_its_bounds(
            times in proptest::collection::vec(1.0f64..1000.0, 3..9),
            counts in proptest::collection::vec(proptest::collection::vec(0u64..50, 8), 8),
        ) {
            let n = times.len();
            let events: Vec<(Event, Vec<u64>)> = [
                Event::Edge { from: ENTRY, to: 1 },
                Event::Edge { from: 1, to: 2 },
                Event::Edge { from: 2, to: 1 },
                Event::Edge { from: 1, to: 3 },
                Event::Edge { from: 3, to: 4 },
                Event::Exec(5),
                L1,
                Event::Miss { sidx: 5, level: 2 },
            ]
            .into_iter()
            .zip(&counts)
            .map(|(e, c)| (e, c[..n].to_vec()))
            .collect();
            let threads = (0..n)
                .map(|t| {
                    let mut ev: Vec<(Event, u64)> =
                        events.iter().map(|(e, c)| (*e, c[t])).collect();
                    ev.sort_by_key(|a| a.0);
                    ThreadSection { thread: t as u32, start: 0.0, arrival: times[t], events: ev }
                })
                .collect();
            let inst = Instance {
                site: 9,
                kind: SectionKind::Barrier,
                release: times.iter().copied().fold(0.0, f64::max),
                threads,
            };
            let cfg = Cfg::new([(ENTRY, 1), (1, 2), (2, 1), (1, 3), (3, 4)]);
            let r = analyze_instance(&inst, &cfg, &Options::default());
            for c in &r.causes {
                proptest::prop_assert!(c.score > 0.0 && c.score <= 1.0, "{c:?}");
            }
            for s in analyze(&[inst], &Options::default()) {
                for c in &s.causes {
                    proptest::prop_assert!(c.score > 0.0 && c.score <= 1.0, "{c:?}");
                }
            }
        }
    }
}
