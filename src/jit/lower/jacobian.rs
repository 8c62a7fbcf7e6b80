//! Jacobians as code: the derivatives each block needs are formed once
//! (`prepare_partials`, `prepare_tangent`, through `symbolic::tangent`), then written as
//! IR: a block's Newton matrix (`block_jacobian`) and the tangent code, one
//! column of df/dx per seed direction (`block_tangent`).

use super::*;

/// The partial derivatives of a block's Newton matrix (an implicit
/// block's residual by its unknown, a torn block's parts), formed into the
/// arena before lowering.
pub(super) fn prepare_partials(c: &mut Causal, b: &Block) -> Result<(), String> {
    match b {
        Block::Explicit { .. } => {}
        Block::Implicit { var, residual, .. } => {
            symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
        }
        Block::Torn {
            tear,
            inner,
            residuals,
            ..
        } => {
            torn_parts(c, tear, inner, residuals)?;
        }
    }
    Ok(())
}

/// The directional derivatives of a block's equations for its tangent
/// code (with the block's own unknowns held), remembered in `tangents`.
pub(super) fn prepare_tangent(
    c: &mut Causal,
    b: &Block,
    bi: u32,
    tangents: &mut TangentMemo,
) -> Result<(), String> {
    match b {
        Block::Explicit { value, .. } => {
            directional(c, *value, &[], bi, tangents)?;
        }
        Block::Implicit { var, residual, .. } => {
            directional(c, *residual, &[*var], bi, tangents)?;
        }
        Block::Torn {
            tear,
            inner,
            residuals,
            ..
        } => {
            let block: Vec<VarId> = tear
                .iter()
                .copied()
                .chain(inner.iter().map(|x| x.0))
                .collect();
            for (_, e, _) in inner {
                directional(c, *e, &block, bi, tangents)?;
            }
            for (e, _) in residuals {
                directional(c, *e, &block, bi, tangents)?;
            }
        }
    }
    Ok(())
}

/// Precomputed symbolic pieces of a torn block.
pub(super) struct TornParts {
    /// For each inner assignment: partials w.r.t. earlier block variables.
    inner_partials: Vec<Vec<(VarId, ExprId)>>,
    /// For each residual: partials w.r.t. all block variables.
    res_partials: Vec<Vec<(VarId, ExprId)>>,
}

pub(super) fn torn_parts(
    c: &mut Causal,
    tear: &[VarId],
    inner: &[(VarId, ExprId, usize)],
    residuals: &[(ExprId, usize)],
) -> Result<TornParts, String> {
    let mut block: Vec<VarId> = tear.to_vec();
    let mut inner_partials = Vec::new();
    for (u, e, _) in inner {
        inner_partials.push(partials(c, *e, &block)?);
        block.push(*u);
    }
    let mut res_partials = Vec::new();
    for (r, _) in residuals {
        res_partials.push(partials(c, *r, &block)?);
    }
    Ok(TornParts {
        inner_partials,
        res_partials,
    })
}

impl Lowerer<'_> {
    /// The tangent of a torn block's equation by the chain rule: its
    /// partials with respect to the block's variables times their tangents
    /// in `tang` (0 when absent), plus `own`, its directional derivative
    /// with those variables held (none in the block's Jacobian, whose
    /// seeds are the tearing variables alone).
    pub(super) fn chain_sum(
        &mut self,
        a: &ExprArena,
        partials: &[(VarId, ExprId)],
        tang: &HashMap<VarId, IrExpr>,
        own: Option<ExprId>,
    ) -> IrExpr {
        let mut terms: Vec<(IrExpr, IrExpr)> = partials
            .iter()
            .map(|&(w, d)| {
                (
                    self.expr(a, d),
                    tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                )
            })
            .collect();
        if let Some(own) = own {
            terms.push((self.expr(a, own), IrExpr::Const(1.0)));
        }
        combine(terms)
    }

    /// The total derivative of the residuals with respect to the tearing
    /// variables, through the inner assignments (forward mode, one tearing
    /// variable at a time). Returns the m x m matrix, row-major, in locals.
    pub(super) fn block_jacobian(
        &mut self,
        a: &ExprArena,
        tear: &[VarId],
        inner: &[(VarId, ExprId, usize)],
        parts: &TornParts,
    ) -> Vec<u32> {
        let m = tear.len();
        let mut jac = vec![0u32; m * m];
        for j in 0..m {
            let mut tang: HashMap<VarId, IrExpr> = HashMap::default();
            for (k, &t) in tear.iter().enumerate() {
                tang.insert(t, IrExpr::Const(if k == j { 1.0 } else { 0.0 }));
            }
            for (k, (u, _, _)) in inner.iter().enumerate() {
                let e = self.chain_sum(a, &parts.inner_partials[k], &tang, None);
                let t = self.local();
                self.stmts.push(Stmt::Set(t, e));
                tang.insert(*u, IrExpr::Local(t));
            }
            for i in 0..m {
                let e = self.chain_sum(a, &parts.res_partials[i], &tang, None);
                let t = self.local();
                self.stmts.push(Stmt::Set(t, e));
                jac[i * m + j] = t;
            }
        }
        jac
    }

    /// Tangent code of one block: the directional derivative of its
    /// variables given the tangents of everything computed before it.
    pub(super) fn block_tangent(
        &mut self,
        c: &mut Causal,
        b: &Block,
        bi: u32,
        tangents: &mut TangentMemo,
    ) -> Result<(), String> {
        let l = self.sh.layout.clone();
        match b {
            Block::Explicit { var, value, .. } => {
                let d = directional(c, *value, &[], bi, tangents)?;
                let e = self.expr(&c.arena, d);
                self.stmts.push(Stmt::Store(l.tan(*var), e));
            }
            Block::Implicit { var, residual, .. } => {
                let dout = directional(c, *residual, &[*var], bi, tangents)?;
                let dr = symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
                let q = c.arena.div(dout, dr);
                let neg = c.arena.neg(q);
                let e = self.expr(&c.arena, neg);
                self.stmts.push(Stmt::Store(l.tan(*var), e));
            }
            Block::Torn {
                tear,
                inner,
                residuals,
                ..
            } => {
                let block: Vec<VarId> = tear
                    .iter()
                    .copied()
                    .chain(inner.iter().map(|x| x.0))
                    .collect();
                let parts = torn_parts(c, tear, inner, residuals)?;
                let inner_out: Vec<ExprId> = inner
                    .iter()
                    .map(|(_, e, _)| directional(c, *e, &block, bi, tangents))
                    .collect::<Result<_, _>>()?;
                let res_out: Vec<ExprId> = residuals
                    .iter()
                    .map(|(e, _)| directional(c, *e, &block, bi, tangents))
                    .collect::<Result<_, _>>()?;
                let a = &c.arena;
                let m = tear.len();
                // Tangents with the tearing variables held: the outside's effect.
                let mut tang: HashMap<VarId, IrExpr> =
                    tear.iter().map(|&t| (t, IrExpr::Const(0.0))).collect();
                for (k, (u, _, _)) in inner.iter().enumerate() {
                    let e = self.chain_sum(a, &parts.inner_partials[k], &tang, Some(inner_out[k]));
                    let t = self.local();
                    self.stmts.push(Stmt::Set(t, e));
                    tang.insert(*u, IrExpr::Local(t));
                }
                let r0: Vec<u32> = (0..m)
                    .map(|i| {
                        let e = self.chain_sum(a, &parts.res_partials[i], &tang, Some(res_out[i]));
                        let t = self.local();
                        self.stmts
                            .push(Stmt::Set(t, bin(Op2::Sub, IrExpr::Const(0.0), e)));
                        t
                    })
                    .collect();
                let jac = self.block_jacobian(a, tear, inner, &parts);
                let dt: Vec<u32> = (0..m).map(|_| self.local()).collect();
                if m == 1 {
                    self.stmts.push(Stmt::Set(
                        dt[0],
                        bin(Op2::Div, IrExpr::Local(r0[0]), IrExpr::Local(jac[0])),
                    ));
                } else {
                    self.stmts.push(Stmt::Solve {
                        n: m as u32,
                        a: jac,
                        b: r0,
                        x: dt.clone(),
                        fail: status::encode(status::SINGULAR, bi),
                    });
                }
                let mut tang: HashMap<VarId, IrExpr> = HashMap::default();
                for (k, &t) in tear.iter().enumerate() {
                    self.stmts.push(Stmt::Store(l.tan(t), IrExpr::Local(dt[k])));
                    tang.insert(t, IrExpr::Local(dt[k]));
                }
                for (k, (u, _, _)) in inner.iter().enumerate() {
                    let e = self.chain_sum(a, &parts.inner_partials[k], &tang, Some(inner_out[k]));
                    let t = self.local();
                    self.stmts.push(Stmt::Set(t, e));
                    self.stmts.push(Stmt::Store(l.tan(*u), IrExpr::Local(t)));
                    tang.insert(*u, IrExpr::Local(t));
                }
            }
        }
        Ok(())
    }
}
