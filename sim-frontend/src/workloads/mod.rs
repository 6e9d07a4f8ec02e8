//! Built-in workload generators: parameterized multithreaded kernels whose behaviour — where
//! the imbalance comes from, which load misses, what the timing should be — is known by
//! construction. They write the same trace format a traced program would, with a synthetic
//! source map, so every analysis can be demonstrated and checked against a known answer.
//!
//! The registry [`WORKLOADS`] lists every generator explicitly; one file per generator.

pub mod asm;
pub mod balanced;
pub mod false_sharing;
pub mod lock_contention;
pub mod lu_owner;
pub mod micro;
pub mod radix_miss;
pub mod serial_phases;

use std::path::Path;

use asm::{Asm, Em};

use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{Marker, OpClass, TraceMeta};

/// Parameters every generator takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Number of threads (thread 0 creates the others).
    pub threads: u32,
    /// Problem size; its meaning is per workload ([`Workload::size_meaning`]).
    pub size: u64,
    /// Seed for everything random in the workload.
    pub seed: u64,
}

/// Most threads a generator accepts.
pub const MAX_THREADS: u32 = 4096;

/// One built-in workload.
pub struct Workload {
    /// Name used on the command line.
    pub name: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// The behaviour it is built to show, and the answer an analysis should find.
    pub shows: &'static str,
    /// What `--size` means.
    pub size_meaning: &'static str,
    /// Whether `--size` is each thread's share of the work, so that the problem grows with
    /// `--threads` (a sweep over thread counts is then weak scaling, not a fixed-size speedup).
    pub work_per_thread: bool,
    /// Size used when none is given.
    pub default_size: u64,
    /// Largest accepted size (keeps traces within reason).
    pub max_size: u64,
    emit: fn(&Params, &mut TraceWriter) -> Result<(), TraceError>,
}

/// Every built-in workload.
pub const WORKLOADS: &[Workload] = &[
    lu_owner::WORKLOAD,
    radix_miss::WORKLOAD,
    serial_phases::WORKLOAD,
    false_sharing::WORKLOAD,
    balanced::WORKLOAD,
    lock_contention::WORKLOAD,
    micro::STREAM,
    micro::POINTER_CHASE,
    micro::DEP_CHAIN,
    micro::INDEP_ALU,
    micro::RANDOM_BRANCH,
];

/// Looks a workload up by name.
pub fn find(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// An error generating a workload: bad parameters, or a failure writing the trace.
#[derive(Debug)]
pub enum GenError {
    /// The parameters are out of range; the message says what is allowed.
    Params(String),
    /// Writing the trace failed.
    Trace(TraceError),
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenError::Params(m) => f.write_str(m),
            GenError::Trace(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for GenError {}

impl From<TraceError> for GenError {
    fn from(e: TraceError) -> Self {
        GenError::Trace(e)
    }
}

impl Workload {
    /// Checks the parameters against this workload's limits.
    pub fn check(&self, p: &Params) -> Result<(), GenError> {
        if p.threads == 0 || p.threads > MAX_THREADS {
            return Err(GenError::Params(format!(
                "{}: --threads {} is out of range: expected 1..={MAX_THREADS}",
                self.name, p.threads
            )));
        }
        if p.size == 0 || p.size > self.max_size {
            return Err(GenError::Params(format!(
                "{}: --size {} is out of range: expected 1..={} ({})",
                self.name, p.size, self.max_size, self.size_meaning
            )));
        }
        Ok(())
    }

    /// Generates the trace into `path` (atomically: nothing appears at `path` on failure).
    pub fn generate(&self, p: &Params, path: &Path) -> Result<(), GenError> {
        self.check(p)?;
        let meta = TraceMeta {
            isa: "synthetic".into(),
            workload: self.name.into(),
            params: vec![
                ("threads".into(), p.threads.to_string()),
                ("size".into(), p.size.to_string()),
                ("seed".into(), p.seed.to_string()),
            ],
            producer: concat!("isim-gen ", env!("CARGO_PKG_VERSION")).into(),
        };
        let mut w = TraceWriter::create(path, meta)?;
        (self.emit)(p, &mut w)?;
        w.finish()?;
        Ok(())
    }
}

/// SplitMix64: a small, fast, portable PRNG, so that a seed gives the same trace on every host.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`, decorrelated per `stream` (e.g. a thread id).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// The `main` of every workload: thread 0 starts the ROI, creates the workers, runs its own
/// share, joins the workers and ends the ROI. `pthread_create`/`join` are library calls whose
/// insides are not traced (as with a real program); their call sites are instructions.
pub(crate) struct Frame {
    create: u32,
    join: u32,
}

impl Frame {
    /// Lays out `main` in `main.c`.
    pub(crate) fn code(a: &mut Asm) -> Frame {
        a.func("main", "main.c");
        let create = a.op(21, OpClass::Other, &[asm::reg::RAX], &[asm::reg::RDI]);
        let join = a.op(25, OpClass::Other, &[asm::reg::RAX], &[asm::reg::RDI]);
        Frame { create, join }
    }

    /// Thread starts, ROI begin, creation of threads 1..p.
    pub(crate) fn begin(&self, em: &mut Em, p: u32) -> Result<(), TraceError> {
        em.mark(0, Marker::ThreadStart)?;
        em.mark(0, Marker::RoiBegin)?;
        for c in 1..p {
            em.x(0, self.create)?;
            em.mark(0, Marker::ThreadCreate { child: c })?;
            em.mark(c, Marker::ThreadStart)?;
        }
        Ok(())
    }

    /// Every thread calls the barrier at call site `site` (an instruction of the workload's
    /// own code, so that sections are named by where they close); arrival order does not
    /// matter in a trace, the simulator decides it.
    pub(crate) fn barrier(em: &mut Em, p: u32, site: u32, id: u64) -> Result<(), TraceError> {
        for t in 0..p {
            em.x(t, site)?;
            em.mark(
                t,
                Marker::Barrier {
                    id,
                    participants: p,
                    lead: false,
                },
            )?;
        }
        Ok(())
    }

    /// Worker ends, joins by thread 0, ROI end.
    pub(crate) fn end(&self, em: &mut Em, p: u32) -> Result<(), TraceError> {
        for c in 1..p {
            em.mark(c, Marker::ThreadEnd)?;
        }
        for c in 1..p {
            em.x(0, self.join)?;
            em.mark(0, Marker::ThreadJoin { child: c })?;
        }
        em.mark(0, Marker::RoiEnd)?;
        em.mark(0, Marker::ThreadEnd)
    }
}

/// Address of the barrier objects used by generators (their identity only).
pub(crate) const BARRIER_BASE: u64 = 0x60_0000;
/// Where generated data lives; arrays are laid out upward from here, page-aligned.
pub(crate) const DATA_BASE: u64 = 0x1000_0000;
