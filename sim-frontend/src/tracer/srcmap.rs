//! Source map of a traced program: which loaded object holds a guest address, and that
//! address's function, file and line from the object's DWARF (addr2line over object + gimli),
//! or at least its function from the ELF symbol table (libraries without debug info).

use std::path::{Path, PathBuf};

/// One executable segment of a loaded object, as the interposition library saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// Load bias: guest address = address in the file + bias.
    pub bias: u64,
    /// First guest address of the segment.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// The object's file.
    pub path: PathBuf,
}

/// Parses `modules.tsv`; the main program is listed with an empty path and gets `program`.
pub fn parse_modules(text: &str, file: &Path, program: &Path) -> Result<Vec<Module>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        let num = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (Some(bias), Some(start), Some(end)) = (
            f.first().and_then(|s| num(s)),
            f.get(1).and_then(|s| num(s)),
            f.get(2).and_then(|s| num(s)),
        ) else {
            return Err(format!(
                "{}:{}: expected `bias<TAB>start<TAB>end<TAB>path` in hex, found `{line}`",
                file.display(),
                i + 1
            ));
        };
        let name = f.get(3).copied().unwrap_or("");
        let path = if name.is_empty() {
            program.to_path_buf()
        } else {
            PathBuf::from(name)
        };
        out.push(Module {
            bias,
            start,
            end,
            path,
        });
    }
    Ok(out)
}

/// A resolved address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Function (innermost inlined frame, else the symbol).
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line (0 if unknown).
    pub line: u32,
    /// Guest address of the start of the enclosing symbol, if known.
    pub symbol_start: Option<u64>,
}

/// Resolves guest addresses through the modules' debug information. Objects are opened on
/// first use; an object that cannot be read resolves nothing (and is reported once).
pub struct Resolver {
    modules: Vec<Module>,
    loaders: Vec<Option<Option<addr2line::Loader>>>,
    /// Objects that could not be read, with why.
    pub unreadable: Vec<String>,
}

impl Resolver {
    /// A resolver over `modules`.
    pub fn new(modules: Vec<Module>) -> Resolver {
        let n = modules.len();
        Resolver {
            modules,
            loaders: (0..n).map(|_| None).collect(),
            unreadable: Vec::new(),
        }
    }

    /// The modules.
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// Index of the module whose executable segment holds `pc`.
    pub fn module_of(&self, pc: u64) -> Option<usize> {
        self.modules
            .iter()
            .position(|m| m.start <= pc && pc < m.end)
    }

    /// Guest address ranges of the modules' PLT stubs (`.plt`, `.plt.sec`, `.plt.got`).
    pub fn plt_ranges(&self) -> Vec<(u64, u64)> {
        use object::{Object, ObjectSection};
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for m in &self.modules {
            if !seen.insert((m.path.clone(), m.bias)) {
                continue;
            }
            let Ok(data) = std::fs::read(&m.path) else {
                continue;
            };
            let Ok(file) = object::File::parse(&*data) else {
                continue;
            };
            for s in file.sections() {
                if matches!(s.name(), Ok(".plt" | ".plt.sec" | ".plt.got")) {
                    let start = s.address().wrapping_add(m.bias);
                    out.push((start, start + s.size()));
                }
            }
        }
        out
    }

    /// Function, file and line of `pc`.
    pub fn resolve(&mut self, pc: u64) -> Resolved {
        let Some(k) = self.module_of(pc) else {
            return Resolved::default();
        };
        if self.loaders[k].is_none() {
            let path = self.modules[k].path.clone();
            let l = match addr2line::Loader::new(&path) {
                Ok(l) => Some(l),
                Err(e) => {
                    self.unreadable.push(format!("{}: {e}", path.display()));
                    None
                }
            };
            self.loaders[k] = Some(l);
        }
        let bias = self.modules[k].bias;
        let Some(Some(loader)) = &self.loaders[k] else {
            return Resolved::default();
        };
        let probe = pc.wrapping_sub(bias);
        let mut r = Resolved::default();
        if let Some(sym) = loader.find_symbol_info(probe) {
            r.function = Some(sym.name().to_string());
            r.symbol_start = Some(sym.address().wrapping_add(bias));
        }
        if let Ok(mut frames) = loader.find_frames(probe)
            && let Ok(Some(f)) = frames.next()
        {
            if let Some(func) = f.function.as_ref()
                && let Ok(name) = func.raw_name()
            {
                r.function = Some(name.into_owned());
            }
            if let Some(loc) = f.location {
                r.file = loc.file.map(str::to_string);
                r.line = loc.line.unwrap_or(0);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_parse_and_a_bad_line_is_named() {
        let text = "0x4000000000\t0x4000001000\t0x400000159d\t\n0x10\t0x20\t0x30\t/lib/libc.so.6\n";
        let m = parse_modules(text, Path::new("m.tsv"), Path::new("/bin/prog")).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, Path::new("/bin/prog"));
        assert_eq!((m[1].bias, m[1].start, m[1].end), (0x10, 0x20, 0x30));
        let r = Resolver::new(m);
        assert_eq!(r.module_of(0x4000001000), Some(0));
        assert_eq!(r.module_of(0x30), None);
        let e = parse_modules("zz\t1\t2\tx\n", Path::new("m.tsv"), Path::new("p")).unwrap_err();
        assert!(e.starts_with("m.tsv:1: expected"), "{e}");
    }
}
