//! The interval core model (ROB window, dispatch, branch predictors, critical-path cycle
//! accounting) and the multicore engine that replays synchronization in simulated time.
//!
//! Empty until the core/engine issue lands; it will consume `sim-frontend` records and call
//! `sim-memory` for every fetch, load and store.
