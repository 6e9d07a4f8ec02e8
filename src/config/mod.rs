//! Machine configuration: TOML files such as `configs/penryn-4x4.toml`, plus `--set
//! key.path=value` overrides, turned into a validated [`MachineConfig`] with typed units
//! and every default filled in. Every key is documented in `docs/config.md`.
//!
//! Loading has two phases so that a user sees every mistake at once. Phase 1 (`raw.rs`)
//! parses the text, applies the overrides to the parsed table and deserializes it into raw
//! structs with every field optional, collecting unknown keys instead of stopping at them.
//! Phase 2 (`validate.rs`) parses units, fills defaults (`defaults.rs`) and checks every
//! rule, gathering all errors. Only a TOML syntax error or a value of the wrong TOML type
//! (`rob_size = "big"`) stops loading early; it is reported alone, with its line.
//!
//! Each [`ConfigError`] names the file (or `--set`), the line when known, the dotted key,
//! the value and what is allowed:
//!
//! ```text
//! configs/x.toml:12:1: core.rob_sise = 96: unknown key (did you mean `rob_size`?; allowed keys in [core]: ...)
//! ```

mod cores;
mod defaults;
mod machine;
mod memory;
mod raw;
mod units;
mod validate;

use std::fmt;
use std::path::Path;

pub use cores::ShapeError;
pub use machine::{
    BusConfig, CacheConfig, CacheHierarchyConfig, CoherenceConfig, CoreConfig, DramConfig,
    LocksConfig, MachineConfig, OffSocketConfig, OpLatencies, SharedBy, SystemConfig, TlbConfig,
};
pub use raw::Position;
pub use units::{Bandwidth, Frequency, Size, Time, UnitError};

use raw::{KeyPositions, Override, RawMachine};

/// The text of `configs/default.toml`, the machine used when no config is given.
pub const DEFAULT_TOML: &str = include_str!("../../configs/default.toml");

/// One problem in a config: where, which key, which value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file name as given to the loader, or `--set` for a command-line override.
    pub origin: String,
    /// Line and column in the file, when the key is written there.
    pub position: Option<Position>,
    /// The dotted key (`cache.l1d.size`); a table (`cache.l2`) for a rule that combines
    /// its keys; empty for a problem with the file as a whole.
    pub key: String,
    /// The value as written (TOML syntax: strings quoted); empty when the message states
    /// the values involved.
    pub value: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(position) = self.position {
            write!(f, ":{position}")?;
        }
        match (self.key.is_empty(), self.value.is_empty()) {
            (true, _) => write!(f, ": {}", self.message),
            (false, true) => write!(f, ": {}: {}", self.key, self.message),
            (false, false) => write!(f, ": {} = {}: {}", self.key, self.value, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Every problem found in a config; `Display` prints one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The problems: the file's in the order of their lines, then those of `--set`.
    pub errors: Vec<ConfigError>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl ConfigErrors {
    fn one(
        origin: &str,
        position: Option<Position>,
        key: &str,
        value: &str,
        message: String,
    ) -> Self {
        ConfigErrors {
            errors: vec![ConfigError {
                origin: origin.to_owned(),
                position,
                key: key.to_owned(),
                value: value.to_owned(),
                message,
            }],
        }
    }
}

/// Loads the config file at `path` with `sets` overrides (`"core.rob_size=256"`) applied.
/// Errors name the path as given.
pub fn load(path: &Path, sets: &[String]) -> Result<MachineConfig, ConfigErrors> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors::one(
            &origin,
            None,
            "",
            "",
            format!("cannot read the config file: {e}"),
        )
    })?;
    load_str(&text, &origin, sets)
}

/// How messages name the built-in default config.
pub const DEFAULT_ORIGIN: &str = "configs/default.toml (built in)";

/// Loads the config `file`, or the built-in default machine when there is none (what every
/// verb's `--config` means), with `sets` applied.
pub fn load_or_default(
    file: Option<&Path>,
    sets: &[String],
) -> Result<MachineConfig, ConfigErrors> {
    match file {
        Some(f) => load(f, sets),
        None => load_str(DEFAULT_TOML, DEFAULT_ORIGIN, sets),
    }
}

/// The default machine (`configs/default.toml`, embedded in the binary).
pub fn default_config() -> MachineConfig {
    // The embedded file is part of the program, not user input; a test loads it.
    load_or_default(None, &[])
        .unwrap_or_else(|errors| panic!("the embedded default config is invalid:\n{errors}"))
}

/// Loads a config from its text; `origin` is the file name used in messages. `sets` are
/// `key.path=value` overrides applied on top of the file: the value is read as a TOML
/// value (`256`, `true`, `"x"`) or else taken as a string (`2GHz`, `socket`); a missing
/// table on the path is created. A `--set branch_predictor.type=...` discards the file's
/// predictor parameters, which belong to the file's type.
pub fn load_str(text: &str, origin: &str, sets: &[String]) -> Result<MachineConfig, ConfigErrors> {
    // Syntax, and where every key is written.
    let document = toml::de::DeTable::parse(text).map_err(|e| {
        let position = e.span().map(|span| Position::of(text, span.start));
        ConfigErrors::one(
            origin,
            position,
            "",
            "",
            format!("TOML syntax error: {}", e.message()),
        )
    })?;
    let positions = KeyPositions::new(text, document.get_ref());

    // Types, checked on the text so that a mismatch is reported at its line.
    let checked = toml::Deserializer::parse(text)
        .and_then(|de| serde_ignored::deserialize::<_, _, RawMachine>(de, |_| {}));
    if let Err(e) = checked {
        let position = e.span().map(|span| Position::of(text, span.start));
        let (key, value) = e
            .span()
            .and_then(|span| positions.key_at(span.start))
            .map(|(key, span)| {
                (
                    key.to_owned(),
                    text.get(span).unwrap_or("").trim().to_owned(),
                )
            })
            .unwrap_or_default();
        return Err(ConfigErrors::one(
            origin,
            position,
            &key,
            &value,
            type_message(e.message()),
        ));
    }
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ConfigErrors::one(
            origin,
            None,
            "",
            "",
            format!("TOML syntax error: {}", e.message()),
        )
    })?;

    let mut errors = Vec::new();
    let overridden = apply_sets(&mut table, sets, &mut errors);

    let mut unknown = Vec::new();
    let raw = serde_ignored::deserialize::<_, _, RawMachine>(table.clone(), |path| {
        unknown.push(dotted(&path));
    })
    .unwrap_or_else(|e| {
        // Unreachable: the file and each override were type-checked above.
        errors.push(ConfigError {
            origin: "--set".to_owned(),
            position: None,
            key: String::new(),
            value: String::new(),
            message: type_message(e.message()),
        });
        RawMachine::default()
    });

    let mut ctx = validate::Ctx {
        origin,
        overridden: &overridden,
        positions: &positions,
        errors,
    };
    for key in &unknown {
        unknown_key(key, &table, &mut ctx);
    }
    let config = validate::machine(raw, &mut ctx);
    if ctx.errors.is_empty() {
        return Ok(config);
    }
    // Read in file order, then the overrides; the sort is stable, so errors at the same
    // place (or with no place) keep the order in which they were found.
    let mut errors = ctx.errors;
    errors.sort_by_key(|e| {
        (
            e.origin == "--set",
            e.position.is_none(),
            e.position.map(|p| (p.line, p.column)),
        )
    });
    Err(ConfigErrors { errors })
}

/// Applies the overrides in order and returns the keys they wrote. An override that is
/// malformed, runs through a non-table or gives a key the wrong TOML type is reported and
/// skipped, so the other overrides and the file are still checked.
fn apply_sets(
    table: &mut toml::Table,
    sets: &[String],
    errors: &mut Vec<ConfigError>,
) -> Vec<String> {
    let set_error = |key: &str, value: &str, message: String| ConfigError {
        origin: "--set".to_owned(),
        position: None,
        key: key.to_owned(),
        value: value.to_owned(),
        message,
    };
    let mut parsed = Vec::new();
    for set in sets {
        match Override::parse(set) {
            Ok(o) => parsed.push(o),
            Err(message) => errors.push(set_error(set, "", message)),
        }
    }
    // The file's predictor parameters belong to the file's predictor type.
    if parsed.iter().any(|o| o.key == "branch_predictor.type") {
        table.remove("branch_predictor");
    }
    let mut written = Vec::new();
    for o in parsed {
        let mut candidate = table.clone();
        let outcome = o.apply(&mut candidate).and_then(|()| {
            serde_ignored::deserialize::<_, _, RawMachine>(candidate.clone(), |_| {})
                .map(drop)
                .map_err(|e| type_message(e.message()))
        });
        match outcome {
            Ok(()) => {
                *table = candidate;
                written.push(o.key);
            }
            Err(message) => errors.push(set_error(&o.key, &o.text, message)),
        }
    }
    written
}

/// Reports a key the schema does not have, with the closest allowed key and the list.
fn unknown_key(key: &str, table: &toml::Table, ctx: &mut validate::Ctx<'_>) {
    let (parent, name) = key.rsplit_once('.').unwrap_or(("", key));
    let value = raw::lookup(table, key).map_or_else(String::new, |v| {
        let text = v.to_string();
        let text = text.trim();
        if text.chars().count() > 60 {
            format!("{}…", text.chars().take(60).collect::<String>())
        } else {
            text.to_owned()
        }
    });
    let message = match raw::allowed_keys(parent) {
        Some(allowed) => {
            let hint = raw::suggest(name, allowed)
                .map(|s| format!("did you mean `{s}`?; "))
                .unwrap_or_default();
            let place = if parent.is_empty() {
                "at the top level".to_owned()
            } else {
                format!("in [{parent}]")
            };
            format!(
                "unknown key ({hint}allowed keys {place}: {})",
                allowed.join(", ")
            )
        }
        None => "unknown key".to_owned(),
    };
    ctx.error(key, value, message);
}

/// A `serde_ignored` path as a dotted key (`Some` and newtype wrappers are not keys).
fn dotted(path: &serde_ignored::Path<'_>) -> String {
    fn walk(path: &serde_ignored::Path<'_>, out: &mut Vec<String>) {
        use serde_ignored::Path;
        match path {
            Path::Root => {}
            Path::Seq { parent, index } => {
                walk(parent, out);
                out.push(index.to_string());
            }
            Path::Map { parent, key } => {
                walk(parent, out);
                out.push(key.clone());
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => walk(parent, out),
        }
    }
    let mut parts = Vec::new();
    walk(path, &mut parts);
    parts.join(".")
}

/// A serde type error in words a config author reads (no Rust type names).
fn type_message(message: &str) -> String {
    let message = message
        .replace(
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        )
        .replace("expected a string", "expected a string such as \"lru\"");
    match message.find("expected struct ") {
        Some(at) => format!("wrong type: {}expected a table", &message[..at]),
        None => format!("wrong type: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_is_the_builtin_default_machine() {
        assert_eq!(default_config(), defaults::machine());
    }

    #[test]
    fn an_empty_file_is_the_default_machine_without_an_l3() {
        let mut expected = defaults::machine();
        expected.cache.l3 = None;
        assert_eq!(load_str("", "empty.toml", &[]), Ok(expected));
    }

    #[test]
    fn a_present_l3_table_takes_the_default_l3() {
        let config = load_str("[cache.l3]\n", "x.toml", &[]).expect("valid");
        assert_eq!(config.cache.l3, Some(defaults::l3()));
    }

    #[test]
    fn error_display_names_origin_position_key_value() {
        let error = ConfigError {
            origin: "x.toml".into(),
            position: Some(Position { line: 3, column: 1 }),
            key: "core.rob_size".into(),
            value: "0".into(),
            message: "must be at least 1".into(),
        };
        assert_eq!(
            error.to_string(),
            "x.toml:3:1: core.rob_size = 0: must be at least 1"
        );
        let errors = ConfigErrors {
            errors: vec![
                error.clone(),
                ConfigError {
                    position: None,
                    value: String::new(),
                    ..error
                },
            ],
        };
        assert_eq!(
            errors.to_string(),
            "x.toml:3:1: core.rob_size = 0: must be at least 1\nx.toml: core.rob_size: must be at least 1"
        );
    }

    #[test]
    fn every_table_of_the_schema_lists_its_keys() {
        let full: toml::Table = default_config().to_toml().parse().expect("valid TOML");
        fn check(table: &toml::Table, path: &str) {
            let allowed =
                raw::allowed_keys(path).unwrap_or_else(|| panic!("no key list for [{path}]"));
            for (key, value) in table {
                assert!(allowed.contains(&key.as_str()), "[{path}] lacks {key}");
                if let toml::Value::Table(inner) = value {
                    let child = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    check(inner, &child);
                }
            }
        }
        check(&full, "");
    }

    #[test]
    fn type_messages_hide_rust_names() {
        assert_eq!(
            type_message("invalid type: integer `5`, expected struct RawCore"),
            "wrong type: invalid type: integer `5`, expected a table"
        );
    }
}
