//! rmoc: a compiler and simulator for a Modelica-style acausal modelling
//! language, built for gear and contact dynamics.
//!
//! The pipeline, one module per stage (see `docs/architecture.md`):
//! syntax -> instantiate -> flat -> structure -> jit -> solve -> output.

pub mod diag;
pub mod syntax;
