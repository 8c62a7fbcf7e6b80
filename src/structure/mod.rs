//! Structural analysis: balance, matching, index reduction, BLT, tearing.

pub mod balance;
pub mod matching;
