//! The memory system of the whole machine: per-core L1I/L1D, L2s shared by groups of cores,
//! an optional L3 per socket, one bus per socket between the L2s and the level above, DRAM
//! controllers, and MSI or MESI coherence across all of it. `docs/memory.md` describes the model;
//! the essentials:
//!
//! **A tree of inclusive caches.** Each cache instance is a node; an L1's parent is its L2,
//! an L2's parent is its socket's L3 (if configured). The top-level nodes (L3s, or the L2s
//! when there is no L3) sit below memory. Every node keeps, per line, an MSI state, a dirty
//! bit and a bit mask of the children that hold the line. Inclusion holds at every level: a
//! line valid in a node is valid in its parent, and evicting it from a node removes it from
//! the node's subtree.
//!
//! **States.** `M` in a node means "the only copies in the machine are in this node's
//! subtree"; `S` means other copies may exist. So a node in `M` has all its ancestors in `M`,
//! an L1 in `M` is the only private cache holding the line, and at most one top-level node
//! holds a line in `M`. Dirtiness is a separate bit, so `M` is ownership, clean or not: under
//! MESI a load that finds no copy anywhere fills with ownership and a clean L1 copy — the
//! `E` state — and a later store by the same core is an L1 hit; under MSI every load fills
//! in `S` and that store is an upgrade on the bus.
//!
//! **Where an access is served.** A load is served by the nearest node on the core's path
//! holding the line — unless a node *not* on the path but below that one holds it in `M`, in
//! which case that neighbour supplies the data (L1- or L2-neighbour, by the neighbour's level;
//! under MESI only if its copy is dirty) and is downgraded to `S`. A store needs the nearest node on its path in `M`; if there is
//! none, every other top-level node holding the line is invalidated (another socket:
//! off-socket; the same socket: neighbour) and the path becomes `M`. Lines nobody holds come
//! from DRAM.
//!
//! **Miss erasure** (LIME §5.4): data accesses by the PCs in the erasure set take the L1 hit
//! latency and are reported as served by L1, using no bus or DRAM bandwidth — not even for
//! the write-backs their fills cause — while every coherence action (fills, invalidations,
//! downgrades) happens exactly as without erasure, so the invariants hold and other cores see
//! the same states.

use crate::cache::{Cache, INVALID, MODIFIED, NO_PARENT, SHARED, Victim};
use crate::config::{MemoryConfig, Protocol};
use crate::dram::Banks;
use crate::prefetch::Prefetcher;
use crate::private::{L1_BITS, Private};
use crate::slots::Slots;
use crate::stats::{CacheStats, CoreStats};

/// What an access does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Instruction fetch (L1I).
    IFetch,
    /// Data read (L1D).
    Load,
    /// Data write (L1D; read-modify-write is a store).
    Store,
}

isim_names::indexed_enum! {
    /// Where an access was served. The numbering is the index into per-core statistics.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    #[repr(u8)]
    pub enum Served {
        /// The core's own L1.
        L1 = "l1",
        /// The core's L2 (private or shared by its group).
        L2 = "l2",
        /// The socket's L3.
        L3 = "l3",
        /// Another core's L1 (data modified there).
        L1Neighbor = "l1-neighbor",
        /// Another group's L2 (data modified there, or held there when there is no L3).
        L2Neighbor = "l2-neighbor",
        /// A cache in another socket.
        OffSocket = "off-socket",
        /// Main memory.
        Dram = "dram",
    }
}

/// The result of one access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Cycles from issue to data (or ownership).
    pub latency: u64,
    /// Where it was served (for an erased access: `L1`).
    pub served: Served,
    /// Missed in L1, L2, L3 respectively (a store to a shared copy misses for ownership).
    pub missed: [bool; 3],
    /// The L1 miss was on a line this core had lost to an invalidation.
    pub coherence: bool,
    /// Served as an L1 hit by miss erasure.
    pub erased: bool,
    /// For an erased access: where it would have been served.
    pub would_serve: Served,
    /// The line was in the L1 but its fill still in flight: the access merged into that miss
    /// (needing no miss slot of its own) and waited for the line; `served` is where the fill
    /// comes from. (An L1 miss that finds the line arriving in a farther level waits for it
    /// too, but is a miss of its own: `missed[0]` and not `merged`.)
    pub merged: bool,
    /// The access found its line still arriving, at any level, and waited for it (for an
    /// erased access: would have waited; `would_serve` is then where the fill comes from).
    pub waited: bool,
}

impl Outcome {
    /// Folds in the outcome of the second line of an access that straddles two. One rule in
    /// both erasure modes (erased lines all take the L1 latency, so latency cannot decide):
    /// the farther of the two places, the larger of the two latencies, the union of the flags.
    #[inline]
    pub(crate) fn combine(&mut self, o2: Outcome) {
        self.latency = self.latency.max(o2.latency);
        self.served = self.served.max(o2.served);
        self.would_serve = self.would_serve.max(o2.would_serve);
        self.erased |= o2.erased;
        // Merged only if neither line needed a miss of its own.
        self.merged = (self.merged || o2.merged) && !self.missed[0] && !o2.missed[0];
        for i in 0..3 {
            self.missed[i] |= o2.missed[i];
        }
        self.coherence |= o2.coherence;
        self.waited |= o2.waited;
    }
}

/// The first and last line (address >> `line_shift`) an access of `size` bytes at `addr`
/// touches.
#[inline]
pub(crate) fn lines(addr: u64, size: u32, line_shift: u32) -> (u64, u64) {
    let last = addr.wrapping_add(size.max(1) as u64 - 1);
    (addr >> line_shift, last >> line_shift)
}

/// Whether a data access by instruction `pc` is erased (`erase`: the sorted erased PCs).
#[inline]
pub(crate) fn erased(erase: &[u64], pc: u64, kind: Kind) -> bool {
    kind != Kind::IFetch && !erase.is_empty() && erase.binary_search(&pc).is_ok()
}

/// An access that finds its line in the L1 with the permission it needs (a store: `M`):
/// the L1's latency, or the wait for the line's fill if it is still in flight (charged to
/// where the fill comes from; an `erased` access is an L1 hit all the same). Returns the
/// outcome and whether this was the first use of a prefetched line.
#[inline(always)]
pub(crate) fn l1_hit(
    l1: &mut Cache,
    slot: usize,
    write: bool,
    t: u64,
    erased: bool,
) -> (Outcome, bool) {
    l1.touch(slot);
    if write {
        l1.set_dirty(slot, true);
    }
    l1.stats.accesses += 1;
    l1.stats.hits += 1;
    let lat = l1.params.data_latency as u64;
    let mut o = Outcome {
        latency: lat,
        served: Served::L1,
        missed: [false; 3],
        coherence: false,
        erased: false,
        would_serve: Served::L1,
        merged: false,
        waited: false,
    };
    // A line whose fill is still in flight: wait for it, charged to where it comes from.
    let pending = l1.pending(slot, t).filter(|&(wait, _)| wait > lat);
    let first_use = l1.first_use(slot, pending.is_some());
    if let Some((wait, src)) = pending {
        let src = Served::ALL[src as usize];
        o.would_serve = src;
        o.waited = true;
        if erased {
            o.erased = true;
        } else {
            l1.stats.merged += 1;
            o.latency = wait;
            o.served = src;
            o.merged = true;
        }
    }
    (o, first_use)
}

const NONE: u32 = u32::MAX;

/// A cache instance in the tree. Aligned to two host cache lines so that the inline parts
/// of different cores' L1s (their counters change with every access) never share a host
/// cache line when cores run on different host threads.
#[derive(Debug, Clone)]
#[repr(align(128))]
struct Node {
    cache: Cache,
    level: u8,
    parent: u32,
    /// Bit index of this node in its parent's sharer masks.
    pos: u32,
    children: Vec<u32>,
    socket: u32,
}

/// A core's path from its L1 to the top-level cache.
#[derive(Debug, Clone, Copy)]
struct Path {
    nodes: [u32; 3],
    len: usize,
}

/// The memory system.
#[derive(Debug, Clone)]
pub struct Memory {
    cfg: MemoryConfig,
    nodes: Vec<Node>,
    ipath: Vec<Path>,
    dpath: Vec<Path>,
    tops: Vec<u32>,
    buses: Vec<Slots>,
    drams: Vec<Slots>,
    /// Each DRAM controller's banks (none without a bank model).
    banks: Vec<Banks>,
    line_shift: u32,
    erase: Vec<u64>,
    /// How erased accesses behave.
    erasure: Erasure,
    /// Per core: the L1D's and the L2's prefetcher.
    prefetchers: Vec<[Prefetcher; 2]>,
    /// Whether any prefetcher is enabled.
    prefetching: bool,
    /// During one access: whether it made the first use of a prefetched line in the L1D, L2.
    pub(crate) first_use: [bool; 2],
    /// During one access: whether it missed (or, erased, would have missed) in the L1D, L2.
    pub(crate) would_miss: [bool; 2],
    /// Candidate lines of one prefetch decision, per level (reused).
    pub(crate) candidates: [Vec<u64>; 2],
    /// The misses per level of the last call of `slow` (for a prefetch's L2 trigger).
    pub(crate) last_missed: [bool; 3],
    /// Per-core counters.
    pub core_stats: Vec<CoreStats>,
}

/// What a coherence action found below a node: whether any copy was dirty, and the lowest
/// level (1 = L1) holding the line in `M`, 0 if none.
#[derive(Debug, Clone, Copy, Default)]
struct Found {
    dirty: bool,
    m_level: u8,
    /// A private cache off the requester's path held the line when it was looked for.
    others: bool,
}

impl Found {
    fn merge(&mut self, o: Found) {
        self.dirty |= o.dirty;
        self.others |= o.others;
        if o.m_level != 0 && (self.m_level == 0 || o.m_level < self.m_level) {
            self.m_level = o.m_level;
        }
    }
}

isim_names::indexed_enum! {
    /// How an erased access (a PC set with [`Memory::set_erasure`]) behaves.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Erasure {
        /// isim's: it is an L1 hit for its instruction, but the caches evolve as without
        /// erasure (the line is filled, coherence acts, no bandwidth is taken), so later
        /// accesses by other instructions see the same contents.
        Fill = "fill",
        /// The LIME paper's (§5.4): the erased instruction's accesses never leave the L1 —
        /// a miss becomes the L1's latency with no fill, no coherence action, no traffic.
        NoFill = "no-fill",
    }
}

/// Why a [`MemoryConfig`] cannot be modelled ([`Memory::new`]).
#[derive(Debug, Clone, PartialEq)]
pub enum MachineError {
    /// A level's line size differs from the L1D's, or is not a power of two.
    LineSizes {
        /// The level's line size.
        got: u32,
        /// The L1D's.
        l1d: u32,
    },
    /// A cache's geometry does not give a power-of-two number of sets.
    Sets {
        /// Capacity in bytes.
        size: u64,
        /// Associativity.
        ways: u32,
        /// Line size in bytes.
        line: u32,
    },
    /// The L2 groups do not divide the socket (or a count is 0).
    L2Groups {
        /// Sockets.
        sockets: u32,
        /// Cores per socket.
        cores_per_socket: u32,
        /// Cores per L2.
        l2_shared_by: u32,
    },
    /// More than 64 cores per L2 (128 private caches) or 64 L2s per socket (the sharer masks are 128 bits).
    TooWide,
    /// A bandwidth is not positive, there is no DRAM controller, or the interleave is not a
    /// power of two.
    Bandwidth,
    /// The DRAM bank parameters cannot be modelled (the message says why).
    Banks(String),
    /// A prefetcher's degree is outside 1 to 32.
    PrefetchDegree {
        /// `L1D` or `L2`.
        level: &'static str,
        /// The degree asked for.
        degree: u32,
    },
}

impl std::fmt::Display for MachineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MachineError::LineSizes { got, l1d } => write!(
                f,
                "line sizes must be equal powers of two at every level (got {got} and {l1d})"
            ),
            MachineError::Sets { size, ways, line } => write!(
                f,
                "cache of {size} bytes, {ways}-way, {line}-byte lines does not have a power-of-two number of sets"
            ),
            MachineError::L2Groups {
                sockets,
                cores_per_socket,
                l2_shared_by,
            } => write!(
                f,
                "{sockets} sockets x {cores_per_socket} cores with L2 shared by {l2_shared_by}: L2 groups must divide the socket"
            ),
            MachineError::TooWide => f.write_str("at most 64 cores per L2 and 64 L2s per socket"),
            MachineError::Bandwidth => f.write_str(
                "bus and DRAM bandwidths must be positive, controllers ≥ 1, interleave a power of two",
            ),
            MachineError::Banks(why) => f.write_str(why),
            MachineError::PrefetchDegree { level, degree } => write!(
                f,
                "the {level} prefetcher's degree must be 1 to 32 (got {degree})"
            ),
        }
    }
}

impl std::error::Error for MachineError {}

impl Memory {
    /// Builds the machine. Fails with a message if the configuration cannot be modelled
    /// (more than 64 children per cache, line sizes that differ, geometry not a power of two).
    pub fn new(cfg: MemoryConfig) -> Result<Memory, MachineError> {
        let line = cfg.l1d.line_size;
        let levels = [Some(cfg.l1i), Some(cfg.l1d), Some(cfg.l2), cfg.l3];
        for p in levels.iter().flatten() {
            if p.line_size != line || !line.is_power_of_two() {
                return Err(MachineError::LineSizes {
                    got: p.line_size,
                    l1d: line,
                });
            }
            if !p.sets().is_power_of_two()
                || p.sets() * p.associativity as u64 * p.line_size as u64 != p.size
            {
                return Err(MachineError::Sets {
                    size: p.size,
                    ways: p.associativity,
                    line: p.line_size,
                });
            }
        }
        if cfg.sockets == 0
            || cfg.cores_per_socket == 0
            || cfg.l2_shared_by == 0
            || cfg.cores_per_socket % cfg.l2_shared_by != 0
        {
            return Err(MachineError::L2Groups {
                sockets: cfg.sockets,
                cores_per_socket: cfg.cores_per_socket,
                l2_shared_by: cfg.l2_shared_by,
            });
        }
        if 2 * cfg.l2_shared_by > 128 || cfg.cores_per_socket / cfg.l2_shared_by > 64 {
            return Err(MachineError::TooWide);
        }
        if !(cfg.bus_bytes_per_cycle > 0.0 && cfg.dram_bytes_per_cycle > 0.0)
            || cfg.dram_controllers == 0
            || !cfg.dram_interleave.is_power_of_two()
        {
            return Err(MachineError::Bandwidth);
        }
        cfg.dram_banks
            .check(cfg.l1d.line_size as u64, cfg.dram_latency)
            .map_err(MachineError::Banks)?;
        for (name, p) in [("L1D", cfg.l1d_prefetch), ("L2", cfg.l2_prefetch)] {
            if p.kind != crate::prefetch::PrefetchKind::None && !(1..=32).contains(&p.degree) {
                return Err(MachineError::PrefetchDegree {
                    level: name,
                    degree: p.degree,
                });
            }
        }
        let cores = cfg.cores() as usize;
        let mut nodes: Vec<Node> = Vec::new();
        let mut ipath = vec![
            Path {
                nodes: [NONE; 3],
                len: 0
            };
            cores
        ];
        let mut dpath = ipath.clone();
        let mut tops = Vec::new();
        let add = |nodes: &mut Vec<Node>, p, level, socket| {
            nodes.push(Node {
                cache: Cache::new(p),
                level,
                parent: NONE,
                pos: 0,
                children: Vec::new(),
                socket,
            });
            nodes.len() as u32 - 1
        };
        for s in 0..cfg.sockets {
            let l3 = cfg.l3.map(|p| add(&mut nodes, p, 3, s));
            if let Some(l3) = l3 {
                tops.push(l3);
            }
            for g in 0..cfg.cores_per_socket / cfg.l2_shared_by {
                let l2 = add(&mut nodes, cfg.l2, 2, s);
                match l3 {
                    Some(l3) => {
                        nodes[l2 as usize].parent = l3;
                        nodes[l2 as usize].pos = nodes[l3 as usize].children.len() as u32;
                        nodes[l3 as usize].children.push(l2);
                    }
                    None => tops.push(l2),
                }
                for k in 0..cfg.l2_shared_by {
                    let core = (s * cfg.cores_per_socket + g * cfg.l2_shared_by + k) as usize;
                    for (params, path) in [(cfg.l1i, &mut ipath[core]), (cfg.l1d, &mut dpath[core])]
                    {
                        let l1 = add(&mut nodes, params, 1, s);
                        nodes[l1 as usize].parent = l2;
                        nodes[l1 as usize].pos = nodes[l2 as usize].children.len() as u32;
                        nodes[l2 as usize].children.push(l1);
                        let mut p = Path {
                            nodes: [l1, l2, NONE],
                            len: 2,
                        };
                        if let Some(l3) = l3 {
                            p.nodes[2] = l3;
                            p.len = 3;
                        }
                        *path = p;
                    }
                }
            }
        }
        for n in &mut nodes {
            if !n.children.is_empty() {
                n.cache.track_sharers(n.children.len());
            }
        }
        // `Memory::privates` hands out the nodes of levels 1 and 2 in order as the first
        // group's L2, its first core's L1I and L1D, its next core's, ..., the next group's L2.
        let mut near = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.level <= 2)
            .map(|(i, _)| i as u32);
        assert!(
            (0..cores).all(|c| {
                (c as u32 % cfg.l2_shared_by != 0 || near.next() == Some(ipath[c].nodes[1]))
                    && near.next() == Some(ipath[c].nodes[0])
                    && near.next() == Some(dpath[c].nodes[0])
            }),
            "each group's L2 is built before its cores' L1s, in core order"
        );
        // A group's L2 lists its first core's L1I and L1D as sharers 0 and 1, its next core's
        // as 2 and 3, ...: a private L2, its core's as `L1_BITS`.
        assert!((0..cores).all(|c| {
            let k = (c as u32 % cfg.l2_shared_by) * 2;
            [ipath[c], dpath[c]].map(|p| nodes[p.nodes[0] as usize].pos)
                == [k + L1_BITS[0], k + L1_BITS[1]]
        }));
        let line_bytes = line as u64;
        let buses = (0..cfg.sockets)
            .map(|_| {
                Slots::new(
                    line_bytes,
                    cfg.bus_bytes_per_cycle,
                    cfg.arbitration,
                    cfg.cores_per_socket as usize,
                )
            })
            .collect();
        let drams: Vec<Slots> = (0..cfg.sockets * cfg.dram_controllers)
            .map(|_| {
                Slots::new(
                    line_bytes,
                    cfg.dram_bytes_per_cycle,
                    crate::config::Arbitration::Fifo,
                    cores,
                )
            })
            .collect();
        let banks = if cfg.dram_banks.enabled() {
            vec![Banks::new(cfg.dram_banks, line.trailing_zeros()); drams.len()]
        } else {
            Vec::new()
        };
        let pf = [
            Prefetcher::new(cfg.l1d_prefetch),
            Prefetcher::new(cfg.l2_prefetch),
        ];
        Ok(Memory {
            line_shift: line.trailing_zeros(),
            cfg,
            nodes,
            ipath,
            dpath,
            tops,
            buses,
            drams,
            banks,
            erase: Vec::new(),
            erasure: Erasure::Fill,
            prefetchers: vec![pf.clone(); cores],
            prefetching: pf.iter().any(Prefetcher::enabled),
            first_use: [false; 2],
            would_miss: [false; 2],
            candidates: [Vec::new(), Vec::new()],
            last_missed: [false; 3],
            core_stats: vec![CoreStats::default(); cores],
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MemoryConfig {
        &self.cfg
    }

    /// Each core's own part ([`Private`]: its L1s, its L2 if private, its counters and
    /// prefetchers), in core order, borrowed apart so that cores can be simulated on several
    /// host threads at once.
    pub fn privates(&mut self) -> impl Iterator<Item = Private<'_>> {
        // Nodes are built socket by socket, group by group (the group's L2, then its cores'
        // L1I and L1D, core by core): the nodes of levels 1 and 2 in order are each group's
        // L2 and its cores' L1s in order (`Memory::new` checks it).
        let shared_by = self.cfg.l2_shared_by;
        let mut near = self
            .nodes
            .iter_mut()
            .filter(|n| n.level <= 2)
            .map(|n| &mut n.cache);
        let (erase, erasure, protocol, line_shift, prefetching) = (
            &self.erase[..],
            self.erasure,
            self.cfg.protocol,
            self.line_shift,
            self.prefetching,
        );
        self.core_stats
            .iter_mut()
            .zip(self.prefetchers.iter_mut())
            .enumerate()
            .map(move |(core, (stats, prefetchers))| {
                let l2 =
                    (core as u32 % shared_by == 0).then(|| near.next().expect("an L2 per group"));
                Private {
                    core: core as u32,
                    l1i: near.next().expect("an L1I per core"),
                    l1d: near.next().expect("an L1D per core"),
                    l2: l2.filter(|_| shared_by == 1),
                    stats,
                    prefetchers,
                    erase,
                    erasure,
                    protocol,
                    line_shift,
                    prefetching,
                }
            })
    }

    /// Core `core`'s own part (see [`Memory::privates`]).
    pub fn private(&mut self, core: u32) -> Private<'_> {
        let c = core as usize;
        let (i, d, l2) = (
            self.ipath[c].nodes[0] as usize,
            self.dpath[c].nodes[0] as usize,
            self.ipath[c].nodes[1] as usize,
        );
        // The group's L2 is built before its cores' L1s, a core's L1I before its L1D.
        assert!(
            l2 < i && i < d,
            "a core's L2, L1I and L1D are built in order"
        );
        let (head, tail) = self.nodes.split_at_mut(i);
        let (l1i, rest) = tail.split_first_mut().expect("the L1I is a node");
        let (l1d, l2) = (&mut rest[d - i - 1], &mut head[l2]);
        Private {
            core,
            l1i: &mut l1i.cache,
            l1d: &mut l1d.cache,
            l2: (self.cfg.l2_shared_by == 1).then_some(&mut l2.cache),
            stats: &mut self.core_stats[c],
            prefetchers: &mut self.prefetchers[c],
            erase: &self.erase,
            erasure: self.erasure,
            protocol: self.cfg.protocol,
            line_shift: self.line_shift,
            prefetching: self.prefetching,
        }
    }

    /// Sets the miss-erasure PCs (replacing any previous set).
    pub fn set_erasure(&mut self, pcs: impl IntoIterator<Item = u64>) {
        self.erase = pcs.into_iter().collect();
        self.erase.sort_unstable();
        self.erase.dedup();
    }

    /// How erased accesses behave from now on (default [`Erasure::Fill`]).
    pub fn set_erasure_mode(&mut self, mode: Erasure) {
        self.erasure = mode;
    }

    /// Where a line would be served on `core`'s data path, looked up without changing
    /// anything: its own caches level by level, else memory (an approximation that ignores
    /// copies in other cores' private caches).
    fn probe(&self, core: u32, line: u64) -> Served {
        let path = self.dpath[core as usize];
        for (level, &n) in path.nodes[..path.len].iter().enumerate() {
            if self.node(n).cache.find(line).is_some() {
                return Served::ALL[level];
            }
        }
        Served::Dram
    }

    /// An erased access under [`Erasure::NoFill`]: a hit where the L1 holds the line with
    /// the permission it needs (an ordinary hit), otherwise the L1's latency and nothing
    /// else: no fill, no coherence action, no bandwidth, no prefetcher training.
    #[cold]
    fn access_unfilled(&mut self, core: u32, line: u64, kind: Kind, t: u64) -> Outcome {
        let n = self.dpath[core as usize].nodes[0];
        if self.nodes[n as usize]
            .cache
            .holds(line, kind == Kind::Store)
            .is_some()
        {
            return self.access_line(core, line, kind, t, false);
        }
        let would = self.probe(core, line);
        let l1 = &mut self.nodes[n as usize].cache;
        l1.stats.accesses += 1;
        l1.stats.hits += 1;
        Outcome {
            latency: l1.params.data_latency as u64,
            served: Served::L1,
            missed: [false; 3],
            coherence: false,
            erased: true,
            would_serve: would,
            merged: false,
            waited: false,
        }
    }

    /// One access of `size` bytes at `addr` by `core` at cycle `time`. An access that
    /// straddles two lines touches both and counts once: its latency is the larger of the
    /// two, its place the farther (in [`Served`] order), its flags the union.
    #[inline(always)]
    pub fn access(
        &mut self,
        core: u32,
        pc: u64,
        addr: u64,
        size: u32,
        kind: Kind,
        time: u64,
    ) -> Outcome {
        // Most accesses are a plain L1 hit: one line, not erased, and a `Cache::plain_hit`
        // (held with the permission the access needs, no prefetched line's first use). Such
        // a hit is done here, inlined into the core, with the same changes as the general
        // path below: the L1's replacement state and counters, the core's counters, and, for
        // data, the L1D prefetcher's training without a trigger (which asks for no prefetch).
        let (first, last) = self.lines(addr, size);
        if first == last && !erased(&self.erase, pc, kind) {
            let c = core as usize;
            let (ifetch, write) = (kind == Kind::IFetch, kind == Kind::Store);
            let n = if ifetch { self.ipath[c] } else { self.dpath[c] }.nodes[0];
            let l1 = &mut self.nodes[n as usize].cache;
            if let Some(slot) = l1.plain_hit(first, write) {
                let (o, first_use) = l1_hit(l1, slot, write, time, false);
                debug_assert!(!first_use);
                self.core_stats[c].count(kind, &o);
                if self.prefetching && !ifetch && self.prefetchers[c][0].enabled() {
                    self.prefetchers[c][0].learn(pc, addr);
                }
                return o;
            }
        }
        self.access_any(core, pc, addr, size, kind, time)
    }

    /// [`Memory::access`] for any access.
    #[inline(never)]
    fn access_any(
        &mut self,
        core: u32,
        pc: u64,
        addr: u64,
        size: u32,
        kind: Kind,
        time: u64,
    ) -> Outcome {
        let (first, last) = self.lines(addr, size);
        let erased = erased(&self.erase, pc, kind);
        self.first_use = [false; 2];
        self.would_miss = [false; 2];
        let unfilled = erased && self.erasure == Erasure::NoFill;
        let mut o = if unfilled {
            self.access_unfilled(core, first, kind, time)
        } else {
            self.access_line(core, first, kind, time, erased)
        };
        if last != first {
            let o2 = if unfilled {
                self.access_unfilled(core, last, kind, time)
            } else {
                self.access_line(core, last, kind, time, erased)
            };
            o.combine(o2);
        }
        self.core_stats[core as usize].count(kind, &o);
        if self.prefetching && kind != Kind::IFetch && !unfilled {
            self.prefetch(core, pc, addr, time, erased);
        }
        o
    }

    /// Trains the core's prefetchers on a demand data access and issues what they ask for.
    /// The L1D's trains on every access; the L2's on every request that reaches the L2: the
    /// demand's L1 misses and the lines the L1D's prefetcher fetches (as a real L2 streamer
    /// sees the L1's prefetches, which keeps it ahead of them). A level triggers on a miss
    /// there or on the first use of a line it prefetched. An erased access trains and
    /// triggers as it would without erasure, so the caches evolve alike, but its prefetches
    /// are erased too: they fill at once and take no bandwidth.
    fn prefetch(&mut self, core: u32, pc: u64, addr: u64, t: u64, erased: bool) {
        let c = core as usize;
        if self.prefetchers[c][0].enabled() {
            let trigger = self.would_miss[0] || self.first_use[0];
            let mut out = std::mem::take(&mut self.candidates[0]);
            self.prefetchers[c][0].train(pc, addr, self.line_shift, trigger, &mut out);
            for &line in &out {
                if let Some(l2_trigger) = self.prefetch_line(core, 0, line, t, erased) {
                    self.prefetch_l2(core, pc, line << self.line_shift, l2_trigger, t, erased);
                }
            }
            self.candidates[0] = out;
        }
        if self.would_miss[0] {
            let trigger = self.would_miss[1] || self.first_use[1];
            self.prefetch_l2(core, pc, addr, trigger, t, erased);
        }
    }

    /// The L2 prefetcher's part of [`Memory::prefetch`], for one request reaching the L2.
    fn prefetch_l2(&mut self, core: u32, pc: u64, addr: u64, trigger: bool, t: u64, erased: bool) {
        let c = core as usize;
        if !self.prefetchers[c][1].enabled() {
            return;
        }
        let mut out = std::mem::take(&mut self.candidates[1]);
        self.prefetchers[c][1].train(pc, addr, self.line_shift, trigger, &mut out);
        for &line in &out {
            self.prefetch_line(core, 1, line, t, erased);
        }
        self.candidates[1] = out;
    }

    /// Brings `line` into the core's cache at `level` (0 = L1D, 1 = L2) and every level beyond,
    /// as a load that uses the bus and DRAM like a miss (unless `erased`), unless that cache
    /// holds it already. Returns `None` if it did, else whether the request, at the next
    /// level, missed or made the first use of a line that level prefetched (an L2 trigger).
    fn prefetch_line(
        &mut self,
        core: u32,
        level: usize,
        line: u64,
        t: u64,
        erased: bool,
    ) -> Option<bool> {
        let full = self.dpath[core as usize];
        let path = match level {
            0 => full,
            _ => Path {
                nodes: [full.nodes[1], full.nodes[2], NONE],
                len: full.len - 1,
            },
        };
        if self.node(path.nodes[0]).cache.find(line).is_some() {
            return None;
        }
        let saved = self.first_use[1];
        self.first_use[1] = false;
        self.slow(core, path, line, Kind::Load, t, erased, true);
        let next = self.last_missed[1] || self.first_use[1];
        self.first_use[1] = saved;
        debug_assert_eq!(
            self.check_line(line),
            Ok(()),
            "after a level-{level} prefetch of line {line:#x} by core {core}"
        );
        Some(next)
    }

    /// The first and last line an access of `size` bytes at `addr` touches.
    #[inline]
    fn lines(&self, addr: u64, size: u32) -> (u64, u64) {
        lines(addr, size, self.line_shift)
    }

    /// Functional warming (before the region of interest): the access updates cache and
    /// coherence state exactly as a real one, but takes no bus or DRAM bandwidth and returns
    /// nothing. Statistics it touches are meant to be cleared by [`Memory::reset_stats`].
    pub fn warm(&mut self, core: u32, addr: u64, size: u32, kind: Kind) {
        let (first, last) = self.lines(addr, size);
        self.access_line(core, first, kind, 0, true);
        if last != first {
            self.access_line(core, last, kind, 0, true);
        }
    }

    /// Clears every counter (cache, core, bus, DRAM), keeping all cache contents.
    pub fn reset_stats(&mut self) {
        for n in &mut self.nodes {
            n.cache.stats = CacheStats::default();
        }
        for c in &mut self.core_stats {
            *c = CoreStats::default();
        }
        for s in self.buses.iter_mut().chain(self.drams.iter_mut()) {
            s.transfers = 0;
            s.wait_cycles = 0;
        }
        for b in &mut self.banks {
            b.stats = Default::default();
        }
    }

    fn access_line(&mut self, core: u32, line: u64, kind: Kind, t: u64, erased: bool) -> Outcome {
        let path = match kind {
            Kind::IFetch => self.ipath[core as usize],
            _ => self.dpath[core as usize],
        };
        let write = kind == Kind::Store;
        let l1 = &mut self.nodes[path.nodes[0] as usize].cache;
        if let Some(slot) = l1.holds(line, write) {
            let (o, first_use) = l1_hit(l1, slot, write, t, erased);
            self.first_use[0] |= first_use;
            return o;
        }
        // The levels beyond the L1 are looked up one after the other; their metadata is
        // asked for now, all at once.
        for &n in &path.nodes[1..path.len] {
            self.node(n).cache.prefetch_set(line);
        }
        let o = self.slow(core, path, line, kind, t, erased, false);
        debug_assert_eq!(
            self.check_line(line),
            Ok(()),
            "after {kind:?} of line {line:#x} by core {core}"
        );
        o
    }

    fn node(&self, n: u32) -> &Node {
        &self.nodes[n as usize]
    }

    fn cache(&mut self, n: u32) -> &mut Cache {
        &mut self.nodes[n as usize].cache
    }

    /// Removes `line` from `n` and its subtree.
    fn purge(&mut self, n: u32, line: u64) -> Found {
        self.walk(n, line, true)
    }

    /// Turns every `M` copy of `line` in `n`'s subtree into `S`, collecting dirty data.
    fn downgrade(&mut self, n: u32, line: u64) -> Found {
        self.walk(n, line, false)
    }

    /// The coherence walk behind [`Memory::purge`] (`invalidate`) and [`Memory::downgrade`]:
    /// visits `n` and the children its sharer mask lists, reporting dirtiness and the lowest
    /// level in `M`. A downgrade stops at a copy not in `M` (nothing below it can be `M`).
    fn walk(&mut self, n: u32, line: u64, invalidate: bool) -> Found {
        let Some(slot) = self.node(n).cache.find(line) else {
            return Found::default();
        };
        let c = &self.node(n).cache;
        let modified = c.state(slot) == MODIFIED;
        if !invalidate && !modified {
            return Found::default();
        }
        let mut f = Found {
            dirty: c.dirty(slot),
            m_level: if modified { self.node(n).level } else { 0 },
            others: false,
        };
        let mut sh = c.sharers(slot);
        while sh != 0 {
            let b = sh.trailing_zeros() as usize;
            sh &= sh - 1;
            let child = self.node(n).children[b];
            f.merge(self.walk(child, line, invalidate));
        }
        self.cache(n).give_up(slot, invalidate);
        f
    }

    /// For each node on the path from `path[top]` down to `path[1]`, acts on the children
    /// holding `line` that are not on the path: purge (for a store) or downgrade (for a load).
    fn siblings(&mut self, path: &Path, top: usize, line: u64, purge: bool) -> Found {
        let mut f = Found::default();
        for j in (1..=top).rev() {
            let n = path.nodes[j];
            let Some(slot) = self.node(n).cache.find(line) else {
                continue;
            };
            let keep = self.node(path.nodes[j - 1]).pos;
            let mut sh = self.node(n).cache.sharers(slot) & !(1u128 << keep);
            f.others |= sh != 0;
            while sh != 0 {
                let b = sh.trailing_zeros();
                sh &= sh - 1;
                let child = self.node(n).children[b as usize];
                if purge {
                    f.merge(self.purge(child, line));
                    let c = self.cache(n);
                    c.set_sharers(slot, c.sharers(slot) & !(1u128 << b));
                } else if self.node(child).cache.state_of(line) == MODIFIED {
                    f.merge(self.downgrade(child, line));
                }
            }
            if f.dirty {
                self.cache(n).set_dirty(slot, true);
            }
        }
        f
    }

    fn neighbor(m_level: u8) -> Served {
        if m_level == 1 {
            Served::L1Neighbor
        } else {
            Served::L2Neighbor
        }
    }

    fn level_served(level: u8) -> Served {
        match level {
            1 => Served::L1,
            2 => Served::L2,
            _ => Served::L3,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn slow(
        &mut self,
        core: u32,
        path: Path,
        line: u64,
        kind: Kind,
        t: u64,
        erased: bool,
        prefetch: bool,
    ) -> Outcome {
        let write = kind == Kind::Store;
        let timing = !erased;
        let plen = path.len;
        // The slot holding the line's tag at each level, valid or not (an invalidated copy
        // makes a miss a coherence miss, and a fill reuses its slot), and the state there
        // (`INVALID` without a tag).
        let mut st = [INVALID; 3];
        let mut tagged = [None; 3];
        for i in 0..plen {
            let c = &self.node(path.nodes[i]).cache;
            tagged[i] = c.find_tag(line);
            if let Some(slot) = tagged[i] {
                st[i] = c.state(slot);
            }
        }
        let good = |s: u8| if write { s == MODIFIED } else { s != INVALID };
        let hit = (0..plen).find(|&i| good(st[i]));
        let socket = self.node(path.nodes[0]).socket;
        let cis = (core % self.cfg.cores_per_socket) as usize;
        let tag = |m: &Memory, i: usize| m.node(path.nodes[i]).cache.params.tag_latency as u64;
        let data = |m: &Memory, level: u8| match level {
            1 => m.cfg.l1d.data_latency as u64,
            2 => m.cfg.l2.data_latency as u64,
            _ => m.cfg.l3.map_or(0, |p| p.data_latency as u64),
        };
        // Statistics of the levels the access reached (an erased access is an L1 hit; a
        // prefetch is counted apart).
        let reached = if erased || prefetch {
            0
        } else {
            hit.map_or(plen, |k| k + 1)
        };
        if erased && !prefetch {
            let c = self.cache(path.nodes[0]);
            c.stats.accesses += 1;
            c.stats.hits += 1;
        }
        let mut coherence = false;
        for (i, &n) in path.nodes.iter().enumerate().take(reached) {
            let c = self.cache(n);
            c.stats.accesses += 1;
            if Some(i) == hit {
                c.stats.hits += 1;
            } else {
                match kind {
                    Kind::IFetch => c.stats.misses_ifetch += 1,
                    Kind::Load => c.stats.misses_load += 1,
                    Kind::Store => c.stats.misses_store += 1,
                }
                if st[i] == INVALID && tagged[i].is_some() {
                    c.stats.coherence_misses += 1;
                    coherence |= i == 0;
                }
            }
        }
        let mut lat = tag(self, 0);
        let mut served;
        // No private cache off the path holds the line (a hit that owns it can hand it on).
        let mut alone = false;
        match hit {
            Some(k) => {
                for i in 1..k {
                    lat += tag(self, i);
                }
                let p_level = self.node(path.nodes[k]).level;
                if p_level >= 3 && timing {
                    lat = self.buses[socket as usize].request(cis, t + lat) - t;
                }
                let f = self.siblings(&path, k, line, write);
                alone = !f.others;
                // A neighbour holding the line in M supplies it — under MESI only if it is
                // dirty (a clean exclusive copy is just downgraded or invalidated; the data
                // comes from the level that hit).
                let neighbor_supplies = f.m_level != 0
                    && (!write || st[0] == INVALID)
                    && (f.dirty || self.cfg.protocol == Protocol::Msi);
                if neighbor_supplies {
                    served = Self::neighbor(f.m_level);
                    lat += self.node(path.nodes[k]).cache.params.tag_latency as u64
                        + data(self, f.m_level);
                } else {
                    served = Self::level_served(p_level);
                    lat += data(self, p_level);
                }
                // Another core's private copies were reached: an owner downgraded or
                // invalidated, or a store's invalidations of shared copies.
                if f.m_level != 0 || (write && f.others) {
                    lat += self.cfg.snoop_latency as u64;
                }
            }
            None => {
                for i in 1..plen {
                    lat += tag(self, i);
                }
                if timing {
                    lat = self.buses[socket as usize].request(cis, t + lat) - t;
                }
                let top = path.nodes[plen - 1];
                // Other top-level caches holding the line.
                let mut remote = Found::default();
                let mut other_socket = false;
                let mut same_socket = false;
                for ti in 0..self.tops.len() {
                    let other = self.tops[ti];
                    if other == top || self.node(other).cache.find(line).is_none() {
                        continue;
                    }
                    if self.node(other).socket == socket {
                        same_socket = true;
                    } else {
                        other_socket = true;
                    }
                    let f = if write {
                        self.purge(other, line)
                    } else {
                        self.downgrade(other, line)
                    };
                    remote.merge(f);
                }
                if remote.dirty && timing {
                    // A modified remote copy goes back to memory as it is shared or handed over.
                    self.dram_write(line, core, t + lat);
                }
                let top_had = st[plen - 1] != INVALID;
                if write {
                    self.siblings(&path, plen - 1, line, true);
                }
                if other_socket {
                    served = Served::OffSocket;
                    lat += self.cfg.off_socket_latency as u64;
                } else if same_socket {
                    lat += self.cfg.snoop_latency as u64;
                    served = if remote.m_level != 0 {
                        Self::neighbor(remote.m_level)
                    } else {
                        Served::L2Neighbor
                    };
                    lat += data(
                        self,
                        if remote.m_level == 0 {
                            2
                        } else {
                            remote.m_level
                        },
                    );
                } else if top_had {
                    // A store to a line only this subtree shares: ownership from the top level.
                    served = Self::level_served(self.node(top).level);
                } else {
                    served = Served::Dram;
                    if timing {
                        let c = self.dram_of(line);
                        let mut done = self.dram_read(c, line, core, t + lat);
                        if (c as u32) / self.cfg.dram_controllers != socket {
                            done += self.cfg.off_socket_latency as u64;
                        }
                        lat = done - t;
                    }
                }
            }
        }
        // A copy on the path still arriving (from another core's or an earlier miss; for a
        // store, the line it upgrades): the access waits for it, charged to where it comes
        // from (an erased access reports that place as where it would have been served).
        // (The coherence actions above touched only copies off the path, so `tagged` stands.)
        // A level beyond the one that serves the access does not delay it: its own copy may
        // still be arriving when cores' accesses come out of time order, while the serving
        // level's copy has arrived.
        let mut waited = false;
        for (i, &n) in path
            .nodes
            .iter()
            .enumerate()
            .take(hit.map_or(plen, |k| k + 1))
        {
            if st[i] != INVALID
                && let Some(slot) = tagged[i]
                && let Some((wait, src)) = self.node(n).cache.pending(slot, t)
                && wait > lat
            {
                lat = wait;
                served = Served::ALL[src as usize];
                waited = true;
                if timing {
                    self.cache(n).stats.merged += 1;
                }
            }
        }
        // A request that found a prefetched line in its L1 (a demand) or, as its hit, in its
        // L2 (a demand or an L1 prefetch) makes that line's first use.
        for i in usize::from(prefetch)..plen.min(2) {
            let level = self.node(path.nodes[i]).level as usize;
            if level <= 2
                && st[i] != INVALID
                && (i == 0 || hit == Some(i))
                && let Some(slot) = tagged[i]
                && self.cache(path.nodes[i]).first_use(slot, waited)
            {
                self.first_use[level - 1] = true;
            }
        }
        // The levels that did not hold the line now get it, in flight until it arrives (an
        // upgrade leaves the arrival of the data as it was).
        // A store takes ownership (M, dirty). Under MESI a load that found no copy in any
        // other private cache takes ownership too, clean (the E state), so a later store of
        // the core hits: when it comes from DRAM, or from a level that owns the line (M at
        // the L2 or L3, as a shared cache's directory knows that no other core has it).
        let exclusive = !write
            && self.cfg.protocol == Protocol::Mesi
            && match hit {
                None => served == Served::Dram,
                Some(k) => k > 0 && alone && st[k] == MODIFIED,
            };
        let new = if write || exclusive { MODIFIED } else { SHARED };
        let fill = timing.then_some((t, t + lat, served as u8));
        self.install(
            &path,
            hit.unwrap_or(plen - 1),
            line,
            tagged,
            new,
            write,
            fill,
            core,
            t,
        );
        if prefetch && let Some(slot) = self.node(path.nodes[0]).cache.find(line) {
            self.cache(path.nodes[0]).set_prefetched(slot);
        }
        let missed = [true, hit.is_none_or(|k| k > 1), hit.is_none() && plen == 3];
        self.last_missed = missed;
        if !prefetch {
            self.would_miss[0] |= missed[0];
            self.would_miss[1] |= missed[1];
        }
        if erased {
            Outcome {
                latency: self.node(path.nodes[0]).cache.params.data_latency as u64,
                served: Served::L1,
                missed: [false; 3],
                coherence: false,
                erased: true,
                would_serve: served,
                merged: false,
                waited,
            }
        } else {
            Outcome {
                latency: lat,
                served,
                missed,
                coherence,
                erased: false,
                would_serve: served,
                merged: false,
                waited,
            }
        }
    }

    /// A read of `line` arriving at DRAM controller `c` at `t`: when its data is back.
    fn dram_read(&mut self, c: usize, line: u64, core: u32, t: u64) -> u64 {
        let latency = self.cfg.dram_latency as u64;
        match self.banks.get_mut(c) {
            None => self.drams[c].request(core as usize, t) + latency,
            Some(b) => {
                let (done, _) = b.access(line, t, false, &mut self.drams[c], core as usize);
                done + latency - self.cfg.dram_banks.conflict_cycles()
            }
        }
    }

    /// A write-back of `line` sent to its DRAM controller at `t` (posted: nobody waits).
    fn dram_write(&mut self, line: u64, core: u32, t: u64) {
        let c = self.dram_of(line);
        match self.banks.get_mut(c) {
            None => {
                self.drams[c].request(core as usize, t);
            }
            Some(b) => {
                b.access(line, t, true, &mut self.drams[c], core as usize);
            }
        }
    }

    /// Global DRAM controller of a line: addresses interleave across all controllers of all
    /// sockets in `dram_interleave` granules; controller `c` belongs to socket
    /// `c / dram_controllers`.
    fn dram_of(&self, line: u64) -> usize {
        let addr = line << self.line_shift;
        ((addr / self.cfg.dram_interleave) % self.drams.len() as u64) as usize
    }

    /// Makes `line` valid in `path[0..=top]` with state `new` (`M` for a store, `S` for a
    /// load: nodes already valid keep their state on a load), top-down so inclusion holds at
    /// every step, handling the victims of each fill; the L1 copy becomes dirty if `dirty`
    /// (a store). With timing, `fill` is the (request, arrival, source) every newly filled
    /// node records as its fill in flight. `tagged` is the slot holding the line's tag at
    /// each level of the path, as [`Memory::slow`] found them (only copies off the path, and
    /// victims' slots, change before a level is filled, so they stand).
    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        path: &Path,
        top: usize,
        line: u64,
        tagged: [Option<usize>; 3],
        new: u8,
        dirty: bool,
        fill: Option<(u64, u64, u8)>,
        core: u32,
        t: u64,
    ) {
        let timing = fill.is_some();
        // The line's slot in the level above the one being installed (filled in the previous
        // turn; a victim's eviction below never moves it: by inclusion, a victim's
        // write-back finds its own copy in the parent).
        let mut above = None;
        for i in (0..=top).rev() {
            let n = path.nodes[i];
            // Whether the line is valid here, and the slot a fill reuses if its tag stayed
            // behind.
            let tagged = tagged[i];
            debug_assert_eq!(tagged, self.node(n).cache.find_tag(line));
            let valid = tagged.filter(|&s| self.node(n).cache.state(s) != INVALID);
            let slot = match valid {
                Some(slot) => {
                    let c = self.cache(n);
                    c.touch(slot);
                    if new == MODIFIED {
                        c.set_state(slot, MODIFIED);
                    }
                    slot
                }
                None => {
                    let (slot, victim) = self.cache(n).fill_at(line, new, tagged);
                    if let Some((start, done, src)) = fill {
                        self.cache(n).set_fill(slot, start, done, src);
                    }
                    if let Some(v) = victim {
                        self.evict(n, v, timing, core, t);
                    }
                    slot
                }
            };
            if i == 0 && dirty {
                self.cache(n).set_dirty(slot, true);
            }
            if i + 1 < path.len {
                let p = path.nodes[i + 1];
                let bit = 1u128 << self.node(n).pos;
                let ps = if i < top {
                    above
                } else {
                    self.node(p).cache.find(line)
                };
                debug_assert_eq!(ps, self.node(p).cache.find(line));
                if let Some(ps) = ps {
                    let c = self.cache(p);
                    c.set_sharers(ps, c.sharers(ps) | bit);
                    self.cache(n).set_parent(slot, ps as u32);
                }
            }
            above = Some(slot);
        }
    }

    /// Handles a line displaced from node `n`: removes it from `n`'s subtree (inclusion) and
    /// writes dirty data back to the parent, or to DRAM from a top-level node.
    fn evict(&mut self, n: u32, v: Victim, timing: bool, core: u32, t: u64) {
        let mut dirty = v.dirty;
        let mut sh = v.sharers;
        while sh != 0 {
            let b = sh.trailing_zeros() as usize;
            sh &= sh - 1;
            let child = self.node(n).children[b];
            dirty |= self.purge(child, v.line).dirty;
        }
        let parent = self.node(n).parent;
        let level = self.node(n).level;
        let socket = self.node(n).socket as usize;
        // The parent's copy, by inclusion present, in the slot the fill recorded (no search
        // of the parent's set).
        let ps = (parent != NONE && v.parent != NO_PARENT).then_some(v.parent as usize);
        debug_assert!(parent == NONE || ps == self.node(parent).cache.find(v.line));
        if dirty {
            self.cache(n).stats.writebacks += 1;
            if parent != NONE {
                if let Some(ps) = ps {
                    self.cache(parent).set_dirty(ps, true);
                }
                if level == 2 && timing {
                    self.buses[socket].request((core % self.cfg.cores_per_socket) as usize, t);
                }
            } else if timing {
                if level == 2 {
                    self.buses[socket].request((core % self.cfg.cores_per_socket) as usize, t);
                }
                self.dram_write(v.line, core, t);
            }
        }
        if let Some(ps) = ps {
            let bit = 1u128 << self.node(n).pos;
            let c = self.cache(parent);
            c.set_sharers(ps, c.sharers(ps) & !bit);
        }
    }

    /// Checks the coherence and inclusion invariants for one line: a valid copy's parent is
    /// valid and lists it as a sharer; `M` implies the parent is `M`; sharer bits point at
    /// valid children; at most one private (L1) cache holds the line in `M`, and then no other
    /// L1 holds it; at most one top-level cache holds it in `M`, and then no other top holds it.
    pub fn check_line(&self, line: u64) -> Result<(), String> {
        let mut l1_m = 0;
        let mut l1_valid = 0;
        let mut top_m = 0;
        let mut top_valid = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let Some(slot) = n.cache.find(line) else {
                continue;
            };
            let st = n.cache.state(slot);
            if n.level == 1 {
                l1_valid += 1;
                l1_m += (st == MODIFIED) as u32;
            }
            if n.parent == NONE {
                top_valid += 1;
                top_m += (st == MODIFIED) as u32;
            } else {
                let p = self.node(n.parent);
                let Some(ps) = p.cache.find(line) else {
                    return Err(format!(
                        "line {line:#x}: node {i} (L{}) holds it, its parent does not",
                        n.level
                    ));
                };
                if n.cache.parent(slot) != ps as u32 {
                    return Err(format!(
                        "line {line:#x}: node {i} records parent slot {}, the parent holds it in {ps}",
                        n.cache.parent(slot)
                    ));
                }
                if p.cache.sharers(ps) & (1 << n.pos) == 0 {
                    return Err(format!(
                        "line {line:#x}: node {i} holds it but is not in its parent's sharers"
                    ));
                }
                if st == MODIFIED && p.cache.state(ps) != MODIFIED {
                    return Err(format!(
                        "line {line:#x}: node {i} is M but its parent is not"
                    ));
                }
            }
            let mut sh = n.cache.sharers(slot);
            while sh != 0 {
                let b = sh.trailing_zeros() as usize;
                sh &= sh - 1;
                if self.node(n.children[b]).cache.find(line).is_none() {
                    return Err(format!(
                        "line {line:#x}: node {i} lists child {b} as a sharer, which lacks it"
                    ));
                }
            }
        }
        if l1_m > 1 || (l1_m == 1 && l1_valid > 1) {
            return Err(format!(
                "line {line:#x}: {l1_m} private caches in M, {l1_valid} private caches hold it"
            ));
        }
        if top_m > 1 || (top_m == 1 && top_valid > 1) {
            return Err(format!(
                "line {line:#x}: {top_m} top-level caches in M, {top_valid} hold it"
            ));
        }
        Ok(())
    }

    /// Checks [`Memory::check_line`] for every line held anywhere.
    pub fn check_all(&self) -> Result<(), String> {
        for n in &self.nodes {
            for (line, _) in n.cache.valid_lines() {
                self.check_line(line)?;
            }
        }
        Ok(())
    }

    /// Counters of every cache instance: (name such as `core3.l1d`, `socket0.l2.1`, `socket0.l3`, stats).
    pub fn cache_stats(&self) -> Vec<(String, CacheStats)> {
        let mut out = Vec::new();
        for c in 0..self.cfg.cores() as usize {
            out.push((
                format!("core{c}.l1i"),
                self.node(self.ipath[c].nodes[0]).cache.stats,
            ));
            out.push((
                format!("core{c}.l1d"),
                self.node(self.dpath[c].nodes[0]).cache.stats,
            ));
        }
        let mut l2_index = vec![0u32; self.cfg.sockets as usize];
        for n in &self.nodes {
            match n.level {
                2 => {
                    let i = &mut l2_index[n.socket as usize];
                    out.push((format!("socket{}.l2.{}", n.socket, i), n.cache.stats));
                    *i += 1;
                }
                3 => out.push((format!("socket{}.l3", n.socket), n.cache.stats)),
                _ => {}
            }
        }
        out
    }

    /// Counters of the L1D, L2 and L3 a core's data accesses go through.
    pub fn path_stats(&self, core: u32) -> Vec<CacheStats> {
        let p = self.dpath[core as usize];
        (0..p.len)
            .map(|i| self.node(p.nodes[i]).cache.stats)
            .collect()
    }

    /// Bus counters per socket: (transfers, total queueing cycles).
    pub fn bus_stats(&self) -> Vec<(u64, u64)> {
        self.buses
            .iter()
            .map(|b| (b.transfers, b.wait_cycles))
            .collect()
    }

    /// Row-buffer counters per DRAM controller (empty without a bank model).
    pub fn bank_stats(&self) -> Vec<crate::dram::BankStats> {
        self.banks.iter().map(|b| b.stats).collect()
    }

    /// DRAM counters per controller: (transfers, total queueing cycles).
    pub fn dram_stats(&self) -> Vec<(u64, u64)> {
        self.drams
            .iter()
            .map(|b| (b.transfers, b.wait_cycles))
            .collect()
    }
}
