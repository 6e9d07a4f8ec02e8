//! Static decoding of traced x86-64 instructions with iced-x86: operation class, control-flow
//! kind and direct target, source and destination registers in the trace's numbering
//! (docs/trace-format.md), and the widest memory operand (to merge accesses that QEMU reports
//! in pieces).

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    Register,
};

use crate::model::{BranchKind, OpClass};

/// Register number of the instruction pointer.
pub const REG_RIP: u8 = 16;
/// Register number of the flags.
pub const REG_FLAGS: u8 = 17;

/// What the trace needs to know of one instruction, from its bytes alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Encoded length; 0 if the bytes did not decode.
    pub size: u8,
    /// Operation class.
    pub class: OpClass,
    /// Control-flow kind.
    pub branch: BranchKind,
    /// Target of a direct branch, else 0.
    pub target: u64,
    /// Registers read: first the `addr_srcs` that form memory addresses, then the others.
    pub srcs: Vec<u8>,
    /// How many of `srcs` (the first) are read to form a memory operand's address.
    pub addr_srcs: u8,
    /// Registers written.
    pub dsts: Vec<u8>,
    /// Bytes of the widest memory operand (at least 8), the bound for merging split accesses.
    pub widest_mem: u32,
    /// Mnemonic, lower case (for messages and tests).
    pub mnemonic: String,
}

/// Reusable decoder state (the info factory keeps buffers).
pub struct X86Decoder {
    info: InstructionInfoFactory,
}

impl Default for X86Decoder {
    fn default() -> Self {
        X86Decoder {
            info: InstructionInfoFactory::new(),
        }
    }
}

/// The trace's number for an iced register, if it carries dependences we model.
fn reg_number(r: Register) -> Option<u8> {
    let f = r.full_register();
    if f.is_gpr64() {
        Some(f.number() as u8)
    } else if f == Register::RIP {
        Some(REG_RIP)
    } else if f.is_zmm() || f.is_ymm() || f.is_xmm() {
        Some(32 + (f.number() as u8 & 31))
    } else {
        None
    }
}

fn push_unique(v: &mut Vec<u8>, r: u8) {
    if !v.contains(&r) {
        v.push(r);
    }
}

/// System calls: iced-x86 files them under call flow, but control comes back to the next
/// instruction, so for the trace they are serializing non-branches.
fn is_system_call(ins: &Instruction) -> bool {
    matches!(
        ins.mnemonic(),
        Mnemonic::Syscall | Mnemonic::Sysenter | Mnemonic::Int | Mnemonic::Int3 | Mnemonic::Into
    )
}

fn class_of(ins: &Instruction, reads_mem: bool, writes_mem: bool) -> OpClass {
    if is_system_call(ins) {
        return OpClass::Serializing;
    }
    match ins.flow_control() {
        FlowControl::ConditionalBranch => return OpClass::CondBranch,
        FlowControl::UnconditionalBranch | FlowControl::IndirectBranch => return OpClass::Jump,
        FlowControl::Call | FlowControl::IndirectCall => return OpClass::Call,
        FlowControl::Return => return OpClass::Return,
        FlowControl::Interrupt | FlowControl::Exception | FlowControl::XbeginXabortXend => {
            return OpClass::Serializing;
        }
        FlowControl::Next => {}
    }
    let m = ins.mnemonic();
    if matches!(
        m,
        Mnemonic::Syscall
            | Mnemonic::Cpuid
            | Mnemonic::Mfence
            | Mnemonic::Lfence
            | Mnemonic::Sfence
            | Mnemonic::Rdtsc
            | Mnemonic::Rdtscp
            | Mnemonic::Pause
    ) || ins.has_lock_prefix()
        || (m == Mnemonic::Xchg && (reads_mem || writes_mem))
    {
        return OpClass::Serializing;
    }
    let op = op_class(m);
    if reads_mem {
        // A load-op instruction whose operation takes several cycles (`addsd xmm0, [rax]`,
        // `imul rax, [rdi]`) keeps its operation's class: the core times its load, then the
        // operation after the loaded value and the other operands. A one-cycle operation on a
        // loaded value (`add rax, [rdi]`, a compare) is a load, as a plain move is: its cycle
        // is within the caches' load-to-use latency as the configs measure it.
        return if op.operates_after_load() {
            op
        } else {
            OpClass::Load
        };
    }
    if writes_mem {
        return OpClass::Store;
    }
    op
}

/// The class of an instruction's operation, from its mnemonic (memory aside).
fn op_class(m: Mnemonic) -> OpClass {
    let name = format!("{m:?}").to_ascii_lowercase();
    let name = name.strip_prefix('v').unwrap_or(&name);
    let fp_suffix = ["ss", "sd", "ps", "pd", "sh", "ph"]
        .iter()
        .any(|s| name.ends_with(s));
    match m {
        Mnemonic::Imul | Mnemonic::Mul | Mnemonic::Mulx => OpClass::IntMul,
        Mnemonic::Div | Mnemonic::Idiv => OpClass::IntDiv,
        Mnemonic::Nop => OpClass::Other,
        _ if name.starts_with("fadd") || name.starts_with("fsub") => OpClass::FpAdd,
        _ if name.starts_with("fmul") => OpClass::FpMul,
        _ if name.starts_with("fdiv") || name.starts_with("fsqrt") => OpClass::FpDiv,
        _ if fp_suffix && (name.starts_with("div") || name.starts_with("sqrt")) => OpClass::FpDiv,
        _ if fp_suffix
            && (name.starts_with("mul")
                || name.starts_with("fmadd")
                || name.starts_with("fnmadd")
                || name.starts_with("fmsub")
                || name.starts_with("fnmsub")) =>
        {
            OpClass::FpMul
        }
        _ if fp_suffix
            && [
                "add", "sub", "min", "max", "cvt", "cmp", "round", "hadd", "hsub",
            ]
            .iter()
            .any(|p| name.starts_with(p)) =>
        {
            OpClass::FpAdd
        }
        _ => OpClass::IntAlu,
    }
}

impl X86Decoder {
    /// Decodes the instruction whose bytes are `code`, located at `pc`.
    pub fn decode(&mut self, pc: u64, code: &[u8]) -> Decoded {
        let mut d = Decoder::with_ip(64, code, pc, DecoderOptions::NONE);
        let ins = d.decode();
        if ins.is_invalid() {
            return Decoded {
                size: 0,
                class: OpClass::Other,
                branch: BranchKind::None,
                target: 0,
                srcs: vec![],
                addr_srcs: 0,
                dsts: vec![],
                widest_mem: 8,
                mnemonic: "(bad)".into(),
            };
        }
        let info = self.info.info(&ins);
        let (mut srcs, mut dsts) = (Vec::new(), Vec::new());
        for u in info.used_registers() {
            let Some(r) = reg_number(u.register()) else {
                continue;
            };
            match u.access() {
                OpAccess::Read | OpAccess::CondRead => push_unique(&mut srcs, r),
                OpAccess::Write | OpAccess::CondWrite => push_unique(&mut dsts, r),
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                    push_unique(&mut srcs, r);
                    push_unique(&mut dsts, r);
                }
                OpAccess::None | OpAccess::NoMemAccess => {}
            }
        }
        let (mut reads_mem, mut writes_mem, mut widest) = (false, false, 8u32);
        let mut addr = Vec::new();
        for m in info.used_memory() {
            if !matches!(m.access(), OpAccess::None | OpAccess::NoMemAccess) {
                for r in [m.base(), m.index()] {
                    if let Some(n) = reg_number(r) {
                        push_unique(&mut addr, n);
                    }
                }
            }
            let (r, w) = match m.access() {
                OpAccess::Read | OpAccess::CondRead => (true, false),
                OpAccess::Write | OpAccess::CondWrite => (false, true),
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                OpAccess::None | OpAccess::NoMemAccess => (false, false),
            };
            reads_mem |= r;
            writes_mem |= w;
            if r || w {
                widest = widest.max(m.memory_size().size() as u32);
            }
        }
        if ins.rflags_read() != 0 {
            push_unique(&mut srcs, REG_FLAGS);
        }
        // Address registers first: the load micro-op waits for them only.
        let addr_srcs = addr.len() as u8;
        for r in srcs {
            push_unique(&mut addr, r);
        }
        let srcs = addr;
        if ins.rflags_modified() != 0 {
            push_unique(&mut dsts, REG_FLAGS);
        }
        let (branch, target) = match ins.flow_control() {
            _ if is_system_call(&ins) => (BranchKind::None, 0),
            FlowControl::ConditionalBranch if ins.near_branch_target() != 0 => {
                (BranchKind::Conditional, ins.near_branch_target())
            }
            FlowControl::ConditionalBranch => (BranchKind::IndirectJump, 0),
            FlowControl::UnconditionalBranch if ins.near_branch_target() != 0 => {
                (BranchKind::DirectJump, ins.near_branch_target())
            }
            FlowControl::UnconditionalBranch | FlowControl::IndirectBranch => {
                (BranchKind::IndirectJump, 0)
            }
            FlowControl::Call if ins.near_branch_target() != 0 => {
                (BranchKind::DirectCall, ins.near_branch_target())
            }
            FlowControl::Call | FlowControl::IndirectCall => (BranchKind::IndirectCall, 0),
            FlowControl::Return => (BranchKind::Return, 0),
            _ => (BranchKind::None, 0),
        };
        Decoded {
            size: ins.len() as u8,
            class: class_of(&ins, reads_mem, writes_mem),
            branch,
            target,
            srcs,
            addr_srcs,
            dsts,
            widest_mem: widest.min(255),
            mnemonic: format!("{:?}", ins.mnemonic()).to_ascii_lowercase(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(pc: u64, code: &[u8]) -> Decoded {
        X86Decoder::default().decode(pc, code)
    }

    #[test]
    fn classes_branches_and_registers_of_known_encodings() {
        // add rax, rbx
        let d = dec(0x1000, &[0x48, 0x01, 0xd8]);
        assert_eq!(
            (d.size, d.class, d.branch),
            (3, OpClass::IntAlu, BranchKind::None)
        );
        assert!(d.srcs.contains(&0) && d.srcs.contains(&3) && d.dsts.contains(&0));
        assert!(d.dsts.contains(&REG_FLAGS));
        // mov rax, [rdi+8]
        let d = dec(0x1000, &[0x48, 0x8b, 0x47, 0x08]);
        assert_eq!(d.class, OpClass::Load);
        assert!(d.srcs.contains(&7) && d.dsts == vec![0]);
        // mov [rdi], rax
        assert_eq!(dec(0x1000, &[0x48, 0x89, 0x07]).class, OpClass::Store);
        // jne +0x10 (short): target = pc + 2 + 0x10
        let d = dec(0x1000, &[0x75, 0x10]);
        assert_eq!(
            (d.class, d.branch, d.target),
            (OpClass::CondBranch, BranchKind::Conditional, 0x1012)
        );
        assert!(d.srcs.contains(&REG_FLAGS));
        // call rel32 0
        let d = dec(0x1000, &[0xe8, 0, 0, 0, 0]);
        assert_eq!((d.branch, d.target), (BranchKind::DirectCall, 0x1005));
        // jmp [rip+0]: indirect
        assert_eq!(
            dec(0x1000, &[0xff, 0x25, 0, 0, 0, 0]).branch,
            BranchKind::IndirectJump
        );
        // ret
        assert_eq!(dec(0x1000, &[0xc3]).branch, BranchKind::Return);
        // imul rax, rbx ; div rcx ; syscall ; lock add [rdi], eax
        assert_eq!(dec(0, &[0x48, 0x0f, 0xaf, 0xc3]).class, OpClass::IntMul);
        assert_eq!(dec(0, &[0x48, 0xf7, 0xf1]).class, OpClass::IntDiv);
        let d = dec(0, &[0x0f, 0x05]);
        assert_eq!(
            (d.class, d.branch),
            (OpClass::Serializing, BranchKind::None)
        );
        assert_eq!(dec(0, &[0xf0, 0x01, 0x07]).class, OpClass::Serializing);
        // mulsd xmm0, xmm1 ; addsd xmm0, xmm1 ; divsd xmm0, xmm1
        let d = dec(0, &[0xf2, 0x0f, 0x59, 0xc1]);
        assert_eq!(d.class, OpClass::FpMul);
        assert!(d.srcs.contains(&32) && d.srcs.contains(&33) && d.dsts.contains(&32));
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x58, 0xc1]).class, OpClass::FpAdd);
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x5e, 0xc1]).class, OpClass::FpDiv);
        // A load-op instruction keeps a multi-cycle operation's class: addsd xmm0, [rsi];
        // mulsd xmm0, [rsi]; imul rax, [rdi]; divsd xmm0, [rsi]. A one-cycle one is a load:
        // add rax, [rdi]; and so is a move: movsd xmm0, [rdi].
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x58, 0x06]).class, OpClass::FpAdd);
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x59, 0x06]).class, OpClass::FpMul);
        assert_eq!(dec(0, &[0x48, 0x0f, 0xaf, 0x07]).class, OpClass::IntMul);
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x5e, 0x06]).class, OpClass::FpDiv);
        assert_eq!(dec(0, &[0x48, 0x03, 0x07]).class, OpClass::Load);
        assert_eq!(dec(0, &[0xf2, 0x0f, 0x10, 0x07]).class, OpClass::Load);
        // vmovdqu ymm0, [rdi]: a 32-byte load
        let d = dec(0, &[0xc5, 0xfe, 0x6f, 0x07]);
        assert_eq!((d.class, d.widest_mem), (OpClass::Load, 32));
        // Bytes that are not an instruction.
        assert_eq!(dec(0, &[0x0f, 0xff]).size, 0);
    }

    #[test]
    fn address_registers_come_first_and_are_counted() {
        // add rax, [rdi+rcx*8]: the load reads rdi and rcx; the add also reads rax.
        let d = dec(0, &[0x48, 0x03, 0x04, 0xcf]);
        assert_eq!(d.addr_srcs, 2);
        assert_eq!(&d.srcs[..2], &[7, 1]);
        assert!(d.srcs[2..].contains(&0) && !d.srcs[2..].contains(&7));
        // mov rax, [rdi+8]: only the address.
        let d = dec(0, &[0x48, 0x8b, 0x47, 0x08]);
        assert_eq!((d.addr_srcs, d.srcs.as_slice()), (1, &[7u8][..]));
        // addsd xmm0, [rsi]: rsi for the address, xmm0 for the add.
        let d = dec(0, &[0xf2, 0x0f, 0x58, 0x06]);
        assert_eq!((d.addr_srcs, d.srcs.as_slice()), (1, &[6u8, 32][..]));
        // add rax, rbx and lea rax, [rdi+8]: no memory access, no address registers.
        assert_eq!(dec(0, &[0x48, 0x01, 0xd8]).addr_srcs, 0);
        assert_eq!(dec(0, &[0x48, 0x8d, 0x47, 0x08]).addr_srcs, 0);
    }
}
