//! User functions (and the derivative functions made from them) as IR:
//! statements, loops with their iteration guards, and the run-time checks
//! of their bodies.

use super::*;

/// User functions (and the derivative functions made from them) as IR, and
/// the run-time checks in their bodies.
pub(super) fn lower_functions(
    derivatives: &crate::symbolic::fndiff::Derivatives,
) -> (Vec<Func>, Vec<FunctionCheck>) {
    let fs = &derivatives.functions;
    let outs = fn_outputs(fs);
    let tangent_args = derivatives.tangent_args();
    let warm = fn_warm_counts(fs);
    let mut checks = Vec::new();
    let funcs = fs
        .iter()
        .map(|f| {
            let sh = Shared {
                layout: Layout::default(),
                rel_index: HashMap::default(),
                sample_index: HashMap::default(),
                fn_outputs: outs.clone(),
                tangent_args: tangent_args.clone(),
                fn_warm: warm.clone(),
                warm_sites: HashMap::default(),
                function_frame: true,
            };
            let mut lw = Lowerer::new(&sh, &f.name);
            lw.check_base = checks.len() as u32;
            for &(slot, e) in &f.init {
                let x = lw.statement_expr(&f.arena, e);
                lw.stmts.push(Stmt::Store(slot, x));
            }
            let body = lw.fn_statements(&f.arena, &f.body, f);
            lw.stmts.extend(body);
            lw.stmts.push(Stmt::Return(status::OK));
            checks.append(&mut lw.checks);
            Func {
                name: f.name.clone(),
                frame_size: f.slots.len() as u32,
                n_locals: lw.n_locals,
                // The warm-start variables come in after the inputs and go
                // out after the outputs: the caller keeps them.
                inputs: with_warm_start(&f.inputs, f),
                outputs: with_warm_start(&f.outputs, f),
                body: lw.stmts,
            }
        })
        .collect();
    (funcs, checks)
}

/// The slots of `ranges` and then of `f`'s warm-start variables.
fn with_warm_start(ranges: &[std::ops::Range<u32>], f: &flat::Function) -> Vec<u32> {
    ranges
        .iter()
        .chain(&f.warm_start)
        .flat_map(|r| r.clone())
        .collect()
}

/// Whether call `call`'s arguments read any of `slots`.
pub(super) fn call_reads(a: &ExprArena, call: u32, slots: &[u32]) -> bool {
    a.reachable(&a.calls[call as usize].args)
        .iter()
        .any(|&n| match a.node(n) {
            Node::Var(v) | Node::Pre(v) | Node::Der(v) => slots.contains(&v),
            Node::Elem { base, len, .. } => slots.iter().any(|&v| v >= base && v < base + len),
            _ => false,
        })
}

impl Lowerer<'_> {
    /// An expression of a function body: slots change between statements,
    /// so nothing is shared across statements.
    pub(super) fn statement_expr(&mut self, a: &ExprArena, e: ExprId) -> IrExpr {
        self.memo.clear();
        self.calls.clear();
        self.expr(a, e)
    }

    /// A new check of the function body; its status index.
    pub(super) fn add_check(
        &mut self,
        f: &flat::Function,
        span: crate::diag::Span,
        message: &str,
        label: &'static str,
        kind: crate::diag::DiagnosticKind,
    ) -> u32 {
        self.checks.push(FunctionCheck {
            function: f.name.clone(),
            span,
            message: message.to_string(),
            label,
            kind,
        });
        self.check_base + self.checks.len() as u32 - 1
    }

    pub(super) fn fn_statements(
        &mut self,
        a: &ExprArena,
        body: &[flat::FunctionStatement],
        f: &flat::Function,
    ) -> Vec<Stmt> {
        self.scoped(|s| {
            // The call whose outputs the last statements assigned, and the
            // slots stored since it ran: `(a, b) := f(x)` is one statement
            // per output, and f runs once while no slot its arguments read
            // has changed.
            let mut recent: Option<(u32, Vec<u32>)> = None;
            for st in body {
                if !matches!(st, flat::FunctionStatement::Assign { .. }) {
                    recent = None;
                }
                match st {
                    flat::FunctionStatement::Assign { slot, value } => {
                        let projection = match a.node(*value) {
                            Node::Call { call, output } => Some((call, output)),
                            _ => None,
                        };
                        let reused = match (projection, &recent) {
                            (Some((call, output)), Some((ran, stored)))
                                if call == *ran && !call_reads(a, call, stored) =>
                            {
                                s.calls
                                    .get(&call)
                                    .map(|outs| IrExpr::Local(outs[output as usize]))
                            }
                            _ => None,
                        };
                        let x = match reused {
                            Some(x) => x,
                            None => {
                                recent = projection.map(|(call, _)| (call, Vec::new()));
                                s.statement_expr(a, *value)
                            }
                        };
                        if let Some((_, stored)) = &mut recent {
                            stored.push(*slot);
                        }
                        s.stmts.push(Stmt::Store(*slot, x));
                    }
                    flat::FunctionStatement::AssignElem {
                        base,
                        len,
                        index,
                        value,
                    } => {
                        let i = s.statement_expr(a, *index);
                        let v = s.expr(a, *value);
                        s.stmts.push(Stmt::StoreElem {
                            base: *base,
                            len: *len,
                            index: i,
                            value: v,
                        });
                    }
                    flat::FunctionStatement::If { branches, else_ } => {
                        let mut tail = s.fn_statements(a, else_, f);
                        for (c, b) in branches.iter().rev() {
                            let cond = s.statement_expr(a, *c);
                            let then = s.fn_statements(a, b, f);
                            tail = vec![Stmt::If(cond, then, tail)];
                        }
                        s.stmts.extend(tail);
                    }
                    flat::FunctionStatement::While { cond, body, span } => {
                        let check = s.add_check(
                            f,
                            *span,
                            "",
                            "this condition stayed true",
                            crate::diag::DiagnosticKind::Limit,
                        );
                        let count = s.local();
                        s.stmts.push(Stmt::Set(count, IrExpr::Const(0.0)));
                        let inner = s.scoped(|t| {
                            let c = t.statement_expr(a, *cond);
                            t.stmts.push(Stmt::If(c, vec![], vec![Stmt::Break]));
                            t.stmts.push(Stmt::Set(
                                count,
                                bin(Op2::Add, IrExpr::Local(count), IrExpr::Const(1.0)),
                            ));
                            let runaway = bin(
                                Op2::Rel(RelOp::Gt),
                                IrExpr::Local(count),
                                IrExpr::Const(MAX_WHILE_ITERATIONS),
                            );
                            t.stmts.push(Stmt::If(
                                runaway,
                                vec![Stmt::Return(status::encode(status::LOOP, check))],
                                vec![],
                            ));
                            let b = t.fn_statements(a, body, f);
                            t.stmts.extend(b);
                        });
                        s.stmts.push(Stmt::Loop(inner));
                    }
                    flat::FunctionStatement::For {
                        slot,
                        start,
                        step,
                        stop,
                        body,
                    } => {
                        let x = s.statement_expr(a, *start);
                        s.stmts.push(Stmt::Store(*slot, x));
                        let st_l = s.local();
                        let x = s.statement_expr(a, *step);
                        s.stmts.push(Stmt::Set(st_l, x));
                        // A zero step would never end the loop.
                        let check = s.add_check(
                            f,
                            f.span,
                            "a for-loop range has step 0 (it would never end)",
                            "in this function",
                            crate::diag::DiagnosticKind::Evaluation,
                        );
                        let zero =
                            bin(Op2::Rel(RelOp::Eq), IrExpr::Local(st_l), IrExpr::Const(0.0));
                        s.stmts.push(Stmt::If(
                            zero,
                            vec![Stmt::Return(status::encode(status::FN_ASSERT, check))],
                            vec![],
                        ));
                        let sp_l = s.local();
                        let x = s.statement_expr(a, *stop);
                        s.stmts.push(Stmt::Set(sp_l, x));
                        let slot = *slot;
                        let inner = s.scoped(|t| {
                            // Stop when past the end in the direction of the step.
                            let up =
                                bin(Op2::Rel(RelOp::Gt), IrExpr::Local(st_l), IrExpr::Const(0.0));
                            let past_up =
                                bin(Op2::Rel(RelOp::Gt), IrExpr::Load(slot), IrExpr::Local(sp_l));
                            let past_down =
                                bin(Op2::Rel(RelOp::Lt), IrExpr::Load(slot), IrExpr::Local(sp_l));
                            let past = IrExpr::Select(
                                Box::new(up),
                                Box::new(past_up),
                                Box::new(past_down),
                            );
                            t.stmts.push(Stmt::If(past, vec![Stmt::Break], vec![]));
                            let b = t.fn_statements(a, body, f);
                            t.stmts.extend(b);
                            t.stmts.push(Stmt::Store(
                                slot,
                                bin(Op2::Add, IrExpr::Load(slot), IrExpr::Local(st_l)),
                            ));
                        });
                        s.stmts.push(Stmt::Loop(inner));
                    }
                    flat::FunctionStatement::Break => s.stmts.push(Stmt::Break),
                    flat::FunctionStatement::Return => s.stmts.push(Stmt::Return(status::OK)),
                    flat::FunctionStatement::Assert {
                        condition,
                        message,
                        span,
                    } => {
                        let check = s.add_check(
                            f,
                            *span,
                            message,
                            "this assert",
                            crate::diag::DiagnosticKind::Assertion,
                        );
                        let c = s.statement_expr(a, *condition);
                        s.stmts.push(Stmt::If(
                            c,
                            vec![],
                            vec![Stmt::Return(status::encode(status::FN_ASSERT, check))],
                        ));
                    }
                }
            }
        })
    }
}
