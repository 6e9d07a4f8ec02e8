//! Phase 2 of config loading: from the raw structs to a [`MachineConfig`] with units parsed,
//! defaults filled in and every rule checked. It never stops at the first problem: each
//! check records a [`ConfigError`] and carries on, and checks that combine several values
//! (cache geometry, sharing) run only when those values were themselves valid, so one
//! mistake gives one error, not a cascade.

use std::fmt::Display;
use std::str::FromStr;

use super::ConfigError;
use super::defaults;
use super::machine::{
    BusConfig, CacheConfig, CacheHierarchyConfig, CoherenceConfig, CoreConfig, DramBanks,
    DramConfig, DramRefresh, LocksConfig, MachineConfig, OffSocketConfig, OpLatencies, SharedBy,
    StoreForward, SystemConfig, TlbConfig,
};
use super::raw::{KeyPositions, RawBranchPredictor, RawCache, RawMachine, RawScalar, RawTlb};
use super::units::{self, Bandwidth, Frequency, Size, Time, UnitError};
use sim_core::LockKind;
use sim_core::bpred::{BpredConfig, Problem};
use sim_memory::{Arbitration, PrefetchKind, Protocol, ReplacementKind};

/// Where errors are attributed: the file, or `--set` for keys an override wrote.
pub(super) struct Ctx<'a> {
    /// The file name used in messages.
    pub origin: &'a str,
    /// Dotted keys written by `--set` overrides.
    pub overridden: &'a [String],
    /// Where each key of the file is written.
    pub positions: &'a KeyPositions,
    /// Everything found so far.
    pub errors: Vec<ConfigError>,
}

impl Ctx<'_> {
    /// Records an error about `key` (a dotted path) holding `value`. The error is charged to
    /// `--set` when an override wrote that key or a table above it, else to the file, at the
    /// key's line when the file writes it.
    pub fn error(&mut self, key: &str, value: impl Display, message: impl Into<String>) {
        let from_set = self.overridden.iter().any(|set| {
            key == set || (key.starts_with(set.as_str()) && key[set.len()..].starts_with('.'))
        });
        let (origin, position) = if from_set {
            ("--set".to_owned(), None)
        } else {
            (self.origin.to_owned(), self.positions.find(key))
        };
        self.errors.push(ConfigError {
            origin,
            position,
            key: key.to_owned(),
            value: value.to_string(),
            message: message.into(),
        });
    }

    /// An integer key: `raw` or `default`, which must be at least `min`.
    fn int(&mut self, key: &str, raw: Option<u32>, default: u32, min: u32) -> Option<u32> {
        let v = raw.unwrap_or(default);
        if v < min {
            self.error(key, v, format!("must be at least {min}"));
            return None;
        }
        Some(v)
    }

    /// A value with a unit: `raw` parsed, or `default`; it must be positive.
    fn unit<T: Quantity>(&mut self, key: &str, raw: Option<&RawScalar>, default: T) -> Option<T> {
        let parsed = match raw {
            None => Ok(default),
            Some(RawScalar::Str(s)) => s.parse::<T>(),
            Some(RawScalar::Int(i)) => T::from_integer(*i),
            Some(_) => Err(UnitError(format!("expected {}", T::ALLOWED))),
        };
        match parsed {
            Ok(v) if v.is_zero() => {
                let shown = raw.map_or_else(|| v.to_string(), ToString::to_string);
                self.error(key, shown, "must be greater than zero");
                None
            }
            Ok(v) => Some(v),
            Err(e) => {
                let shown = raw.map_or_else(String::new, ToString::to_string);
                self.error(key, shown, e.0);
                None
            }
        }
    }

    /// One of a fixed set of names (`ALL` with `name()`), or `default`.
    fn named<T: Copy>(
        &mut self,
        key: &str,
        raw: Option<&str>,
        default: T,
        all: &[T],
        name: fn(T) -> &'static str,
        what: &str,
    ) -> Option<T> {
        let Some(text) = raw else {
            return Some(default);
        };
        if let Some(v) = all.iter().copied().find(|v| name(*v) == text) {
            return Some(v);
        }
        let allowed: Vec<String> = all.iter().map(|v| format!("\"{}\"", name(*v))).collect();
        self.error(
            key,
            toml::Value::String(text.to_owned()),
            format!("unknown {what}; allowed: {}", allowed.join(", ")),
        );
        None
    }
}

/// A unit type as phase 2 reads it from a TOML string or integer.
trait Quantity: FromStr<Err = UnitError> + Display + Copy {
    /// What the unit accepts, for messages.
    const ALLOWED: &'static str;
    /// Whether this is the zero quantity.
    fn is_zero(self) -> bool;
    /// A bare TOML integer: bytes for sizes; a missing unit for everything else.
    fn from_integer(_: i64) -> Result<Self, UnitError> {
        Err(UnitError(format!(
            "a number needs a unit here: expected {}",
            Self::ALLOWED
        )))
    }
}

impl Quantity for Size {
    const ALLOWED: &'static str = units::SIZE_ALLOWED;
    fn is_zero(self) -> bool {
        self.0 == 0
    }
    fn from_integer(i: i64) -> Result<Self, UnitError> {
        u64::try_from(i)
            .map(Size)
            .map_err(|_| UnitError(format!("bad size (negative): expected {}", Self::ALLOWED)))
    }
}

impl Quantity for Frequency {
    const ALLOWED: &'static str = units::FREQUENCY_ALLOWED;
    fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Quantity for Time {
    const ALLOWED: &'static str = units::TIME_ALLOWED;
    fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Quantity for Bandwidth {
    const ALLOWED: &'static str = units::BANDWIDTH_ALLOWED;
    fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// ", nearest: 2048 or 4096" for a value that is not a power of two.
fn nearest_pow2(v: u64) -> String {
    if v == 0 {
        return String::new();
    }
    let upper = v.checked_next_power_of_two();
    let lower = upper.map_or(1 << 63, |u| u / 2);
    match upper {
        Some(upper) if lower >= 1 && lower != upper => format!(" (nearest: {lower} or {upper})"),
        _ => format!(" (nearest: {lower})"),
    }
}

/// Validates a whole raw config. Returns the machine when no error was recorded in `ctx`.
pub(super) fn machine(raw: RawMachine, ctx: &mut Ctx<'_>) -> MachineConfig {
    let d = defaults::machine();

    let system = raw.system.unwrap_or_default();
    let sockets = ctx.int("system.sockets", system.sockets, d.system.sockets, 1);
    let cores_per_socket = ctx.int(
        "system.cores_per_socket",
        system.cores_per_socket,
        d.system.cores_per_socket,
        1,
    );
    if let (Some(s), Some(c)) = (sockets, cores_per_socket)
        && s.checked_mul(c).is_none()
    {
        ctx.error(
            "system",
            format!("{s} sockets × {c} cores"),
            "too many cores in total (at most 4294967295)",
        );
    }
    let frequency = ctx.unit(
        "system.frequency",
        system.frequency.as_ref(),
        d.system.frequency,
    );

    let core = raw.core.unwrap_or_default();
    let dc = &d.core;
    let lat = core.latency.unwrap_or_default();
    let dl = &dc.latency;
    let mut op = |name: &str, raw: Option<u32>, default: u32| {
        ctx.int(&format!("core.latency.{name}"), raw, default, 1)
            .unwrap_or(default)
    };
    let latency = OpLatencies {
        int_alu: op("int_alu", lat.int_alu, dl.int_alu),
        int_mul: op("int_mul", lat.int_mul, dl.int_mul),
        int_div: op("int_div", lat.int_div, dl.int_div),
        fp_add: op("fp_add", lat.fp_add, dl.fp_add),
        fp_mul: op("fp_mul", lat.fp_mul, dl.fp_mul),
        fp_div: op("fp_div", lat.fp_div, dl.fp_div),
        load: op("load", lat.load, dl.load),
        store: op("store", lat.store, dl.store),
        branch: op("branch", lat.branch, dl.branch),
        other: op("other", lat.other, dl.other),
        locked: ctx
            .int("core.latency.locked", lat.locked, dl.locked, 0)
            .unwrap_or(dl.locked),
    };
    let fwd = core.store_forward.unwrap_or_default();
    let df = &dc.store_forward;
    let mut cycles = |name: &str, raw: Option<u32>, default: u32| {
        ctx.int(&format!("core.store_forward.{name}"), raw, default, 0)
            .unwrap_or(default)
    };
    let store_forward = StoreForward {
        enabled: fwd.enabled.unwrap_or(df.enabled),
        int: cycles("int", fwd.int, df.int),
        fp: cycles("fp", fwd.fp, df.fp),
        partial: cycles("partial", fwd.partial, df.partial),
    };
    let dispatch_width = ctx.int(
        "core.dispatch_width",
        core.dispatch_width,
        dc.dispatch_width,
        1,
    );
    let rob_size = ctx.int("core.rob_size", core.rob_size, dc.rob_size, 1);
    if let (Some(w), Some(r)) = (dispatch_width, rob_size)
        && r < w
    {
        ctx.error(
            "core.rob_size",
            r,
            format!("must be at least core.dispatch_width ({w}): a dispatch group must fit in the window"),
        );
    }
    let core = CoreConfig {
        dispatch_width: dispatch_width.unwrap_or(dc.dispatch_width),
        rob_size: rob_size.unwrap_or(dc.rob_size),
        frontend_depth: core.frontend_depth.unwrap_or(dc.frontend_depth),
        outstanding_loads: ctx
            .int(
                "core.outstanding_loads",
                core.outstanding_loads,
                dc.outstanding_loads,
                1,
            )
            .unwrap_or(dc.outstanding_loads),
        outstanding_stores: ctx
            .int(
                "core.outstanding_stores",
                core.outstanding_stores,
                dc.outstanding_stores,
                1,
            )
            .unwrap_or(dc.outstanding_stores),
        long_latency_cutoff: ctx
            .int(
                "core.long_latency_cutoff",
                core.long_latency_cutoff,
                dc.long_latency_cutoff,
                1,
            )
            .unwrap_or(dc.long_latency_cutoff),
        scheduler_size: ctx
            .int(
                "core.scheduler_size",
                core.scheduler_size,
                dc.scheduler_size,
                0,
            )
            .unwrap_or(dc.scheduler_size),
        latency,
        store_forward,
    };

    let branch_predictor = branch_predictor(
        raw.branch_predictor.unwrap_or_default(),
        &d.branch_predictor,
        ctx,
    )
    .unwrap_or(d.branch_predictor);

    let cache = caches(
        raw.cache.unwrap_or_default(),
        cores_per_socket,
        &d.cache,
        ctx,
    );

    let coherence = raw.coherence.unwrap_or_default();
    let protocol = ctx
        .named(
            "coherence.protocol",
            coherence.protocol.as_deref(),
            d.coherence.protocol,
            &Protocol::ALL,
            Protocol::name,
            "coherence protocol",
        )
        .unwrap_or(d.coherence.protocol);
    let snoop_latency = ctx
        .int(
            "coherence.snoop_latency",
            coherence.snoop_latency,
            d.coherence.snoop_latency,
            0,
        )
        .unwrap_or(d.coherence.snoop_latency);

    let locks = raw.locks.unwrap_or_default();
    let model = ctx
        .named(
            "locks.model",
            locks.model.as_deref(),
            d.locks.model,
            &LockKind::ALL,
            LockKind::name,
            "lock model",
        )
        .unwrap_or(d.locks.model);
    let mut cost = |key: &str, raw: Option<u32>, default: u32| match model {
        LockKind::Futex => ctx.int(key, raw, default, 0),
        LockKind::Fifo => {
            if let Some(v) = raw {
                ctx.error(key, v, "is a futex cost: only with model = \"futex\"");
            }
            None
        }
    };
    let locks = LocksConfig {
        model,
        futex_wait: cost("locks.futex_wait", locks.futex_wait, defaults::FUTEX_WAIT),
        futex_wake: cost("locks.futex_wake", locks.futex_wake, defaults::FUTEX_WAKE),
        wake_latency: cost(
            "locks.wake_latency",
            locks.wake_latency,
            defaults::WAKE_LATENCY,
        ),
        spin: cost("locks.spin", locks.spin, defaults::SPIN),
        call: ctx
            .int("locks.call", locks.call, d.locks.call, 0)
            .unwrap_or(d.locks.call),
    };

    let bus = raw.bus.unwrap_or_default();
    let bus = BusConfig {
        bandwidth: ctx
            .unit("bus.bandwidth", bus.bandwidth.as_ref(), d.bus.bandwidth)
            .unwrap_or(d.bus.bandwidth),
        arbitration: ctx
            .named(
                "bus.arbitration",
                bus.arbitration.as_deref(),
                d.bus.arbitration,
                &Arbitration::ALL,
                Arbitration::name,
                "bus arbitration policy",
            )
            .unwrap_or(d.bus.arbitration),
    };

    let dram = raw.dram.unwrap_or_default();
    let mut interleave = ctx.unit(
        "dram.interleave",
        dram.interleave.as_ref(),
        d.dram.interleave,
    );
    if let Some(value) = interleave {
        let line = cache.line_size();
        let problem = if !value.0.is_power_of_two() {
            Some(format!("must be a power of two{}", nearest_pow2(value.0)))
        } else if value < line {
            Some(format!("must be at least the line size ({line})"))
        } else {
            None
        };
        if let Some(problem) = problem {
            let shown = dram
                .interleave
                .as_ref()
                .map_or_else(|| value.to_string(), ToString::to_string);
            ctx.error("dram.interleave", shown, problem);
            interleave = None;
        }
    }
    let banks_of = dram_banks(&dram, ctx);
    let dram = DramConfig {
        latency: ctx
            .unit("dram.latency", dram.latency.as_ref(), d.dram.latency)
            .unwrap_or(d.dram.latency),
        bandwidth: ctx
            .unit("dram.bandwidth", dram.bandwidth.as_ref(), d.dram.bandwidth)
            .unwrap_or(d.dram.bandwidth),
        controllers: ctx
            .int("dram.controllers", dram.controllers, d.dram.controllers, 1)
            .unwrap_or(d.dram.controllers),
        interleave: interleave.unwrap_or(d.dram.interleave),
        banks: banks_of,
    };
    if let (Some(f), Some(n)) = (frequency, dram.banks.as_ref().map(|b| b.banks)) {
        let line = cache.line_size().bytes();
        if let Err(why) = dram
            .bank_params(f)
            .check(line, dram.latency.to_cycles(f) as u32)
        {
            ctx.error("dram.banks", n, why);
        }
    }

    let off_socket = raw.off_socket.unwrap_or_default();
    let off_socket = OffSocketConfig {
        latency: ctx
            .unit(
                "off_socket.latency",
                off_socket.latency.as_ref(),
                d.off_socket.latency,
            )
            .unwrap_or(d.off_socket.latency),
    };

    let tlb = raw.tlb.and_then(|t| tlb(t, ctx));

    MachineConfig {
        system: SystemConfig {
            sockets: sockets.unwrap_or(d.system.sockets),
            cores_per_socket: cores_per_socket.unwrap_or(d.system.cores_per_socket),
            frequency: frequency.unwrap_or(d.system.frequency),
        },
        core,
        branch_predictor,
        cache,
        coherence: CoherenceConfig {
            protocol,
            snoop_latency,
        },
        locks,
        bus,
        dram,
        off_socket,
        tlb,
    }
}

/// `[dram]`'s bank keys: all five or none, and the refresh keys both or neither, only with
/// them (a bank model with a guessed timing would be a silent default).
fn dram_banks(raw: &super::raw::RawDram, ctx: &mut Ctx<'_>) -> Option<DramBanks> {
    let banks_given = all_or_none(
        ctx,
        &[
            ("banks", raw.banks.is_some()),
            ("row_size", raw.row_size.is_some()),
            ("t_rp", raw.t_rp.is_some()),
            ("t_rcd", raw.t_rcd.is_some()),
            ("t_cas", raw.t_cas.is_some()),
        ],
        "the bank model needs all of dram.banks, row_size, t_rp, t_rcd and t_cas",
    )?;
    let refresh = [
        ("t_refi", raw.t_refi.is_some()),
        ("t_rfc", raw.t_rfc.is_some()),
    ];
    if !banks_given {
        if let Some((key, _)) = refresh.iter().find(|k| k.1) {
            ctx.error(
                &format!("dram.{key}"),
                "(given)",
                "refresh is part of the bank model: give dram.banks, row_size, t_rp, t_rcd and t_cas too",
            );
        }
        return None;
    }
    let refresh_given = all_or_none(
        ctx,
        &refresh,
        "refresh needs both dram.t_refi and dram.t_rfc",
    );
    let zero = Time(0);
    let banks = ctx.int("dram.banks", raw.banks, 1, 1);
    let row_size = ctx.unit("dram.row_size", raw.row_size.as_ref(), Size(0));
    let t_rp = ctx.unit("dram.t_rp", raw.t_rp.as_ref(), zero);
    let t_rcd = ctx.unit("dram.t_rcd", raw.t_rcd.as_ref(), zero);
    let t_cas = ctx.unit("dram.t_cas", raw.t_cas.as_ref(), zero);
    let refresh = match refresh_given? {
        false => None,
        true => Some(DramRefresh {
            t_refi: ctx.unit("dram.t_refi", raw.t_refi.as_ref(), zero)?,
            t_rfc: ctx.unit("dram.t_rfc", raw.t_rfc.as_ref(), zero)?,
        }),
    };
    Some(DramBanks {
        banks: banks?,
        row_size: row_size?,
        t_rp: t_rp?,
        t_rcd: t_rcd?,
        t_cas: t_cas?,
        refresh,
    })
}

/// Of a group of `[dram]` keys that come all together or not at all: whether all are given
/// (`Some(true)`) or none (`Some(false)`); if only some, an error at the first given one
/// (`need`, then the missing keys) and `None`.
fn all_or_none(ctx: &mut Ctx<'_>, group: &[(&str, bool)], need: &str) -> Option<bool> {
    let missing: Vec<String> = group
        .iter()
        .filter(|k| !k.1)
        .map(|k| format!("dram.{}", k.0))
        .collect();
    match group.iter().find(|k| k.1) {
        None => Some(false),
        Some(_) if missing.is_empty() => Some(true),
        Some((first, _)) => {
            ctx.error(
                &format!("dram.{first}"),
                "(given)",
                format!("{need}; missing {}", missing.join(", ")),
            );
            None
        }
    }
}

/// `[tlb]`, present: omitted keys from [`defaults::tlb`].
fn tlb(raw: RawTlb, ctx: &mut Ctx<'_>) -> Option<TlbConfig> {
    let d = defaults::tlb();
    let mut page_size = ctx.unit("tlb.page_size", raw.page_size.as_ref(), d.page_size);
    if let Some(v) = page_size
        && (!v.0.is_power_of_two() || v.0 < 4096)
    {
        let shown = raw
            .page_size
            .as_ref()
            .map_or_else(|| v.to_string(), ToString::to_string);
        ctx.error(
            "tlb.page_size",
            shown,
            format!(
                "must be a power of two of at least 4KiB{}",
                if v.0.is_power_of_two() {
                    String::new()
                } else {
                    nearest_pow2(v.0)
                }
            ),
        );
        page_size = None;
    }
    let mut level = |n: &str, entries: Option<u32>, de: u32, ways: Option<u32>, dw: u32| {
        let e = ctx.int(&format!("tlb.{n}_entries"), entries, de, 1)?;
        let w = ctx.int(&format!("tlb.{n}_associativity"), ways, dw, 1)?;
        if e % w != 0 || !(e / w).is_power_of_two() {
            ctx.error(
                &format!("tlb.{n}_associativity"),
                w,
                format!("must divide {n}_entries ({e}) into a power-of-two number of sets"),
            );
            return None;
        }
        Some((e, w))
    };
    let l1 = level(
        "l1",
        raw.l1_entries,
        d.l1_entries,
        raw.l1_associativity,
        d.l1_associativity,
    );
    let l2 = level(
        "l2",
        raw.l2_entries,
        d.l2_entries,
        raw.l2_associativity,
        d.l2_associativity,
    );
    let l2_latency = ctx.int("tlb.l2_latency", raw.l2_latency, d.l2_latency, 0);
    let walk_latency = ctx.int("tlb.walk_latency", raw.walk_latency, d.walk_latency, 0);
    let walkers = ctx.int("tlb.walkers", raw.walkers, d.walkers, 1);
    let ((l1_entries, l1_associativity), (l2_entries, l2_associativity)) = (l1?, l2?);
    Some(TlbConfig {
        page_size: page_size?,
        l1_entries,
        l1_associativity,
        l2_entries,
        l2_associativity,
        l2_latency: l2_latency?,
        walk_latency: walk_latency?,
        walkers: walkers?,
    })
}

/// `[branch_predictor]`: the type, then only that type's parameters, written over that
/// type's defaults into its settings (`sim_core::bpred`, which defines names, defaults and
/// rules) and checked by its rules. `default` gives the type when the file names none.
fn branch_predictor(
    raw: RawBranchPredictor,
    default: &BpredConfig,
    ctx: &mut Ctx<'_>,
) -> Option<BpredConfig> {
    let types = BpredConfig::all();
    let kind = raw.kind.as_deref().unwrap_or(default.type_name());
    let Some(chosen) = types.iter().find(|t| t.type_name() == kind) else {
        let allowed: Vec<String> = types
            .iter()
            .map(|t| format!("\"{}\"", t.type_name()))
            .collect();
        ctx.error(
            "branch_predictor.type",
            toml::Value::String(kind.to_owned()),
            format!(
                "unknown branch predictor type; allowed: {}",
                allowed.join(", ")
            ),
        );
        return None;
    };
    let params = chosen.param_names();
    let mut ok = true;
    for &(name, value) in &raw.params {
        if params.contains(&name) {
            continue;
        }
        let owners: Vec<&str> = types
            .iter()
            .filter(|t| t.param_names().contains(&name))
            .map(BpredConfig::type_name)
            .collect();
        let takes = if params.is_empty() {
            format!("\"{kind}\" takes no parameters")
        } else {
            format!("\"{kind}\" takes: {}", params.join(", "))
        };
        ctx.error(
            &format!("branch_predictor.{name}"),
            value,
            format!(
                "is a parameter of the {} predictor{}, not of type \"{kind}\"; {takes}",
                list_words(&owners),
                if owners.len() > 1 { "s" } else { "" }
            ),
        );
        ok = false;
    }
    // The type's own parameters as written, over its defaults (serde's `default`).
    let mut table = toml::Table::new();
    table.insert("type".into(), kind.into());
    for &(name, value) in raw.params.iter().filter(|(n, _)| params.contains(n)) {
        table.insert(name.into(), i64::from(value).into());
    }
    let config = match toml::Value::Table(table).try_into::<BpredConfig>() {
        Ok(config) => config,
        Err(e) => {
            // Unreachable: every value is a u32 of a parameter this type has.
            ctx.error("branch_predictor", "", e.to_string());
            return None;
        }
    };
    for e in config.check() {
        let message = match e.problem {
            Problem::NotPowerOfTwo => {
                format!("must be a power of two{}", nearest_pow2(u64::from(e.value)))
            }
            problem => problem.to_string(),
        };
        ctx.error(&format!("branch_predictor.{}", e.param), e.value, message);
        ok = false;
    }
    ok.then_some(config)
}

/// "a", "a and b", "a, b and c".
fn list_words(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// One validated cache level, with which of its values were valid for the cross-level
/// checks.
struct Level {
    name: &'static str,
    config: CacheConfig,
    line_ok: bool,
    shared_ok: bool,
}

/// `[cache.*]`: each level, then the rules that relate levels to each other and to the
/// socket.
fn caches(
    raw: super::raw::RawCaches,
    cores_per_socket: Option<u32>,
    d: &CacheHierarchyConfig,
    ctx: &mut Ctx<'_>,
) -> CacheHierarchyConfig {
    let l1i = cache("l1i", raw.l1i.unwrap_or_default(), &d.l1i, ctx);
    let l1d = cache("l1d", raw.l1d.unwrap_or_default(), &d.l1d, ctx);
    let l2 = cache("l2", raw.l2.unwrap_or_default(), &d.l2, ctx);
    let l3 = raw.l3.map(|l3| cache("l3", l3, &defaults::l3(), ctx));

    // One line size for the whole hierarchy: coherence and the bus move whole lines.
    for level in [&l1i, &l2].into_iter().chain(l3.as_ref()) {
        if level.line_ok && l1d.line_ok && level.config.line_size != l1d.config.line_size {
            ctx.error(
                &format!("cache.{}.line_size", level.name),
                level.config.line_size,
                format!(
                    "must equal cache.l1d.line_size ({}): every level uses one line size",
                    l1d.config.line_size
                ),
            );
        }
    }

    for level in [&l1i, &l1d] {
        if level.shared_ok && level.config.shared_by != SharedBy::Cores(1) {
            ctx.error(
                &format!("cache.{}.shared_by", level.name),
                shared_by_text(level.config.shared_by),
                "L1 caches are private to a core: must be 1",
            );
        }
    }
    let mut outer_ok = true;
    if let Some(cores) = cores_per_socket {
        for level in [&l2].into_iter().chain(l3.as_ref()) {
            let n = level.config.cores_sharing(cores);
            if level.shared_ok && cores % n != 0 {
                let divisors: Vec<String> = (1..=cores)
                    .filter(|k| cores % k == 0)
                    .map(|k| k.to_string())
                    .collect();
                ctx.error(
                    &format!("cache.{}.shared_by", level.name),
                    n,
                    format!(
                        "must divide system.cores_per_socket ({cores}): allowed {}, or \"socket\"",
                        divisors.join(", ")
                    ),
                );
                outer_ok = false;
            }
        }
        if let Some(l3) = &l3
            && outer_ok
            && l2.shared_ok
            && l3.shared_ok
        {
            let (n2, n3) = (
                l2.config.cores_sharing(cores),
                l3.config.cores_sharing(cores),
            );
            if n3 % n2 != 0 {
                ctx.error(
                    "cache.l3.shared_by",
                    shared_by_text(l3.config.shared_by),
                    format!(
                        "one L3 serves whole L2 groups: must be a multiple of cache.l2.shared_by ({n2})"
                    ),
                );
            }
        }
    }

    CacheHierarchyConfig {
        l1i: l1i.config,
        l1d: l1d.config,
        l2: l2.config,
        l3: l3.map(|l| l.config),
    }
}

/// The TOML spelling of a `shared_by` value.
fn shared_by_text(shared_by: SharedBy) -> String {
    match shared_by {
        SharedBy::Cores(n) => n.to_string(),
        SharedBy::Socket => "\"socket\"".to_owned(),
    }
}

/// One cache level: its own values and its geometry.
fn cache(name: &'static str, raw: RawCache, d: &CacheConfig, ctx: &mut Ctx<'_>) -> Level {
    let key = |field: &str| format!("cache.{name}.{field}");
    let size = ctx.unit(&key("size"), raw.size.as_ref(), d.size);
    let associativity = ctx.int(&key("associativity"), raw.associativity, d.associativity, 1);
    let mut line_size = ctx.unit(&key("line_size"), raw.line_size.as_ref(), d.line_size);
    if let Some(line) = line_size
        && !line.0.is_power_of_two()
    {
        ctx.error(
            &key("line_size"),
            raw.line_size
                .as_ref()
                .map_or_else(|| line.to_string(), ToString::to_string),
            format!("must be a power of two{}", nearest_pow2(line.0)),
        );
        line_size = None;
    }
    let data_latency = ctx.int(&key("data_latency"), raw.data_latency, d.data_latency, 1);
    let shared_by = match &raw.shared_by {
        None => Some(d.shared_by),
        Some(RawScalar::Int(n)) if *n >= 1 => u32::try_from(*n).ok().map(SharedBy::Cores),
        Some(RawScalar::Str(s)) if s == "socket" => Some(SharedBy::Socket),
        Some(_) => None,
    };
    if let (None, Some(value)) = (shared_by, &raw.shared_by) {
        ctx.error(
            &key("shared_by"),
            value,
            "expected a number of cores (at least 1) or \"socket\" (all cores of a socket)",
        );
    }
    let replacement = ctx.named(
        &key("replacement"),
        raw.replacement.as_deref(),
        d.replacement,
        &ReplacementKind::ALL,
        ReplacementKind::name,
        "replacement policy",
    );

    let prefetcher = ctx.named(
        &key("prefetcher"),
        raw.prefetcher.as_deref(),
        d.prefetcher,
        &PrefetchKind::ALL,
        PrefetchKind::name,
        "prefetcher",
    );
    if let Some(p) = prefetcher
        && p != PrefetchKind::None
        && !matches!(name, "l1d" | "l2")
    {
        ctx.error(
            &key("prefetcher"),
            format!("\"{}\"", p.name()),
            "prefetchers are modelled at cache.l1d and cache.l2 only; here only \"none\"",
        );
    }
    let prefetch_degree = raw.prefetch_degree.unwrap_or(d.prefetch_degree);
    if !(1..=32).contains(&prefetch_degree) {
        ctx.error(&key("prefetch_degree"), prefetch_degree, "must be 1 to 32");
    }

    if let (Some(size), Some(ways), Some(line)) = (size, associativity, line_size) {
        geometry(name, size, ways, line, ctx);
    }

    Level {
        name,
        line_ok: line_size.is_some(),
        shared_ok: shared_by.is_some(),
        config: CacheConfig {
            size: size.unwrap_or(d.size),
            associativity: associativity.unwrap_or(d.associativity),
            line_size: line_size.unwrap_or(d.line_size),
            data_latency: data_latency.unwrap_or(d.data_latency),
            tag_latency: raw.tag_latency.unwrap_or(d.tag_latency),
            shared_by: shared_by.unwrap_or(d.shared_by),
            replacement: replacement.unwrap_or(d.replacement),
            prefetcher: prefetcher.unwrap_or(d.prefetcher),
            prefetch_degree: prefetch_degree.clamp(1, 32),
        },
    }
}

/// size = sets × ways × line, with a power-of-two number of sets (the set index is a bit
/// field of the address).
fn geometry(name: &str, size: Size, ways: u32, line: Size, ctx: &mut Ctx<'_>) {
    let key = format!("cache.{name}");
    let ways64 = u64::from(ways);
    if size.0 % line.0 != 0 {
        ctx.error(
            &key,
            "",
            format!("size {size} is not a whole number of {line} lines"),
        );
        return;
    }
    let lines = size.0 / line.0;
    if ways64 > lines {
        ctx.error(
            &key,
            "",
            format!(
                "associativity {ways} exceeds the {lines} lines of a {size} cache with {line} lines: allowed 1 to {lines}"
            ),
        );
        return;
    }
    let set_bytes = Size(ways64 * line.0);
    if lines % ways64 != 0 {
        ctx.error(
            &key,
            "",
            format!(
                "size {size} / ({ways} ways × {line} lines) is not a whole number of sets: size must be a multiple of {set_bytes}"
            ),
        );
        return;
    }
    let sets = lines / ways64;
    if !sets.is_power_of_two() {
        let lower = 1u64 << sets.ilog2();
        ctx.error(
            &key,
            "",
            format!(
                "size {size} / ({ways} ways × {line} lines) = {sets} sets, but the number of sets must be a power of two (e.g. size {} or {} at {ways} ways)",
                Size(lower * set_bytes.0),
                Size(2 * lower * set_bytes.0),
            ),
        );
    }
}
