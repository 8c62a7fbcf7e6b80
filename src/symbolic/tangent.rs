//! The symbolic pieces of Jacobians: directional derivatives (what the
//! tangent code of a model evaluates, one column of df/dx per seed
//! direction) and partial derivatives of a block's equations with respect
//! to its unknowns (what its Newton matrix is made of).
//!
//! A service over the flat arena, as the rest of `symbolic`: the caller
//! says which variables have a tangent (the states and algebraic unknowns
//! of the causal model, and the run's top-level inputs) and where tangent
//! variables are numbered; lowering (`jit/lower/`) turns the expressions
//! formed here into code.

use super::fndiff::Derivatives;
use super::{DiffRules, differentiate, partial};
use crate::flat::{ExprArena, ExprId, Node, RewriteMemo, VarId};

/// Directional derivative rules: the derivative of variable `v` is the
/// tangent variable `tangent_base + v` when `v` has a tangent and is not
/// held (in `exclude`); other leaves have none (their derivative is 0).
struct Directional<'a> {
    exclude: &'a [VarId],
    has_tangent: &'a dyn Fn(VarId) -> bool,
    tangent_base: VarId,
    functions: &'a mut Derivatives,
}

impl DiffRules for Directional<'_> {
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String> {
        Ok(match node {
            Node::Var(v) if !self.exclude.contains(&v) && (self.has_tangent)(v) => {
                Some(arena.var(self.tangent_base + v))
            }
            _ => None,
        })
    }
    fn derivatives(&mut self) -> &mut Derivatives {
        self.functions
    }
}

/// Directional derivatives already formed, so that an equation met twice
/// (a block's derivatives are prepared before its tangent code is written)
/// is differentiated once.
#[derive(Default)]
pub struct TangentMemo {
    /// The derivative of every node differentiated with no variable held
    /// (explicit blocks): the same whichever equation it is part of, so
    /// shared subexpressions are differentiated once.
    held_none: RewriteMemo,
    /// The others, by expression and the key of the set of variables held
    /// (the block whose equation it is).
    held: rustc_hash::FxHashMap<(ExprId, u32), ExprId>,
}

/// Where directional derivatives are formed: the model's arena and
/// functions, which variables have tangents and how tangent variables are
/// numbered.
pub struct TangentSpace<'a> {
    pub arena: &'a mut ExprArena,
    pub functions: &'a mut Derivatives,
    pub has_tangent: &'a dyn Fn(VarId) -> bool,
    /// Tangent variable of `v`: `Var(tangent_base + v)`.
    pub tangent_base: VarId,
}

/// The directional derivative of `e` with the tangents of `exclude` (a
/// block's own unknowns) held at zero; `key` names the set `exclude` (the
/// block), under which the result is remembered in `memo`.
pub fn directional(
    space: TangentSpace,
    e: ExprId,
    exclude: &[VarId],
    key: u32,
    memo: &mut TangentMemo,
) -> Result<ExprId, String> {
    let mut rules = Directional {
        exclude,
        has_tangent: space.has_tangent,
        tangent_base: space.tangent_base,
        functions: space.functions,
    };
    if exclude.is_empty() {
        // The memo holds `e`'s derivative once it was formed.
        return differentiate(space.arena, e, &mut rules, &mut memo.held_none);
    }
    if let Some(&d) = memo.held.get(&(e, key)) {
        return Ok(d);
    }
    let mut fresh = RewriteMemo::default();
    let d = differentiate(space.arena, e, &mut rules, &mut fresh)?;
    memo.held.insert((e, key), d);
    Ok(d)
}

/// The partial derivatives of `e` with respect to each of `vars` it
/// mentions, leaving out those that are identically zero.
pub fn partials(
    arena: &mut ExprArena,
    functions: &mut Derivatives,
    e: ExprId,
    vars: &[VarId],
) -> Result<Vec<(VarId, ExprId)>, String> {
    let mentioned = arena.vars_of(e);
    let mut out = Vec::new();
    for &w in vars {
        if mentioned.binary_search(&w).is_ok() {
            let d = partial(arena, e, w, functions)?;
            if !arena.is_const(d, 0.0) {
                out.push((w, d));
            }
        }
    }
    Ok(out)
}
