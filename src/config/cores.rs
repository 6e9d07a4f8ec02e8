//! From the validated machine description to the core model's parameters (the core's and
//! the branch predictor's settings are already the core crate's own types; the TLB's page
//! size becomes a shift), and resizing a machine to a core count.

use sim_core::bpred::BpredConfig;
use sim_core::core::CoreParams;
use sim_core::tlb::TlbParams;

use super::machine::{MachineConfig, SharedBy};

/// Why a machine cannot take a shape asked of it: resized to a core count
/// ([`MachineConfig::with_cores`]) or built by the memory model ([`MachineConfig::memory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    /// `--cores 0`.
    NoCores,
    /// A socket of `cores` cores cannot be split into L2 groups of `l2`.
    L2Groups {
        /// Cores asked for.
        cores: u32,
        /// Cores per L2.
        l2: u32,
    },
    /// The L3 is shared by `n` cores, not the whole socket of `cores_per_socket`.
    PartialL3 {
        /// Cores sharing one L3.
        n: u32,
        /// Cores per socket.
        cores_per_socket: u32,
    },
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ShapeError::NoCores => f.write_str("--cores 0: a machine needs at least one core"),
            ShapeError::L2Groups { cores, l2 } => write!(
                f,
                "--cores {cores}: the L2 is shared by {l2} cores, so a socket of {cores} cores cannot be built; use a multiple of {l2}"
            ),
            ShapeError::PartialL3 {
                n,
                cores_per_socket,
            } => write!(
                f,
                "cache.l3.shared_by = {n}: the memory model has one L3 per socket; use shared_by = \"socket\" ({cores_per_socket} cores)"
            ),
        }
    }
}

impl std::error::Error for ShapeError {}

impl MachineConfig {
    /// The core model's parameters: the core's settings as they are, and the TLB with its
    /// page size as a shift.
    pub fn core_params(&self) -> CoreParams {
        CoreParams {
            settings: self.core.clone(),
            tlb: self.tlb.as_ref().map(|t| TlbParams {
                page_shift: t.page_size.bytes().trailing_zeros(),
                l1_entries: t.l1_entries,
                l1_ways: t.l1_associativity,
                l2_entries: t.l2_entries,
                l2_ways: t.l2_associativity,
                l2_latency: t.l2_latency,
                walk_latency: t.walk_latency,
                walkers: t.walkers,
            }),
        }
    }

    /// The branch predictor's settings, as the engine takes them.
    pub fn bpred(&self) -> BpredConfig {
        self.branch_predictor.clone()
    }

    /// This machine resized to `cores` cores by the documented rule: the per-socket structure
    /// is kept and sockets are added or removed (`ceil(cores / cores_per_socket)` sockets);
    /// fewer cores than one socket has shrink the socket to `cores` if its L2 groups still
    /// divide it. Idle cores are allowed.
    pub fn with_cores(&self, cores: u32) -> Result<MachineConfig, ShapeError> {
        if cores == 0 {
            return Err(ShapeError::NoCores);
        }
        let mut m = self.clone();
        let cps = m.system.cores_per_socket;
        if cores < cps {
            let l2 = m.cache.l2.cores_sharing(cores);
            if cores % l2 != 0 {
                return Err(ShapeError::L2Groups { cores, l2 });
            }
            m.system.sockets = 1;
            m.system.cores_per_socket = cores;
        } else {
            m.system.sockets = cores.div_ceil(cps);
        }
        Ok(m)
    }

    /// This machine grown to hold `alive` threads running at once, for a trace that has more
    /// of them than the machine has cores: its sockets stay as they are and each gets
    /// `ceil(alive / sockets)` cores, rounded up to a whole number of L2 groups (a larger
    /// part of the same family, not more sockets). Unlike [`MachineConfig::with_cores`], no
    /// thread is put off the socket it would share with the others: a program of P workers
    /// and a main thread that waits for them, on a machine of P cores, moves its shared lines
    /// between cores of one socket, as on the machine described, where the waiting main
    /// thread holds no core. An L3 shared by the socket's old core count is the grown
    /// socket's. A machine that already has `alive` cores is returned as it is.
    pub fn grown_to(&self, alive: u32) -> MachineConfig {
        let mut m = self.clone();
        if alive <= m.total_cores() {
            return m;
        }
        let per = alive.div_ceil(m.system.sockets.max(1));
        let l2 = m.cache.l2.cores_sharing(per).max(1);
        let before = m.system.cores_per_socket;
        m.system.cores_per_socket = per.div_ceil(l2) * l2;
        if let Some(l3) = &mut m.cache.l3
            && l3.shared_by == SharedBy::Cores(before)
        {
            // An L3 the config shares by the socket's core count is the socket's.
            l3.shared_by = SharedBy::Socket;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::{ShapeError, SharedBy};
    use crate::config::default_config;

    /// Resizing keeps the per-socket structure: sockets are added, a socket shrinks only to a
    /// size its L2 groups divide, and no core count is an error, not a machine of none.
    #[test]
    fn resizing_adds_sockets_and_refuses_what_cannot_be_built() {
        let m = default_config();
        let per = m.system.cores_per_socket;
        let big = m.with_cores(per * 2 + 1).unwrap();
        assert_eq!((big.system.sockets, big.system.cores_per_socket), (3, per));
        let small = m.with_cores(2).unwrap();
        assert_eq!(
            (small.system.sockets, small.system.cores_per_socket),
            (1, 2)
        );
        assert_eq!(m.with_cores(0).unwrap_err(), ShapeError::NoCores);
        let mut shared = m.clone();
        shared.cache.l2.shared_by = SharedBy::Cores(4);
        let e = shared.with_cores(6).unwrap_err();
        assert_eq!(e, ShapeError::L2Groups { cores: 6, l2: 4 });
        assert!(e.to_string().contains("use a multiple of 4"), "{e}");
    }

    /// Growing a machine for the threads a trace has alive at once keeps its sockets and
    /// enlarges each, in whole L2 groups; a machine large enough is left alone.
    #[test]
    fn growing_keeps_the_sockets_and_enlarges_each() {
        let mut m = default_config();
        m.system.sockets = 1;
        m.system.cores_per_socket = 2;
        let g = m.grown_to(3);
        assert_eq!((g.system.sockets, g.system.cores_per_socket), (1, 3));
        m.system.sockets = 2;
        m.system.cores_per_socket = 8;
        let g = m.grown_to(17);
        assert_eq!((g.system.sockets, g.system.cores_per_socket), (2, 9));
        m.cache.l2.shared_by = SharedBy::Cores(4);
        let g = m.grown_to(17);
        assert_eq!((g.system.sockets, g.system.cores_per_socket), (2, 12));
        assert_eq!(m.grown_to(16), m);
        g.memory().expect("a grown machine can be built");
        let mut l3 = default_config();
        l3.cache.l3.as_mut().unwrap().shared_by = SharedBy::Cores(8);
        l3.memory()
            .expect("an L3 shared by the 8 cores of the socket");
        let g = l3.grown_to(9);
        assert_eq!(g.system.cores_per_socket, 9);
        g.memory()
            .expect("the grown socket's L3 is shared by its 9 cores");
    }
}
