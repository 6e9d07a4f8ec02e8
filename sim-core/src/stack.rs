//! Cycle-stack components and the per-thread cycle stack: an array indexed by [`Component`],
//! whose entries sum to the thread's total cycles (the invariant every golden run checks).

use serde::Serialize;

isim_names::indexed_enum! {
    /// One component of a cycle stack. Names are part of the output contract.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    #[repr(u8)]
    pub enum Component {
        /// Dispatch-width-bound cycles (no critical path limits the window).
        Base = "base",
        /// Critical path made of integer operations.
        DependInt = "depend-int",
        /// Critical path made of floating-point operations.
        DependFp = "depend-fp",
        /// Critical path through memory: loads waiting for the data of an older store to the
        /// same bytes (store-to-load forwarding, `[core] store_forward_*`).
        DependMem = "depend-mem",
        /// Branch mispredictions: resolution time plus front-end refill.
        Branch = "branch",
        /// Instruction-cache misses.
        Ifetch = "ifetch",
        /// Loads served by the L1D on the critical path.
        MemL1d = "mem-l1d",
        /// Loads served by another core's L1.
        MemL1Neighbor = "mem-l1-neighbor",
        /// Loads served by the L2.
        MemL2 = "mem-l2",
        /// Loads served by another L2.
        MemL2Neighbor = "mem-l2-neighbor",
        /// Loads served by the L3.
        MemL3 = "mem-l3",
        /// Loads served by another socket.
        MemOffSocket = "mem-off-socket",
        /// Loads served by DRAM.
        MemDram = "mem-dram",
        /// Address translation of loads: second-level TLB hits and page walks.
        MemTlb = "mem-tlb",
        /// Waiting at barriers.
        SyncBarrier = "sync-barrier",
        /// Waiting for mutexes.
        SyncCritSect = "sync-crit-sect",
        /// Waiting in join.
        SyncJoin = "sync-join",
        /// Waiting on condition variables.
        SyncCond = "sync-cond",
        /// Before the thread started (while the ROI ran).
        ImbalanceStart = "imbalance-start",
        /// After the thread ended (while others still ran).
        ImbalanceEnd = "imbalance-end",
    }
}

/// Number of components.
pub const COMPONENTS: usize = Component::COUNT;

impl Component {
    /// The memory component for an access served at `s`.
    pub fn of_served(s: sim_memory::Served) -> Component {
        use sim_memory::Served as S;
        match s {
            S::L1 => Component::MemL1d,
            S::L2 => Component::MemL2,
            S::L3 => Component::MemL3,
            S::L1Neighbor => Component::MemL1Neighbor,
            S::L2Neighbor => Component::MemL2Neighbor,
            S::OffSocket => Component::MemOffSocket,
            S::Dram => Component::MemDram,
        }
    }

    /// True for the synchronization and imbalance components.
    pub fn is_sync(self) -> bool {
        self >= Component::SyncBarrier
    }
}

/// Cycles per component.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CycleStack(pub [f64; COMPONENTS]);

impl CycleStack {
    /// Adds `cycles` to `c`.
    #[inline]
    pub fn add(&mut self, c: Component, cycles: f64) {
        self.0[c as usize] += cycles;
    }

    /// Sum of every component.
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }

    /// Cycles spent in synchronization and imbalance.
    pub fn sync(&self) -> f64 {
        Component::ALL
            .iter()
            .filter(|c| c.is_sync())
            .map(|&c| self.0[c as usize])
            .sum()
    }

    /// Cycles of one component.
    pub fn get(&self, c: Component) -> f64 {
        self.0[c as usize]
    }
}

impl Serialize for CycleStack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(COMPONENTS))?;
        for c in Component::ALL {
            m.serialize_entry(c.name(), &self.0[c as usize])?;
        }
        m.end()
    }
}

/// The inverse of the `Serialize` impl: a map of component names to cycles; components
/// not named are 0, an unknown name is an error naming it.
impl<'de> serde::Deserialize<'de> for CycleStack {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> serde::de::Visitor<'de> for Names {
            type Value = CycleStack;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of cycle-stack component names to cycles")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<CycleStack, A::Error> {
                let mut stack = CycleStack::default();
                while let Some((name, v)) = m.next_entry::<std::borrow::Cow<'de, str>, f64>()? {
                    let Some(c) = Component::ALL.iter().find(|c| c.name() == name) else {
                        return Err(serde::de::Error::custom(format!(
                            "unknown cycle-stack component `{name}`"
                        )));
                    };
                    stack.add(*c, v);
                }
                Ok(stack)
            }
        }
        d.deserialize_map(Names)
    }
}
