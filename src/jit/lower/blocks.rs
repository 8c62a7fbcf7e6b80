//! Lowering of the BLT blocks: explicit assignments, scalar and torn
//! Newton iterations with their convergence tests and restarts, and mixed
//! systems iterated with their event relations.

use super::*;

/// Newton's convergence test for one variable: |dx| <= 1e-12 |x| + 1e-15 nominal.
pub(super) fn converged(slot: u32, dx: u32, nominal: f64, rel: f64) -> IrExpr {
    let tol = bin(
        Op2::Add,
        bin(Op2::Mul, IrExpr::Const(rel), abs(IrExpr::Load(slot))),
        IrExpr::Const(rel * 1e-3 * nominal),
    );
    bin(Op2::Rel(RelOp::Le), abs(IrExpr::Local(dx)), tol)
}

pub(super) fn nominal_of(c: &Causal, v: VarId) -> f64 {
    c.vars[v as usize]
        .nominal
        .and_then(|e| c.arena.as_const(e))
        .map(f64::abs)
        .filter(|x| *x > 0.0)
        .unwrap_or(1.0)
}

pub(super) const MAX_NEWTON: f64 = 50.0;

/// An event relation of a block: its stored value's slot, operator,
/// operands, and the relation itself.
pub(super) type BlockRelation = (u32, RelOp, ExprId, ExprId, ExprId);

/// Solves of a mixed system at one event before it is refused.
pub(super) const MAX_MIXED: f64 = 20.0;

impl Lowerer<'_> {
    pub(super) fn block(&mut self, c: &mut Causal, b: &Block, bi: u32) -> Result<(), String> {
        let (rels, given) = self.block_relations(c, b);
        if rels.is_empty() {
            return self.block_solve(c, b, bi);
        }
        // Relations on values computed before the block are evaluated
        // (in event mode) before it is solved with its relations frozen.
        let before = self.scoped(|s| {
            for &(slot, op, lhs, rhs, _) in &given {
                let live = bin(Op2::Rel(op), s.expr(&c.arena, lhs), s.expr(&c.arena, rhs));
                s.stmts.push(Stmt::Store(slot, live));
            }
        });
        if !before.is_empty() {
            self.stmts.push(Stmt::If(
                bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
                before,
                vec![],
            ));
        }
        // A mixed system: solve with the relations frozen, evaluate them
        // at the solution; again while one changed (in event mode only).
        let saved_stmts = std::mem::take(&mut self.stmts);
        let saved_memo = self.memo.clone();
        let saved_calls = self.calls.clone();
        self.stmts.push(Stmt::Store(FREEZE, IrExpr::Load(MODE)));
        let first = self.local();
        self.mixed_first = Some(first);
        self.mixed_relations = rels.iter().map(|r| r.4).collect();
        let solved = self.block_solve(c, b, bi);
        self.mixed_first = None;
        self.mixed_relations.clear();
        self.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(0.0)));
        self.stmts.push(Stmt::Set(first, IrExpr::Const(0.0)));
        let changed = self.local();
        self.stmts.push(Stmt::Set(changed, IrExpr::Const(0.0)));
        // Whether each relation flipped already at this evaluation: it does
        // not flip back in it. At a switching point a relation such as
        // `sa > tau0_max` holds by a hair, and the solution of the new mode
        // may land a hair (or, past a hysteresis, clearly) on the other
        // side; the next event iteration, with the left limits updated,
        // decides (the MSL's one-way clutch keeps sliding through
        // `pre(startForward) and sa > tau0`).
        let flipped: Vec<u32> = rels.iter().map(|_| self.local()).collect();
        let l = self.sh.layout.clone();
        let inner: &[(VarId, ExprId, usize)] = match b {
            Block::Torn { inner, .. } => inner,
            _ => &[],
        };
        // Relations that a Real equation of the block uses itself (not
        // through a Boolean): their flip alone needs another solve. (A
        // flip that changes no discrete unknown otherwise changes nothing:
        // a free clutch's `sa > 0` at sa = 1e-17.)
        let real_roots: Vec<ExprId> = match b {
            Block::Torn { residuals, .. } => inner
                .iter()
                .filter(|x| c.vars[x.0 as usize].ty == flat::ScalarType::Real)
                .map(|x| x.1)
                .chain(residuals.iter().map(|x| x.0))
                .collect(),
            Block::Implicit { residual, .. } => vec![*residual],
            Block::Explicit { .. } => Vec::new(),
        };
        let direct: std::collections::HashSet<ExprId> =
            c.arena.reachable(&real_roots).into_iter().collect();
        let update = self.scoped(|s| {
            // Values lowered inside the block read the frozen relations,
            // and so do relations nested in these operands.
            s.memo.clear();
            s.calls.clear();
            s.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(1.0)));
            for (&(slot, op, lhs, rhs, rel), &f) in rels.iter().zip(&flipped) {
                let live = bin(Op2::Rel(op), s.expr(&c.arena, lhs), s.expr(&c.arena, rhs));
                let t = s.local();
                s.stmts.push(Stmt::Set(t, live));
                let mut store = vec![
                    Stmt::Store(slot, IrExpr::Local(t)),
                    Stmt::Set(f, IrExpr::Const(1.0)),
                ];
                if direct.contains(&rel) {
                    store.insert(0, Stmt::Set(changed, IrExpr::Const(1.0)));
                }
                let may_flip = bin(Op2::Rel(RelOp::Eq), IrExpr::Local(f), IrExpr::Const(0.0));
                s.stmts.push(Stmt::If(
                    bin(
                        Op2::And,
                        bin(Op2::Rel(RelOp::Ne), IrExpr::Local(t), IrExpr::Load(slot)),
                        may_flip,
                    ),
                    store,
                    vec![],
                ));
            }
            // The discrete unknowns recomputed from the relations now
            // stored: one that differs from the value the solve used (the
            // first solve used left limits) needs another solve. (When
            // none differs and no relation flipped, the recomputed values
            // are the solve's own.)
            s.memo.clear();
            s.calls.clear();
            for &(u, e, _) in inner {
                let x = s.expr(&c.arena, e);
                let t = s.local();
                s.stmts.push(Stmt::Set(t, x));
                if c.vars[u as usize].ty != flat::ScalarType::Real {
                    s.stmts.push(Stmt::If(
                        bin(
                            Op2::Rel(RelOp::Ne),
                            IrExpr::Local(t),
                            IrExpr::Load(l.var(u)),
                        ),
                        vec![Stmt::Set(changed, IrExpr::Const(1.0))],
                        vec![],
                    ));
                }
                s.stmts.push(Stmt::Store(l.var(u), IrExpr::Local(t)));
            }
            s.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(0.0)));
        });
        self.stmts.push(Stmt::If(
            bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
            update,
            vec![],
        ));
        self.stmts.push(Stmt::If(
            bin(
                Op2::Rel(RelOp::Eq),
                IrExpr::Local(changed),
                IrExpr::Const(0.0),
            ),
            vec![Stmt::Break],
            vec![],
        ));
        let solves = self.local();
        self.stmts.push(Stmt::Set(
            solves,
            bin(Op2::Add, IrExpr::Local(solves), IrExpr::Const(1.0)),
        ));
        self.stmts.push(Stmt::If(
            bin(
                Op2::Rel(RelOp::Ge),
                IrExpr::Local(solves),
                IrExpr::Const(MAX_MIXED),
            ),
            vec![Stmt::Return(status::encode(status::MIXED, bi))],
            vec![],
        ));
        let body = std::mem::replace(&mut self.stmts, saved_stmts);
        self.memo = saved_memo;
        self.calls = saved_calls;
        solved?;
        self.stmts.push(Stmt::Set(solves, IrExpr::Const(0.0)));
        self.stmts.push(Stmt::Set(first, IrExpr::Load(MODE)));
        for &f in &flipped {
            self.stmts.push(Stmt::Set(f, IrExpr::Const(0.0)));
        }
        self.stmts.push(Stmt::Loop(body));
        Ok(())
    }

    /// The event relations of block `b`: those on its own unknowns, and
    /// the others.
    pub(super) fn block_relations(
        &self,
        c: &Causal,
        b: &Block,
    ) -> (Vec<BlockRelation>, Vec<BlockRelation>) {
        let roots: Vec<ExprId> = match b {
            Block::Explicit { .. } => return (Vec::new(), Vec::new()),
            Block::Implicit { residual, .. } => vec![*residual],
            Block::Torn {
                inner, residuals, ..
            } => inner
                .iter()
                .map(|x| x.1)
                .chain(residuals.iter().map(|x| x.0))
                .collect(),
        };
        let mut vars = b.vars();
        vars.sort_unstable();
        let l = &self.sh.layout;
        let (mut own, mut given) = (Vec::new(), Vec::new());
        for id in c.arena.reachable(&roots) {
            if let Node::Rel {
                op,
                lhs,
                rhs,
                event: true,
            } = c.arena.node(id)
                && let Some(&k) = self.sh.rel_index.get(&id)
            {
                let r = (l.rel + k, op, lhs, rhs, id);
                if c.arena
                    .vars_of(id)
                    .iter()
                    .any(|v| vars.binary_search(v).is_ok())
                {
                    own.push(r);
                } else {
                    given.push(r);
                }
            }
        }
        // Operands that may fail or cost where their branch is not taken (a
        // call, a run-time index) are not evaluated outside it: such a
        // block is solved as any other.
        let lazy = own
            .iter()
            .chain(&given)
            .any(|r| needs_lazy_branch(&c.arena, r.2) || needs_lazy_branch(&c.arena, r.3));
        if own.is_empty() || lazy {
            return (Vec::new(), Vec::new());
        }
        (own, given)
    }

    /// `x`, or for a discrete unknown of a mixed system in its first solve
    /// at an event, its left limit.
    pub(super) fn discrete_start(&self, discrete: bool, u: VarId, x: IrExpr) -> IrExpr {
        match self.mixed_first {
            Some(first) if discrete => IrExpr::Select(
                Box::new(bin(
                    Op2::Rel(RelOp::Ne),
                    IrExpr::Local(first),
                    IrExpr::Const(0.0),
                )),
                Box::new(IrExpr::Load(self.sh.layout.pre(u))),
                Box::new(x),
            ),
            _ => x,
        }
    }

    /// The code that solves block `b` for its variables.
    pub(super) fn block_solve(&mut self, c: &mut Causal, b: &Block, bi: u32) -> Result<(), String> {
        let l = self.sh.layout.clone();
        match b {
            Block::Explicit { var, value, .. } => {
                let e = self.expr(&c.arena, *value);
                self.stmts.push(Stmt::Store(l.var(*var), e));
            }
            Block::Implicit { var, residual, .. } => {
                let d = symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
                let nominal = nominal_of(c, *var);
                self.reset_if_not_finite(&[*var], c);
                let it = self.local();
                self.stmts.push(Stmt::Set(it, IrExpr::Const(0.0)));
                let arena = &c.arena;
                let body = self.scoped(|s| {
                    let r = s.expr(arena, *residual);
                    let j = s.expr(arena, d);
                    let dx = s.local();
                    s.stmts.push(Stmt::Set(dx, bin(Op2::Div, r, j)));
                    s.unstick(dx, nominal);
                    s.newton_tail(&[(l.var(*var), dx, nominal)], it, bi, None);
                });
                self.stmts.push(Stmt::Loop(body));
            }
            Block::Torn {
                tear,
                inner,
                residuals,
                linear,
            } => {
                let parts = torn_parts(c, tear, inner, residuals)?;
                let m = tear.len();
                // The discrete unknowns decided by the loop's own relations
                // (`startForward`, not `locked` which follows from them).
                let own: std::collections::HashSet<ExprId> =
                    self.mixed_relations.iter().copied().collect();
                let discrete: HashMap<VarId, bool> = inner
                    .iter()
                    .map(|&(u, e, _)| {
                        let decided = c.vars[u as usize].ty != flat::ScalarType::Real
                            && c.arena.reachable(&[e]).iter().any(|id| own.contains(id));
                        (u, decided)
                    })
                    .collect();
                let discrete = &discrete;
                let arena = &c.arena;
                let noms: Vec<f64> = tear.iter().map(|&t| nominal_of(c, t)).collect();
                let restart = if *linear {
                    None
                } else {
                    self.reset_if_not_finite(tear, c);
                    self.restart_from_starts(c, tear)
                };
                let it = self.local();
                self.stmts.push(Stmt::Set(it, IrExpr::Const(0.0)));
                let step = |s: &mut Self| {
                    for (u, e, _) in inner {
                        let x = s.expr(arena, *e);
                        let x = s.discrete_start(discrete[u], *u, x);
                        s.stmts.push(Stmt::Store(l.var(*u), x));
                    }
                    let r: Vec<u32> = residuals
                        .iter()
                        .map(|(e, _)| {
                            let x = s.expr(arena, *e);
                            let t = s.local();
                            s.stmts.push(Stmt::Set(t, x));
                            t
                        })
                        .collect();
                    let a = s.block_jacobian(arena, tear, inner, &parts);
                    let dx: Vec<u32> = (0..m).map(|_| s.local()).collect();
                    if m == 1 {
                        s.stmts.push(Stmt::Set(
                            dx[0],
                            bin(Op2::Div, IrExpr::Local(r[0]), IrExpr::Local(a[0])),
                        ));
                        if !*linear {
                            s.unstick(dx[0], noms[0]);
                        }
                    } else {
                        s.stmts.push(Stmt::Solve {
                            n: m as u32,
                            a,
                            b: r,
                            x: dx.clone(),
                            fail: status::encode(status::SINGULAR, bi),
                        });
                    }
                    dx
                };
                if *linear {
                    // One exact step from zero (a linear system does not need a
                    // guess, and a stale value could be NaN from a rejected
                    // step), then the inner assignments at the solution.
                    for &t in tear.iter() {
                        self.stmts.push(Stmt::Store(l.var(t), IrExpr::Const(0.0)));
                    }
                    let body = self.scoped(|s| {
                        let dx = step(s);
                        for (k, &t) in tear.iter().enumerate() {
                            s.stmts.push(Stmt::Store(
                                l.var(t),
                                bin(Op2::Sub, IrExpr::Load(l.var(t)), IrExpr::Local(dx[k])),
                            ));
                        }
                    });
                    self.stmts.extend(body);
                } else {
                    let body = self.scoped(|s| {
                        let dx = step(s);
                        let vars: Vec<(u32, u32, f64)> = tear
                            .iter()
                            .enumerate()
                            .map(|(k, &t)| (l.var(t), dx[k], noms[k]))
                            .collect();
                        s.newton_tail(&vars, it, bi, restart.as_ref());
                    });
                    self.stmts.push(Stmt::Loop(body));
                }
                let fin = self.scoped(|s| {
                    for (u, e, _) in inner {
                        let x = s.expr(arena, *e);
                        let x = s.discrete_start(discrete[u], *u, x);
                        s.stmts.push(Stmt::Store(l.var(*u), x));
                    }
                });
                self.stmts.extend(fin);
            }
        }
        Ok(())
    }

    /// A Newton guess left non-finite by a failed evaluation (at a rejected
    /// step) restarts from the variable's start value (or 0).
    pub(super) fn reset_if_not_finite(&mut self, vars: &[VarId], c: &Causal) {
        let l = self.sh.layout.clone();
        for &v in vars {
            let slot = l.var(v);
            let guess = c.vars[v as usize]
                .start
                .and_then(|e| c.arena.as_const(e))
                .unwrap_or(0.0);
            let x = IrExpr::Load(slot);
            let bad = bin(
                Op2::Or,
                bin(Op2::Rel(RelOp::Ne), x.clone(), x.clone()),
                bin(Op2::Rel(RelOp::Gt), abs(x), IrExpr::Const(1e300)),
            );
            self.stmts.push(Stmt::If(
                bad,
                vec![Stmt::Store(slot, IrExpr::Const(guess))],
                vec![],
            ));
        }
    }

    /// A scalar Newton step through a zero derivative (`y*y = c` from
    /// `y = 0`) is infinite; step off the stationary point by a thousandth of
    /// the nominal instead, and let the iteration limit catch a root that is
    /// not there.
    pub(super) fn unstick(&mut self, dx: u32, nominal: f64) {
        let d = IrExpr::Local(dx);
        let bad = bin(
            Op2::Or,
            bin(Op2::Rel(RelOp::Ne), d.clone(), d.clone()),
            bin(Op2::Rel(RelOp::Gt), abs(d), IrExpr::Const(1e300)),
        );
        self.stmts.push(Stmt::If(
            bad,
            vec![Stmt::Set(dx, IrExpr::Const(-1e-3 * nominal))],
            vec![],
        ));
    }

    /// Update `x -= dx` for each variable, then stop on convergence, fail on
    /// NaN, on overflow, or after too many iterations.
    pub(super) fn newton_tail(
        &mut self,
        vars: &[(u32, u32, f64)],
        it: u32,
        bi: u32,
        restart: Option<&(u32, Vec<Stmt>)>,
    ) {
        let mut all_conv: Option<IrExpr> = None;
        let mut bad: Option<IrExpr> = None;
        for &(slot, dx, nominal) in vars {
            self.stmts.push(Stmt::Store(
                slot,
                bin(Op2::Sub, IrExpr::Load(slot), IrExpr::Local(dx)),
            ));
            let conv = converged(slot, dx, nominal, 1e-12);
            all_conv = Some(match all_conv {
                None => conv,
                Some(a) => bin(Op2::And, a, conv),
            });
            // NaN fails `x == x`; an infinite iterate would pass the
            // convergence test (inf <= inf) and must not.
            let nan = bin(
                Op2::Or,
                bin(Op2::Rel(RelOp::Ne), IrExpr::Load(slot), IrExpr::Load(slot)),
                bin(
                    Op2::Rel(RelOp::Gt),
                    abs(IrExpr::Load(slot)),
                    IrExpr::Const(1e300),
                ),
            );
            bad = Some(match bad {
                None => nan,
                Some(b) => bin(Op2::Or, b, nan),
            });
        }
        // With a restart, a diverged iterate (NaN, overflow) or too many
        // iterations start the second attempt; without, or on it, they fail.
        let retry_or = |fail: Stmt| match restart {
            Some((attempt, resets)) => {
                let mut again = resets.clone();
                again.push(Stmt::Set(*attempt, IrExpr::Const(1.0)));
                again.push(Stmt::Set(it, IrExpr::Const(0.0)));
                Stmt::If(
                    bin(
                        Op2::Rel(RelOp::Eq),
                        IrExpr::Local(*attempt),
                        IrExpr::Const(0.0),
                    ),
                    again,
                    vec![fail],
                )
            }
            None => fail,
        };
        if let Some(b) = bad {
            self.stmts.push(Stmt::If(
                b,
                vec![retry_or(Stmt::Return(status::encode(status::NAN, bi)))],
                vec![],
            ));
        }
        if let Some(cv) = all_conv {
            self.stmts.push(Stmt::If(cv, vec![Stmt::Break], vec![]));
        }
        self.stmts.push(Stmt::Set(
            it,
            bin(Op2::Add, IrExpr::Local(it), IrExpr::Const(1.0)),
        ));
        // After many iterations accept a looser tolerance (round-off limits the
        // last digits), else fail.
        let mut loose: Option<IrExpr> = None;
        for &(slot, dx, nominal) in vars {
            let conv = converged(slot, dx, nominal, 1e-8);
            loose = Some(match loose {
                None => conv,
                Some(a) => bin(Op2::And, a, conv),
            });
        }
        let limit = bin(
            Op2::Rel(RelOp::Ge),
            IrExpr::Local(it),
            IrExpr::Const(MAX_NEWTON),
        );
        let fail = retry_or(Stmt::Return(status::encode(status::NEWTON, bi)));
        self.stmts.push(Stmt::If(
            limit,
            vec![Stmt::If(
                loose.unwrap_or(IrExpr::Const(0.0)),
                vec![Stmt::Break],
                vec![fail],
            )],
            vec![],
        ));
    }

    /// For a nonlinear loop: a local that counts its attempts (set to 0
    /// here) and the statements that put the start values into the tearing
    /// variables that have one given by parameters, for a second attempt
    /// when Newton's method fails from the previous values (a contact that
    /// jumped to the next tooth pair, back where it started). `None` when
    /// no tearing variable has such a start value.
    pub(super) fn restart_from_starts(
        &mut self,
        c: &Causal,
        tear: &[VarId],
    ) -> Option<(u32, Vec<Stmt>)> {
        let l = self.sh.layout.clone();
        let starts: Vec<(VarId, ExprId)> = tear
            .iter()
            .filter_map(|&v| {
                let e = c.vars[v as usize].start?;
                let by_parameters =
                    c.arena
                        .reachable(&[e])
                        .iter()
                        .all(|&n| match c.arena.node(n) {
                            Node::Var(u) => {
                                matches!(c.roles[u as usize], Role::Parameter | Role::Constant)
                            }
                            Node::Time => false,
                            _ => true,
                        });
                by_parameters.then_some((v, e))
            })
            .collect();
        if starts.is_empty() {
            return None;
        }
        let resets = self.scoped(|s| {
            for &(v, e) in &starts {
                let x = s.expr(&c.arena, e);
                s.stmts.push(Stmt::Store(l.var(v), x));
            }
        });
        let attempt = self.local();
        self.stmts.push(Stmt::Set(attempt, IrExpr::Const(0.0)));
        Some((attempt, resets))
    }
}
