//! Helpers shared by the integration tests (each file includes them with `mod common;`):
//! running the `isim` binary and checking how it ended, and, for the tests of real programs,
//! the tools check, the tracer's shared libraries and the example programs compiled with gcc.

// Every test file uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `isim ARGS`.
pub fn isim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isim"))
        .args(args)
        .output()
        .expect("run isim")
}

/// Runs `isim ARGS`, which must succeed; its standard output.
pub fn ok(args: &[&str]) -> String {
    let o = isim(args);
    assert!(
        o.status.success(),
        "isim {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// Runs `isim ARGS`, which must fail; its standard error.
pub fn fails(args: &[&str]) -> String {
    let o = isim(args);
    assert!(!o.status.success(), "isim {args:?} succeeded");
    String::from_utf8(o.stderr).expect("utf-8")
}

/// True if `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// True if every tool is on the PATH. Under `CI=true` a missing one fails the test (`.ci/run`
/// installs them); elsewhere the test is skipped with a message.
pub fn tools_present(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("missing {missing:?}: .ci/run installs them");
    }
    eprintln!("SKIPPED: needs {missing:?} (.ci/run installs them: qemu-user, gcc, valgrind)");
    false
}

/// Builds the QEMU plugin and the interposition library once per test binary, by a nested
/// cargo into `target/tracer-test` (cargo does not build cdylibs for `cargo test`); returns
/// the directory holding them, for `ISIM_TRACER_DIR`.
pub fn tracer_libs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = root().join("target").join("tracer-test");
        let out = Command::new(env!("CARGO"))
            .current_dir(root())
            .args([
                "build",
                "--release",
                "--quiet",
                "-p",
                "isim-qemu-plugin",
                "-p",
                "isim-preload",
            ])
            .arg("--target-dir")
            .arg(&target)
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "building the tracer libraries failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("release")
    })
}

/// Compiles the C program `source` with `gcc -g -O2 -pthread -Iinclude` into `dir/NAME`.
pub fn compile(dir: &Path, name: &str, source: &Path, extra: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    let out = Command::new("gcc")
        .args(["-g", "-O2", "-pthread", "-I"])
        .arg(root().join("include"))
        .arg("-o")
        .arg(&exe)
        .arg(source)
        .args(extra)
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Builds the Rust program `source`, which needs `crates` (rayon), with cargo as a package of
/// its own in `dir` (`-O0` if `o0`, else optimised, with line tables), offline: the
/// workspace's `Cargo.lock` pins the crates' versions, which building isim has already
/// fetched. Returns the binary, `STEM`.
pub fn cargo_build<S: AsRef<str>>(
    dir: &Path,
    stem: &str,
    source: &Path,
    crates: &[S],
    o0: bool,
) -> PathBuf {
    let pkg = dir.join(format!("{stem}-cargo"));
    std::fs::create_dir_all(&pkg).expect("package directory");
    let deps: String = crates
        .iter()
        .map(|c| format!("{} = \"1\"\n", c.as_ref()))
        .collect();
    let manifest = format!(
        "[package]\nname = \"{stem}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [[bin]]\nname = \"{stem}\"\npath = {:?}\n\n[dependencies]\n{deps}\n\
         [profile.release]\ndebug = 1\nopt-level = {}\n\n[workspace]\n",
        source.to_str().expect("a UTF-8 path"),
        if o0 { 0 } else { 2 }
    );
    std::fs::write(pkg.join("Cargo.toml"), manifest).expect("Cargo.toml");
    std::fs::copy(root().join("Cargo.lock"), pkg.join("Cargo.lock")).expect("Cargo.lock");
    let out = Command::new(env!("CARGO"))
        .current_dir(&pkg)
        .args(["build", "--release", "--offline", "--quiet", "--target-dir"])
        .arg(pkg.join("target"))
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    pkg.join("target/release").join(stem)
}

/// Compiles `examples/c/NAME.c` into `dir/NAME`.
pub fn example(dir: &Path, name: &str) -> PathBuf {
    compile(
        dir,
        name,
        &root().join("examples/c").join(format!("{name}.c")),
        &[],
    )
}

/// Traces `exe` with `args` (`isim trace -o TRACE -- EXE ARGS`, the tracer libraries built
/// for the tests) into `trace`, which it returns; the trace must succeed.
pub fn trace(exe: &Path, args: &[&str], trace: &Path) -> PathBuf {
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args(["trace", "-o"])
        .arg(trace)
        .arg("--")
        .arg(exe)
        .args(args)
        .output()
        .expect("run isim trace");
    assert!(
        o.status.success(),
        "tracing {}: {}",
        exe.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    trace.to_path_buf()
}

/// Declares the one static instruction of a hand-made trace: an ALU operation at 0x1000 with
/// no operands, which a core dispatches at its full width. Returns its static index.
pub fn alu_inst(w: &mut sim_frontend::TraceWriter) -> u32 {
    alu_inst_at(w, 0x1000, sim_frontend::model::SrcLoc::NONE)
}

/// An ALU operation with no operands at `pc`, from source location `loc`: its static index.
pub fn alu_inst_at(
    w: &mut sim_frontend::TraceWriter,
    pc: u64,
    loc: sim_frontend::model::SrcLoc,
) -> u32 {
    use sim_frontend::model::{BranchKind, OpClass, StaticInst};
    w.add_static(StaticInst {
        pc,
        size: 4,
        class: OpClass::IntAlu,
        branch: BranchKind::None,
        target: 0,
        srcs: vec![],
        addr_srcs: None,
        dsts: vec![],
        mem: vec![],
        block_start: true,
        loc,
    })
    .unwrap()
}

/// The engine settings of `configs/default.toml` with `sets` applied (`"core.rob_size=64"`).
pub fn engine_config(sets: &[&str]) -> sim_core::EngineConfig {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let m = isim::config::load(&root().join("configs/default.toml"), &sets).unwrap();
    sim_core::EngineConfig {
        core: m.core_params(),
        bpred: m.bpred(),
        memory: m.memory().unwrap(),
        erase: vec![],
        erasure: sim_memory::Erasure::Fill,
        locks: m.lock_model(),
        lock_call: m.lock_call(),
    }
}
