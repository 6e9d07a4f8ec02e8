//! Per-thread counts of what executed *inside* a function — in it or in what it called, from
//! each entry to the matching return — the quantity `callgrind --toggle-collect=FUNCTION`
//! reports, so that traces of real programs can be compared with callgrind's counts.
//!
//! The walk follows the trace's control flow: an instruction of the function starts an
//! activation when none is open; inside, a call whose callee was traced (the next instruction
//! is not the call's own fall-through) opens a level, a return closes one, and the return at
//! level 0 ends the activation (and is counted). Recursion of the function itself is not
//! folded (callgrind would count a recursive activation once; ours counts its instructions
//! once too, since the nested entry happens inside an open activation).

use crate::error::TraceError;
use crate::format::reader::Trace;
use crate::model::{Batch, BranchKind, Record};

/// Counts of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InsideCounts {
    /// Instructions executed.
    pub instructions: u64,
    /// Read accesses.
    pub loads: u64,
    /// Write accesses.
    pub stores: u64,
    /// Activations (entries into the function).
    pub calls: u64,
    /// Read-modify-write executions: instructions that read and then write the same bytes
    /// (`add [m], r`). Callgrind counts each as one write and no read, so its `Dr` is
    /// `loads - rmw` and its `Dw` is `stores`.
    pub rmw: u64,
}

/// Whether a demangled function name `name` is the function a user called `wanted`: the same
/// name, or a C++ name whose parameter list (and anything after it) follows it:
/// `parsec_barrier_wait` names `parsec_barrier_wait(parsec_barrier_t*)`, `ns::f` names
/// `ns::f(int) const`.
pub fn names(name: &str, wanted: &str) -> bool {
    name == wanted
        || name
            .strip_prefix(wanted)
            .is_some_and(|rest| rest.starts_with('(') && !wanted.contains('('))
}

/// The last `::` segment of a function's name, without a C++ parameter list
/// (`rayon_core::sleep::Sleep::no_work_found` → `no_work_found`, `ns::f(int) const` → `f`).
fn last_segment(name: &str) -> &str {
    let base = name.split('(').next().unwrap_or(name);
    base.rsplit("::").next().unwrap_or(base)
}

/// Counts, per thread, the instructions and accesses executed inside `function` (by name, as
/// in the trace's source map: a plain name matches a C++ function with its parameters).
/// Errors if no instruction of the trace belongs to it.
pub fn inside_counts(trace: &Trace, function: &str) -> Result<Vec<InsideCounts>, TraceError> {
    let p = &trace.program;
    let is_f: Vec<bool> = (0..p.insts.len() as u32)
        .map(|s| p.function_name(s).is_some_and(|n| names(n, function)))
        .collect();
    if !is_f.iter().any(|&b| b) {
        // Functions whose last path segment is the name (a Rust or C++ function given without
        // its module or namespace), as the user may have meant one of them.
        let mut near: Vec<&str> = p
            .source
            .functions
            .iter()
            .map(String::as_str)
            .filter(|n| last_segment(n) == function)
            .collect();
        near.sort_unstable();
        near.dedup();
        let hint = match near.len() {
            0 => String::new(),
            k => format!(
                "; by its full name: {}{}",
                near.iter()
                    .take(5)
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if k > 5 {
                    format!(" ({} in all)", k)
                } else {
                    String::new()
                }
            ),
        };
        return Err(TraceError::at(
            trace.path(),
            None,
            0,
            format!("no instruction of the trace belongs to a function named `{function}`{hint}"),
        ));
    }
    let mut out = Vec::with_capacity(trace.thread_count() as usize);
    let mut b = Batch::default();
    for tid in 0..trace.thread_count() {
        let mut c = InsideCounts::default();
        let (mut active, mut depth) = (false, 0u32);
        // A call inside the activation whose callee is not yet known to be traced.
        let mut open_call: Option<u64> = None;
        let mut s = trace.stream(tid)?;
        while s.next_batch(&mut b)? {
            for r in &b.records {
                let Record::Inst(i) = r else { continue };
                let st = &p.insts[i.sidx as usize];
                if let Some(ft) = open_call.take()
                    && st.pc != ft
                {
                    depth += 1; // the callee was traced: one level deeper
                }
                if !active {
                    if !is_f[i.sidx as usize] {
                        continue;
                    }
                    active = true;
                    depth = 0;
                    c.calls += 1;
                }
                c.instructions += 1;
                let mem = b.mem_of(i);
                c.rmw += mem
                    .iter()
                    .enumerate()
                    .filter(|(k, a)| {
                        !a.write
                            && mem[k + 1..]
                                .iter()
                                .any(|w| w.write && w.addr == a.addr && w.size == a.size)
                    })
                    .count() as u64;
                for m in mem {
                    if m.write {
                        c.stores += 1;
                    } else {
                        c.loads += 1;
                    }
                }
                match st.branch {
                    BranchKind::DirectCall | BranchKind::IndirectCall => {
                        open_call = Some(st.pc + st.size as u64);
                    }
                    BranchKind::Return if depth == 0 => active = false,
                    BranchKind::Return => depth -= 1,
                    _ => {}
                }
            }
        }
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::names;

    /// A plain name matches the C++ function of that name with its parameters; a name with
    /// parameters matches exactly; another function whose name starts alike does not match.
    #[test]
    fn plain_names_match_cxx_functions_with_their_parameters() {
        assert!(names("parsec_barrier_wait", "parsec_barrier_wait"));
        assert!(names(
            "parsec_barrier_wait(parsec_barrier_t*)",
            "parsec_barrier_wait"
        ));
        assert!(names("ns::f(int) const", "ns::f"));
        assert!(names("ns::f(int) const", "ns::f(int) const"));
        assert!(!names("ns::f(int) const", "ns::f(long)"));
        assert!(!names(
            "parsec_barrier_wait_all(int)",
            "parsec_barrier_wait"
        ));
        assert!(!names("f", "ns::f"));
    }

    /// A function's last path segment, which the error for an unknown `--inside` name offers
    /// full names by.
    #[test]
    fn the_last_segment_drops_the_path_and_the_parameters() {
        use super::last_segment;
        assert_eq!(
            last_segment("rayon_core::sleep::Sleep::no_work_found"),
            "no_work_found"
        );
        assert_eq!(last_segment("ns::f(int) const"), "f");
        assert_eq!(last_segment("ns::g(std::vector<int>::iterator)"), "g");
        assert_eq!(last_segment("main"), "main");
    }
}
