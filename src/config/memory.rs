//! From the validated machine description to the memory model's own configuration: units
//! become cycles and bytes per cycle at the core clock. The policies (replacement,
//! prefetcher, arbitration, protocol) are already the memory model's own enums.

use sim_memory::{CacheParams, MemoryConfig, PrefetchParams};

use super::cores::ShapeError;
use super::machine::{CacheConfig, DramConfig, MachineConfig};
use super::units::Frequency;

fn params(c: &CacheConfig) -> CacheParams {
    CacheParams {
        size: c.size.bytes(),
        associativity: c.associativity,
        line_size: c.line_size.bytes() as u32,
        data_latency: c.data_latency,
        tag_latency: c.tag_latency,
        replacement: c.replacement,
    }
}

fn prefetch(c: &CacheConfig) -> PrefetchParams {
    PrefetchParams {
        kind: c.prefetcher,
        degree: c.prefetch_degree,
    }
}

impl MachineConfig {
    /// The memory hierarchy this machine describes. Fails, naming the key, for shapes the
    /// memory model does not support (an L3 shared by only part of a socket).
    pub fn memory(&self) -> Result<MemoryConfig, ShapeError> {
        let s = &self.system;
        let f = s.frequency;
        let c = &self.cache;
        if let Some(l3) = &c.l3 {
            let n = l3.cores_sharing(s.cores_per_socket);
            if n != s.cores_per_socket {
                return Err(ShapeError::PartialL3 {
                    n,
                    cores_per_socket: s.cores_per_socket,
                });
            }
        }
        Ok(MemoryConfig {
            sockets: s.sockets,
            cores_per_socket: s.cores_per_socket,
            l1i: params(&c.l1i),
            l1d: params(&c.l1d),
            l2: params(&c.l2),
            l2_shared_by: c.l2.cores_sharing(s.cores_per_socket),
            l3: c.l3.as_ref().map(params),
            bus_bytes_per_cycle: self.bus.bandwidth.bytes_per_cycle(f),
            arbitration: self.bus.arbitration,
            dram_latency: self.dram.latency.to_cycles(f) as u32,
            dram_bytes_per_cycle: self.dram.bandwidth.bytes_per_cycle(f),
            dram_controllers: self.dram.controllers,
            dram_interleave: self.dram.interleave.bytes(),
            dram_banks: self.dram.bank_params(f),
            off_socket_latency: self.off_socket.latency.to_cycles(f) as u32,
            protocol: self.coherence.protocol,
            snoop_latency: self.coherence.snoop_latency,
            l1d_prefetch: prefetch(&c.l1d),
            l2_prefetch: prefetch(&c.l2),
        })
    }
}

impl DramConfig {
    /// The bank model's parameters in cycles of `f` (off without bank keys).
    pub fn bank_params(&self, f: Frequency) -> sim_memory::dram::BankParams {
        self.banks
            .as_ref()
            .map_or_else(Default::default, |b| sim_memory::dram::BankParams {
                banks: b.banks,
                row_bytes: b.row_size.bytes(),
                t_rp: b.t_rp.to_cycles(f) as u32,
                t_rcd: b.t_rcd.to_cycles(f) as u32,
                t_cas: b.t_cas.to_cycles(f) as u32,
                t_refi: b.refresh.as_ref().map_or(0, |r| r.t_refi.to_cycles(f)),
                t_rfc: b.refresh.as_ref().map_or(0, |r| r.t_rfc.to_cycles(f)),
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ShapeError, load};
    use std::path::Path;

    #[test]
    fn penryn_4x4_memory_matches_table_1_in_cycles() {
        let m = load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/penryn-4x4.toml"),
            &[],
        )
        .unwrap()
        .memory()
        .unwrap();
        assert_eq!((m.sockets, m.cores_per_socket, m.l2_shared_by), (4, 4, 2));
        assert_eq!(m.l2.size, 3 << 20);
        assert_eq!(m.l3.unwrap().data_latency, 96);
        // 200 ns at 2.67 GHz = 534 cycles; 4 GB/s at 2.67 GHz = 1.498 bytes per cycle.
        assert_eq!(m.dram_latency, 534);
        assert!((m.dram_bytes_per_cycle - 4e9 / 2.67e9).abs() < 1e-9);
        sim_memory::Memory::new(m).unwrap();
    }

    #[test]
    fn every_shipped_config_builds_a_memory_system() {
        for f in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")).unwrap() {
            let f = f.unwrap().path();
            let m = load(&f, &[]).unwrap().memory().unwrap();
            sim_memory::Memory::new(m).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        }
    }

    #[test]
    fn an_l3_shared_by_part_of_a_socket_is_refused_by_key() {
        let sets = ["cache.l3.shared_by=2".to_string()];
        let cfg = load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/default.toml"),
            &sets,
        )
        .unwrap();
        let e = cfg.memory().unwrap_err();
        assert_eq!(
            e,
            ShapeError::PartialL3 {
                n: 2,
                cores_per_socket: 8
            }
        );
        assert!(e.to_string().contains("cache.l3.shared_by = 2"), "{e}");
    }
}
