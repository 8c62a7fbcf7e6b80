//! Numeric evaluation of flat expressions and user functions, in f64.
//!
//! Used where a value is needed before code generation: parameter values,
//! start values, and the Jacobian entries that guide dummy-derivative state
//! selection. (The simulator evaluates the JIT-compiled code instead.)

use crate::flat::{ExprArena, ExprId, Function, FunctionStatement, Node};

/// Values for the leaves of an expression.
pub struct LeafValues<'a> {
    /// Indexed by `VarId` (in a function arena: by slot).
    pub values: &'a [f64],
    /// `pre(v)` values; `values` when absent.
    pub pre: Option<&'a [f64]>,
    pub time: f64,
    pub functions: &'a [Function],
    pub initial: bool,
    /// Where a caller that evaluates many expressions of one arena keeps
    /// the calls made (see [`CallMemo`]); `None` runs every call.
    pub calls: Option<&'a CallMemo>,
}

/// The last call of each call site of one arena, for a caller that
/// evaluates many expressions of it (the start point of a model): a call's
/// outputs are read by as many nodes as it has scalar outputs (`(g, qx, qy)
/// = curveCircles(...)` for a hundred circles is 301), and each ran the
/// body again. Functions are pure, so equal arguments give equal outputs.
/// A memo serves one arena and its functions: the caller makes one for
/// the evaluations it groups and drops it with them.
#[derive(Default)]
pub struct CallMemo(std::cell::RefCell<rustc_hash::FxHashMap<u32, LastCall>>);

/// A call site's last arguments and outputs.
type LastCall = (Vec<f64>, Vec<f64>);

impl CallMemo {
    /// Output `output` of call site `call`'s last call, if it was made.
    pub fn last_output(&self, call: u32, output: usize) -> Option<f64> {
        self.0
            .borrow()
            .get(&call)
            .and_then(|(_, outs)| outs.get(output).copied())
    }
}

/// Evaluates `e`; relations and conditions take their mathematical values.
pub fn eval(arena: &ExprArena, e: ExprId, env: &LeafValues) -> Result<f64, String> {
    // `reachable` is sorted by id and children come before parents, so one
    // pass fills the values and a child's value is found by binary search.
    eval_in_order(arena, &arena.reachable(&[e]), env)
}

/// Evaluates the last of `ids`, an expression's `reachable` nodes.
fn eval_in_order(arena: &ExprArena, ids: &[ExprId], env: &LeafValues) -> Result<f64, String> {
    let mut values = Vec::with_capacity(ids.len());
    for &id in ids {
        let v = eval_node(
            arena,
            id,
            env,
            &Memo {
                ids,
                values: &values,
            },
        )?;
        values.push(v);
    }
    Ok(values.last().copied().unwrap_or(f64::NAN))
}

/// Evaluation with only variable values (tests, constant folding).
pub fn eval_simple(arena: &ExprArena, e: ExprId, values: &[f64]) -> f64 {
    let env = LeafValues {
        values,
        pre: None,
        time: 0.0,
        functions: &[],
        initial: false,
        calls: None,
    };
    eval(arena, e, &env).unwrap_or(f64::NAN)
}

/// Values of the nodes evaluated so far, parallel to the sorted `ids`.
struct Memo<'a> {
    ids: &'a [ExprId],
    values: &'a [f64],
}

impl Memo<'_> {
    fn get(&self, x: ExprId) -> f64 {
        match self.ids.binary_search(&x) {
            Ok(k) => self.values.get(k).copied().unwrap_or(f64::NAN),
            Err(_) => f64::NAN,
        }
    }
}

fn b(x: bool) -> f64 {
    if x { 1.0 } else { 0.0 }
}

fn eval_node(arena: &ExprArena, id: ExprId, env: &LeafValues, m: &Memo) -> Result<f64, String> {
    let g = |x: ExprId| m.get(x);
    let value = |v: u32| env.values.get(v as usize).copied().unwrap_or(0.0);
    Ok(match arena.node(id) {
        Node::Const(bits) => f64::from_bits(bits),
        Node::Var(v) => value(v),
        Node::Der(_) => 0.0,
        Node::Pre(v) => env
            .pre
            .and_then(|p| p.get(v as usize).copied())
            .unwrap_or(value(v)),
        Node::Time => env.time,
        Node::Neg(a) => -g(a),
        Node::Add(a, c) => g(a) + g(c),
        Node::Sub(a, c) => g(a) - g(c),
        Node::Mul(a, c) => g(a) * g(c),
        Node::Div(a, c) => g(a) / g(c),
        Node::Pow(a, c) => crate::flat::expr::pow(g(a), g(c)),
        Node::Not(a) => b(g(a) == 0.0),
        Node::And(a, c) => b(g(a) != 0.0 && g(c) != 0.0),
        Node::Or(a, c) => b(g(a) != 0.0 || g(c) != 0.0),
        Node::Rel { op, lhs, rhs, .. } => b(op.apply(g(lhs), g(rhs))),
        Node::If(c, a, e) => {
            if g(c) != 0.0 {
                g(a)
            } else {
                g(e)
            }
        }
        Node::Call1(f, a) => f.apply(g(a)),
        Node::Call2(f, a, c) => f.apply(g(a), g(c)),
        Node::Initial => b(env.initial),
        Node::Terminal => 0.0,
        Node::Sample(..) => 0.0,
        Node::Elem { base, len, index } => {
            let i = g(index);
            if i < 1.0 || i > len as f64 || i.fract() != 0.0 {
                return Err(format!("array index {i} out of bounds 1..{len}"));
            }
            value(base + i as u32 - 1)
        }
        Node::Call { call, output } => {
            let site = &arena.calls[call as usize];
            let args: Vec<f64> = site.args.iter().map(|&a| g(a)).collect();
            call_outputs(env, call, site.func, args, output as usize)?
        }
    })
}

/// How a function statement ended: the next one runs, or a loop or the
/// function is left.
enum StatementCompletion {
    Normal,
    Break,
    Return,
}

/// Output `output` of call site `call` (function `f`) on `args`, from the
/// site's last call in `env`'s memo when the arguments are the same.
fn call_outputs(
    env: &LeafValues,
    call: u32,
    f: u32,
    args: Vec<f64>,
    output: usize,
) -> Result<f64, String> {
    let out_of = |outs: &[f64]| {
        outs.get(output)
            .copied()
            .ok_or_else(|| format!("function {f} has no output {output}"))
    };
    let Some(memo) = env.calls else {
        return out_of(&call_function(env.functions, f, &args)?);
    };
    if let Some((a, outs)) = memo.0.borrow().get(&call)
        && a.len() == args.len()
        && a.iter().zip(&args).all(|(x, y)| x.to_bits() == y.to_bits())
    {
        return out_of(outs);
    }
    let outs = call_function(env.functions, f, &args)?;
    let x = out_of(&outs)?;
    memo.0.borrow_mut().insert(call, (args, outs));
    Ok(x)
}

/// Runs user function `f` on scalarized arguments; returns its scalarized outputs.
pub fn call_function(functions: &[Function], f: u32, args: &[f64]) -> Result<Vec<f64>, String> {
    let func = functions
        .get(f as usize)
        .ok_or_else(|| format!("no function {f}"))?;
    let mut slots = vec![0.0; func.slots.len()];
    let mut k = 0;
    for r in &func.inputs {
        for s in r.clone() {
            slots[s as usize] = *args.get(k).ok_or("too few arguments")?;
            k += 1;
        }
    }
    // The same limit as compiled code (`flat::MAX_WHILE_ITERATIONS`), counted
    // over all loops of one call: a loop that runs longer is almost surely runaway.
    let mut frame = CallState {
        budget: crate::flat::MAX_WHILE_ITERATIONS as u64,
    };
    for &(s, e) in &func.init {
        slots[s as usize] = eval_in(func, functions, e, &slots)?;
    }
    exec(func, functions, &func.body, &mut slots, &mut frame)?;
    Ok(func
        .outputs
        .iter()
        .flat_map(|r| r.clone())
        .map(|s| slots[s as usize])
        .collect())
}

/// The state of one function call beside its slots.
struct CallState {
    /// Loop iterations left.
    budget: u64,
}

fn eval_in(
    func: &Function,
    functions: &[Function],
    e: ExprId,
    slots: &[f64],
) -> Result<f64, String> {
    let env = LeafValues {
        values: slots,
        pre: None,
        time: 0.0,
        functions,
        initial: false,
        calls: None,
    };
    eval_in_order(&func.arena, &func.eval_orders.get(&func.arena, e), &env)
}

fn exec(
    func: &Function,
    fns: &[Function],
    body: &[FunctionStatement],
    slots: &mut Vec<f64>,
    frame: &mut CallState,
) -> Result<StatementCompletion, String> {
    for s in body {
        match s {
            FunctionStatement::Assign { slot, value } => {
                slots[*slot as usize] = eval_in(func, fns, *value, slots)?;
            }
            FunctionStatement::AssignElem {
                base,
                len,
                index,
                value,
            } => {
                let i = eval_in(func, fns, *index, slots)?;
                if i < 1.0 || i > *len as f64 || i.fract() != 0.0 {
                    return Err(format!(
                        "array index {i} out of bounds 1..{len} in `{}`",
                        func.name
                    ));
                }
                let v = eval_in(func, fns, *value, slots)?;
                slots[(*base + i as u32 - 1) as usize] = v;
            }
            FunctionStatement::If { branches, else_ } => {
                let mut taken = None;
                for (c, b) in branches {
                    if eval_in(func, fns, *c, slots)? != 0.0 {
                        taken = Some(b);
                        break;
                    }
                }
                match exec(
                    func,
                    fns,
                    taken.map(|b| b.as_slice()).unwrap_or(else_),
                    slots,
                    frame,
                )? {
                    StatementCompletion::Normal => {}
                    other => return Ok(other),
                }
            }
            FunctionStatement::While { cond, body, .. } => {
                while eval_in(func, fns, *cond, slots)? != 0.0 {
                    frame.budget = frame.budget.checked_sub(1).ok_or_else(|| {
                        format!(
                            "`{}`: while loop still running after {} iterations",
                            func.name,
                            crate::flat::MAX_WHILE_ITERATIONS
                        )
                    })?;
                    match exec(func, fns, body, slots, frame)? {
                        StatementCompletion::Normal => {}
                        StatementCompletion::Break => break,
                        StatementCompletion::Return => return Ok(StatementCompletion::Return),
                    }
                }
            }
            FunctionStatement::For {
                slot,
                start,
                step,
                stop,
                body,
            } => {
                let a = eval_in(func, fns, *start, slots)?;
                let st = eval_in(func, fns, *step, slots)?;
                let z = eval_in(func, fns, *stop, slots)?;
                if st == 0.0 {
                    return Err(format!("`{}`: for-loop step is zero", func.name));
                }
                let mut i = a;
                while (st > 0.0 && i <= z) || (st < 0.0 && i >= z) {
                    frame.budget = frame
                        .budget
                        .checked_sub(1)
                        .ok_or_else(|| format!("`{}`: for loop too long", func.name))?;
                    slots[*slot as usize] = i;
                    match exec(func, fns, body, slots, frame)? {
                        StatementCompletion::Normal => {}
                        StatementCompletion::Break => break,
                        StatementCompletion::Return => return Ok(StatementCompletion::Return),
                    }
                    i += st;
                }
            }
            FunctionStatement::Break => return Ok(StatementCompletion::Break),
            FunctionStatement::Return => return Ok(StatementCompletion::Return),
            FunctionStatement::Assert {
                condition, message, ..
            } => {
                if eval_in(func, fns, *condition, slots)? == 0.0 {
                    return Err(format!("assertion in `{}` failed: {message}", func.name));
                }
            }
        }
    }
    Ok(StatementCompletion::Normal)
}
