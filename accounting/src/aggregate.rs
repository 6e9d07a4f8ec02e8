//! Thread aggregation of call-path profiles, after the Score-P paper's strategies (§4): the
//! threads of the run (one process) are replaced by a few artificial locations whose number
//! does not grow with the thread count (except for `none`, and for CALLTREE, which depends on
//! how many distinct call trees there are).
//!
//! * **none** — one location per thread (the unaggregated profile).
//! * **SUM** — one location: the element-wise sum over threads.
//! * **SET** — per call path and metric: sum, min, max, the number of threads that visited the
//!   path (`n`) and the sum of squares. As in the paper's formulas (D(s_min) = min over *all*
//!   threads s ∈ p), min and max range over every thread of the run: a thread that did not
//!   visit a path contributes 0, so `min` is 0 whenever `n` is smaller than the thread count.
//!   `n` counts only visiting threads, so the mean and standard deviation over the threads
//!   that visited are `sum / n` and `sqrt(sum2 / n − mean²)` (non-visitors add 0 to both sums).
//! * **KEY** — the initial thread (thread 0), the slowest and the fastest of the other threads
//!   by time in work regions (cycles outside synchronization and imbalance, summed over call
//!   paths; ties go to the lower thread id), and the remaining threads summed, with their count.
//!   With two threads there is no fastest and with three no rest; absent roles get no location.
//! * **CALLTREE** — threads grouped by the set of call paths they visited (visits > 0); each
//!   group is summed. Groups are ordered by their lowest thread id.
//!
//! Every location records the threads it stands for, so counts (and means) survive. Summing
//! means adding, except for the per-visit extremes (`min-visit`, `max-visit`), which combine
//! by minimum and maximum over the threads that visited the path.

use std::collections::HashMap;

use serde::Serialize;

use crate::profile::{Combine, M_VISITS, M_WORK, METRIC_DEFS, METRICS, Profile, Values};

/// An aggregation strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// One location per thread.
    None,
    /// One location: the sum over threads.
    Sum,
    /// Sum, min, max, visiting-thread count and sum of squares per path and metric.
    Set,
    /// Initial, slowest, fastest thread and the rest summed.
    Key,
    /// Threads grouped by the set of call paths they visited.
    Calltree,
}

impl Strategy {
    /// Every strategy.
    pub const ALL: [Strategy; 5] = [
        Strategy::None,
        Strategy::Sum,
        Strategy::Set,
        Strategy::Key,
        Strategy::Calltree,
    ];

    /// The name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Sum => "sum",
            Strategy::Set => "set",
            Strategy::Key => "key",
            Strategy::Calltree => "calltree",
        }
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = Strategy::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown strategy `{s}`: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One artificial location of an aggregated profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Display name, e.g. `slowest (thread 5)` or `group 1 (threads 1-7)`.
    pub name: String,
    /// Role: `thread`, `sum`, `set`, `initial`, `slowest`, `fastest`, `rest` or `group`.
    pub role: &'static str,
    /// The threads aggregated into it, ascending.
    pub threads: Vec<u32>,
}

/// SET statistics of one call path (per metric).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetStats {
    /// Threads that visited the path.
    pub n: u32,
    /// Sum over threads.
    pub sum: Values,
    /// Minimum over all threads (0 for a thread that did not visit).
    pub min: Values,
    /// Maximum over all threads.
    pub max: Values,
    /// Sum of squares over threads.
    pub sum2: Values,
}

/// The values of an aggregated profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Data {
    /// `values[location][node]`.
    Locations(Vec<Vec<Values>>),
    /// `stats[node]` (SET; one location).
    Set(Vec<SetStats>),
}

/// An aggregated profile over the call tree of a [`Profile`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregated {
    /// The strategy.
    pub strategy: Strategy,
    /// Threads in the run.
    pub thread_count: u32,
    /// The artificial locations.
    pub locations: Vec<Location>,
    /// The values.
    pub data: Data,
}

impl Aggregated {
    /// Number of scalar values stored: locations × paths × metrics, or for SET paths ×
    /// metrics × 5 (sum, min, max, n, sum of squares).
    pub fn value_entries(&self) -> usize {
        match &self.data {
            Data::Locations(v) => v.iter().map(|l| l.len() * METRICS).sum(),
            Data::Set(s) => s.len() * METRICS * 5,
        }
    }
}

/// A thread's time in work regions: its work cycles summed over call paths.
pub fn work_time(p: &Profile, t: usize) -> f64 {
    p.threads[t].values.iter().map(|v| v[M_WORK]).sum()
}

/// The key threads of KEY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyThreads {
    /// The initial thread (the first of the profile, thread 0).
    pub initial: Option<u32>,
    /// The other thread with the most work time.
    pub slowest: Option<u32>,
    /// Of the rest, the thread with the least work time.
    pub fastest: Option<u32>,
    /// Everything else.
    pub rest: Vec<u32>,
}

/// Picks KEY's threads (indices into `p.threads`).
pub fn key_threads(p: &Profile) -> KeyThreads {
    let n = p.threads.len();
    if n == 0 {
        return KeyThreads {
            initial: None,
            slowest: None,
            fastest: None,
            rest: Vec::new(),
        };
    }
    let work: Vec<f64> = (0..n).map(|t| work_time(p, t)).collect();
    let mut slowest: Option<usize> = None;
    for t in 1..n {
        if slowest.is_none_or(|s| work[t] > work[s]) {
            slowest = Some(t);
        }
    }
    let mut fastest: Option<usize> = None;
    for t in 1..n {
        if Some(t) != slowest && fastest.is_none_or(|f| work[t] < work[f]) {
            fastest = Some(t);
        }
    }
    let id = |t: usize| p.threads[t].thread;
    KeyThreads {
        initial: Some(id(0)),
        slowest: slowest.map(id),
        fastest: fastest.map(id),
        rest: (1..n)
            .filter(|&t| Some(t) != slowest && Some(t) != fastest)
            .map(id)
            .collect(),
    }
}

/// Groups threads (indices into `p.threads`) by the set of call paths they visited; groups are
/// ordered by their first thread.
pub fn calltree_groups(p: &Profile) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_sig: HashMap<Vec<u32>, usize> = HashMap::new();
    for (t, th) in p.threads.iter().enumerate() {
        let sig: Vec<u32> = th
            .values
            .iter()
            .enumerate()
            .filter(|(_, v)| v[M_VISITS] > 0.0)
            .map(|(i, _)| i as u32)
            .collect();
        match by_sig.get(&sig) {
            Some(&g) => groups[g].push(t),
            None => {
                by_sig.insert(sig, groups.len());
                groups.push(vec![t]);
            }
        }
    }
    groups
}

/// `a-b, c` for a sorted list of thread ids.
pub fn thread_ranges(ids: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// The threads `members` combined per path and metric as the metric says ([`Combine`]): sums
/// added, `min-visit` the smallest and `max-visit` the largest over the members that visited
/// the path.
fn sum_of(p: &Profile, members: &[usize]) -> Vec<Values> {
    let mut out = vec![[0.0; METRICS]; p.nodes.len()];
    let mut seen = vec![false; p.nodes.len()];
    for &t in members {
        for ((o, v), seen) in out.iter_mut().zip(&p.threads[t].values).zip(&mut seen) {
            let visited = v[M_VISITS] > 0.0;
            for (m, (a, b)) in o.iter_mut().zip(v).enumerate() {
                match METRIC_DEFS[m].combine {
                    Combine::Sum => *a += b,
                    Combine::Min if visited => *a = if *seen { a.min(*b) } else { *b },
                    Combine::Max if visited => *a = if *seen { a.max(*b) } else { *b },
                    Combine::Min | Combine::Max => {}
                }
            }
            *seen |= visited;
        }
    }
    out
}

fn location(p: &Profile, name: String, role: &'static str, members: &[usize]) -> Location {
    let mut threads: Vec<u32> = members.iter().map(|&t| p.threads[t].thread).collect();
    threads.sort_unstable();
    Location {
        name,
        role,
        threads,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "thread" } else { "threads" }
}

/// Aggregates `p` with strategy `s`.
pub fn aggregate(p: &Profile, s: Strategy) -> Aggregated {
    let n = p.threads.len();
    let all: Vec<usize> = (0..n).collect();
    let (locations, data) = match s {
        Strategy::None => {
            let locs = all
                .iter()
                .map(|&t| location(p, format!("thread {}", p.threads[t].thread), "thread", &[t]))
                .collect();
            let vals = all.iter().map(|&t| p.threads[t].values.clone()).collect();
            (locs, Data::Locations(vals))
        }
        Strategy::Sum => (
            vec![location(p, format!("sum ({n} {})", plural(n)), "sum", &all)],
            Data::Locations(vec![sum_of(p, &all)]),
        ),
        Strategy::Set => {
            let stats = (0..p.nodes.len())
                .map(|node| {
                    let mut st = SetStats {
                        n: 0,
                        sum: [0.0; METRICS],
                        min: [f64::INFINITY; METRICS],
                        max: [f64::NEG_INFINITY; METRICS],
                        sum2: [0.0; METRICS],
                    };
                    for th in &p.threads {
                        let v = &th.values[node];
                        st.n += (v[M_VISITS] > 0.0) as u32;
                        for (m, &x) in v.iter().enumerate() {
                            st.sum[m] += x;
                            st.min[m] = st.min[m].min(x);
                            st.max[m] = st.max[m].max(x);
                            st.sum2[m] += x * x;
                        }
                    }
                    if n == 0 {
                        st.min = [0.0; METRICS];
                        st.max = [0.0; METRICS];
                    }
                    st
                })
                .collect();
            (
                vec![location(p, format!("set ({n} {})", plural(n)), "set", &all)],
                Data::Set(stats),
            )
        }
        Strategy::Key => {
            let k = key_threads(p);
            let idx = |id: u32| {
                p.threads
                    .iter()
                    .position(|t| t.thread == id)
                    .expect("key thread")
            };
            let mut locs = Vec::new();
            let mut vals = Vec::new();
            for (role, t) in [
                ("initial", k.initial),
                ("slowest", k.slowest),
                ("fastest", k.fastest),
            ] {
                if let Some(id) = t {
                    let t = idx(id);
                    locs.push(location(p, format!("{role} (thread {id})"), role, &[t]));
                    vals.push(p.threads[t].values.clone());
                }
            }
            if !k.rest.is_empty() {
                let members: Vec<usize> = k.rest.iter().map(|&id| idx(id)).collect();
                let r = members.len();
                locs.push(location(
                    p,
                    format!("rest ({r} {})", plural(r)),
                    "rest",
                    &members,
                ));
                vals.push(sum_of(p, &members));
            }
            (locs, Data::Locations(vals))
        }
        Strategy::Calltree => {
            let groups = calltree_groups(p);
            let mut locs = Vec::new();
            let mut vals = Vec::new();
            for (g, members) in groups.iter().enumerate() {
                let mut l = location(p, String::new(), "group", members);
                l.name = format!(
                    "group {g} ({} {})",
                    plural(members.len()),
                    thread_ranges(&l.threads)
                );
                locs.push(l);
                vals.push(sum_of(p, members));
            }
            (locs, Data::Locations(vals))
        }
    };
    Aggregated {
        strategy: s,
        thread_count: n as u32,
        locations,
        data,
    }
}
