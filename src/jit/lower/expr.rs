//! The core of [`Lowerer`](super::Lowerer): arena expressions to IR with
//! shared subexpressions, event relations read or evaluated by mode, calls
//! of user functions (skipped when their tangent arguments vanish).

use super::*;

/// Makes a function body an entry: relations start unfrozen, and it
/// returns success at its end.
pub(super) fn entry_frame(f: &mut Func) {
    f.body.insert(0, Stmt::Store(FREEZE, IrExpr::Const(0.0)));
    f.body.push(Stmt::Return(status::OK));
}

impl<'s> Lowerer<'s> {
    pub(super) fn new(sh: &'s Shared, name: &str) -> Lowerer<'s> {
        Lowerer {
            sh,
            name: name.to_string(),
            stmts: Vec::new(),
            n_locals: 0,
            memo: HashMap::default(),
            calls: HashMap::default(),
            checks: Vec::new(),
            check_base: 0,
            mixed_first: None,
            mixed_relations: Vec::new(),
            live_relations: false,
        }
    }

    /// A lowerer whose event relations are evaluated live (see
    /// `live_relations`).
    pub(super) fn with_live_relations(sh: &'s Shared, name: &str) -> Lowerer<'s> {
        Lowerer {
            live_relations: true,
            ..Lowerer::new(sh, name)
        }
    }

    pub(super) fn finish(self, l: &Layout) -> Func {
        let mut f = self.into_part(l);
        entry_frame(&mut f);
        f
    }

    /// The statements lowered so far, without an entry's first statement
    /// and return: one part of an entry, which [`entry_frame`] completes.
    pub(super) fn into_part(self, l: &Layout) -> Func {
        Func {
            name: self.name,
            frame_size: l.len,
            n_locals: self.n_locals,
            inputs: vec![],
            outputs: vec![],
            body: self.stmts,
        }
    }

    pub(super) fn local(&mut self) -> u32 {
        self.n_locals += 1;
        self.n_locals - 1
    }

    /// Lowers `body` into a separate statement list whose shared values do
    /// not escape (a loop body, a lazy branch).
    pub(super) fn scoped(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        let saved_stmts = std::mem::take(&mut self.stmts);
        let saved_memo = self.memo.clone();
        let saved_calls = self.calls.clone();
        f(self);
        self.memo = saved_memo;
        self.calls = saved_calls;
        std::mem::replace(&mut self.stmts, saved_stmts)
    }

    pub(super) fn expr(&mut self, a: &ExprArena, id: ExprId) -> IrExpr {
        // Another output of a call already made (the elements of an array
        // bound to one call: without this, each walked the call's
        // arguments again, quadratic in the array's size).
        if let Node::Call { call, .. } = a.node(id)
            && self.calls.contains_key(&call)
        {
            return self.expr_rec(a, id, &HashMap::default());
        }
        // Nodes used more than once below `id` are computed once into a local.
        let order = a.reachable(&[id]);
        let mut uses: HashMap<ExprId, u32> =
            HashMap::with_capacity_and_hasher(order.len(), Default::default());
        for &n in &order {
            for ch in a.children(n) {
                *uses.entry(ch).or_default() += 1;
            }
        }
        self.expr_rec(a, id, &uses)
    }

    pub(super) fn expr_rec(
        &mut self,
        a: &ExprArena,
        id: ExprId,
        uses: &HashMap<ExprId, u32>,
    ) -> IrExpr {
        if let Some(e) = self.memo.get(&id) {
            return e.clone();
        }
        let l = &self.sh.layout;
        let n = a.node(id);
        let e = match n {
            Node::Const(b) => return IrExpr::Const(f64::from_bits(b)),
            Node::Var(v) if self.sh.function_frame => return IrExpr::Load(v),
            Node::Var(v) if v >= TANGENT => return IrExpr::Load(l.tan(v - TANGENT)),
            Node::Var(v) => return IrExpr::Load(l.var(v)),
            Node::Pre(v) => return IrExpr::Load(l.pre(v)),
            Node::Time => return IrExpr::Load(TIME),
            Node::Initial => return IrExpr::Load(INITIAL),
            Node::Terminal => return IrExpr::Load(TERMINAL),
            Node::Der(v) => return IrExpr::Load(l.var(v)),
            Node::Sample(..) => {
                let k = self.sh.sample_index.get(&id).copied().unwrap_or(0);
                return IrExpr::Load(l.sample + k);
            }
            Node::Neg(x) => IrExpr::Un(Op1::Neg, Box::new(self.expr_rec(a, x, uses))),
            Node::Not(x) => IrExpr::Un(Op1::Not, Box::new(self.expr_rec(a, x, uses))),
            Node::Call1(f, x) => IrExpr::Un(Op1::F(f), Box::new(self.expr_rec(a, x, uses))),
            Node::Add(x, y) => self.bin(a, Op2::Add, x, y, uses),
            Node::Sub(x, y) => self.bin(a, Op2::Sub, x, y, uses),
            Node::Mul(x, y) => self.bin(a, Op2::Mul, x, y, uses),
            Node::Div(x, y) => self.bin(a, Op2::Div, x, y, uses),
            Node::Pow(x, y) => self.bin(a, Op2::Pow, x, y, uses),
            Node::And(x, y) => self.bin(a, Op2::And, x, y, uses),
            Node::Or(x, y) => self.bin(a, Op2::Or, x, y, uses),
            Node::Call2(f, x, y) => self.bin(a, Op2::F(f), x, y, uses),
            Node::Rel {
                op,
                lhs,
                rhs,
                event,
            } => {
                let live = self.bin(a, Op2::Rel(op), lhs, rhs, uses);
                match (event, self.sh.rel_index.get(&id)) {
                    (true, Some(&k)) if !self.live_relations => {
                        // Frozen between events, evaluated and stored at events.
                        let t = self.local();
                        let slot = l.rel + k;
                        let is_event = bin(
                            Op2::And,
                            bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
                            bin(
                                Op2::Rel(RelOp::Eq),
                                IrExpr::Load(FREEZE),
                                IrExpr::Const(0.0),
                            ),
                        );
                        self.stmts.push(Stmt::If(
                            is_event,
                            vec![Stmt::Set(t, live), Stmt::Store(slot, IrExpr::Local(t))],
                            vec![Stmt::Set(t, IrExpr::Load(slot))],
                        ));
                        self.memo.insert(id, IrExpr::Local(t));
                        return IrExpr::Local(t);
                    }
                    _ => live,
                }
            }
            Node::If(c, x, y) => {
                let cond = self.expr_rec(a, c, uses);
                if needs_lazy_branch(a, x) || needs_lazy_branch(a, y) {
                    // Lazy: only the taken branch runs (a function or an array
                    // index may be undefined, or costly, where its branch is not
                    // taken).
                    let t = self.local();
                    let then = self.scoped(|s| {
                        let v = s.expr_rec(a, x, uses);
                        s.stmts.push(Stmt::Set(t, v));
                    });
                    let els = self.scoped(|s| {
                        let v = s.expr_rec(a, y, uses);
                        s.stmts.push(Stmt::Set(t, v));
                    });
                    self.stmts.push(Stmt::If(cond, then, els));
                    self.memo.insert(id, IrExpr::Local(t));
                    return IrExpr::Local(t);
                }
                let xa = self.expr_rec(a, x, uses);
                let ya = self.expr_rec(a, y, uses);
                IrExpr::Select(Box::new(cond), Box::new(xa), Box::new(ya))
            }
            Node::Call { call, output } => {
                let outs = match self.calls.get(&call) {
                    Some(o) => o.clone(),
                    None => {
                        let site = a.calls[call as usize].clone();
                        let mut args: Vec<IrExpr> = site
                            .args
                            .iter()
                            .map(|&x| self.expr_rec(a, x, uses))
                            .collect();
                        let nout = self.sh_function_outputs(site.func);
                        let outs: Vec<u32> = (0..nout).map(|_| self.local()).collect();
                        let warm = self
                            .sh
                            .fn_warm
                            .get(site.func as usize)
                            .copied()
                            .unwrap_or(0);
                        if warm == 0 {
                            self.call_unless_tangents_vanish(site.func, args, &outs);
                        } else {
                            // The site's warm-start values in, and back
                            // out to its slots (zero in and dropped in a
                            // function body).
                            let slots = self
                                .sh
                                .warm_sites
                                .get(&call)
                                .copied()
                                .filter(|_| !self.sh.function_frame);
                            args.extend((0..warm).map(|i| match slots {
                                Some(s) => IrExpr::Load(s + i),
                                None => IrExpr::Const(0.0),
                            }));
                            let mut all = outs.clone();
                            all.extend((0..warm).map(|_| self.local()));
                            self.stmts.push(Stmt::Call {
                                func: site.func,
                                args,
                                outs: all.clone(),
                            });
                            if let Some(s) = slots {
                                for (i, &o) in all[outs.len()..].iter().enumerate() {
                                    self.stmts.push(Stmt::Store(s + i as u32, IrExpr::Local(o)));
                                }
                            }
                        }
                        self.calls.insert(call, outs.clone());
                        outs
                    }
                };
                return IrExpr::Local(outs[output as usize]);
            }
            Node::Elem { base, len, index } => IrExpr::LoadElem {
                base,
                len,
                index: Box::new(self.expr_rec(a, index, uses)),
            },
        };
        if uses.get(&id).copied().unwrap_or(0) > 1 {
            let t = self.local();
            self.stmts.push(Stmt::Set(t, e));
            self.memo.insert(id, IrExpr::Local(t));
            return IrExpr::Local(t);
        }
        e
    }

    /// Calls `func`; a derivative function whose tangent arguments are all
    /// zero (a colour's seeds that do not reach the call) is not called
    /// and its outputs are zero, since it is linear in them.
    pub(super) fn call_unless_tangents_vanish(
        &mut self,
        func: u32,
        mut args: Vec<IrExpr>,
        outs: &[u32],
    ) {
        let from = self.sh.tangent_args.get(func as usize).copied().flatten();
        let Some(from) = from.filter(|&k| k < args.len()) else {
            self.stmts.push(Stmt::Call {
                func,
                args,
                outs: outs.to_vec(),
            });
            return;
        };
        let zeros = |outs: &[u32]| -> Vec<Stmt> {
            outs.iter()
                .map(|&o| Stmt::Set(o, IrExpr::Const(0.0)))
                .collect()
        };
        let mut any: Option<IrExpr> = None;
        for arg in &mut args[from..] {
            if matches!(arg, IrExpr::Const(x) if *x == 0.0) {
                continue;
            }
            if !matches!(arg, IrExpr::Local(_) | IrExpr::Load(_) | IrExpr::Const(_)) {
                let t = self.local();
                self.stmts
                    .push(Stmt::Set(t, std::mem::replace(arg, IrExpr::Local(t))));
            }
            let nonzero = IrExpr::Bin(
                Op2::Rel(RelOp::Ne),
                Box::new(arg.clone()),
                Box::new(IrExpr::Const(0.0)),
            );
            any = Some(match any {
                None => nonzero,
                Some(a) => IrExpr::Bin(Op2::Or, Box::new(a), Box::new(nonzero)),
            });
        }
        let Some(any) = any else {
            self.stmts.extend(zeros(outs));
            return;
        };
        let call = Stmt::Call {
            func,
            args,
            outs: outs.to_vec(),
        };
        self.stmts.push(Stmt::If(any, vec![call], zeros(outs)));
    }

    pub(super) fn sh_function_outputs(&self, f: u32) -> usize {
        self.sh.fn_outputs.get(f as usize).copied().unwrap_or(1)
    }

    pub(super) fn bin(
        &mut self,
        a: &ExprArena,
        op: Op2,
        x: ExprId,
        y: ExprId,
        uses: &HashMap<ExprId, u32>,
    ) -> IrExpr {
        let xa = self.expr_rec(a, x, uses);
        let ya = self.expr_rec(a, y, uses);
        IrExpr::Bin(op, Box::new(xa), Box::new(ya))
    }
}
