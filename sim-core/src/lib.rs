//! The interval core model (window, dispatch, branch predictors, critical-path cycle
//! accounting) and the multicore engine that replays synchronization in simulated time.
//!
//! [`core`] times one thread on one core and builds its cycle stack; [`engine`] runs every
//! thread of a trace on the memory system of `sim-memory`, replays barriers, mutexes,
//! condition variables and create/join, and reports per-thread results and probe events to
//! a statically dispatched [`engine::Observer`]. [`bpred`] holds the branch predictors.

mod ahead;
pub mod bpred;
pub mod core;
mod crew;
pub mod engine;
mod sched;
pub mod stack;
pub mod tlb;

/// The tests' random inputs come from sim-memory's generator.
#[cfg(test)]
pub(crate) use sim_memory::xorshift;

pub use engine::{
    Engine, EngineConfig, LockKind, LockModel, Model, NoParts, Observer, RunResult, SimError,
    ThreadObserver, ThreadResult,
};
pub use stack::{COMPONENTS, Component, CycleStack};
