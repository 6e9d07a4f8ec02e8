//! Oracles for thread aggregation: each strategy is checked against a direct, naive
//! computation from the unaggregated profile, over random small profiles (proptest). Values
//! are whole numbers so every sum is exact and the comparisons are equalities.

use accounting::aggregate::{Data, Strategy as Agg, aggregate};
use accounting::profile::{
    CallNode, M_COMPONENT, M_VISITS, M_WORK, METRICS, Profile, Region, RegionKind, ThreadProfile,
    Values,
};
use proptest::prelude::*;
use sim_core::{COMPONENTS, Component};

/// A profile of `threads` threads over a random tree of `parents.len() + 1` nodes, with
/// per-thread visit flags and whole-number component cycles.
fn build(parents: &[usize], cells: &[Vec<(bool, Vec<u8>, u8)>]) -> Profile {
    let mut nodes = vec![CallNode {
        parent: None,
        region: 0,
    }];
    let mut regions = vec![Region {
        name: "threads".into(),
        kind: RegionKind::Root,
        file: String::new(),
        lines: (0, 0),
    }];
    for (i, &p) in parents.iter().enumerate() {
        regions.push(Region {
            name: format!("f{i}"),
            kind: RegionKind::Function,
            file: "x.c".into(),
            lines: (1, 2),
        });
        nodes.push(CallNode {
            parent: Some((p % (i + 1)) as u32),
            region: i as u32 + 1,
        });
    }
    let threads = cells
        .iter()
        .enumerate()
        .map(|(t, per_node)| {
            let values = (0..nodes.len())
                .map(|n| {
                    let (visited, comps, insts) = &per_node[n % per_node.len()];
                    let mut v: Values = [0.0; METRICS];
                    if *visited || n == 0 {
                        v[M_VISITS] = 1.0 + (t % 3) as f64;
                        for (c, &x) in comps.iter().enumerate().take(COMPONENTS) {
                            v[M_COMPONENT + c] = x as f64;
                        }
                        v[accounting::profile::M_INSTRUCTIONS] = *insts as f64;
                    }
                    let (mut work, mut sync) = (0.0, 0.0);
                    for c in Component::ALL {
                        if c.is_sync() {
                            sync += v[M_COMPONENT + c as usize];
                        } else {
                            work += v[M_COMPONENT + c as usize];
                        }
                    }
                    v[0] = work + sync;
                    v[M_WORK] = work;
                    v[2] = sync;
                    v
                })
                .collect();
            ThreadProfile {
                thread: t as u32,
                values,
            }
        })
        .collect();
    Profile {
        regions,
        nodes,
        threads,
        block_level: false,
    }
}

fn profiles() -> impl Strategy<Value = Profile> {
    (
        prop::collection::vec(0usize..8, 0..6),
        prop::collection::vec(
            prop::collection::vec(
                (
                    any::<bool>(),
                    prop::collection::vec(0u8..20, COMPONENTS),
                    0u8..50,
                ),
                1..4,
            ),
            1..8,
        ),
    )
        .prop_map(|(parents, cells)| build(&parents, &cells))
}

fn sum_over(p: &Profile, members: &[usize]) -> Vec<Values> {
    (0..p.nodes.len())
        .map(|n| {
            let mut v = [0.0; METRICS];
            for (m, x) in v.iter_mut().enumerate() {
                for &t in members {
                    *x += p.threads[t].values[n][m];
                }
            }
            v
        })
        .collect()
}

fn locations(a: &accounting::aggregate::Aggregated) -> &Vec<Vec<Values>> {
    match &a.data {
        Data::Locations(v) => v,
        Data::Set(_) => panic!("{} gave SET data", a.strategy),
    }
}

fn work(p: &Profile, t: usize) -> f64 {
    p.threads[t].values.iter().map(|v| v[M_WORK]).sum()
}

proptest! {
    #[test]
    fn none_keeps_every_thread(p in profiles()) {
        let a = aggregate(&p, Agg::None);
        let v = locations(&a);
        prop_assert_eq!(v.len(), p.threads.len());
        for (t, th) in p.threads.iter().enumerate() {
            prop_assert_eq!(&v[t], &th.values);
            prop_assert_eq!(&a.locations[t].threads, &vec![th.thread]);
        }
        prop_assert_eq!(a.value_entries(), p.threads.len() * p.nodes.len() * METRICS);
    }

    #[test]
    fn sum_is_the_element_wise_sum(p in profiles()) {
        let a = aggregate(&p, Agg::Sum);
        let all: Vec<usize> = (0..p.threads.len()).collect();
        prop_assert_eq!(locations(&a), &vec![sum_over(&p, &all)]);
        prop_assert_eq!(a.locations[0].threads.len(), p.threads.len());
        prop_assert_eq!(a.value_entries(), p.nodes.len() * METRICS);
    }

    #[test]
    fn set_holds_sum_min_max_visitors_and_squares(p in profiles()) {
        let a = aggregate(&p, Agg::Set);
        let Data::Set(stats) = &a.data else { panic!("not SET data") };
        prop_assert_eq!(stats.len(), p.nodes.len());
        for (n, s) in stats.iter().enumerate() {
            let visitors = p.threads.iter().filter(|t| t.values[n][M_VISITS] > 0.0).count();
            prop_assert_eq!(s.n as usize, visitors);
            for m in 0..METRICS {
                let col: Vec<f64> = p.threads.iter().map(|t| t.values[n][m]).collect();
                prop_assert_eq!(s.sum[m], col.iter().sum::<f64>());
                prop_assert_eq!(s.sum2[m], col.iter().map(|x| x * x).sum::<f64>());
                // The paper's min/max range over every thread; non-visitors hold 0.
                prop_assert_eq!(s.min[m], col.iter().cloned().fold(f64::INFINITY, f64::min));
                prop_assert_eq!(s.max[m], col.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
            }
        }
        prop_assert_eq!(a.value_entries(), p.nodes.len() * METRICS * 5);
    }

    #[test]
    fn key_keeps_initial_slowest_fastest_and_sums_the_rest(p in profiles()) {
        let a = aggregate(&p, Agg::Key);
        let v = locations(&a);
        let n = p.threads.len();
        // Direct: order the non-initial threads by work, slowest first (ties: lower id).
        let mut others: Vec<usize> = (1..n).collect();
        others.sort_by(|&x, &y| work(&p, y).total_cmp(&work(&p, x)).then(x.cmp(&y)));
        let slowest = others.first().copied();
        let mut rest: Vec<usize> = others.iter().skip(1).copied().collect();
        rest.sort_by(|&x, &y| work(&p, x).total_cmp(&work(&p, y)).then(x.cmp(&y)));
        let fastest = rest.first().copied();
        let mut rest: Vec<usize> = rest.into_iter().skip(1).collect();
        rest.sort_unstable();
        let mut want: Vec<(&str, Vec<usize>)> = vec![("initial", vec![0])];
        if let Some(s) = slowest { want.push(("slowest", vec![s])); }
        if let Some(f) = fastest { want.push(("fastest", vec![f])); }
        if !rest.is_empty() { want.push(("rest", rest)); }
        prop_assert_eq!(a.locations.len(), want.len());
        for (i, (role, members)) in want.iter().enumerate() {
            prop_assert_eq!(a.locations[i].role, *role);
            let ids: Vec<u32> = members.iter().map(|&t| p.threads[t].thread).collect();
            prop_assert_eq!(&a.locations[i].threads, &ids);
            prop_assert_eq!(&v[i], &sum_over(&p, members));
        }
        if let (Some(s), Some(f)) = (slowest, fastest) {
            prop_assert!(work(&p, s) >= work(&p, f));
        }
    }

    #[test]
    fn calltree_groups_threads_with_the_same_visited_paths(p in profiles()) {
        let a = aggregate(&p, Agg::Calltree);
        let v = locations(&a);
        let visited = |t: usize| -> Vec<bool> {
            p.threads[t].values.iter().map(|x| x[M_VISITS] > 0.0).collect()
        };
        let mut seen = vec![false; p.threads.len()];
        let mut firsts = Vec::new();
        for (g, loc) in a.locations.iter().enumerate() {
            let members: Vec<usize> = loc.threads.iter().map(|&id| id as usize).collect();
            firsts.push(members[0]);
            for &t in &members {
                prop_assert!(!seen[t], "thread {} in two groups", t);
                seen[t] = true;
                prop_assert_eq!(visited(t), visited(members[0]));
            }
            prop_assert_eq!(&v[g], &sum_over(&p, &members));
        }
        prop_assert!(seen.iter().all(|&s| s), "a thread is in no group");
        for g in 0..a.locations.len() {
            for h in g + 1..a.locations.len() {
                prop_assert_ne!(visited(firsts[g]), visited(firsts[h]));
            }
        }
        prop_assert!(firsts.windows(2).all(|w| w[0] < w[1]), "groups ordered by first thread");
    }

    #[test]
    fn every_location_strategy_adds_up_to_sum(p in profiles()) {
        let all: Vec<usize> = (0..p.threads.len()).collect();
        let total = sum_over(&p, &all);
        for s in [Agg::None, Agg::Key, Agg::Calltree] {
            let a = aggregate(&p, s);
            let v = locations(&a);
            let back: Vec<Values> = (0..p.nodes.len())
                .map(|n| {
                    let mut x = [0.0; METRICS];
                    for l in v {
                        for m in 0..METRICS {
                            x[m] += l[n][m];
                        }
                    }
                    x
                })
                .collect();
            prop_assert_eq!(&back, &total, "{}", s);
            let count: usize = a.locations.iter().map(|l| l.threads.len()).sum();
            prop_assert_eq!(count, p.threads.len());
        }
    }
}

#[test]
fn strategy_names_parse_back() {
    for s in Agg::ALL {
        assert_eq!(s.name().parse::<Agg>(), Ok(s));
    }
    let e = "median".parse::<Agg>().unwrap_err();
    assert!(e.contains("none, sum, set, key, calltree"), "{e}");
}
