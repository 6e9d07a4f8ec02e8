//! Tracing real x86-64 programs (`isim trace`): the raw capture protocol shared with the QEMU
//! plugin and the interposition library ([`raw`]), static decoding of the captured code
//! ([`decode`]), the DWARF source map ([`srcmap`]) and the conversion of a capture into a trace
//! v1 ([`convert`]). Running QEMU is the `isim` package's job (`src/trace.rs`).

pub mod atomicsem;
pub mod convert;
pub mod countdown;
pub mod decode;
pub mod futexlock;
pub mod inside;
pub mod publish;
/// The raw capture protocol (the `isim-trace-protocol` crate, shared with the plugin and the
/// interposition library).
pub use isim_trace_protocol as raw;
pub mod spinwait;
pub mod srcmap;
pub mod sync;
pub mod taslock;
