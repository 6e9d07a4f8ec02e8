//! Helpers the plain-harness benchmarks share: building an example program of
//! `examples/c/` the way the tracer's tests build it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `examples/c/<name>.c` into `dir/<name>` (gcc -g -O2 -pthread) and returns its
/// path; panics if gcc fails.
pub fn compile_example(root: &Path, dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let st = Command::new("gcc")
        .args(["-g", "-O2", "-pthread", "-I"])
        .arg(root.join("include"))
        .arg("-o")
        .arg(&exe)
        .arg(root.join(format!("examples/c/{name}.c")))
        .status()
        .expect("gcc");
    assert!(st.success(), "gcc {name}.c");
    exe
}
