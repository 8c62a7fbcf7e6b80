//! Alias elimination: equations `a = b`, `a = -b`, `a + b = 0` between two
//! unknowns remove one of the two variables from the system.
//!
//! Connection-heavy models are mostly such equations (every `connect` of a
//! flange gives one per potential and, for two connectors, one per flow), so
//! this shrinks the systems the later algorithms see by a large factor. The
//! eliminated variable is kept in the results as `±` its representative.

use crate::flat::{ExprArena, ExprId, Node, StateSelect, VarId, Variable};

/// `var = (negated ? -1 : 1) * of`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Alias {
    pub var: VarId,
    pub of: VarId,
    pub negated: bool,
}

/// If `lhs = rhs` is an alias equation between unknowns, returns (a, b, negated)
/// with `a = ±b`.
pub fn alias_pair(
    arena: &ExprArena,
    lhs: ExprId,
    rhs: ExprId,
    unknown: &dyn Fn(VarId) -> bool,
) -> Option<(VarId, VarId, bool)> {
    let var = |e: ExprId| match arena.node(e) {
        Node::Var(v) if unknown(v) => Some((v, false)),
        Node::Neg(x) => match arena.node(x) {
            Node::Var(v) if unknown(v) => Some((v, true)),
            _ => None,
        },
        _ => None,
    };
    let zero = |e: ExprId| arena.is_const(e, 0.0);
    // a = ±b
    if let (Some((a, na)), Some((b, nb))) = (var(lhs), var(rhs)) {
        return (a != b).then_some((a, b, na != nb));
    }
    // a + b = 0, a - b = 0 (either side zero)
    let sum = if zero(rhs) {
        lhs
    } else if zero(lhs) {
        rhs
    } else {
        return None;
    };
    match arena.node(sum) {
        Node::Add(x, y) => {
            let ((a, na), (b, nb)) = (var(x)?, var(y)?);
            (a != b).then_some((a, b, na == nb))
        }
        Node::Sub(x, y) => {
            let ((a, na), (b, nb)) = (var(x)?, var(y)?);
            (a != b).then_some((a, b, na != nb))
        }
        _ => None,
    }
}

/// Union-find with signs: `find(v)` is (root, negated) with v = ±root.
pub struct AliasSets {
    parent: Vec<(VarId, bool)>,
}

impl AliasSets {
    pub fn new(n: usize) -> AliasSets {
        AliasSets {
            parent: (0..n as VarId).map(|v| (v, false)).collect(),
        }
    }

    pub fn find(&mut self, v: VarId) -> (VarId, bool) {
        let (p, s) = self.parent[v as usize];
        if p == v {
            return (v, false);
        }
        let (r, s2) = self.find(p);
        let out = (r, s ^ s2);
        self.parent[v as usize] = out;
        out
    }

    /// Records `a = ±b` keeping `keep` (one of the two roots) as representative.
    /// Returns false if they were already in one set.
    pub fn union(
        &mut self,
        a: VarId,
        b: VarId,
        negated: bool,
        prefer: &dyn Fn(VarId, VarId) -> bool,
    ) -> bool {
        let (ra, sa) = self.find(a);
        let (rb, sb) = self.find(b);
        if ra == rb {
            return false;
        }
        // a = sa*ra, b = sb*rb, a = neg*b  =>  ra = sa*neg*sb*rb
        let s = sa ^ negated ^ sb;
        if prefer(ra, rb) {
            self.parent[rb as usize] = (ra, s);
        } else {
            self.parent[ra as usize] = (rb, s);
        }
        true
    }
}

/// Whether `a` is the better representative of the two: a state candidate,
/// then a variable the user constrained (fixed start, stateSelect), then a
/// shorter (outer) name, then the one declared first.
pub fn better_representative(
    vars: &[Variable],
    has_der: &dyn Fn(VarId) -> bool,
    a: VarId,
    b: VarId,
) -> bool {
    let key = |v: VarId| {
        let x = &vars[v as usize];
        (
            has_der(v),
            x.fixed == Some(true),
            x.state_select != StateSelect::Default,
            std::cmp::Reverse(x.name.matches('.').count()),
            std::cmp::Reverse(v),
        )
    };
    key(a) > key(b)
}
