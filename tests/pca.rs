//! `isim pca` end to end over three small sweeps: the components are ordered, orthonormal and
//! explain all the variance; each score is the run's centred shares projected on the loadings
//! (recomputed here from the shares `pca.json` lists); dropped columns are really constant;
//! `--cores` selects rows; the charts hold one line and cross per workload and one link per
//! merge; unfinished sweeps and too few runs are refused.

mod common;

use std::path::Path;

use common::{fails, ok};

/// The x coordinates of the points of series `series`'s line in a pca.svg, in line order.
fn series_xs(svg: &str, series: &str) -> Vec<f64> {
    let group = svg
        .split(&format!("data-series=\"{series}\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no series {series}"));
    group
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').next().unwrap().parse().unwrap())
        .collect()
}

fn sweep(dir: &Path, workload: &str, size: &str) -> String {
    let out = dir.join(workload);
    ok(&[
        "sweep",
        "--workload",
        workload,
        "--cores",
        "1,2,4",
        "--size",
        size,
        "--out",
        out.to_str().unwrap(),
    ]);
    out.to_str().unwrap().to_string()
}

#[test]
fn pca_over_sweeps_is_consistent_and_charts_follow_core_counts() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep(dir.path(), "lu-owner", "4");
    let b = sweep(dir.path(), "stream", "2048");
    let c = sweep(dir.path(), "lock-contention", "200");
    let out = dir.path().join("pca");
    let text = ok(&["pca", &a, &b, &c, "--out", out.to_str().unwrap()]);
    assert!(
        text.contains("cumulative %") && text.contains("PC 1"),
        "{text}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("pca.json")).unwrap()).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    let cols: Vec<&str> = j["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let comps = j["components"].as_array().unwrap();
    assert!(!comps.is_empty() && comps.len() <= cols.len());
    let var: Vec<f64> = comps
        .iter()
        .map(|c| c["variance"].as_f64().unwrap())
        .collect();
    assert!(var.windows(2).all(|w| w[0] >= w[1]), "{var:?}");
    let last = comps.last().unwrap()["cumulative"].as_f64().unwrap();
    assert!((last - 1.0).abs() < 1e-9, "{last}");
    let load: Vec<Vec<f64>> = comps
        .iter()
        .map(|c| {
            cols.iter()
                .map(|n| c["loadings"][*n].as_f64().unwrap())
                .collect()
        })
        .collect();
    for (k, w) in load.iter().enumerate() {
        for (l, v) in load.iter().enumerate() {
            let d: f64 = w.iter().zip(v).map(|(x, y)| x * y).sum();
            let expect = if k == l { 1.0 } else { 0.0 };
            assert!((d - expect).abs() < 1e-9, "PC{k}·PC{l} = {d}");
        }
    }
    // Scores: centred shares (covariance PCA: not scaled) projected on the loadings.
    let share = |r: &serde_json::Value, n: &str| r["shares"][n].as_f64().unwrap();
    let means: Vec<f64> = cols
        .iter()
        .map(|n| rows.iter().map(|r| share(r, n)).sum::<f64>() / rows.len() as f64)
        .collect();
    for r in rows {
        for (k, w) in load.iter().enumerate() {
            let s: f64 = cols
                .iter()
                .enumerate()
                .map(|(j, n)| (share(r, n) - means[j]) * w[j])
                .sum();
            let got = r["scores"][k].as_f64().unwrap();
            assert!((s - got).abs() < 1e-9, "{}: PC{k} {s} vs {got}", r["label"]);
        }
    }
    for d in j["dropped_columns"].as_array().unwrap() {
        let n = d.as_str().unwrap();
        let v0 = share(&rows[0], n);
        assert!(
            rows.iter().all(|r| share(r, n) == v0),
            "{n} is not constant"
        );
    }
    // Every column (one per cycle-stack component) is either kept or dropped.
    assert_eq!(
        cols.len() + j["dropped_columns"].as_array().unwrap().len(),
        sim_core::COMPONENTS
    );

    // Charts: one dotted line and one cross per workload; lu-owner's line runs 1 → 2 → 4 cores.
    let svg = std::fs::read_to_string(out.join("pca.svg")).unwrap();
    assert_eq!(svg.matches("class=\"series\"").count(), 3);
    assert_eq!(svg.matches("class=\"cross\"").count(), 3);
    let lu_rows: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["workload"] == "lu-owner")
        .collect();
    let mut by_cores: Vec<(u64, f64)> = lu_rows
        .iter()
        .map(|r| {
            (
                r["cores"].as_u64().unwrap(),
                r["scores"][0].as_f64().unwrap(),
            )
        })
        .collect();
    by_cores.sort_by_key(|p| p.0);
    let xs = series_xs(&svg, "lu-owner");
    assert_eq!(xs.len(), 3);
    // Pixel x grows with the PC 1 score: the order along the line is the core-count order.
    for i in 0..2 {
        let (ds, dx) = (by_cores[i + 1].1 - by_cores[i].1, xs[i + 1] - xs[i]);
        assert!(ds * dx >= 0.0, "{by_cores:?} {xs:?}");
    }
    let dendro = std::fs::read_to_string(out.join("dendrogram.svg")).unwrap();
    assert_eq!(dendro.matches("class=\"link\"").count(), 8);
    assert_eq!(dendro.matches("class=\"leaf-label\"").count(), 9);
    let heights: Vec<f64> = j["dendrogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["height"].as_f64().unwrap())
        .collect();
    assert!(
        heights.windows(2).all(|w| w[0] <= w[1] + 1e-12),
        "{heights:?}"
    );

    // --cores selects rows.
    let out2 = dir.path().join("pca2");
    ok(&[
        "pca",
        &a,
        &b,
        &c,
        "--cores",
        "1,4",
        "--out",
        out2.to_str().unwrap(),
    ]);
    let j2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("pca.json")).unwrap()).unwrap();
    let cores: Vec<u64> = j2["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cores"].as_u64().unwrap())
        .collect();
    assert_eq!(cores, [1, 4, 1, 4, 1, 4]);
}

/// Fig. 9: `--join sizes` draws one line per workload and core count from the smallest input
/// to the largest (the cross), instead of one per workload and size across core counts.
#[test]
fn join_sizes_draws_a_line_per_core_count_from_small_to_large_input() {
    let dir = tempfile::tempdir().unwrap();
    let rx = dir.path().join("rx");
    ok(&[
        "sweep",
        "-w",
        "radix-miss",
        "--cores",
        "2,4",
        "-s",
        "500,2000",
        "--out",
        rx.to_str().unwrap(),
    ]);
    let lu = sweep(dir.path(), "lu-owner", "4,8");
    let out = dir.path().join("pca");
    ok(&[
        "pca",
        rx.to_str().unwrap(),
        &lu,
        "--join",
        "sizes",
        "--cores",
        "2,4",
        "--out",
        out.to_str().unwrap(),
    ]);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("pca.json")).unwrap()).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8, "2 workloads x 2 core counts x 2 sizes");
    let mut series: Vec<&str> = rows.iter().map(|r| r["series"].as_str().unwrap()).collect();
    series.sort_unstable();
    series.dedup();
    assert_eq!(
        series,
        [
            "lu-owner 2c",
            "lu-owner 4c",
            "radix-miss 2c",
            "radix-miss 4c"
        ]
    );
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert!(labels.contains(&"radix-miss 4c s2000"), "{labels:?}");
    let svg = std::fs::read_to_string(out.join("pca.svg")).unwrap();
    assert_eq!(
        svg.matches("class=\"series\"").count(),
        4,
        "one line per series"
    );
    assert_eq!(
        svg.matches("class=\"cross\"").count(),
        4,
        "the large input of each"
    );
    // Each line has a point per size, in size order: its last point (the cross) is the large
    // input, whose PC 1 score pca.json gives.
    let xs = series_xs(&svg, "radix-miss 4c");
    assert_eq!(xs.len(), 2, "{xs:?}");
    let score = |label: &str| {
        rows.iter().find(|r| r["label"] == label).unwrap()["scores"][0]
            .as_f64()
            .unwrap()
    };
    let (small, large) = (score("radix-miss 4c s500"), score("radix-miss 4c s2000"));
    assert_eq!(
        xs[0] < xs[1],
        small < large,
        "the line runs from s500 to s2000"
    );
}

#[test]
fn pca_refuses_unfinished_sweeps_and_single_runs() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep(dir.path(), "lu-owner", "4");
    std::fs::remove_file(Path::new(&a).join("sweep.json")).unwrap();
    let out = dir.path().join("p");
    let e = fails(&["pca", &a, "--out", out.to_str().unwrap()]);
    assert!(e.contains("the sweep has not finished"), "{e}");
    let run = Path::new(&a).join("runs/default_s4_c2");
    let e = fails(&["pca", run.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(e.contains("at least two rows"), "{e}");
    let e = fails(&["pca", "/nonexistent/dir", "--out", out.to_str().unwrap()]);
    assert!(e.contains("no such directory"), "{e}");
}
