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

/// A xorshift64 generator from `seed` (nonzero), for the tests' random inputs: each call
/// returns the next state.
#[cfg(test)]
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

pub use engine::{
    Engine, EngineConfig, Model, NoParts, Observer, RunResult, SimError, ThreadObserver,
    ThreadResult,
};
pub use stack::{COMPONENTS, Component, CycleStack};
