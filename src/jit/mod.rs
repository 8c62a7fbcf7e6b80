//! Code generation: the causal model lowered to a small IR, run by a
//! reference interpreter or compiled to machine code by cranelift.

pub mod codegen;
pub mod frame;
pub mod interp;
pub mod ir;
pub mod lower;
pub mod reroll;
