//! The control-flow graph LIME reasons on (§3.4) and its cluster leaders. Vertices are branch
//! instructions (static indices; [`ENTRY`] stands for "no branch yet" at a thread's start) and
//! an edge `p → b` means that after branch `p` the next branch executed was `b` — LIME §4's
//! "previous branch → branch" edges, one control-flow event each.
//!
//! Back edges come from a depth-first search: from [`ENTRY`], then from every vertex not yet
//! reached in increasing order, successors visited in increasing order (deterministic). An
//! edge to a vertex on the current DFS path is a back edge.
//!
//! A vertex belongs to a cluster if one of its out-edges is in the cluster (the vertex *makes*
//! the decision the cluster's events follow). A leader is a vertex of the cluster all of whose
//! incoming non-back edges come from vertices outside it. Its score (Eq. 1) is
//! `s_v = max corr(out-edge of v in the cluster, T) − max corr(non-back in-edge of v, T)`, the
//! second maximum being 0 for a vertex without such in-edges.

use std::collections::{BTreeMap, BTreeSet};

/// The pseudo-vertex before a thread's first branch.
pub const ENTRY: u32 = u32::MAX;

/// A control-flow graph with its back edges.
#[derive(Debug, Clone, Default)]
pub struct Cfg {
    succ: BTreeMap<u32, BTreeSet<u32>>,
    pred: BTreeMap<u32, BTreeSet<u32>>,
    back: BTreeSet<(u32, u32)>,
}

impl Cfg {
    /// The graph of `edges`, with back edges found by DFS.
    pub fn new(edges: impl IntoIterator<Item = (u32, u32)>) -> Cfg {
        let mut g = Cfg::default();
        for (a, b) in edges {
            g.succ.entry(a).or_default().insert(b);
            g.pred.entry(b).or_default().insert(a);
            g.succ.entry(b).or_default();
            g.pred.entry(a).or_default();
        }
        g.find_back_edges();
        g
    }

    fn find_back_edges(&mut self) {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnPath,
            Done,
        }
        let ids: Vec<u32> = self.succ.keys().copied().collect();
        let index: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        let succs: Vec<Vec<usize>> = ids
            .iter()
            .map(|v| self.succ[v].iter().map(|s| index[s]).collect())
            .collect();
        let mut mark = vec![Mark::New; ids.len()];
        let mut roots: Vec<usize> = Vec::new();
        if let Some(&e) = index.get(&ENTRY) {
            roots.push(e);
        }
        roots.extend(0..ids.len());
        for root in roots {
            if mark[root] != Mark::New {
                continue;
            }
            // Iterative DFS: (vertex, next successor position).
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            mark[root] = Mark::OnPath;
            while let Some(top) = stack.last_mut() {
                let (v, pos) = *top;
                if pos < succs[v].len() {
                    top.1 += 1;
                    let w = succs[v][pos];
                    match mark[w] {
                        Mark::New => {
                            mark[w] = Mark::OnPath;
                            stack.push((w, 0));
                        }
                        Mark::OnPath => {
                            self.back.insert((ids[v], ids[w]));
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[v] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }

    /// True if `a → b` is a back edge.
    pub fn is_back(&self, a: u32, b: u32) -> bool {
        self.back.contains(&(a, b))
    }

    /// Incoming edges of `v` that are not back edges.
    pub fn forward_preds(&self, v: u32) -> impl Iterator<Item = u32> + '_ {
        self.pred
            .get(&v)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&p| !self.is_back(p, v))
    }

    /// Number of vertices.
    pub fn vertices(&self) -> usize {
        self.succ.len()
    }
}

/// A leader of a control-flow cluster with its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Leader {
    /// The vertex (branch static index).
    pub vertex: u32,
    /// Its score `s_v` (Eq. 1).
    pub score: f64,
    /// The cluster out-edge target with the largest correlation (for reporting `v → target`).
    pub best_out: u32,
}

/// Leaders of the cluster made of `edges`, scored with `corr(edge)` = the edge's correlation
/// with the execution times (0 for edges not observed). If no vertex qualifies (the
/// cluster's vertices form a cycle of forward edges), the vertex with the highest score is
/// taken, so that a control-flow cluster always names a place in the code. Out-edges equally
/// correlated name the one whose target ran the most (`runs`: a switch whose slow thread
/// took two arms names the arm it spent its time in).
pub fn leaders(
    cfg: &Cfg,
    edges: &[(u32, u32)],
    corr: impl Fn(u32, u32) -> f64,
    runs: impl Fn(u32) -> f64,
) -> Vec<Leader> {
    let members: BTreeSet<u32> = edges.iter().map(|e| e.0).collect();
    let mut all = Vec::new();
    for &v in &members {
        let (best_out, out_max, _) = edges
            .iter()
            .filter(|e| e.0 == v)
            .map(|e| (e.1, corr(e.0, e.1), runs(e.1)))
            .fold((u32::MAX, f64::NEG_INFINITY, 0.0), |acc, x| {
                let tie = (x.1 - acc.1).abs() <= 1e-9;
                if (x.1 > acc.1 && !tie) || (tie && x.2 > acc.2) {
                    x
                } else {
                    acc
                }
            });
        let in_max = cfg
            .forward_preds(v)
            .map(|p| corr(p, v))
            .fold(f64::NEG_INFINITY, f64::max);
        let in_max = if in_max.is_finite() { in_max } else { 0.0 };
        let is_leader = cfg.forward_preds(v).all(|p| !members.contains(&p));
        all.push((
            is_leader,
            Leader {
                vertex: v,
                score: out_max - in_max,
                best_out,
            },
        ));
    }
    let chosen: Vec<Leader> = all.iter().filter(|l| l.0).map(|l| l.1.clone()).collect();
    if !chosen.is_empty() {
        return chosen;
    }
    all.into_iter()
        .map(|l| l.1)
        .max_by(|a, b| a.score.total_cmp(&b.score).then(b.vertex.cmp(&a.vertex)))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u32 = 1;
    const B: u32 = 2;
    const C: u32 = 3;
    const D: u32 = 4;
    const E: u32 = 5;
    const F: u32 = 6;
    const G: u32 = 7;
    const H: u32 = 8;
    const I: u32 = 9;
    const J: u32 = 10;
    const K: u32 = 11;
    const L: u32 = 12;

    fn vertices(l: &[Leader]) -> Vec<u32> {
        l.iter().map(|l| l.vertex).collect()
    }

    /// LIME Fig. 3, left: if-then-else A → {B, E}, B → C, E → F, C → D, F → D. The cluster
    /// is the "then" path (A→B, B→C): its leader is the decision A.
    #[test]
    fn fig3_if_then_else_leader_is_the_decision() {
        let cfg = Cfg::new([(ENTRY, A), (A, B), (A, E), (B, C), (E, F), (C, D), (F, D)]);
        let l = leaders(&cfg, &[(A, B), (B, C)], |_, _| 0.0, |_| 0.0);
        assert_eq!(vertices(&l), vec![A]);
    }

    /// Fig. 3, middle: a loop A → B, B → C (body), C → B (back edge), B → D (exit). The
    /// iteration cluster (B→C, C→B) has the loop entry B as leader, which needs the back
    /// edge C → B excluded.
    #[test]
    fn fig3_loop_leader_is_the_entry_thanks_to_the_back_edge() {
        let cfg = Cfg::new([(ENTRY, A), (A, B), (B, C), (C, B), (B, D)]);
        assert!(cfg.is_back(C, B));
        assert!(!cfg.is_back(A, B));
        let l = leaders(&cfg, &[(B, C), (C, B)], |_, _| 0.0, |_| 0.0);
        assert_eq!(vertices(&l), vec![B]);
    }

    /// The graph of LIME Fig. 3, right (also Fig. 4's): decisions at A (→ B, E) and at G
    /// (→ H, K), joined at D and at J.
    fn fig3_right() -> Cfg {
        Cfg::new([
            (ENTRY, A),
            (A, B),
            (A, E),
            (B, C),
            (E, F),
            (C, D),
            (F, D),
            (D, G),
            (G, H),
            (G, K),
            (H, I),
            (K, L),
            (I, J),
            (L, J),
        ])
    }

    /// Fig. 3, right: the same decision made at two places, A (→ B, E) and G (→ H, K); the
    /// cluster {A→E, E→F, G→K, K→L} has two leaders, A and G.
    #[test]
    fn fig3_two_leaders() {
        let cfg = fig3_right();
        let l = leaders(&cfg, &[(A, E), (E, F), (G, K), (K, L)], |_, _| 0.0, |_| 0.0);
        assert_eq!(vertices(&l), vec![A, G]);
    }

    /// LIME Fig. 4: correlations →A 0.1, A→B 0.4, A→E 0.9, D→G 0.1, G→K 0.92; β_C1 = 0.22,
    /// β_C2 = 0.91. Final scores: A in C1 0.3 × 0.22 = 0.066, A in C2 0.8 × 0.91 = 0.728,
    /// G in C2 0.82 × 0.91 = 0.7462.
    #[test]
    fn fig4_worked_example_final_scores() {
        let cfg = fig3_right();
        let corr = |a: u32, b: u32| match (a, b) {
            (ENTRY, A) => 0.1,
            (A, B) => 0.4,
            (A, E) => 0.9,
            (D, G) => 0.1,
            (G, K) => 0.92,
            _ => 0.0,
        };
        let c1 = leaders(&cfg, &[(A, B), (B, C)], corr, |_| 0.0);
        let c2 = leaders(&cfg, &[(A, E), (E, F), (G, K), (K, L)], corr, |_| 0.0);
        let fs = |l: &[Leader], v: u32, beta: f64| {
            l.iter()
                .find(|x| x.vertex == v)
                .map(|x| x.score * beta)
                .unwrap()
        };
        assert!((fs(&c1, A, 0.22) - 0.066).abs() < 1e-12);
        assert!((fs(&c2, A, 0.91) - 0.728).abs() < 1e-12);
        assert!((fs(&c2, G, 0.91) - 0.7462).abs() < 1e-12);
        assert_eq!(c2.iter().find(|x| x.vertex == G).unwrap().best_out, K);
    }
}
