//! Source map of a traced program: which loaded object holds a guest address, and that
//! address's function, file and line from the object's DWARF (addr2line over object + gimli),
//! or at least its function from the ELF symbol table (libraries without debug info). Names are
//! demangled (addr2line's C++ and Rust demanglers: cpp_demangle, rustc-demangle).

use crate::model::{is_own_file, is_own_function, is_sync_function};
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
    /// Function (innermost inlined frame, else the symbol), demangled (C++ and Rust names read
    /// as in the source: `std::vector<int>::push_back`, `app::worker::{closure#0}`); code no
    /// symbol spans is named by its object, `<libc.so.6>`; `None` outside every object.
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
    /// Per module, once its loader opened: the address ranges of its sized function symbols,
    /// sorted (the symbol table's, else the dynamic one's).
    extents: Vec<Vec<(u64, u64)>>,
    /// Per module, once [`Resolver::callees_after`] read it: the object's bytes (`None`:
    /// unreadable), read once however many lock sites ask.
    images: Vec<Option<Option<std::sync::Arc<[u8]>>>>,
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
            extents: vec![Vec::new(); n],
            images: vec![None; n],
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
            self.extents[k] = function_extents(&path);
        }
        let bias = self.modules[k].bias;
        // Code no symbol names is at least named by its object: `<libc.so.6>`.
        let object = || {
            let p = &self.modules[k].path;
            let name = p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            format!("<{name}>")
        };
        let Some(Some(loader)) = &self.loaders[k] else {
            return Resolved {
                function: Some(object()),
                ..Resolved::default()
            };
        };
        let probe = pc.wrapping_sub(bias);
        let mut r = Resolved::default();
        // The nearest symbol below `probe` names it only if it spans it: in a library whose
        // static functions are stripped (libstdc++'s thread trampoline), the nearest exported
        // symbol is another function.
        if let Some(sym) = loader.find_symbol_info(probe)
            && spans(&self.extents[k], sym.address(), probe)
        {
            r.function = Some(addr2line::demangle_auto(sym.name().into(), None).into_owned());
            r.symbol_start = Some(sym.address().wrapping_add(bias));
        }
        // Library code the compiler inlined into the program's own function (a Rust range's
        // `next`, `black_box`, a C++ container's method, glibc's fortified `printf`) is named
        // by the own line that called it: the first frame, from the innermost out, whose
        // function and file are the program's own. Code inlined from a synchronization
        // primitive (`std::barrier::arrive_and_wait`'s atomics) takes that line too but keeps
        // the outermost primitive's name, so that it stays the primitive's code
        // ([`crate::model::CodeRole`]) at the user's call.
        if let Ok(mut frames) = loader.find_frames(probe) {
            let mut innermost: Option<(Option<String>, Option<String>, u32)> = None;
            let mut sync_name: Option<String> = None;
            let mut own = None;
            while let Ok(Some(f)) = frames.next() {
                let name = f
                    .function
                    .as_ref()
                    .and_then(|func| func.demangle().ok())
                    .map(|n| n.into_owned());
                let (file, line) = f.location.map_or((None, 0), |l| {
                    (l.file.map(str::to_string), l.line.unwrap_or(0))
                });
                let mine = name.as_deref().is_some_and(is_own_function)
                    && file.as_deref().is_some_and(is_own_file);
                if name.as_deref().is_some_and(is_sync_function) {
                    sync_name.clone_from(&name);
                }
                let frame = (name, file, line);
                if innermost.is_none() {
                    innermost = Some(frame.clone());
                }
                if mine {
                    own = Some(frame);
                    break;
                }
            }
            let chosen = match own {
                Some((name, file, line)) => Some((sync_name.or(name), file, line)),
                None => innermost,
            };
            if let Some((name, file, line)) = chosen {
                if name.is_some() {
                    r.function = name;
                }
                if file.is_some() || line > 0 {
                    r.file = file;
                    r.line = line;
                }
            }
        }
        if r.function.is_none() {
            r.function = Some(object());
        }
        r
    }
}

impl Resolver {
    /// The functions that the code just after the instruction at `pc` (an atomic
    /// compare-and-swap) calls on either side of the first conditional branch within a few
    /// instructions: the lock's slow path its failure calls (`jne` to `call lock_contended`),
    /// read from the object's own bytes, so that it is known even when no traced run ever
    /// took it. A call through the global offset table is followed through the slot's
    /// dynamic relocation (or the value stored in it). Empty if the object cannot be read or
    /// the code is not of that shape.
    pub fn callees_after(&mut self, pc: u64) -> Vec<String> {
        use iced_x86::{Decoder, DecoderOptions, FlowControl, OpKind};
        let Some((data, bias)) = self.image_of(pc) else {
            return Vec::new();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Vec::new();
        };
        // Up to 64 bytes of the object's file at a (file-relative) virtual address.
        let bytes_at = |vaddr: u64| bytes_at(&file, vaddr);
        // The function address a global offset table slot holds once the loader filled it.
        let slot_value = |slot: u64| -> Option<u64> {
            use object::{Object, ObjectSymbol, ObjectSymbolTable, RelocationTarget};
            if let Some(relocs) = file.dynamic_relocations() {
                for (at, r) in relocs {
                    if at != slot {
                        continue;
                    }
                    return match r.target() {
                        RelocationTarget::Symbol(i) => {
                            let sym = file.dynamic_symbol_table()?.symbol_by_index(i).ok()?;
                            (sym.address() != 0).then(|| sym.address())
                        }
                        _ => u64::try_from(r.addend()).ok().filter(|&a| a != 0),
                    };
                }
            }
            let b = bytes_at(slot)?;
            let v = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
            (v != 0).then_some(v)
        };
        let decode_at = |vaddr: u64, max: usize| -> Vec<iced_x86::Instruction> {
            let Some(b) = bytes_at(vaddr) else {
                return Vec::new();
            };
            let mut d = Decoder::with_ip(64, b, vaddr, DecoderOptions::NONE);
            let mut out = Vec::new();
            while d.can_decode() && out.len() < max {
                let i = d.decode();
                if i.is_invalid() {
                    break;
                }
                out.push(i);
            }
            out
        };
        let start = pc.wrapping_sub(bias);
        let Some(branch) = decode_at(start, 4)
            .into_iter()
            .skip(1)
            .find(|i| i.flow_control() != FlowControl::Next)
            .filter(|i| i.flow_control() == FlowControl::ConditionalBranch)
        else {
            return Vec::new();
        };
        let mut callees = Vec::new();
        for side in [branch.near_branch_target(), branch.next_ip()] {
            let mut at = side;
            // A few instructions, through at most two direct jumps, to the first call.
            'path: for _ in 0..3 {
                for i in decode_at(at, 8) {
                    match i.flow_control() {
                        FlowControl::Next => {}
                        FlowControl::UnconditionalBranch
                            if i.op0_kind() == OpKind::NearBranch64 =>
                        {
                            at = i.near_branch_target();
                            continue 'path;
                        }
                        FlowControl::Call | FlowControl::IndirectCall => {
                            let target = if i.op0_kind() == OpKind::NearBranch64 {
                                Some(i.near_branch_target())
                            } else if i.is_ip_rel_memory_operand() {
                                slot_value(i.ip_rel_memory_address())
                            } else {
                                None
                            };
                            if let Some(f) = target.and_then(|t| self.resolve(t + bias).function) {
                                callees.push(f);
                            }
                            break 'path;
                        }
                        _ => break 'path,
                    }
                }
                break;
            }
        }
        callees
    }

    /// The symbol whose global offset table slot the jump at `pc` goes through (a PLT stub's
    /// `jmp *slot(%rip)`, the slot's dynamic relocation naming it: `memset`), demangled;
    /// `None` for any other instruction, or a slot with no named relocation.
    pub fn slot_symbol(&mut self, pc: u64) -> Option<String> {
        use iced_x86::{Decoder, DecoderOptions, FlowControl};
        use object::{Object, ObjectSymbol, ObjectSymbolTable, RelocationTarget};
        let (data, bias) = self.image_of(pc)?;
        let file = object::File::parse(&*data).ok()?;
        let vaddr = pc.wrapping_sub(bias);
        let mut d = Decoder::with_ip(64, bytes_at(&file, vaddr)?, vaddr, DecoderOptions::NONE);
        let jump = d.decode();
        if jump.flow_control() != FlowControl::IndirectBranch || !jump.is_ip_rel_memory_operand() {
            return None;
        }
        let slot = jump.ip_rel_memory_address();
        let (_, reloc) = file.dynamic_relocations()?.find(|(at, _)| *at == slot)?;
        let RelocationTarget::Symbol(k) = reloc.target() else {
            return None;
        };
        let sym = file.dynamic_symbol_table()?.symbol_by_index(k).ok()?;
        let name = sym.name().ok().filter(|n| !n.is_empty())?;
        Some(addr2line::demangle_auto(name.into(), None).into_owned())
    }

    /// The object file holding `pc` (read once) and its module's load bias.
    fn image_of(&mut self, pc: u64) -> Option<(std::sync::Arc<[u8]>, u64)> {
        let k = self.module_of(pc)?;
        if self.images[k].is_none() {
            self.images[k] = Some(std::fs::read(&self.modules[k].path).ok().map(Into::into));
        }
        Some((self.images[k].clone()??, self.modules[k].bias))
    }

    /// How many instructions after the atomic at `pc` test its result up to the first
    /// conditional branch, that branch included, when only instructions that access no
    /// memory come between (a semaphore's release: `lock xadd`, `test`, `jg` past the futex
    /// wake it makes when the count was 0); 0 if the code is not of that shape or cannot be
    /// read.
    pub fn tested_after(&mut self, pc: u64) -> u64 {
        use iced_x86::{Decoder, DecoderOptions, FlowControl};
        let Some((data, bias)) = self.image_of(pc) else {
            return 0;
        };
        let Ok(file) = object::File::parse(&*data) else {
            return 0;
        };
        let vaddr = pc.wrapping_sub(bias);
        let Some(bytes) = bytes_at(&file, vaddr) else {
            return 0;
        };
        let mut d = Decoder::with_ip(64, bytes, vaddr, DecoderOptions::NONE);
        // The atomic itself, then up to three tests before the branch.
        let atomic = d.decode();
        if atomic.is_invalid() {
            return 0;
        }
        let mut between = 0;
        while d.can_decode() && between <= 3 {
            let i = d.decode();
            match i.flow_control() {
                _ if i.is_invalid() => return 0,
                FlowControl::ConditionalBranch => return between + 1,
                FlowControl::Next if !has_memory_operand(&i) => between += 1,
                _ => return 0,
            }
        }
        0
    }
}

/// Up to 64 bytes of object `file` at (file-relative) virtual address `vaddr`.
fn bytes_at<'a>(file: &'a object::File<'a>, vaddr: u64) -> Option<&'a [u8]> {
    use object::{Object, ObjectSection};
    file.sections().find_map(|s| {
        let off = vaddr.checked_sub(s.address())?;
        let d = s.data().ok()?;
        (off < d.len() as u64).then(|| &d[off as usize..d.len().min(off as usize + 64)])
    })
}

/// Whether `i` reads or writes memory through an operand.
fn has_memory_operand(i: &iced_x86::Instruction) -> bool {
    (0..i.op_count()).any(|k| i.op_kind(k) == iced_x86::OpKind::Memory)
}

/// The sorted address ranges of the sized function symbols of the object at `path` (its symbol
/// table, else its dynamic symbol table); empty if it cannot be read or has none.
fn function_extents(path: &Path) -> Vec<(u64, u64)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let collect = |syms: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| -> Vec<(u64, u64)> {
        syms.filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
            .map(|s| (s.address(), s.address() + s.size()))
            .collect()
    };
    let mut v = collect(&mut file.symbols());
    if v.is_empty() {
        v = collect(&mut file.dynamic_symbols());
    }
    v.sort_unstable();
    v
}

/// Whether the symbol starting at `start` spans `probe`, by `extents` (any sized symbol
/// starting there and reaching past `probe`); an object without sized symbols is trusted.
fn spans(extents: &[(u64, u64)], start: u64, probe: u64) -> bool {
    if extents.is_empty() {
        return true;
    }
    let from = extents.partition_point(|e| e.0 < start);
    extents[from..]
        .iter()
        .take_while(|e| e.0 == start)
        .any(|e| probe < e.1)
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

    /// A symbol names an address only within its size; aliases (two symbols at one address)
    /// count by the longest; an object without sized symbols is trusted.
    #[test]
    fn a_symbol_names_only_addresses_it_spans() {
        let ext = [(0x100, 0x140), (0x200, 0x210), (0x200, 0x260)];
        assert!(spans(&ext, 0x100, 0x100));
        assert!(spans(&ext, 0x100, 0x13f));
        assert!(
            !spans(&ext, 0x100, 0x140),
            "past the end: a stripped static function"
        );
        assert!(spans(&ext, 0x200, 0x250));
        assert!(!spans(&ext, 0x180, 0x190), "no sized symbol starts there");
        assert!(spans(&[], 0x100, 0x9999));
    }

    /// The C++ runtime's thread trampoline is a static function of a stripped library: the
    /// nearest exported symbol below it does not span it (libstdc++ on this machine).
    #[test]
    fn libstdcxx_exports_do_not_span_its_static_functions() {
        let lib = Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
        if !lib.exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI installs g++ and libstdc++"
            );
            return;
        }
        let ext = function_extents(lib);
        assert!(ext.len() > 1000, "{} sized symbols", ext.len());
        // Every gap between consecutive symbols is an address no symbol spans.
        let gap = ext.windows(2).find(|w| w[0].1 < w[1].0).expect("a gap");
        assert!(!spans(&ext, gap[0].0, gap[0].1));
        // Resolved, such an address is named by its object, a spanned one by its symbol.
        let mut r = Resolver::new(vec![Module {
            bias: 0,
            start: 0,
            end: u64::MAX,
            path: lib.to_path_buf(),
        }]);
        assert_eq!(
            r.resolve(gap[0].1).function.as_deref(),
            Some("<libstdc++.so.6>")
        );
        let named = r.resolve(ext[ext.len() / 2].0).function.unwrap();
        assert!(!named.starts_with('<'), "{named}");
    }
}
