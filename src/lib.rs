//! The experiment layer of isim: machine configuration, trace inspection and (as the
//! simulator grows) run, sweep and what-if orchestration. The `isim` binary in `main.rs` is a
//! thin command-line layer over it.

pub mod config;
pub mod info;
pub mod run;
