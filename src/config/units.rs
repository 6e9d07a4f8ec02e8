//! Typed physical units for machine configs: [`Size`], [`Frequency`], [`Time`] and
//! [`Bandwidth`]. Each is parsed once from the string an architect writes (`"32KiB"`,
//! `"2.67GHz"`, `"200ns"`, `"25.6GB/s"`), stored as an exact integer (bytes, Hz, picoseconds,
//! bytes per second) so that results are deterministic on every host, and rendered back in
//! the unit a person would write (`Display`, also used by `Serialize`). Parsing is exact
//! decimal arithmetic, never floating point, so `Display` followed by `FromStr` always gives
//! back the same value.
//!
//! Memory sizes read every prefix as binary: `K`, `KB` and `KiB` all mean 1024 bytes,
//! because architects write "32 KB" for a 32768-byte cache. Bandwidths follow datasheets
//! instead: `GB/s` is 10⁹ bytes per second and `GiB/s` is 2³⁰.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// Why a unit string could not be read; its `Display` says what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

/// One unit a quantity may be written in: its spelling and how many base units it holds.
type Unit = (&'static str, u128);

/// A number written in decimal: `mantissa / 10^decimals`.
struct Decimal {
    mantissa: u128,
    decimals: u32,
}

/// Reads `"12.5"`: digits with at most one decimal point, no sign, no exponent.
fn parse_decimal(text: &str) -> Option<Decimal> {
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (text, ""),
    };
    let digits = int.len() + frac.len();
    // 38 digits always fit in a u128; longer numbers are not configuration values.
    if digits == 0 || digits > 38 {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut mantissa: u128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa * 10 + u128::from(b - b'0');
    }
    Some(Decimal {
        mantissa,
        decimals: frac.len() as u32,
    })
}

/// Parses `"<number><unit>"` (spaces between them allowed) against `units`, giving an exact
/// integer count of base units. `unitless` is the factor for a bare number, if one is allowed.
/// `what` names the quantity and `allowed` lists the units, both for error messages.
fn parse_quantity(
    text: &str,
    units: &[Unit],
    unitless: Option<u128>,
    what: &str,
    allowed: &str,
    base: &str,
) -> Result<u64, UnitError> {
    let bad = |why: &str| UnitError(format!("bad {what}{why}: expected {allowed}"));
    let text = text.trim();
    if text.is_empty() {
        return Err(bad(" (empty)"));
    }
    if text.starts_with('-') {
        return Err(bad(" (negative)"));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let Some(number) = parse_decimal(number) else {
        return Err(bad(if split == 0 { " (no number)" } else { "" }));
    };
    let factor = if unit.is_empty() {
        unitless.ok_or_else(|| bad(" (no unit)"))?
    } else {
        units
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|&(_, factor)| factor)
            .ok_or_else(|| bad(&format!(" (unknown unit `{unit}`)")))?
    };
    let scaled = number
        .mantissa
        .checked_mul(factor)
        .ok_or_else(|| bad(" (too large)"))?;
    let divisor = 10u128.pow(number.decimals);
    if scaled % divisor != 0 {
        return Err(UnitError(format!(
            "bad {what}: `{text}` is not a whole multiple of 1 {base}, the finest {what} isim stores"
        )));
    }
    u64::try_from(scaled / divisor).map_err(|_| bad(" (too large)"))
}

/// Renders `value / factor` as an exact decimal, or `None` if it needs more than
/// `max_decimals` decimals (every factor used here is 2^a·5^b, so the expansion ends).
fn exact_decimal(value: u64, factor: u128, max_decimals: usize) -> Option<String> {
    let value = u128::from(value);
    let mut out = (value / factor).to_string();
    let mut rest = value % factor;
    if rest != 0 {
        out.push('.');
        let mut decimals = 0;
        while rest != 0 {
            if decimals == max_decimals {
                return None;
            }
            rest *= 10;
            out.push(char::from(b'0' + (rest / factor) as u8));
            rest %= factor;
            decimals += 1;
        }
    }
    Some(out)
}

/// Writes `value` in the unit a person would choose: among the units in which the value is
/// at least 1, the one that needs the fewest digits, the larger unit on a tie ("800MHz",
/// "2.67GHz", "4GiB/s", "25.6GB/s"). `units[base]` has factor 1 and is used for zero.
fn render(f: &mut fmt::Formatter<'_>, value: u64, units: &[Unit]) -> fmt::Result {
    let mut best: Option<(usize, u128, String, &str)> = None;
    for &(name, factor) in units {
        if u128::from(value) < factor {
            continue;
        }
        let Some(number) = exact_decimal(value, factor, 24) else {
            continue;
        };
        let digits = number.len() - usize::from(number.contains('.'));
        let better = match &best {
            None => true,
            Some((best_digits, best_factor, _, _)) => {
                digits < *best_digits || (digits == *best_digits && factor > *best_factor)
            }
        };
        if better {
            best = Some((digits, factor, number, name));
        }
    }
    match best {
        Some((_, _, number, name)) => write!(f, "{number}{name}"),
        None => {
            let name = units.iter().find(|u| u.1 == 1).map_or("", |u| u.0);
            write!(f, "{value}{name}")
        }
    }
}

/// Implements `Display` (human units), `Serialize` (the same string) and `FromStr` for a
/// unit newtype over `u64`.
macro_rules! unit_type {
    ($ty:ident, $display_units:expr, $parse_units:expr, $unitless:expr, $what:expr, $allowed:expr, $base:expr) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                render(f, self.0, $display_units)
            }
        }

        impl FromStr for $ty {
            type Err = UnitError;
            fn from_str(text: &str) -> Result<Self, UnitError> {
                parse_quantity(text, $parse_units, $unitless, $what, $allowed, $base).map($ty)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    };
}

const KIB: u128 = 1 << 10;
const MIB: u128 = 1 << 20;
const GIB: u128 = 1 << 30;
const TIB: u128 = 1 << 40;

/// A memory size in bytes. All prefixes are binary: `"32KB"` = `"32KiB"` = 32768 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

impl Size {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

const SIZE_DISPLAY: &[Unit] = &[
    ("B", 1),
    ("KiB", KIB),
    ("MiB", MIB),
    ("GiB", GIB),
    ("TiB", TIB),
];
const SIZE_PARSE: &[Unit] = &[
    ("B", 1),
    ("K", KIB),
    ("k", KIB),
    ("KB", KIB),
    ("kB", KIB),
    ("KiB", KIB),
    ("M", MIB),
    ("MB", MIB),
    ("MiB", MIB),
    ("G", GIB),
    ("GB", GIB),
    ("GiB", GIB),
    ("T", TIB),
    ("TB", TIB),
    ("TiB", TIB),
];
/// The allowed spellings of a size, as error messages state them.
pub const SIZE_ALLOWED: &str = "a number with a unit B, KiB, MiB, GiB (KB/MB/GB are read as binary too), or a plain integer of bytes";
unit_type!(
    Size,
    SIZE_DISPLAY,
    SIZE_PARSE,
    Some(1),
    "size",
    SIZE_ALLOWED,
    "byte"
);

/// A clock frequency in hertz (`"2.67GHz"` = 2 670 000 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frequency(pub u64);

impl Frequency {
    /// The frequency in hertz.
    pub fn hz(self) -> u64 {
        self.0
    }
}

const FREQ_UNITS: &[Unit] = &[
    ("Hz", 1),
    ("kHz", 1_000),
    ("KHz", 1_000),
    ("MHz", 1_000_000),
    ("GHz", 1_000_000_000),
];
/// The allowed spellings of a frequency, as error messages state them.
pub const FREQUENCY_ALLOWED: &str = "a number with a unit Hz, kHz, MHz, GHz (e.g. \"2.67GHz\")";
unit_type!(
    Frequency,
    FREQ_UNITS,
    FREQ_UNITS,
    None,
    "frequency",
    FREQUENCY_ALLOWED,
    "Hz"
);

/// A duration in picoseconds (`"200ns"` = 200 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    /// The duration in picoseconds.
    pub fn ps(self) -> u64 {
        self.0
    }

    /// The number of whole cycles this duration lasts at `freq`, rounded to the nearest
    /// cycle (halves round up): 200 ns at 2.67 GHz is 534 cycles. Saturates at `u64::MAX`.
    pub fn to_cycles(self, freq: Frequency) -> u64 {
        const PS_PER_S: u128 = 1_000_000_000_000;
        let product = u128::from(self.0) * u128::from(freq.0);
        u64::try_from((product + PS_PER_S / 2) / PS_PER_S).unwrap_or(u64::MAX)
    }
}

const TIME_UNITS: &[Unit] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];
const TIME_PARSE: &[Unit] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("µs", 1_000_000),
    ("μs", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];
/// The allowed spellings of a time, as error messages state them.
pub const TIME_ALLOWED: &str = "a number with a unit ps, ns, us, ms, s (e.g. \"200ns\")";
unit_type!(
    Time,
    TIME_UNITS,
    TIME_PARSE,
    None,
    "time",
    TIME_ALLOWED,
    "ps"
);

/// A bandwidth in bytes per second. Decimal prefixes are decimal here, as datasheets write
/// them: `"4GB/s"` = 4·10⁹ B/s, while `"4GiB/s"` = 4·2³⁰ B/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth(pub u64);

impl Bandwidth {
    /// The bandwidth in bytes per second.
    pub fn bytes_per_second(self) -> u64 {
        self.0
    }

    /// Bytes transferred per cycle of a clock at `freq` (25.6 GB/s at 3.2 GHz is 8.0).
    /// Returns infinity for a zero frequency, which validated configs never hold.
    pub fn bytes_per_cycle(self, freq: Frequency) -> f64 {
        self.0 as f64 / freq.0 as f64
    }
}

const BW_UNITS: &[Unit] = &[
    ("B/s", 1),
    ("kB/s", 1_000),
    ("MB/s", 1_000_000),
    ("GB/s", 1_000_000_000),
    ("TB/s", 1_000_000_000_000),
    ("KiB/s", KIB),
    ("MiB/s", MIB),
    ("GiB/s", GIB),
    ("TiB/s", TIB),
];
const BW_PARSE: &[Unit] = &[
    ("B/s", 1),
    ("kB/s", 1_000),
    ("KB/s", 1_000),
    ("MB/s", 1_000_000),
    ("GB/s", 1_000_000_000),
    ("TB/s", 1_000_000_000_000),
    ("KiB/s", KIB),
    ("MiB/s", MIB),
    ("GiB/s", GIB),
    ("TiB/s", TIB),
];
/// The allowed spellings of a bandwidth, as error messages state them.
pub const BANDWIDTH_ALLOWED: &str = "a number with a unit B/s, kB/s, MB/s, GB/s, TB/s (powers of 10) or KiB/s, MiB/s, GiB/s, TiB/s (powers of 2), e.g. \"25.6GB/s\"";
unit_type!(
    Bandwidth,
    BW_UNITS,
    BW_PARSE,
    None,
    "bandwidth",
    BANDWIDTH_ALLOWED,
    "B/s"
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_are_binary_whatever_the_spelling() {
        for text in [
            "32KiB",
            "32KB",
            "32K",
            "32 KB",
            "32768",
            "32768B",
            "0.03125MiB",
        ] {
            assert_eq!(text.parse::<Size>(), Ok(Size(32768)), "{text}");
        }
        assert_eq!("3MB".parse::<Size>(), Ok(Size(3 << 20)));
        assert_eq!("16MiB".parse::<Size>(), Ok(Size(16 << 20)));
        assert_eq!("1.5MiB".parse::<Size>(), Ok(Size(1536 << 10)));
    }

    #[test]
    fn frequencies_times_and_bandwidths_parse_exactly() {
        assert_eq!("2.67GHz".parse(), Ok(Frequency(2_670_000_000)));
        assert_eq!("800MHz".parse(), Ok(Frequency(800_000_000)));
        assert_eq!("200ns".parse(), Ok(Time(200_000)));
        assert_eq!("1.5us".parse(), Ok(Time(1_500_000)));
        assert_eq!("60ps".parse(), Ok(Time(60)));
        assert_eq!("4GB/s".parse(), Ok(Bandwidth(4_000_000_000)));
        assert_eq!("25.6GB/s".parse(), Ok(Bandwidth(25_600_000_000)));
        assert_eq!("512MB/s".parse(), Ok(Bandwidth(512_000_000)));
        assert_eq!("4GiB/s".parse(), Ok(Bandwidth(4 << 30)));
    }

    #[test]
    fn display_uses_the_unit_people_write() {
        assert_eq!(Size(32768).to_string(), "32KiB");
        assert_eq!(Size(64).to_string(), "64B");
        assert_eq!(Size(3 << 20).to_string(), "3MiB");
        assert_eq!(Size(0).to_string(), "0B");
        assert_eq!(Frequency(2_670_000_000).to_string(), "2.67GHz");
        assert_eq!(Frequency(800_000_000).to_string(), "800MHz");
        assert_eq!(Time(200_000).to_string(), "200ns");
        assert_eq!(Time(1_500_000).to_string(), "1.5us");
        assert_eq!(Bandwidth(25_600_000_000).to_string(), "25.6GB/s");
        assert_eq!(Bandwidth(4 << 30).to_string(), "4GiB/s");
        assert_eq!(Bandwidth(4_000_000_000).to_string(), "4GB/s");
    }

    #[test]
    fn garbage_is_rejected_with_the_allowed_units() {
        for bad in ["32QB", "-1KiB", "", "GHz", "1.2.3KiB", "KiB", " ", "1e3B"] {
            let err = bad.parse::<Size>().expect_err(bad);
            assert!(err.0.contains("KiB, MiB, GiB"), "{bad}: {err}");
        }
        let err = "0.5B".parse::<Size>().expect_err("half a byte");
        assert!(err.0.contains("whole multiple of 1 byte"), "{err}");
        for bad in ["GHz", "", "2.67", "-1GHz", "2.67 GHZ", "0.1Hz"] {
            assert!(bad.parse::<Frequency>().is_err(), "{bad}");
        }
        for bad in ["200", "200 nanoseconds", "0.5ps", "ns"] {
            assert!(bad.parse::<Time>().is_err(), "{bad}");
        }
        for bad in ["4GB", "4 Gbit/s", "", "/s"] {
            assert!(bad.parse::<Bandwidth>().is_err(), "{bad}");
        }
        assert!("99999999999999999999999GiB".parse::<Size>().is_err());
    }

    #[test]
    fn to_cycles_rounds_to_nearest() {
        let f = Frequency(2_670_000_000);
        assert_eq!(Time(200_000).to_cycles(f), 534);
        // 1 ns at 2.67 GHz is 2.67 cycles: rounds up to 3; 1 ns at 2.4 GHz rounds down to 2.
        assert_eq!(Time(1_000).to_cycles(f), 3);
        assert_eq!(Time(1_000).to_cycles(Frequency(2_400_000_000)), 2);
        // Exactly half a cycle rounds up.
        assert_eq!(Time(500).to_cycles(Frequency(1_000_000_000)), 1);
        assert_eq!(Time(u64::MAX).to_cycles(Frequency(u64::MAX)), u64::MAX);
    }

    #[test]
    fn bytes_per_cycle_divides_by_frequency() {
        let bw = Bandwidth(25_600_000_000);
        assert_eq!(bw.bytes_per_cycle(Frequency(3_200_000_000)), 8.0);
    }

    proptest! {
        #[test]
        fn size_display_round_trips(v in any::<u64>()) {
            prop_assert_eq!(Size(v).to_string().parse::<Size>(), Ok(Size(v)));
        }

        #[test]
        fn frequency_display_round_trips(v in any::<u64>()) {
            prop_assert_eq!(Frequency(v).to_string().parse::<Frequency>(), Ok(Frequency(v)));
        }

        #[test]
        fn time_display_round_trips(v in any::<u64>()) {
            prop_assert_eq!(Time(v).to_string().parse::<Time>(), Ok(Time(v)));
        }

        #[test]
        fn bandwidth_display_round_trips(v in any::<u64>()) {
            prop_assert_eq!(Bandwidth(v).to_string().parse::<Bandwidth>(), Ok(Bandwidth(v)));
        }

        #[test]
        fn round_sizes_round_trip(n in 0u64..100_000, shift in prop::sample::select(vec![0u32, 10, 20, 30])) {
            let v = Size(n << shift);
            prop_assert_eq!(v.to_string().parse::<Size>(), Ok(v));
        }
    }
}
