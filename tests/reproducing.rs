//! `docs/reproducing.md`'s commands, run at reduced size, with the qualitative claim each
//! makes about the paper it reproduces checked. Claims already checked elsewhere are named on
//! that page by their test; `every_test_the_page_names_exists` keeps those references true.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, root};
use serde_json::Value;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `isim run` of a built-in workload into `dir/name` with extra arguments.
fn run(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", out.to_str().unwrap()]);
    ok(&a);
    out
}

fn config(name: &str) -> String {
    root().join("configs").join(name).display().to_string()
}

/// LIME Table 1 (and Table 2, Fig. 6) on the paper's chip (1 GHz, 16 KB L1s, one 4 MB cache
/// shared by all cores): LU's update-barrier section grows more imbalanced from 8 to 64
/// cores, and its top cause is the ownership test, a control-flow event, at both ends.
#[test]
fn lime_table_1_imbalance_grows_with_cores_on_the_papers_chip() {
    let dir = tempfile::tempdir().unwrap();
    let lime = config("lime-1ghz.toml");
    let mut imbalance = Vec::new();
    for n in [8u32, 64] {
        let cores = format!("system.cores_per_socket={n}");
        let t = n.to_string();
        let rd = run(
            dir.path(),
            &format!("lu{n}"),
            &[
                "-w", "lu-owner", "-t", &t, "-s", "12", "-c", &lime, "--set", &cores,
            ],
        );
        ok(&["lime", rd.to_str().unwrap()]);
        let l = json(&rd.join("lime.json"));
        let s = &l["sections"][0];
        assert_eq!(s["location"], "lu.c:60", "{n} cores: {s}");
        let top = &s["causes"][0];
        assert_eq!(top["kind"], "control-flow leader", "{n} cores: {top}");
        assert!(
            top["location"].as_str().unwrap().starts_with("lu.c:52"),
            "{n} cores: {top}"
        );
        assert_eq!(s["rpt_cache_miss"]["above"], 0, "{n} cores: {s}");
        imbalance.push(s["imbalance_pct"].as_f64().unwrap());
    }
    assert!(
        imbalance[1] > imbalance[0] + 20.0,
        "imbalance at 8 and 64 cores: {imbalance:?}"
    );
}

/// LIME §5.4: imbalance that comes from unequal access to a busy bus (a fixed-priority
/// arbiter favouring low core numbers) has no cause among the events LIME collects, and
/// fair arbitration removes most of it.
#[test]
fn lime_5_4_bus_arbitration_imbalance_has_no_event_cause_and_fair_arbitration_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let rd = run(
        dir.path(),
        "st8",
        &[
            "-w",
            "stream",
            "-t",
            "8",
            "-s",
            "4096",
            "--set",
            "bus.arbitration=fixed-priority",
            "--set",
            "bus.bandwidth=4GB/s",
        ],
    );
    let d = rd.to_str().unwrap();
    let text = ok(&["lime", d]);
    assert!(
        text.contains("no significant cause among the events collected"),
        "{text}"
    );
    let s = &json(&rd.join("lime.json"))["sections"][0];
    assert!(s["imbalance_pct"].as_f64().unwrap() > 20.0, "{s}");
    ok(&["whatif", "set", d, "--set", "bus.arbitration=round-robin"]);
    let w = json(&rd.join("whatif-set.json"));
    let r = &w["rows"][0];
    assert!(r["reduction_pct"].as_f64().unwrap() >= 80.0, "{r}");
}

/// Score-P §6.1 with KEY: following the synchronization time leads to the barrier under the
/// worker, where the slowest thread waits least and the fastest most.
#[test]
fn scorep_6_1_key_shows_the_slowest_thread_waiting_least_at_the_barrier() {
    let dir = tempfile::tempdir().unwrap();
    let rd = run(dir.path(), "plu", &["-w", "lu-owner", "-t", "4", "-s", "8"]);
    let p = json(&{
        ok(&["profile", rd.to_str().unwrap(), "--aggregate", "key"]);
        rd.join("profile-key.json")
    });
    let metrics: Vec<&str> = p["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let sync = metrics.iter().position(|&m| m == "sync").unwrap();
    let bar = p["call_tree"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "lu_worker / barrier")
        .expect("a barrier region under lu_worker")["id"]
        .as_u64()
        .unwrap() as usize;
    let roles: Vec<&str> = p["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["role"].as_str().unwrap())
        .collect();
    let at = |role: &str| {
        let l = roles.iter().position(|&r| r == role).unwrap();
        p["data"]["locations"][l][bar][sync].as_f64().unwrap()
    };
    assert!(
        at("slowest") < at("fastest"),
        "barrier time: slowest {} fastest {}",
        at("slowest"),
        at("fastest")
    );
}

/// Cycle stacks Fig. 4 on the paper's machine (Table 1): as cores grow, LU's DRAM share
/// shrinks (more cache) and its barrier share grows.
#[test]
fn cycle_stacks_fig_4_barrier_time_grows_and_dram_time_shrinks_with_cores() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sw");
    ok(&[
        "sweep",
        "-w",
        "lu-owner",
        "--cores",
        "4,16",
        "-s",
        "12",
        "-c",
        &config("penryn-4x4.toml"),
        "-o",
        sw.to_str().unwrap(),
    ]);
    let s = json(&sw.join("sweep.json"));
    let rows = s["series"][0]["rows"].as_array().unwrap();
    let share = |i: usize, c: &str| rows[i]["shares"][c].as_f64().unwrap();
    assert!(
        share(1, "sync-barrier") > 2.0 * share(0, "sync-barrier"),
        "{rows:?}"
    );
    assert!(share(1, "mem-dram") < share(0, "mem-dram"), "{rows:?}");
}

/// Every `tests/FILE.rs::NAME` (and `accounting/tests/…`) the page names is a test there.
#[test]
fn every_test_the_page_names_exists() {
    let page = std::fs::read_to_string(root().join("docs/reproducing.md")).unwrap();
    let mut named = 0;
    for part in page.split('`') {
        let Some((file, name)) = part.split_once("::") else {
            continue;
        };
        if !(file.starts_with("tests/") || file.starts_with("accounting/tests/"))
            || !file.ends_with(".rs")
        {
            continue;
        }
        let src = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|e| panic!("docs/reproducing.md names {file}: {e}"));
        assert!(
            src.contains(&format!("fn {name}(")),
            "docs/reproducing.md names {file}::{name}, which is not a test there"
        );
        named += 1;
    }
    assert!(named >= 15, "only {named} tests named");
}
