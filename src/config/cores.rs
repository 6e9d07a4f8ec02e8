//! From the validated machine description to the core model's parameters (the core's and
//! the branch predictor's settings are already the core crate's own types; the TLB's page
//! size becomes a shift), and resizing a machine to a core count.

use sim_core::bpred::BpredConfig;
use sim_core::core::CoreParams;
use sim_core::tlb::TlbParams;

use super::machine::MachineConfig;

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
    pub fn with_cores(&self, cores: u32) -> Result<MachineConfig, String> {
        if cores == 0 {
            return Err("--cores 0: a machine needs at least one core".into());
        }
        let mut m = self.clone();
        let cps = m.system.cores_per_socket;
        if cores < cps {
            let l2 = match m.cache.l2.shared_by {
                super::machine::SharedBy::Socket => cores,
                super::machine::SharedBy::Cores(n) => n,
            };
            if cores % l2 != 0 {
                return Err(format!(
                    "--cores {cores}: the L2 is shared by {l2} cores, so a socket of {cores} cores cannot be built; use a multiple of {l2}"
                ));
            }
            m.system.sockets = 1;
            m.system.cores_per_socket = cores;
        } else {
            m.system.sockets = cores.div_ceil(cps);
        }
        Ok(m)
    }
}
