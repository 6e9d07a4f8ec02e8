//! A tiny assembler for the built-in workloads: lays out static instructions at increasing
//! PCs, tracks functions, files and lines for the synthetic source map, resolves branch labels,
//! and then declares everything to a [`TraceWriter`]. The emitter [`Em`] then writes the
//! dynamic stream, one executed instruction at a time.

use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, Marker, MemAccess, MemSpec, OpClass, SrcLoc, StaticInst};

/// Register numbers (x86-64 numbering, see docs/trace-format.md).
pub mod reg {
    /// General-purpose registers rax..r15 are 0..15.
    pub const RAX: u8 = 0;
    /// rcx.
    pub const RCX: u8 = 1;
    /// rdx.
    pub const RDX: u8 = 2;
    /// rbx.
    pub const RBX: u8 = 3;
    /// rsp.
    pub const RSP: u8 = 4;
    /// rbp.
    pub const RBP: u8 = 5;
    /// rsi.
    pub const RSI: u8 = 6;
    /// rdi.
    pub const RDI: u8 = 7;
    /// r8; r9..r15 follow.
    pub const R8: u8 = 8;
    /// The flags register.
    pub const FLAGS: u8 = 17;
    /// xmm0; xmm1..xmm31 follow.
    pub const XMM0: u8 = 32;
}

/// A branch target not yet placed.
#[derive(Debug, Clone, Copy)]
pub struct Label(usize);

/// Builds the static code of a workload. Static index = order of creation.
pub struct Asm {
    insts: Vec<StaticInst>,
    fixups: Vec<(usize, Label)>,
    labels: Vec<Option<u64>>,
    pc: u64,
    func: u32,
    file: u32,
    functions: Vec<String>,
    files: Vec<String>,
    block_start: bool,
}

impl Default for Asm {
    fn default() -> Self {
        Asm::new()
    }
}

impl Asm {
    /// Starts laying out code at 0x401000.
    pub fn new() -> Asm {
        Asm {
            insts: Vec::new(),
            fixups: Vec::new(),
            labels: Vec::new(),
            pc: 0x40_1000,
            func: SrcLoc::UNKNOWN,
            file: SrcLoc::UNKNOWN,
            functions: Vec::new(),
            files: Vec::new(),
            block_start: true,
        }
    }

    /// Starts a new function (16-byte aligned) in `file`.
    pub fn func(&mut self, name: &str, file: &str) {
        self.pc = (self.pc + 15) & !15;
        self.functions.push(name.to_string());
        self.func = self.functions.len() as u32 - 1;
        self.file = match self.files.iter().position(|f| f == file) {
            Some(i) => i as u32,
            None => {
                self.files.push(file.to_string());
                self.files.len() as u32 - 1
            }
        };
        self.block_start = true;
    }

    /// A new, unplaced label.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Places `l` at the next instruction, which starts a basic block.
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.pc);
        self.block_start = true;
    }

    fn push(
        &mut self,
        line: u32,
        class: OpClass,
        size: u8,
        dsts: &[u8],
        srcs: &[u8],
        mem: &[MemSpec],
    ) -> u32 {
        let mut s = StaticInst::new(self.pc, size, class);
        s.dsts = dsts.to_vec();
        s.srcs = srcs.to_vec();
        s.mem = mem.to_vec();
        s.block_start = std::mem::take(&mut self.block_start);
        s.loc = SrcLoc {
            function: self.func,
            file: self.file,
            line,
        };
        self.pc += size as u64;
        self.insts.push(s);
        self.insts.len() as u32 - 1
    }

    /// A register-only operation of class `class`.
    pub fn op(&mut self, line: u32, class: OpClass, dst: &[u8], srcs: &[u8]) -> u32 {
        self.push(line, class, 4, dst, srcs, &[])
    }

    /// `dst = load size bytes from [addr_regs]`.
    pub fn load(&mut self, line: u32, dst: u8, addr_regs: &[u8], size: u8) -> u32 {
        self.push(
            line,
            OpClass::Load,
            4,
            &[dst],
            addr_regs,
            &[MemSpec { size, write: false }],
        )
    }

    /// `store size bytes of src to [addr_regs]`.
    pub fn store(&mut self, line: u32, src: u8, addr_regs: &[u8], size: u8) -> u32 {
        let mut srcs = vec![src];
        srcs.extend_from_slice(addr_regs);
        self.push(
            line,
            OpClass::Store,
            4,
            &[],
            &srcs,
            &[MemSpec { size, write: true }],
        )
    }

    /// A branch of `kind`; direct kinds go to `target`.
    pub fn branch(
        &mut self,
        line: u32,
        kind: BranchKind,
        target: Option<Label>,
        srcs: &[u8],
    ) -> u32 {
        let class = match kind {
            BranchKind::Conditional => OpClass::CondBranch,
            BranchKind::DirectJump | BranchKind::IndirectJump => OpClass::Jump,
            BranchKind::DirectCall | BranchKind::IndirectCall => OpClass::Call,
            BranchKind::Return | BranchKind::None => OpClass::Return,
        };
        let (dsts, mem): (&[u8], &[MemSpec]) = match kind {
            BranchKind::DirectCall | BranchKind::IndirectCall => (
                &[reg::RSP],
                &[MemSpec {
                    size: 8,
                    write: true,
                }],
            ),
            BranchKind::Return => (
                &[reg::RSP],
                &[MemSpec {
                    size: 8,
                    write: false,
                }],
            ),
            _ => (&[], &[]),
        };
        let i = self.push(line, class, 5, dsts, srcs, mem);
        self.insts[i as usize].branch = kind;
        if let Some(t) = target {
            self.fixups.push((i as usize, t));
        }
        self.block_start = true;
        i
    }

    /// Resolves labels and declares the code and source map to `w`, which must be empty.
    pub fn finish(self, w: &mut TraceWriter) -> Result<(), TraceError> {
        let mut insts = self.insts;
        for (i, l) in self.fixups {
            insts[i].target = self.labels[l.0].expect("generator bug: branch to an unbound label");
        }
        let src = w.source_mut();
        src.functions = self.functions;
        src.files = self.files;
        for s in insts {
            w.add_static(s)?;
        }
        Ok(())
    }
}

/// Writes one thread's dynamic records, filling sizes and directions from the static table.
pub struct Em<'w> {
    /// The writer.
    pub w: &'w mut TraceWriter,
}

impl Em<'_> {
    fn acc(&self, s: u32, addrs: &[u64], out: &mut [MemAccess; 4]) -> usize {
        let specs = &self.w.program().insts[s as usize].mem;
        for (i, (a, m)) in addrs.iter().zip(specs).enumerate() {
            out[i] = MemAccess {
                addr: *a,
                size: m.size,
                write: m.write,
            };
        }
        addrs.len().min(specs.len())
    }

    /// Executes a non-memory, non-branch instruction.
    pub fn x(&mut self, t: u32, s: u32) -> Result<(), TraceError> {
        self.w.inst(t, s, false, &[])
    }

    /// Executes an instruction with memory operands at `addrs`.
    pub fn m(&mut self, t: u32, s: u32, addrs: &[u64]) -> Result<(), TraceError> {
        let mut buf = [MemAccess::default(); 4];
        let n = self.acc(s, addrs, &mut buf);
        self.w.inst(t, s, false, &buf[..n])
    }

    /// Executes a conditional branch.
    pub fn br(&mut self, t: u32, s: u32, taken: bool) -> Result<(), TraceError> {
        self.w.inst(t, s, taken, &[])
    }

    /// Writes a marker.
    pub fn mark(&mut self, t: u32, m: Marker) -> Result<(), TraceError> {
        self.w.marker(t, m)
    }
}
