//! The simulator's front end: the trace model, trace format v8 (writer, and a streaming reader
//! of v8 and every earlier version), built-in workload generators and importers of other
//! simulators' traces.
//!
//! Everything that produces or consumes instructions goes through [`model`]; the byte layout
//! lives in [`format`] and is documented in `docs/trace-format.md`. This crate knows nothing of
//! timing: the memory and core models consume its records.

pub mod champsim;
pub mod error;
pub mod format;
pub mod model;
pub mod tracer;
pub mod workloads;

pub use error::TraceError;
pub use format::reader::{ThreadStream, Trace};
pub use format::writer::TraceWriter;
