//! Hints to the host's caches. A simulated miss beyond the L1 touches a dozen host cache
//! lines of metadata per level (the set's tags, states, fill records, sharer masks and
//! replacement state: ~0.9 KB for a 16-way set of the default L3), in arrays of megabytes
//! that the host's caches do not hold; found one after the other, each is a host miss of its
//! own. [`prefetch`] asks for a range ahead, so that the host fetches the lines in parallel.
//! A hint changes no value: results are the same with or without it.

/// Host cache line size assumed for the hints (x86-64's).
const HOST_LINE: usize = 64;

/// Asks the host to bring the memory of `s` into its caches.
#[inline(always)]
pub(crate) fn prefetch<T>(s: &[T]) {
    let start = s.as_ptr() as usize & !(HOST_LINE - 1);
    let end = s.as_ptr() as usize + std::mem::size_of_val(s);
    let mut a = start;
    while a < end {
        hint(a as *const i8);
        a += HOST_LINE;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn hint(p: *const i8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` is unsafe only because it needs SSE, which every x86-64 CPU has
    // (the target's baseline). A prefetch never faults and writes nothing, whatever the
    // address (here, always one inside a live slice).
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn hint(_: *const i8) {}
