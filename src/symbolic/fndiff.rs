//! Forward-mode differentiation of user functions.
//!
//! For a function `y = f(x)` with an algorithm section, the derivative
//! function `(dy) = f_der(x, dx)` runs the same statements and, before each
//! assignment `s := e`, the tangent assignment `ds := D(e)` (Griewank &
//! Walther, "Evaluating Derivatives", ch. 3: the tangent of a straight-line
//! program; control flow is kept and branches on the primal values). This is
//! what lets index reduction differentiate constraints written with
//! functions, such as the involute geometry of the contact library, and lets
//! Jacobians include them exactly.

use super::{DiffRules, differentiate};
use crate::flat::{CallSite, ExprArena, ExprId, Function, FunctionStatement, Node};
use std::collections::HashMap;

/// The model's functions and the derivative functions made so far.
#[derive(Clone, Debug, Default)]
pub struct Derivatives {
    pub functions: Vec<Function>,
    derived: HashMap<u32, u32>,
}

impl Derivatives {
    pub fn new(functions: Vec<Function>) -> Derivatives {
        Derivatives {
            functions,
            derived: HashMap::new(),
        }
    }

    /// The derivative of output `output` of call `call` (in `arena`) when
    /// its arguments change by `dargs`.
    pub fn call_derivative(
        &mut self,
        arena: &mut ExprArena,
        call: u32,
        output: u32,
        dargs: &[ExprId],
    ) -> Result<ExprId, String> {
        let site = arena.calls[call as usize].clone();
        let declared = self
            .functions
            .get(site.func as usize)
            .and_then(|f| f.derivative.clone());
        // A declaration that assumes an argument constant holds only where
        // its derivative is zero here (MLS 12.7.1, zeroDerivative).
        let declared = declared.filter(|d| {
            (dargs.iter().zip(&d.assumed_zero)).all(|(&x, &zero)| !zero || arena.is_const(x, 0.0))
        });
        if let Some(d) = declared {
            // The declared derivative: the arguments, then the derivatives
            // of those it differentiates.
            let mut args = site.args.clone();
            args.extend(
                (dargs.iter().zip(&d.differentiated))
                    .filter(|(_, on)| **on)
                    .map(|(&x, _)| x),
            );
            let c = arena.call_site(CallSite {
                func: d.function,
                args,
            });
            return Ok(arena.intern(Node::Call { call: c, output }));
        }
        let fd = self.derivative_function(site.func)?;
        let mut args = site.args.clone();
        args.extend_from_slice(dargs);
        let c = arena.call_site(CallSite { func: fd, args });
        Ok(arena.intern(Node::Call { call: c, output }))
    }

    /// For each function, where the tangent arguments of its scalarized
    /// arguments start if it is a derivative function made here (its
    /// inputs are the original's, then their tangents: the second half),
    /// else `None`. Such a function is linear in its tangents, so all of
    /// them zero make all its outputs zero.
    pub fn tangent_args(&self) -> Vec<Option<usize>> {
        let mut from = vec![None; self.functions.len()];
        for &d in self.derived.values() {
            if let Some(f) = self.functions.get(d as usize) {
                let scalars: usize = f.inputs.iter().map(|r| r.len()).sum();
                from[d as usize] = Some(scalars / 2);
            }
        }
        from
    }

    /// The index of `f_der`, creating it on first use.
    pub fn derivative_function(&mut self, f: u32) -> Result<u32, String> {
        if let Some(&d) = self.derived.get(&f) {
            return Ok(d);
        }
        let func = self
            .functions
            .get(f as usize)
            .cloned()
            .ok_or_else(|| format!("no function {f}"))?;
        let n = func.slots.len() as u32;
        let mut arena = func.arena.clone();
        let mut memo = crate::flat::RewriteMemo::default();
        let mut tangent =
            |this: &mut Derivatives, arena: &mut ExprArena, e: ExprId| -> Result<ExprId, String> {
                let mut rules = Tangent { n, derivs: this };
                differentiate(arena, e, &mut rules, &mut memo)
            };
        let mut init = Vec::new();
        for &(s, e) in &func.init {
            init.push((s, e));
            let d = tangent(self, &mut arena, e)?;
            init.push((n + s, d));
        }
        let body = self.tangent_body(&func.body, n, &mut arena, &mut tangent)?;
        let mut slots = func.slots.clone();
        slots.extend(func.slots.iter().map(|s| format!("$d.{s}")));
        let mut inputs = func.inputs.clone();
        inputs.extend(func.inputs.iter().map(|r| r.start + n..r.end + n));
        let outputs = func
            .outputs
            .iter()
            .map(|r| r.start + n..r.end + n)
            .collect();
        let id = self.functions.len() as u32;
        self.functions.push(Function {
            name: format!("{}_der", func.name),
            slots,
            inputs,
            outputs,
            arena,
            init,
            body,
            span: func.span,
            derivative: None,
            warm_start: Vec::new(),
            eval_orders: Default::default(),
        });
        self.derived.insert(f, id);
        Ok(id)
    }

    #[allow(clippy::type_complexity)]
    /// The tangent program of `body`; the tangent of slot `s` is slot `s + n`.
    fn tangent_body(
        &mut self,
        body: &[FunctionStatement],
        n: u32,
        arena: &mut ExprArena,
        tangent: &mut dyn FnMut(&mut Derivatives, &mut ExprArena, ExprId) -> Result<ExprId, String>,
    ) -> Result<Vec<FunctionStatement>, String> {
        let mut out = Vec::new();
        for s in body {
            match s {
                FunctionStatement::Assign { slot, value } => {
                    let d = tangent(self, arena, *value)?;
                    out.push(FunctionStatement::Assign {
                        slot: *slot + n,
                        value: d,
                    });
                    out.push(s.clone());
                }
                FunctionStatement::AssignElem {
                    base,
                    len,
                    index,
                    value,
                } => {
                    let d = tangent(self, arena, *value)?;
                    out.push(FunctionStatement::AssignElem {
                        base: *base + n,
                        len: *len,
                        index: *index,
                        value: d,
                    });
                    out.push(s.clone());
                }
                FunctionStatement::If { branches, else_ } => {
                    let mut nb = Vec::new();
                    for (c, b) in branches {
                        nb.push((*c, self.tangent_body(b, n, arena, tangent)?));
                    }
                    let ne = self.tangent_body(else_, n, arena, tangent)?;
                    out.push(FunctionStatement::If {
                        branches: nb,
                        else_: ne,
                    });
                }
                FunctionStatement::While { cond, body, span } => {
                    let nb = self.tangent_body(body, n, arena, tangent)?;
                    out.push(FunctionStatement::While {
                        cond: *cond,
                        body: nb,
                        span: *span,
                    });
                }
                FunctionStatement::For {
                    slot,
                    start,
                    step,
                    stop,
                    body,
                } => {
                    let nb = self.tangent_body(body, n, arena, tangent)?;
                    out.push(FunctionStatement::For {
                        slot: *slot,
                        start: *start,
                        step: *step,
                        stop: *stop,
                        body: nb,
                    });
                }
                FunctionStatement::Break
                | FunctionStatement::Return
                | FunctionStatement::Assert { .. } => out.push(s.clone()),
            }
        }
        Ok(out)
    }
}

struct Tangent<'a> {
    n: u32,
    derivs: &'a mut Derivatives,
}

impl DiffRules for Tangent<'_> {
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String> {
        Ok(match node {
            Node::Var(s) => Some(arena.var(s + self.n)),
            Node::Elem { base, len, index } => Some(arena.intern(Node::Elem {
                base: base + self.n,
                len,
                index,
            })),
            _ => None,
        })
    }
    fn derivatives(&mut self) -> &mut crate::symbolic::fndiff::Derivatives {
        self.derivs
    }
}
