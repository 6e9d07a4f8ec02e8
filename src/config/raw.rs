//! Phase 1 of config loading: the raw structs that mirror the TOML file, every field
//! optional, and the plumbing around them — `--set` overrides applied to the parsed table,
//! the list of keys each table allows (read from the raw structs themselves, so error
//! messages can never drift from what is accepted), and the position of every key in the
//! file so errors can point at a line.
//!
//! Unknown keys are not rejected here (`deny_unknown_fields` would stop at the first); the
//! loader collects them with `serde_ignored` and reports them together with the validation
//! errors of phase 2. Values that carry units, names or "either a number or a word" are read
//! as [`RawScalar`] and interpreted in phase 2, so a bad unit is one error among many.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use sim_core::bpred::BpredConfig;

/// `[system]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawSystem {
    pub sockets: Option<u32>,
    pub cores_per_socket: Option<u32>,
    pub frequency: Option<RawScalar>,
}

/// `[core]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawCore {
    pub dispatch_width: Option<u32>,
    pub rob_size: Option<u32>,
    pub frontend_depth: Option<u32>,
    pub outstanding_loads: Option<u32>,
    pub outstanding_stores: Option<u32>,
    pub long_latency_cutoff: Option<u32>,
    pub scheduler_size: Option<u32>,
    pub latency: Option<RawLatency>,
    pub store_forward: Option<RawStoreForward>,
}

/// `[core.store_forward]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawStoreForward {
    pub enabled: Option<bool>,
    pub int: Option<u32>,
    pub fp: Option<u32>,
    pub partial: Option<u32>,
}

/// `[core.latency]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawLatency {
    pub int_alu: Option<u32>,
    pub int_mul: Option<u32>,
    pub int_div: Option<u32>,
    pub fp_add: Option<u32>,
    pub fp_mul: Option<u32>,
    pub fp_div: Option<u32>,
    pub load: Option<u32>,
    pub store: Option<u32>,
    pub branch: Option<u32>,
    pub other: Option<u32>,
    pub locked: Option<u32>,
}

/// `[branch_predictor]`: the `type` and the parameters the file writes. The keys allowed
/// are `type` and every parameter of any predictor type, read from the one definition of
/// the settings, `sim_core::bpred::BpredConfig` ([`predictor_keys`]); phase 2 rejects the
/// ones that do not belong to the chosen `type`.
#[derive(Debug, Default)]
pub(super) struct RawBranchPredictor {
    /// `type`.
    pub kind: Option<String>,
    /// The parameters written, in the order of [`predictor_keys`].
    pub params: Vec<(&'static str, u32)>,
}

/// `type`, then the parameters of every predictor type in the order the types are listed,
/// each once.
pub(super) fn predictor_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = vec!["type"];
        for name in BpredConfig::all().iter().flat_map(BpredConfig::param_names) {
            if !keys.contains(&name) {
                keys.push(name);
            }
        }
        keys
    })
}

/// Reads the table as a derived struct with an optional field per key would (same key list,
/// same messages), so unknown keys reach `serde_ignored` and a value of the wrong type is
/// reported at its line in phase 1.
impl<'de> Deserialize<'de> for RawBranchPredictor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const NAME: &str = "RawBranchPredictor";
        struct TableVisitor;
        impl<'de> Visitor<'de> for TableVisitor {
            type Value = RawBranchPredictor;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "struct {NAME}")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let keys = predictor_keys();
                let mut kind = None;
                let mut values = vec![None; keys.len()];
                while let Some(key) = map.next_key::<String>()? {
                    match keys.iter().position(|k| *k == key) {
                        Some(0) => kind = map.next_value::<Option<String>>()?,
                        Some(i) => values[i] = map.next_value::<Option<u32>>()?,
                        None => drop(map.next_value::<de::IgnoredAny>()?),
                    }
                }
                Ok(RawBranchPredictor::new(kind, values))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let keys = predictor_keys();
                let missing = |i: usize| {
                    de::Error::invalid_length(
                        i,
                        &format!("struct {NAME} with {} elements", keys.len()).as_str(),
                    )
                };
                let kind = seq
                    .next_element::<Option<String>>()?
                    .ok_or_else(|| missing(0))?;
                let mut values = vec![None; keys.len()];
                for (i, value) in values.iter_mut().enumerate().skip(1) {
                    *value = seq
                        .next_element::<Option<u32>>()?
                        .ok_or_else(|| missing(i))?;
                }
                Ok(RawBranchPredictor::new(kind, values))
            }
        }
        deserializer.deserialize_struct(NAME, predictor_keys(), TableVisitor)
    }
}

impl RawBranchPredictor {
    /// From `type` and a value (or none) per [`predictor_keys`] entry after `type`.
    fn new(kind: Option<String>, values: Vec<Option<u32>>) -> Self {
        let params = predictor_keys()
            .iter()
            .zip(values)
            .filter_map(|(key, value)| Some((*key, value?)))
            .collect();
        RawBranchPredictor { kind, params }
    }
}

/// `[cache]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawCaches {
    pub l1i: Option<RawCache>,
    pub l1d: Option<RawCache>,
    pub l2: Option<RawCache>,
    pub l3: Option<RawCache>,
}

/// `[cache.l1i]` … `[cache.l3]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawCache {
    pub size: Option<RawScalar>,
    pub associativity: Option<u32>,
    pub line_size: Option<RawScalar>,
    pub data_latency: Option<u32>,
    pub tag_latency: Option<u32>,
    pub shared_by: Option<RawScalar>,
    pub replacement: Option<String>,
    pub prefetcher: Option<String>,
    pub prefetch_degree: Option<u32>,
}

/// `[coherence]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawCoherence {
    pub protocol: Option<String>,
    pub snoop_latency: Option<u32>,
}

/// `[locks]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawLocks {
    pub model: Option<String>,
    pub futex_wait: Option<u32>,
    pub futex_wake: Option<u32>,
    pub wake_latency: Option<u32>,
    pub spin: Option<u32>,
    pub call: Option<u32>,
}

/// `[bus]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawBus {
    pub bandwidth: Option<RawScalar>,
    pub arbitration: Option<String>,
}

/// `[dram]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawDram {
    pub latency: Option<RawScalar>,
    pub bandwidth: Option<RawScalar>,
    pub controllers: Option<u32>,
    pub interleave: Option<RawScalar>,
    pub banks: Option<u32>,
    pub row_size: Option<RawScalar>,
    pub t_rp: Option<RawScalar>,
    pub t_rcd: Option<RawScalar>,
    pub t_cas: Option<RawScalar>,
    pub t_refi: Option<RawScalar>,
    pub t_rfc: Option<RawScalar>,
}

/// `[off_socket]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawOffSocket {
    pub latency: Option<RawScalar>,
}

/// `[tlb]`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawTlb {
    pub page_size: Option<RawScalar>,
    pub l1_entries: Option<u32>,
    pub l1_associativity: Option<u32>,
    pub l2_entries: Option<u32>,
    pub l2_associativity: Option<u32>,
    pub l2_latency: Option<u32>,
    pub walk_latency: Option<u32>,
    pub walkers: Option<u32>,
}

/// The whole file.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawMachine {
    pub system: Option<RawSystem>,
    pub core: Option<RawCore>,
    pub branch_predictor: Option<RawBranchPredictor>,
    pub cache: Option<RawCaches>,
    pub coherence: Option<RawCoherence>,
    pub locks: Option<RawLocks>,
    pub bus: Option<RawBus>,
    pub dram: Option<RawDram>,
    pub off_socket: Option<RawOffSocket>,
    pub tlb: Option<RawTlb>,
}

/// The keys a table of the file may hold, by its dotted path (`""` is the top level), or
/// `None` for a path that is not a table of the schema. Read from the raw structs' serde
/// field lists.
pub(super) fn allowed_keys(table: &str) -> Option<&'static [&'static str]> {
    Some(match table {
        "" => field_names::<RawMachine>(),
        "system" => field_names::<RawSystem>(),
        "core" => field_names::<RawCore>(),
        "core.latency" => field_names::<RawLatency>(),
        "core.store_forward" => field_names::<RawStoreForward>(),
        "branch_predictor" => field_names::<RawBranchPredictor>(),
        "cache" => field_names::<RawCaches>(),
        "cache.l1i" | "cache.l1d" | "cache.l2" | "cache.l3" => field_names::<RawCache>(),
        "coherence" => field_names::<RawCoherence>(),
        "locks" => field_names::<RawLocks>(),
        "bus" => field_names::<RawBus>(),
        "dram" => field_names::<RawDram>(),
        "off_socket" => field_names::<RawOffSocket>(),
        "tlb" => field_names::<RawTlb>(),
        _ => return None,
    })
}

/// The field names a derived `Deserialize` struct accepts, as serde spells them: a
/// deserializer that only records what `deserialize_struct` is told.
fn field_names<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    #[derive(Debug)]
    struct Fields(&'static [&'static str]);
    impl fmt::Display for Fields {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("field probe")
        }
    }
    impl std::error::Error for Fields {}
    impl de::Error for Fields {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Fields(&[])
        }
    }
    struct Probe;
    impl<'de> Deserializer<'de> for Probe {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(&[]))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match T::deserialize(Probe) {
        Err(Fields(fields)) => fields,
        Ok(_) => &[],
    }
}

/// A value read as whatever TOML scalar it is, for phase 2 to interpret: units (`"32KiB"` or
/// `64`), names (`"lru"`), or either (`shared_by = 2` or `"socket"`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawScalar {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl fmt::Display for RawScalar {
    /// Writes the value as TOML would (strings quoted), for error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Str(s) => write!(f, "{}", toml::Value::String(s.clone())),
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{}", toml::Value::Float(*x)),
            Self::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl<'de> Deserialize<'de> for RawScalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = RawScalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string such as \"32KiB\" or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawScalar, E> {
                Ok(RawScalar::Str(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawScalar, E> {
                Ok(RawScalar::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawScalar, E> {
                i64::try_from(v)
                    .map(RawScalar::Int)
                    .map_err(|_| E::custom("number too large"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawScalar, E> {
                Ok(RawScalar::Float(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawScalar, E> {
                Ok(RawScalar::Bool(v))
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// A 1-based line and column in a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line, counting from 1.
    pub line: usize,
    /// Column in characters, counting from 1.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `text` (clamped to the text).
    pub(super) fn of(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Where each dotted key of a file is written: the key's own position and the byte range
/// of its value.
#[derive(Debug, Default)]
pub(super) struct KeyPositions {
    keys: HashMap<String, (Position, Range<usize>)>,
}

impl KeyPositions {
    /// Records every key of a parsed document.
    pub fn new(text: &str, root: &toml::de::DeTable<'_>) -> Self {
        fn walk(
            text: &str,
            table: &toml::de::DeTable<'_>,
            prefix: &str,
            out: &mut HashMap<String, (Position, Range<usize>)>,
        ) {
            for (key, value) in table {
                let path = if prefix.is_empty() {
                    key.get_ref().to_string()
                } else {
                    format!("{prefix}.{}", key.get_ref())
                };
                if let toml::de::DeValue::Table(inner) = value.get_ref() {
                    walk(text, inner, &path, out);
                }
                out.insert(path, (Position::of(text, key.span().start), value.span()));
            }
        }
        let mut keys = HashMap::new();
        walk(text, root, "", &mut keys);
        KeyPositions { keys }
    }

    /// The position of `key`, or of its nearest ancestor written in the file.
    pub fn find(&self, key: &str) -> Option<Position> {
        let mut key = key;
        loop {
            if let Some((pos, _)) = self.keys.get(key) {
                return Some(*pos);
            }
            key = &key[..key.rfind('.')?];
        }
    }

    /// The deepest key whose value contains byte `offset`, with that value's byte range.
    pub fn key_at(&self, offset: usize) -> Option<(&str, Range<usize>)> {
        self.keys
            .iter()
            .filter(|(_, (_, span))| span.contains(&offset))
            .max_by_key(|(path, (_, span))| (path.matches('.').count(), usize::MAX - span.len()))
            .map(|(path, (_, span))| (path.as_str(), span.clone()))
    }
}

/// One `--set key.path=value` override, parsed.
#[derive(Debug, Clone)]
pub(super) struct Override {
    /// The dotted key as written (trimmed).
    pub key: String,
    /// The value as written (trimmed), for messages.
    pub text: String,
    /// The value as a TOML value, or the text as a string if it is not one.
    pub value: toml::Value,
}

impl Override {
    /// Parses `key.path=value`; the value is read as TOML (`256`, `true`, `"x"`) and
    /// otherwise taken as a string (`2GHz`, `socket`).
    pub fn parse(set: &str) -> Result<Self, String> {
        let (key, text) = set
            .split_once('=')
            .ok_or_else(|| "expected `key.path=value`".to_owned())?;
        let (key, text) = (key.trim(), text.trim());
        if key.is_empty() || key.split('.').any(|part| part.trim().is_empty()) {
            return Err("expected `key.path=value` with a dotted key such as core.rob_size".into());
        }
        let key = key.split('.').map(str::trim).collect::<Vec<_>>().join(".");
        let value = text
            .parse::<toml::Value>()
            .unwrap_or_else(|_| toml::Value::String(text.to_owned()));
        Ok(Override {
            key,
            text: text.to_owned(),
            value,
        })
    }

    /// Writes the value into `table`, creating missing tables on the way. Fails if a key on
    /// the path holds a value that is not a table.
    pub fn apply(&self, table: &mut toml::Table) -> Result<(), String> {
        let parts: Vec<&str> = self.key.split('.').collect();
        let (last, parents) = parts.split_last().ok_or("empty key")?;
        let mut current = table;
        for (depth, part) in parents.iter().enumerate() {
            let entry = current
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            current = match entry {
                toml::Value::Table(inner) => inner,
                other => {
                    return Err(format!(
                        "`{}` is a {}, not a table, so it has no key `{}`",
                        parts[..=depth].join("."),
                        other.type_str(),
                        parts[depth + 1]
                    ));
                }
            };
        }
        current.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}

/// The value at a dotted path of `table`, if there is one.
pub(super) fn lookup<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let mut parts = key.split('.');
    let mut value = table.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

/// Levenshtein distance, for "did you mean" suggestions.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The allowed key closest to `key`, if it is close enough to be a likely typo.
pub(super) fn suggest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    let limit = (key.chars().count() / 3).max(2);
    allowed
        .iter()
        .map(|&candidate| (edit_distance(key, candidate), candidate))
        .filter(|&(distance, _)| distance <= limit)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_come_from_the_structs() {
        assert_eq!(
            allowed_keys("system"),
            Some(&["sockets", "cores_per_socket", "frequency"][..])
        );
        assert!(allowed_keys("branch_predictor").is_some_and(|k| k.contains(&"type")));
        assert!(allowed_keys("cache.l3").is_some_and(|k| k.contains(&"shared_by")));
        assert_eq!(allowed_keys("cache.l4"), None);
    }

    #[test]
    fn suggestions_catch_typos_only() {
        let keys = allowed_keys("core").unwrap_or_default();
        assert_eq!(suggest("rob_sise", keys), Some("rob_size"));
        assert_eq!(suggest("dispatchwidth", keys), Some("dispatch_width"));
        assert_eq!(suggest("colour", keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn overrides_parse_toml_or_fall_back_to_strings() {
        let o = Override::parse("core.rob_size=256").expect("valid");
        assert_eq!(o.value, toml::Value::Integer(256));
        let o = Override::parse(" system.frequency = 2GHz ").expect("valid");
        assert_eq!(
            (o.key.as_str(), o.value),
            ("system.frequency", toml::Value::String("2GHz".into()))
        );
        assert!(Override::parse("core.rob_size").is_err());
        assert!(Override::parse("=3").is_err());
        assert!(Override::parse("core..rob_size=3").is_err());
    }

    #[test]
    fn overrides_create_tables_but_not_through_values() {
        let mut table = toml::Table::new();
        Override::parse("cache.l3.size=8MiB")
            .and_then(|o| o.apply(&mut table))
            .expect("applies");
        assert_eq!(
            lookup(&table, "cache.l3.size"),
            Some(&toml::Value::String("8MiB".into()))
        );
        let err = Override::parse("cache.l3.size.x=1")
            .and_then(|o| o.apply(&mut table))
            .expect_err("size is not a table");
        assert!(err.contains("`cache.l3.size` is a string"), "{err}");
    }

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        let text = "a = 1\n[core]\nrob_size = 5\n";
        assert_eq!(Position::of(text, 0), Position { line: 1, column: 1 });
        let offset = text.find("rob_size").unwrap_or_default();
        assert_eq!(
            Position::of(text, offset + 2),
            Position { line: 3, column: 3 }
        );
        let root = toml::de::DeTable::parse(text).expect("valid TOML");
        let keys = KeyPositions::new(text, root.get_ref());
        assert_eq!(
            keys.find("core.rob_size"),
            Some(Position { line: 3, column: 1 })
        );
        assert_eq!(
            keys.find("core.missing"),
            Some(Position { line: 2, column: 2 })
        );
        assert_eq!(
            keys.key_at(offset + 11).map(|(k, _)| k),
            Some("core.rob_size")
        );
    }
}
