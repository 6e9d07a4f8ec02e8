//! Peer-oracle test of the cache arrays: valgrind's callgrind cache simulator and isim's
//! [`CallgrindModel`] (the same set-associative arrays and LRU as the real hierarchy, with
//! callgrind's semantics) must count the same D1 and LL data misses on the same address stream.
//!
//! The C kernels in `tests/data/callgrind_kernels.c` are compiled with `gcc -O2` and run under
//! `valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --toggle-collect=<kernel>` for
//! several cache geometries and access patterns (streaming with line-straddling loads, repeated
//! passes over working sets slightly larger than D1 or LL, set conflicts, pseudo-random unaligned
//! read-modify-writes). The test rebuilds each kernel's exact data address stream from the buffer
//! and stack addresses the program prints, replays it through the model, prints a side-by-side
//! table (`cargo test -p sim-memory --test callgrind_oracle -- --nocapture`) and requires equal
//! counts. Valgrind and gcc (with valgrind's `callgrind.h`) are required: without them the test
//! fails and says what to install.
//!
//! What the collected kernel does, and hence what the model replays (see the C file's header):
//! main switches instrumentation on just before the call, which clears callgrind's caches; the
//! `call` stores the return address (simulated, not collected); the kernel's code lines are
//! fetched (through I1 into the unified LL); the loop's loads (and stores) run; the `ret` loads
//! the return address (collected). The kernels are leaf functions without stack frames, so there
//! are no other accesses; the test checks this by comparing callgrind's Dr + Dw with its own
//! count. Main's own stack accesses after the client request are older than the `call` and never
//! touched again, so in a true-LRU cache they behave like empty ways and need not be replayed.
//!
//! The rows with stride 20 and the random rows make unaligned 8-byte accesses, some of which
//! straddle two lines: callgrind counts such an access once and, when it misses D1 (in either
//! line), looks up both of its lines in LL. A model that sends only the missing line to LL differs
//! from callgrind in LL state and, rarely, in DL misses; the "random RMW over 2xLL" rows catch it.
//!
//! x86-64 Linux only: the kernels read the stack pointer with x86-64 assembly.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sim_memory::callgrind::{CallgrindCounts, CallgrindModel, Geometry};

/// Multiplier of the kernels' 64-bit LCG (Knuth's MMIX constants); must match the C file.
const LCG_A: u64 = 6364136223846793005;
/// Increment of the kernels' LCG; must match the C file.
const LCG_C: u64 = 1442695040888963407;
/// Bytes of every kernel data access (u64 loads and stores; the `call`/`ret` slot too).
const ACCESS: u32 = 8;

/// One cache configuration, given to callgrind as `--I1`, `--D1` and `--LL`.
#[derive(Debug, Clone, Copy)]
struct Machine {
    i1: Geometry,
    d1: Geometry,
    ll: Geometry,
}

impl Machine {
    fn new(l1: (u64, u32, u32), ll: (u64, u32, u32)) -> Machine {
        let g = |(size, assoc, line)| Geometry { size, assoc, line };
        Machine {
            i1: g(l1),
            d1: g(l1),
            ll: g(ll),
        }
    }

    fn label(&self) -> String {
        let g = |g: Geometry| format!("{},{},{}", g.size, g.assoc, g.line);
        format!("D1 {} LL {}", g(self.d1), g(self.ll))
    }
}

/// What the collected kernel does (the C program's arguments).
#[derive(Debug, Clone, Copy)]
enum Kernel {
    /// `passes` passes of `n` loads at `base + i * stride`.
    Strided { n: u64, stride: u64, passes: u64 },
    /// `count` load+store pairs at `base + ((x >> 24) & mask)` with `x` an LCG from `seed`.
    Lcg { mask: u64, count: u64, seed: u64 },
}

impl Kernel {
    fn function(&self) -> &'static str {
        match self {
            Kernel::Strided { .. } => "isim_strided",
            Kernel::Lcg { .. } => "isim_lcg",
        }
    }

    fn args(&self) -> [String; 4] {
        match *self {
            Kernel::Strided { n, stride, passes } => [
                "strided".into(),
                n.to_string(),
                stride.to_string(),
                passes.to_string(),
            ],
            Kernel::Lcg { mask, count, seed } => [
                "lcg".into(),
                format!("{mask:#x}"),
                count.to_string(),
                seed.to_string(),
            ],
        }
    }
}

/// One row of the comparison.
struct Case {
    machine: Machine,
    pattern: String,
    kernel: Kernel,
}

/// The access patterns run on machine `m`, sized from its geometry.
fn cases(m: Machine) -> Vec<Case> {
    let line = m.d1.line as u64;
    let (s1, s2) = (m.d1.size, m.ll.size);
    let mut v = Vec::new();
    let mut add = |pattern: String, kernel| {
        v.push(Case {
            machine: m,
            pattern,
            kernel,
        })
    };
    // Streaming, every 20 bytes: some loads straddle two lines.
    add(
        "stream 2xLL, stride 20".into(),
        Kernel::Strided {
            n: 2 * s2 / 20,
            stride: 20,
            passes: 1,
        },
    );
    // A working set 1/8 larger than D1: LRU loses every line of the overfull sets.
    add(
        "8 passes over 9/8 D1".into(),
        Kernel::Strided {
            n: (s1 + s1 / 8) / line,
            stride: line,
            passes: 8,
        },
    );
    // The same for LL.
    add(
        "3 passes over 9/8 LL".into(),
        Kernel::Strided {
            n: (s2 + s2 / 8) / line,
            stride: line,
            passes: 3,
        },
    );
    // assoc + 1 lines in one LL set (hence one D1 set): both levels thrash.
    add(
        format!("LL set conflict, {} lines", m.ll.assoc + 1),
        Kernel::Strided {
            n: m.ll.assoc as u64 + 1,
            stride: s2 / m.ll.assoc as u64,
            passes: 200,
        },
    );
    // Pseudo-random unaligned read-modify-writes: mostly D1 hits and misses, LL hits.
    add(
        "random RMW over 4xD1".into(),
        Kernel::Lcg {
            mask: 4 * s1 - 1,
            count: 100_000,
            seed: 1,
        },
    );
    // ... and about half LL misses.
    add(
        "random RMW over 2xLL".into(),
        Kernel::Lcg {
            mask: 2 * s2 - 1,
            count: (4 * s2 / line).max(200_000),
            seed: 12345,
        },
    );
    v
}

/// Callgrind's totals and the addresses the program printed.
struct Run {
    events: HashMap<String, u64>,
    base: u64,
    ret_slot: u64,
    code: u64,
}

impl Run {
    fn ev(&self, name: &str) -> u64 {
        self.events.get(name).copied().unwrap_or(0)
    }
}

/// Runs `cmd` and returns its stdout, or panics with `hint` if it cannot be started.
fn run_tool(cmd: &mut Command, hint: &str) -> std::process::Output {
    match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!("cannot run {:?}: {e}. {hint}", cmd.get_program()),
    }
}

const INSTALL: &str = "This test needs valgrind (with its headers, valgrind/callgrind.h), gcc and \
    binutils (nm): e.g. `apt-get install valgrind gcc binutils` (Debian/Ubuntu) or \
    `dnf install valgrind valgrind-devel gcc binutils` (Fedora).";

/// Compiles the kernels into `dir`; returns the binary and the code size of each kernel.
fn build(dir: &Path) -> (PathBuf, HashMap<String, u64>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/callgrind_kernels.c");
    let bin = dir.join("callgrind_kernels");
    let out = run_tool(
        Command::new("gcc").arg("-O2").arg("-o").arg(&bin).arg(&src),
        INSTALL,
    );
    assert!(
        out.status.success(),
        "gcc -O2 {} failed:\n{}\n{INSTALL}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Code sizes, to replay the kernels' instruction lines into the unified LL.
    let out = run_tool(Command::new("nm").arg("-S").arg(&bin), INSTALL);
    assert!(out.status.success(), "nm -S failed. {INSTALL}");
    let mut sizes = HashMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let [_, size, _, name] = f[..]
            && name.starts_with("isim_")
        {
            sizes.insert(name.to_string(), u64::from_str_radix(size, 16).unwrap());
        }
    }
    assert_eq!(
        sizes.len(),
        2,
        "kernel symbols not found by nm -S in {}",
        bin.display()
    );
    (bin, sizes)
}

fn hex(s: &str, key: &str) -> u64 {
    let v = s
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in the kernel's output {s:?}"));
    u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
}

/// Runs one case under callgrind.
fn callgrind(bin: &Path, dir: &Path, idx: usize, c: &Case) -> Run {
    let g = |g: Geometry| format!("{},{},{}", g.size, g.assoc, g.line);
    let out_file = dir.join(format!("callgrind.out.{idx}"));
    let m = c.machine;
    let out = run_tool(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--cache-sim=yes")
            .arg("--instr-atstart=no")
            .arg(format!("--toggle-collect={}", c.kernel.function()))
            .arg(format!("--I1={}", g(m.i1)))
            .arg(format!("--D1={}", g(m.d1)))
            .arg(format!("--LL={}", g(m.ll)))
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(bin)
            .args(c.kernel.args()),
        INSTALL,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "valgrind failed on {} / {}:\n{stdout}\n{}",
        m.label(),
        c.pattern,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", out_file.display()));
    // `events: Ir Dr ...` names the columns of the `totals:` (or `summary:`) line; trailing
    // zero columns may be omitted.
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|s| s.split_whitespace().collect::<Vec<_>>())
    };
    let names = field("events:").expect("no events: line in the callgrind output");
    let values = field("totals:")
        .or_else(|| field("summary:"))
        .expect("no totals: or summary: line in the callgrind output");
    let events = names
        .iter()
        .zip(values.iter().map(|v| v.parse::<u64>().unwrap()))
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    Run {
        events,
        base: hex(&stdout, "base="),
        ret_slot: hex(&stdout, "ret_slot="),
        code: hex(&stdout, "code="),
    }
}

/// Replays the collected kernel's accesses through the model.
fn replay(c: &Case, run: &Run, code_size: u64) -> CallgrindCounts {
    let m = c.machine;
    let mut model = CallgrindModel::new(m.i1, m.d1, m.ll);
    // Before collection starts: the call's store of the return address, then the kernel's
    // instruction lines. At -O2 every line of these small kernels up to the first data access
    // is fetched before that access (straight-line prologue, loop starting with the load), and
    // later lines hold only the loop tail and `ret`; after the first iteration the loop hits
    // in I1, so no further instruction traffic reaches LL.
    model.data(run.ret_slot, ACCESS);
    let iline = m.i1.line as u64;
    let mut a = run.code & !(iline - 1);
    while a < run.code + code_size {
        model.ifetch(a, 1);
        a += iline;
    }
    model.counts = CallgrindCounts::default();
    match c.kernel {
        Kernel::Strided { n, stride, passes } => {
            for _ in 0..passes {
                for i in 0..n {
                    model.data(run.base + i * stride, ACCESS);
                }
            }
        }
        Kernel::Lcg { mask, count, seed } => {
            let mut x = seed;
            for _ in 0..count {
                x = x.wrapping_mul(LCG_A).wrapping_add(LCG_C);
                let addr = run.base + ((x >> 24) & mask);
                model.data(addr, ACCESS); // load
                model.data(addr, ACCESS); // store
            }
        }
    }
    model.data(run.ret_slot, ACCESS); // ret
    model.counts
}

/// One compared row: (callgrind D refs, D1, DL), isim's counts.
struct Row {
    cg: (u64, u64, u64),
    isim: CallgrindCounts,
}

#[test]
fn callgrind_and_model_count_the_same_data_misses() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("callgrind_oracle.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let vg = run_tool(Command::new("valgrind").arg("--version"), INSTALL);
    assert!(vg.status.success(), "valgrind --version failed. {INSTALL}");
    let (bin, sizes) = build(&dir);

    let machines = [
        // A common desktop L1 and a large LL.
        Machine::new((32768, 8, 64), (8388608, 16, 64)),
        // Small caches: quick to fill, many LL misses.
        Machine::new((4096, 2, 64), (65536, 4, 64)),
        // 32-byte lines.
        Machine::new((8192, 4, 32), (262144, 8, 32)),
        // Direct-mapped D1 and a 2-way LL.
        Machine::new((2048, 1, 32), (32768, 2, 32)),
    ];
    let cases: Vec<Case> = machines.into_iter().flat_map(cases).collect();

    // valgrind is slow: run the cases in parallel, one process each.
    let rows: Vec<Mutex<Option<Row>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = cases.get(i) else { break };
                    let run = callgrind(&bin, &dir, i, c);
                    let isim = replay(c, &run, sizes[c.kernel.function()]);
                    let cg = (
                        run.ev("Dr") + run.ev("Dw"),
                        run.ev("D1mr") + run.ev("D1mw"),
                        run.ev("DLmr") + run.ev("DLmw"),
                    );
                    *rows[i].lock().unwrap() = Some(Row { cg, isim });
                }
            });
        }
    });
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|r| r.into_inner().unwrap().expect("case not run"))
        .collect();

    println!(
        "{:<36} {:<28} {:>10} {:>11} {:>11} {:>11} {:>11}",
        "geometry (size,assoc,line)",
        "pattern",
        "D refs",
        "cg D1 miss",
        "isim D1",
        "cg DL miss",
        "isim DL"
    );
    let mut bad = Vec::new();
    for (c, r) in cases.iter().zip(&rows) {
        let ok = r.cg == (r.isim.d_refs, r.isim.d1_misses, r.isim.dl_misses);
        println!(
            "{:<36} {:<28} {:>10} {:>11} {:>11} {:>11} {:>11}{}",
            c.machine.label(),
            c.pattern,
            r.cg.0,
            r.cg.1,
            r.isim.d1_misses,
            r.cg.2,
            r.isim.dl_misses,
            if ok { "" } else { "  <-- differs" }
        );
        if r.cg.0 != r.isim.d_refs {
            bad.push(format!(
                "{} / {}: callgrind counted {} data accesses, the replay {}: the kernel's code \
                 does not match the replayed stream (check `objdump -d` of the kernels)",
                c.machine.label(),
                c.pattern,
                r.cg.0,
                r.isim.d_refs
            ));
        } else if !ok {
            bad.push(format!(
                "{} / {}: D1 misses callgrind {} isim {}, DL misses callgrind {} isim {}",
                c.machine.label(),
                c.pattern,
                r.cg.1,
                r.isim.d1_misses,
                r.cg.2,
                r.isim.dl_misses
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "callgrind and CallgrindModel disagree (outputs kept in {}):\n{}",
        dir.display(),
        bad.join("\n")
    );
    std::fs::remove_dir_all(&dir).ok();
}
