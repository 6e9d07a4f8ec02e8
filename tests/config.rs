//! Integration tests of the machine-config library API (`isim::config`): the shipped
//! configs load and mean what their sources say, mistakes are all reported at once with
//! file, key and value, `--set` overrides work, and the resolved TOML loads back equal.

use std::path::{Path, PathBuf};

use isim::config::{self, ConfigError, ConfigErrors, Frequency, MachineConfig, SharedBy, Size};
use proptest::prelude::*;
use sim_core::bpred::{BpredConfig, GshareConfig, TageConfig};

fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")
}

/// Every `*.toml` in `configs/`, found by listing the directory.
fn shipped_configs() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(configs_dir())
        .expect("configs/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths
}

fn load_shipped(name: &str, sets: &[&str]) -> MachineConfig {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    config::load(&configs_dir().join(name), &sets).unwrap_or_else(|e| panic!("{name}:\n{e}"))
}

fn errors_of(text: &str, sets: &[&str]) -> Vec<ConfigError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match config::load_str(text, "x.toml", &sets) {
        Ok(config) => panic!("expected errors, got {config:?}"),
        Err(ConfigErrors { errors }) => errors,
    }
}

#[test]
fn every_shipped_config_loads() {
    let paths = shipped_configs();
    let names: Vec<String> = paths
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for expected in [
        "default.toml",
        "penryn-4x4.toml",
        "host-zen3.toml",
        "host-xeon.toml",
        "lime-1ghz.toml",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    for path in paths {
        if let Err(errors) = config::load(&path, &[]) {
            panic!("{} does not load:\n{errors}", path.display());
        }
    }
}

/// Provenance: every value in a shipped config names its source (a manual, a paper's table, a
/// measurement on this machine, or "isim's choice"), in a comment on its own line or, for a
/// table of values with one source, on the table's header line.
#[test]
fn every_shipped_value_names_its_source() {
    let mut missing = Vec::new();
    for path in shipped_configs() {
        let text = std::fs::read_to_string(&path).expect("readable config");
        let mut header_has_source = false;
        for (n, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or("").trim();
            let commented = line.contains('#');
            if code.starts_with('[') {
                header_has_source = commented;
            } else if code.contains('=') && !commented && !header_has_source {
                missing.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "values without a source:\n{}",
        missing.join("\n")
    );
}

#[test]
fn penryn_4x4_resolves_to_table_1() {
    let m = load_shipped("penryn-4x4.toml", &[]);
    assert_eq!(m.total_cores(), 16);
    assert_eq!(m.system.sockets, 4);
    assert_eq!(m.system.frequency, Frequency(2_670_000_000));
    assert_eq!(m.core.dispatch_width, 4);
    assert_eq!(m.core.rob_size, 96);
    assert_eq!(m.branch_predictor.type_name(), "pentium-m");
    assert_eq!(m.cache.line_size(), Size(64));

    for l1 in [&m.cache.l1i, &m.cache.l1d] {
        assert_eq!(l1.size, Size(32 * 1024));
        assert_eq!(l1.associativity, 8);
        assert_eq!((l1.data_latency, l1.tag_latency), (3, 1));
        assert_eq!(l1.sets(), 64);
    }
    let l2 = &m.cache.l2;
    assert_eq!(l2.size, Size(3 * 1024 * 1024));
    assert_eq!(l2.associativity, 12);
    assert_eq!(l2.sets(), 4096);
    assert_eq!((l2.data_latency, l2.tag_latency), (14, 3));
    assert_eq!(l2.cores_sharing(m.system.cores_per_socket), 2);
    let l3 = m.cache.l3.as_ref().expect("penryn-4x4 has an L3");
    assert_eq!(l3.size, Size(16 * 1024 * 1024));
    assert_eq!(l3.associativity, 16);
    assert_eq!(l3.sets(), 16384);
    assert_eq!((l3.data_latency, l3.tag_latency), (96, 10));
    assert_eq!(l3.cores_sharing(m.system.cores_per_socket), 4);

    assert_eq!(m.coherence.protocol.name(), "msi");
    assert_eq!(m.dram.latency.ps(), 200_000);
    assert_eq!(m.dram.latency.to_cycles(m.system.frequency), 534);
    assert_eq!(m.dram.bandwidth.bytes_per_second(), 4_000_000_000);
    // 4 GB/s at 2.67 GHz: about 1.5 bytes per cycle.
    let per_cycle = m.dram.bandwidth.bytes_per_cycle(m.system.frequency);
    assert!((per_cycle - 4.0 / 2.67).abs() < 1e-9, "{per_cycle}");
}

#[test]
fn lime_sweeps_cores_with_one_set() {
    let base = load_shipped("lime-1ghz.toml", &[]);
    assert_eq!(base.system.frequency, Frequency(1_000_000_000));
    assert_eq!(base.cache.l1d.size, Size(16 * 1024));
    assert_eq!(base.cache.l1i.size, Size(16 * 1024));
    assert_eq!(base.cache.l2.size, Size(4 * 1024 * 1024));
    assert_eq!(base.cache.l3, None);
    for cores in [8, 16, 32, 64] {
        let set = format!("system.cores_per_socket={cores}");
        let m = load_shipped("lime-1ghz.toml", &[&set]);
        assert_eq!(m.total_cores(), cores);
        assert_eq!(m.cache.l2.shared_by, SharedBy::Socket);
        assert_eq!(m.cache.l2.cores_sharing(m.system.cores_per_socket), cores);
    }
}

#[test]
fn three_mistakes_give_exactly_three_errors() {
    let text = r#"
[core]
rob_sise = 96

[cache.l1d]
size = "32QB"

[cache.l2]
size = "3MiB"
associativity = 16
"#;
    let errors = errors_of(text, &[]);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 3, "{shown:#?}");

    let unknown = errors
        .iter()
        .find(|e| e.key == "core.rob_sise")
        .expect("unknown key reported");
    assert_eq!(unknown.value, "96");
    assert!(
        unknown.message.contains("did you mean `rob_size`?"),
        "{unknown}"
    );
    assert_eq!(unknown.origin, "x.toml");
    assert_eq!(unknown.position.map(|p| p.line), Some(3));

    let unit = errors
        .iter()
        .find(|e| e.key == "cache.l1d.size")
        .expect("bad unit reported");
    assert_eq!(unit.value, "\"32QB\"");
    assert!(unit.message.contains("KiB, MiB, GiB"), "{unit}");

    let geometry = errors
        .iter()
        .find(|e| e.key == "cache.l2")
        .expect("geometry reported");
    assert!(geometry.message.contains("3MiB"), "{geometry}");
    assert!(geometry.message.contains("3072 sets"), "{geometry}");
    assert!(geometry.message.contains("power of two"), "{geometry}");

    for line in &shown {
        assert!(line.starts_with("x.toml"), "{line}");
    }
    assert_eq!(
        shown[0],
        "x.toml:3:1: core.rob_sise = 96: unknown key (did you mean `rob_size`?; allowed keys in [core]: \
         dispatch_width, rob_size, frontend_depth, outstanding_loads, outstanding_stores, \
         long_latency_cutoff, scheduler_size, latency, store_forward)"
    );
}

#[test]
fn every_kind_of_mistake_is_reported_in_one_pass() {
    let text = r#"
[system]
sockets = 0
cores_per_socket = 6
frequency = 3

[branch_predictor]
type = "gshare"
entries = 1000

[cache.l1i]
line_size = "48B"

[cache.l1d]
shared_by = 2

[cache.l2]
shared_by = 4
replacement = "mru"

[coherence]
protocol = "moesi"

[bus]
arbitration = "lottery"

[dram]
interleave = "32B"
"#;
    let errors = errors_of(text, &[]);
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    let expected = [
        "system.sockets",
        "system.frequency",
        "branch_predictor.entries",
        "cache.l1i.line_size",
        "cache.l1d.shared_by",
        "cache.l2.shared_by",
        "cache.l2.replacement",
        "coherence.protocol",
        "bus.arbitration",
        "dram.interleave",
    ];
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let mut expected_sorted = expected.to_vec();
    expected_sorted.sort_unstable();
    assert_eq!(sorted, expected_sorted, "{errors:#?}");
    let message = |key: &str| {
        errors
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.message.clone())
            .unwrap_or_default()
    };
    assert!(message("coherence.protocol").contains("allowed: \"msi\", \"mesi\""));
    assert!(message("cache.l2.shared_by").contains("allowed 1, 2, 3, 6, or \"socket\""));
    assert!(message("branch_predictor.entries").contains("nearest: 512 or 1024"));
    assert!(message("system.frequency").contains("needs a unit"));
}

/// The DRAM bank keys come all five or none, refresh both or neither, and the timings must
/// fit in the latency; a full set reaches the memory model in cycles and survives a
/// round trip through `config show`.
#[test]
fn dram_bank_keys_come_together_and_fit_in_the_latency() {
    let full = "[system]\nfrequency = \"4GHz\"\n[dram]\nlatency = \"45ns\"\nbanks = 32\nrow_size = \"8KiB\"\nt_rp = \"15ns\"\nt_rcd = \"15ns\"\nt_cas = \"15ns\"\n";
    let m = config::load_str(full, "x.toml", &[]).unwrap();
    let p = m.memory().unwrap().dram_banks;
    assert_eq!(
        (p.banks, p.row_bytes, p.t_rp, p.t_rcd, p.t_cas),
        (32, 8192, 60, 60, 60)
    );
    assert_eq!((p.t_refi, p.t_rfc), (0, 0));
    let again = config::load_str(&m.to_toml(), "y.toml", &[]).unwrap();
    assert_eq!(again, m);
    let refreshed = config::load_str(
        full,
        "x.toml",
        &["dram.t_refi=3us".into(), "dram.t_rfc=130ns".into()],
    )
    .unwrap();
    let p = refreshed.memory().unwrap().dram_banks;
    assert_eq!((p.t_refi, p.t_rfc), (12_000, 520));
    // Without bank keys: no bank model.
    let plain = config::load_str("[dram]\nlatency = \"45ns\"\n", "x.toml", &[]).unwrap();
    assert!(!plain.memory().unwrap().dram_banks.enabled());

    let one = |text: &str, sets: &[&str]| {
        let e = errors_of(text, sets);
        assert_eq!(e.len(), 1, "{e:#?}");
        (e[0].key.clone(), e[0].message.clone())
    };
    let (key, msg) = one("[dram]\nbanks = 8\nrow_size = \"8KiB\"\n", &[]);
    assert_eq!(key, "dram.banks");
    assert!(
        msg.contains("missing dram.t_rp, dram.t_rcd, dram.t_cas"),
        "{msg}"
    );
    let (key, msg) = one(full, &["dram.banks=24"]);
    assert_eq!(key, "dram.banks");
    assert!(msg.contains("power of two"), "{msg}");
    let (_, msg) = one(full, &["dram.t_cas=20ns"]);
    assert!(msg.contains("must not exceed dram.latency"), "{msg}");
    let (_, msg) = one(full, &["dram.row_size=96"]);
    assert!(msg.contains("power-of-two number of lines"), "{msg}");
    let (key, msg) = one(full, &["dram.t_refi=3us"]);
    assert_eq!(key, "dram.t_refi");
    assert!(msg.contains("missing dram.t_rfc"), "{msg}");
    let (key, _) = one("[dram]\nt_rfc = \"100ns\"\n", &[]);
    assert_eq!(key, "dram.t_rfc");
}

#[test]
fn unknown_tables_get_suggestions_too() {
    let errors = errors_of("[cahce.l1d]\nsize = \"32KiB\"\n", &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "cahce");
    assert!(
        errors[0].message.contains("did you mean `cache`?"),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].message.contains("at the top level"),
        "{}",
        errors[0]
    );
}

#[test]
fn sets_override_values() {
    let base = load_shipped("penryn-4x4.toml", &[]);
    let m = load_shipped(
        "penryn-4x4.toml",
        &[
            "core.rob_size=256",
            "system.frequency=3.2GHz",
            "cache.l2.size=6MB",
            "bus.bandwidth = 51.2GB/s",
            "cache.l2.replacement=\"srrip\"",
        ],
    );
    assert_eq!(base.core.rob_size, 96);
    assert_eq!(m.core.rob_size, 256);
    assert_eq!(m.system.frequency, Frequency(3_200_000_000));
    assert_eq!(m.cache.l2.size, Size(6 * 1024 * 1024));
    assert_eq!(m.cache.l2.sets(), 8192);
    assert_eq!(m.bus.bandwidth.bytes_per_second(), 51_200_000_000);
    assert_eq!(m.cache.l2.replacement.name(), "srrip");
    // Untouched keys keep the file's values.
    assert_eq!(m.cache.l3, base.cache.l3);
}

#[test]
fn a_set_can_add_a_missing_table() {
    let m = load_shipped(
        "lime-1ghz.toml",
        &["cache.l3.size=32MiB", "cache.l3.shared_by=socket"],
    );
    let l3 = m.cache.l3.expect("the set created an L3");
    assert_eq!(l3.size, Size(32 * 1024 * 1024));
}

#[test]
fn a_set_of_the_predictor_type_drops_the_files_parameters() {
    let m = load_shipped(
        "penryn-4x4.toml",
        &[
            "branch_predictor.type=gshare",
            "branch_predictor.history_bits=10",
        ],
    );
    assert_eq!(
        m.branch_predictor,
        BpredConfig::Gshare(GshareConfig {
            entries: 16384,
            history_bits: 10
        })
    );
}

#[test]
fn bad_sets_are_errors_naming_set() {
    let errors = errors_of(
        "[core]\nrob_size = 96\n",
        &[
            "core.rob_sise=256",
            "core.rob_size",
            "core.rob_size=big",
            "cache.l1d.size=32QB",
            "core.rob_size.x=1",
        ],
    );
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for error in &errors {
        assert_eq!(error.origin, "--set", "{error}");
        assert_eq!(error.position, None, "{error}");
    }
    let by_key = |key: &str| {
        errors
            .iter()
            .find(|e| e.key == key)
            .unwrap_or_else(|| panic!("no error for {key}: {errors:#?}"))
    };
    assert!(
        by_key("core.rob_sise")
            .message
            .contains("did you mean `rob_size`?")
    );
    assert!(by_key("core.rob_size").message.contains("key.path=value"));
    let big = errors
        .iter()
        .find(|e| e.value == "big")
        .expect("type error of a set");
    assert_eq!(big.key, "core.rob_size");
    assert!(big.message.contains("expected a whole number"), "{big}");
    assert_eq!(by_key("cache.l1d.size").value, "\"32QB\"");
    assert!(by_key("core.rob_size.x").message.contains("not a table"));
}

#[test]
fn errors_in_overridden_keys_are_charged_to_set_and_others_to_the_file() {
    let errors = errors_of("[core]\ndispatch_width = 0\n", &["core.rob_size=0"]);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        shown.contains(&"x.toml:2:1: core.dispatch_width = 0: must be at least 1".to_owned()),
        "{shown:#?}"
    );
    assert!(
        shown.contains(&"--set: core.rob_size = 0: must be at least 1".to_owned()),
        "{shown:#?}"
    );
}

#[test]
fn to_toml_of_every_shipped_config_loads_back_equal() {
    for path in shipped_configs() {
        let m = config::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        let text = m.to_toml();
        let again = config::load_str(&text, "resolved.toml", &[]).unwrap_or_else(|e| {
            panic!(
                "{}: resolved config does not load:\n{e}\n{text}",
                path.display()
            )
        });
        assert_eq!(again, m, "{}", path.display());
        // Units are written as people write them.
        if path.ends_with("penryn-4x4.toml") {
            assert!(text.contains("frequency = \"2.67GHz\""), "{text}");
            assert!(text.contains("size = \"3MiB\""), "{text}");
            assert!(text.contains("latency = \"200ns\""), "{text}");
            assert!(text.contains("bandwidth = \"25.6GB/s\""), "{text}");
            assert!(text.contains("type = \"pentium-m\""), "{text}");
        }
    }
}

#[test]
fn to_toml_fills_every_default() {
    let text = config::load_str("[system]\ncores_per_socket = 2\n", "x.toml", &[])
        .expect("valid")
        .to_toml();
    for key in [
        "rob_size = 224",
        "[core.latency]",
        "[branch_predictor]",
        "[cache.l2]",
        "interleave = \"4KiB\"",
    ] {
        assert!(text.contains(key), "{key} missing from\n{text}");
    }
    // No [cache.l3] in the input means no L3 in the machine or in its resolved config.
    assert!(!text.contains("[cache.l3]"), "{text}");
}

#[test]
fn a_type_mismatch_is_one_error_with_file_and_line() {
    let text = "[system]\nsockets = 1\n\n[core]\nrob_size = \"big\"\nrob_sise = 3\n";
    let errors = errors_of(text, &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.origin, "x.toml");
    assert_eq!(e.key, "core.rob_size");
    assert_eq!(e.value, "\"big\"");
    assert_eq!(e.position.map(|p| (p.line, p.column)), Some((5, 12)));
    assert!(e.message.contains("expected a whole number"), "{e}");
    assert!(
        e.to_string()
            .starts_with("x.toml:5:12: core.rob_size = \"big\": wrong type"),
        "{e}"
    );

    let errors = errors_of("core = 5\n", &[]);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].message.contains("expected a table"),
        "{}",
        errors[0]
    );
    assert!(!errors[0].message.contains("Raw"), "{}", errors[0]);
}

#[test]
fn a_syntax_error_names_file_and_line() {
    let errors = errors_of("[core]\nrob_size = = 3\n", &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].position.map(|p| p.line), Some(2));
    assert!(
        errors[0].to_string().starts_with("x.toml:2:"),
        "{}",
        errors[0]
    );
    assert!(errors[0].message.contains("syntax"), "{}", errors[0]);
}

#[test]
fn a_parameter_of_another_predictor_type_is_rejected() {
    let errors = errors_of(
        "[branch_predictor]\ntype = \"bimodal\"\nentries = 1024\nhistory_bits = 12\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.key, "branch_predictor.history_bits");
    assert_eq!(e.value, "12");
    assert!(e.message.contains("not of type \"bimodal\""), "{e}");
    assert!(e.message.contains("\"bimodal\" takes: entries"), "{e}");

    let errors = errors_of(
        "[branch_predictor]\ntype = \"static\"\nentries = 1024\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].message.contains("takes no parameters"),
        "{}",
        errors[0]
    );

    let errors = errors_of("[branch_predictor]\ntype = \"perceptron\"\n", &[]);
    assert!(errors[0].message.contains("\"gshare\""), "{}", errors[0]);
}

/// `type = "tage"` alone gets the documented defaults; each out-of-range parameter is one
/// error on its own key, and a history range too short for the table count is reported on
/// `max_history`.
#[test]
fn tage_parameters_default_and_are_validated() {
    let m = config::load_str("[branch_predictor]\ntype = \"tage\"\n", "x.toml", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        m.branch_predictor,
        BpredConfig::Tage(TageConfig {
            tables: 7,
            table_entries: 1024,
            tag_bits: 11,
            min_history: 5,
            max_history: 130,
            base_entries: 4096,
            loop_entries: 64,
        })
    );
    assert_eq!(m.bpred().type_name(), "tage");

    let errors = errors_of(
        "[branch_predictor]\ntype = \"tage\"\ntables = 17\ntable_entries = 1000\n\
         tag_bits = 1\nmin_history = 0\nmax_history = 2000\nbase_entries = 3\n\
         loop_entries = 0\n",
        &[],
    );
    let mut keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "branch_predictor.base_entries",
            "branch_predictor.loop_entries",
            "branch_predictor.max_history",
            "branch_predictor.min_history",
            "branch_predictor.table_entries",
            "branch_predictor.tables",
            "branch_predictor.tag_bits",
        ],
        "{errors:#?}"
    );
    let message = |key: &str| {
        errors
            .iter()
            .find(|e| e.key == format!("branch_predictor.{key}"))
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(
        message("tables").contains("between 2 and 16"),
        "{errors:#?}"
    );
    assert!(
        message("tag_bits").contains("between 2 and 16"),
        "{errors:#?}"
    );
    assert!(
        message("max_history").contains("between 1 and 1024"),
        "{errors:#?}"
    );
    assert!(
        message("table_entries").contains("power of two"),
        "{errors:#?}"
    );

    let errors = errors_of(
        "[branch_predictor]\ntype = \"tage\"\ntables = 8\nmin_history = 5\nmax_history = 10\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "branch_predictor.max_history");
    assert!(
        errors[0]
            .message
            .contains("at least min_history + tables - 1 = 12"),
        "{}",
        errors[0]
    );

    // A gshare parameter on a TAGE predictor names its owner.
    let errors = errors_of(
        "[branch_predictor]\ntype = \"tage\"\nhistory_bits = 12\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]
            .message
            .contains("\"tage\" takes: tables, table_entries"),
        "{}",
        errors[0]
    );
}

#[test]
fn an_l3_must_serve_whole_l2_groups() {
    let text =
        "[system]\ncores_per_socket = 8\n[cache.l2]\nshared_by = 4\n[cache.l3]\nshared_by = 2\n";
    let errors = errors_of(text, &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "cache.l3.shared_by");
    assert!(
        errors[0]
            .message
            .contains("multiple of cache.l2.shared_by (4)"),
        "{}",
        errors[0]
    );
}

#[test]
fn cache_geometry_rules_hold_on_both_sides() {
    // 3 MiB, 12 ways, 64 B lines: 4096 sets, fine; 16 ways: 3072 sets, not a power of two.
    assert!(
        config::load_str(
            "[cache.l2]\nsize = \"3MiB\"\nassociativity = 12\n",
            "x.toml",
            &[]
        )
        .is_ok()
    );
    assert_eq!(
        errors_of("[cache.l2]\nsize = \"3MiB\"\nassociativity = 16\n", &[]).len(),
        1
    );
    // Associativity up to the number of lines (fully associative), not beyond.
    assert!(
        config::load_str(
            "[cache.l1d]\nsize = \"4KiB\"\nassociativity = 64\n",
            "x.toml",
            &[]
        )
        .is_ok()
    );
    let errors = errors_of("[cache.l1d]\nsize = \"4KiB\"\nassociativity = 128\n", &[]);
    assert!(
        errors[0].message.contains("allowed 1 to 64"),
        "{}",
        errors[0]
    );
    // Line sizes must agree across levels.
    let errors = errors_of("[cache.l2]\nline_size = 128\nsize = \"1MiB\"\n", &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "cache.l2.line_size");
}

#[test]
fn load_names_the_file_it_cannot_read() {
    let missing = Path::new("/nonexistent/isim/machine.toml");
    let errors = config::load(missing, &[]).expect_err("no such file").errors;
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].origin, missing.display().to_string());
    assert!(errors[0].message.contains("cannot read"), "{}", errors[0]);
}

#[test]
fn load_reads_a_written_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.toml");
    std::fs::write(&path, "[system]\ncores_per_socket = 4\n").expect("write");
    let m = config::load(&path, &[]).expect("valid");
    assert_eq!(m.total_cores(), 4);
    let errors = {
        std::fs::write(&path, "[system]\ncores_per_sockets = 4\n").expect("write");
        config::load(&path, &[]).expect_err("typo").errors
    };
    assert_eq!(errors[0].origin, path.display().to_string());
}

#[test]
fn default_config_is_the_default_file() {
    let m = config::default_config();
    assert_eq!(m, load_shipped("default.toml", &[]));
    assert_eq!(m.total_cores(), 8);
}

proptest! {
    /// Any machine reachable through overrides resolves to TOML that loads back equal.
    #[test]
    fn overridden_configs_round_trip(
        rob in 4u32..1024,
        hz in 1u64..10_000_000_000,
        dram_ps in 1u64..1_000_000_000,
        bw in 1u64..1_000_000_000_000,
        l2_sets_log2 in 6u32..14,
        ways in 1u32..24,
    ) {
        let l2_size = (1u64 << l2_sets_log2) * u64::from(ways) * 64;
        let sets = vec![
            format!("core.rob_size={rob}"),
            format!("system.frequency={}", Frequency(hz)),
            format!("dram.latency={}", config::Time(dram_ps)),
            format!("dram.bandwidth={}", config::Bandwidth(bw)),
            format!("cache.l2.size={l2_size}"),
            format!("cache.l2.associativity={ways}"),
        ];
        let m = config::load_str(config::DEFAULT_TOML, "default.toml", &sets)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(m.system.frequency.hz(), hz);
        prop_assert_eq!(m.cache.l2.sets(), 1u64 << l2_sets_log2);
        let again = config::load_str(&m.to_toml(), "resolved.toml", &[])
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again, m);
    }

    /// Unit strings from the public API round-trip through Display.
    #[test]
    fn public_units_round_trip(v in any::<u64>()) {
        prop_assert_eq!(Size(v).to_string().parse::<Size>(), Ok(Size(v)));
        prop_assert_eq!(Frequency(v).to_string().parse::<Frequency>(), Ok(Frequency(v)));
    }
}

#[test]
fn public_units_reject_garbage() {
    for bad in ["32QB", "-1KiB", "", "GHz"] {
        assert!(bad.parse::<Size>().is_err(), "{bad}");
    }
    for bad in ["GHz", "", "-1GHz", "2.67"] {
        assert!(bad.parse::<Frequency>().is_err(), "{bad}");
    }
}

/// docs/config.md mentions every key of every table, including each predictor type's
/// parameters, so a new key cannot ship undocumented.
#[test]
fn the_reference_documents_every_key() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config.md"))
            .expect("docs/config.md exists");
    let mut resolved = Vec::new();
    for kind in [
        "static",
        "bimodal",
        "gshare",
        "tournament",
        "pentium-m",
        "tage",
    ] {
        let set = format!("branch_predictor.type={kind}");
        resolved.push(load_shipped("default.toml", &[&set]).to_toml());
        assert!(
            docs.contains(&format!("`\"{kind}\"`")),
            "type {kind} undocumented"
        );
    }
    fn keys(table: &toml::Table, out: &mut Vec<String>) {
        for (key, value) in table {
            out.push(key.clone());
            if let toml::Value::Table(inner) = value {
                keys(inner, out);
            }
        }
    }
    let mut all = Vec::new();
    for text in resolved {
        keys(&text.parse::<toml::Table>().expect("valid TOML"), &mut all);
    }
    for key in all {
        assert!(
            docs.contains(&format!("`{key}`"))
                || docs.contains(&format!("[{key}"))
                || docs.contains(&format!(".{key}]")),
            "{key} undocumented"
        );
    }
}

#[test]
fn prefetchers_default_and_are_validated() {
    // The default machine prefetches by stride at the L1D (degree 2) and the L2 (degree 16), and
    // those settings reach the memory model.
    let m = config::load_str("", "x.toml", &[]).unwrap();
    let mem = m.memory().unwrap();
    assert_eq!(
        (mem.l1d_prefetch.kind, mem.l1d_prefetch.degree),
        (sim_memory::PrefetchKind::Stride, 2)
    );
    assert_eq!(
        (mem.l2_prefetch.kind, mem.l2_prefetch.degree),
        (sim_memory::PrefetchKind::Stride, 16)
    );
    let m = config::load_str(
        "[cache.l1d]\nprefetcher = \"next-line\"\nprefetch_degree = 3\n[cache.l2]\nprefetcher = \"none\"\n",
        "x.toml",
        &[],
    )
    .unwrap()
    .memory()
    .unwrap();
    assert_eq!(
        (
            m.l1d_prefetch.kind,
            m.l1d_prefetch.degree,
            m.l2_prefetch.kind
        ),
        (
            sim_memory::PrefetchKind::NextLine,
            3,
            sim_memory::PrefetchKind::None
        )
    );
    // Mistakes: a prefetcher where none is modelled, an unknown kind, a degree out of range.
    let text = "[cache.l1i]\nprefetcher = \"stride\"\n[cache.l1d]\nprefetcher = \"markov\"\n[cache.l2]\nprefetch_degree = 0\n";
    let errors = errors_of(text, &[]);
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "cache.l1i.prefetcher",
            "cache.l1d.prefetcher",
            "cache.l2.prefetch_degree"
        ],
        "{errors:#?}"
    );
    assert!(
        errors[0].message.contains("cache.l1d and cache.l2 only"),
        "{errors:#?}"
    );
    assert!(
        errors[1].message.contains("\"next-line\", \"stride\""),
        "{errors:#?}"
    );
    assert!(errors[2].message.contains("1 to 32"), "{errors:#?}");
    assert!(errors.iter().all(|e| e.position.is_some()), "{errors:#?}");
}

#[test]
fn a_tlb_table_is_optional_filled_from_its_defaults_and_validated() {
    // Omitted: no translation. Present, even empty: Skylake's data TLBs, which reach the core.
    let m = config::load_str("", "x.toml", &[]).unwrap();
    assert!(m.tlb.is_none() && m.core_params().tlb.is_none());
    let m = config::load_str("[tlb]\nwalk_latency = 120\n", "x.toml", &[]).unwrap();
    let t = m
        .core_params()
        .tlb
        .expect("a [tlb] table gives the core a TLB");
    assert_eq!(
        (
            t.page_shift,
            t.l1_entries,
            t.l1_ways,
            t.l2_entries,
            t.l2_ways,
            t.l2_latency,
            t.walk_latency,
            t.walkers
        ),
        (12, 64, 4, 1536, 12, 7, 120, 2)
    );
    // The resolved config writes the table and loads back equal; without one, writes none.
    let text = m.to_toml();
    assert!(
        text.contains("[tlb]") && text.contains("walk_latency = 120"),
        "{text}"
    );
    assert_eq!(config::load_str(&text, "r.toml", &[]).unwrap(), m);
    let none = config::load_str("", "x.toml", &[]).unwrap().to_toml();
    assert!(!none.contains("[tlb]"), "{none}");
    // --set creates the table.
    let m = config::load_str("", "x.toml", &["tlb.page_size=2MiB".to_string()]).unwrap();
    assert_eq!(m.core_params().tlb.map(|t| t.page_shift), Some(21));
    // Mistakes, each named by its key: a page size that is not a power of two, ways that do
    // not divide the entries into a power-of-two number of sets, no walker, an unknown key.
    let errors = errors_of(
        "[tlb]\npage_size = \"6KiB\"\nl1_associativity = 3\nwalkers = 0\n",
        &[],
    );
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        ["tlb.page_size", "tlb.l1_associativity", "tlb.walkers"],
        "{errors:?}"
    );
    assert!(errors[0].message.contains("power of two"), "{}", errors[0]);
    assert!(
        errors[1].message.contains("l1_entries (64)"),
        "{}",
        errors[1]
    );
    let errors = errors_of("[tlb]\nentries = 64\n", &[]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].key.contains("entries"), "{}", errors[0]);
}

/// `[locks]`: `futex` fills its costs from the documented defaults; a futex cost under
/// `fifo` (the default) and an unknown model are errors naming the key.
#[test]
fn the_lock_model_takes_its_costs_only_with_futex() {
    let m = config::load_str(
        "[locks]\nmodel = \"futex\"\nfutex_wake = 300\n",
        "x.toml",
        &[],
    )
    .unwrap();
    assert_eq!(
        m.lock_model(),
        sim_core::LockModel::Futex {
            wait: 660.0,
            wake: 300.0,
            latency: 140_000.0,
            spin: 9000.0
        }
    );
    assert_eq!(
        load_shipped("default.toml", &[]).lock_model(),
        sim_core::LockModel::Fifo
    );

    let errors = errors_of("[locks]\nfutex_wait = 100\n", &[]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "locks.futex_wait");
    assert!(
        errors[0].message.contains("model = \"futex\""),
        "{}",
        errors[0]
    );

    let errors = errors_of("", &["locks.model=fair"]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].key, "locks.model");
    assert!(errors[0].message.contains("\"futex\""), "{}", errors[0]);
}
