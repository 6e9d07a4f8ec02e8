//! The experiment layer of isim: machine configuration, trace inspection and (as the
//! simulator grows) run, sweep and what-if orchestration. The `isim` binary in `main.rs` is a
//! thin command-line layer over it.

pub mod config;
pub mod dirs;
pub mod fsutil;
pub mod info;
pub mod lime;
pub mod locks;
pub mod parashare;
pub mod pca;
pub mod profile;
pub mod progress;
pub mod report;
pub mod run;
pub mod slurm;
pub mod stacks;
pub mod sweep;
pub mod trace;
