//! A hash-consed expression arena: every distinct expression node is stored
//! once, so structurally equal subexpressions share one [`ExprId`].
//!
//! Why hash-consing: symbolic differentiation and substitution create many
//! repeated subexpressions (the chain rule repeats the inner function); sharing
//! them keeps the equations small and gives common-subexpression elimination to
//! the code generator for free. Constructors fold constants and apply the
//! trivial identities (`x + 0`, `1 * x`, `x ^ 1`) so that the derivatives stay
//! readable.
//!
//! Invariant: node `i` only refers to nodes `< i` (the arena is a DAG in
//! topological order), so a single forward pass evaluates every node.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use smallvec::SmallVec;

/// The results of [`ExprArena::rewrite`] so far, by source node (a fast,
/// non-cryptographic hash: rewrites of large models do millions of lookups).
pub type RewriteMemo = FxHashMap<ExprId, ExprId>;

thread_local! {
    /// [`ExprArena::reachable`]'s marks: entry `id` holds the number of the
    /// last walk that reached node `id`, with that number (of any arena).
    static VISITS: std::cell::RefCell<(Vec<u32>, u32)> = const { std::cell::RefCell::new((Vec::new(), 0)) };
}

pub type ExprId = u32;
pub type VarId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RelOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl RelOp {
    pub fn symbol(self) -> &'static str {
        match self {
            RelOp::Lt => "<",
            RelOp::Le => "<=",
            RelOp::Gt => ">",
            RelOp::Ge => ">=",
            RelOp::Eq => "==",
            RelOp::Ne => "<>",
        }
    }
    pub fn apply(self, a: f64, b: f64) -> bool {
        match self {
            RelOp::Lt => a < b,
            RelOp::Le => a <= b,
            RelOp::Gt => a > b,
            RelOp::Ge => a >= b,
            RelOp::Eq => a == b,
            RelOp::Ne => a != b,
        }
    }
}

/// Builtin functions of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Fn1 {
    Abs,
    Sign,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Log,
    Log10,
    Floor,
    Ceil,
    /// Modelica `integer(x)`: the largest integer not greater than x.
    Integer,
}

impl Fn1 {
    pub const ALL: [Fn1; 18] = [
        Fn1::Abs,
        Fn1::Sign,
        Fn1::Sqrt,
        Fn1::Sin,
        Fn1::Cos,
        Fn1::Tan,
        Fn1::Asin,
        Fn1::Acos,
        Fn1::Atan,
        Fn1::Sinh,
        Fn1::Cosh,
        Fn1::Tanh,
        Fn1::Exp,
        Fn1::Log,
        Fn1::Log10,
        Fn1::Floor,
        Fn1::Ceil,
        Fn1::Integer,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Fn1::Abs => "abs",
            Fn1::Sign => "sign",
            Fn1::Sqrt => "sqrt",
            Fn1::Sin => "sin",
            Fn1::Cos => "cos",
            Fn1::Tan => "tan",
            Fn1::Asin => "asin",
            Fn1::Acos => "acos",
            Fn1::Atan => "atan",
            Fn1::Sinh => "sinh",
            Fn1::Cosh => "cosh",
            Fn1::Tanh => "tanh",
            Fn1::Exp => "exp",
            Fn1::Log => "log",
            Fn1::Log10 => "log10",
            Fn1::Floor => "floor",
            Fn1::Ceil => "ceil",
            Fn1::Integer => "integer",
        }
    }
    pub fn from_name(s: &str) -> Option<Fn1> {
        Fn1::ALL.iter().copied().find(|f| f.name() == s)
    }
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Fn1::Abs => x.abs(),
            Fn1::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Fn1::Sqrt => x.sqrt(),
            Fn1::Sin => x.sin(),
            Fn1::Cos => x.cos(),
            Fn1::Tan => x.tan(),
            Fn1::Asin => x.asin(),
            Fn1::Acos => x.acos(),
            Fn1::Atan => x.atan(),
            Fn1::Sinh => x.sinh(),
            Fn1::Cosh => x.cosh(),
            Fn1::Tanh => x.tanh(),
            Fn1::Exp => x.exp(),
            Fn1::Log => x.ln(),
            Fn1::Log10 => x.log10(),
            Fn1::Floor | Fn1::Integer => x.floor(),
            Fn1::Ceil => x.ceil(),
        }
    }
    /// Functions whose value jumps: they generate events like relations.
    pub fn is_discontinuous(self) -> bool {
        matches!(self, Fn1::Floor | Fn1::Ceil | Fn1::Integer | Fn1::Sign)
    }
}

/// Builtin functions of two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Fn2 {
    Atan2,
    Min,
    Max,
    /// `mod(x, y) = x - floor(x/y)*y`
    Mod,
    /// `rem(x, y) = x - div(x, y)*y`
    Rem,
    /// `div(x, y)`: x/y truncated toward zero.
    Div,
}

impl Fn2 {
    pub fn name(self) -> &'static str {
        match self {
            Fn2::Atan2 => "atan2",
            Fn2::Min => "min",
            Fn2::Max => "max",
            Fn2::Mod => "mod",
            Fn2::Rem => "rem",
            Fn2::Div => "div",
        }
    }
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Fn2::Atan2 => a.atan2(b),
            Fn2::Min => {
                if a < b {
                    a
                } else {
                    b
                }
            }
            Fn2::Max => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            Fn2::Mod => a - (a / b).floor() * b,
            Fn2::Rem => a - (a / b).trunc() * b,
            Fn2::Div => (a / b).trunc(),
        }
    }
}

/// One expression node. Booleans are 0.0/1.0; Integers are whole f64 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Node {
    /// The bits of an f64 (so that the node can be hashed).
    Const(u64),
    /// A variable of the model (or, in a function's arena, a local slot).
    Var(VarId),
    /// The time derivative of a variable, `der(v)`.
    Der(VarId),
    /// The left limit of a discrete variable at an event, `pre(v)`.
    Pre(VarId),
    Time,
    Neg(ExprId),
    Add(ExprId, ExprId),
    Sub(ExprId, ExprId),
    Mul(ExprId, ExprId),
    Div(ExprId, ExprId),
    Pow(ExprId, ExprId),
    Not(ExprId),
    And(ExprId, ExprId),
    Or(ExprId, ExprId),
    /// A relation. `event = true` (outside `noEvent`) makes it a zero-crossing:
    /// its value only changes at events.
    Rel {
        op: RelOp,
        lhs: ExprId,
        rhs: ExprId,
        event: bool,
    },
    If(ExprId, ExprId, ExprId),
    Call1(Fn1, ExprId),
    Call2(Fn2, ExprId, ExprId),
    /// Output `output` (scalarized index) of user-function call `call`
    /// (an index into [`ExprArena::calls`]).
    Call {
        call: u32,
        output: u32,
    },
    /// `initial()`: true during initialization.
    Initial,
    /// `terminal()`: true at the end of a successful simulation.
    Terminal,
    /// `sample(start, interval)`: true at the time events start + k*interval.
    Sample(ExprId, ExprId),
    /// In a function arena: element `index` (1-based, dynamic) of the array
    /// stored in slots `base .. base + len`.
    Elem {
        base: VarId,
        len: u32,
        index: ExprId,
    },
}

/// A call of a user function: which function, with which scalarized arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CallSite {
    pub func: u32,
    pub args: Vec<ExprId>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ExprArena {
    nodes: Vec<Node>,
    /// The ids of `nodes`, by the node's hash: the table holds 4 bytes a
    /// node (the arena's hundreds of thousands of nodes keep it in cache)
    /// and a node is compared, and rehashed, through `nodes`.
    #[serde(skip)]
    index: hashbrown::HashTable<ExprId>,
    pub calls: Vec<CallSite>,
    #[serde(skip)]
    call_index: FxHashMap<CallSite, u32>,
}

impl ExprArena {
    pub fn new() -> ExprArena {
        ExprArena::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: ExprId) -> Node {
        self.nodes[id as usize]
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Interns a node as given (no simplification).
    pub fn intern(&mut self, n: Node) -> ExprId {
        let nodes = &self.nodes;
        let entry = self.index.entry(
            hash_node(&n),
            |&id| nodes[id as usize] == n,
            |&id| hash_node(&nodes[id as usize]),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(o) => *o.get(),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let id = self.nodes.len() as ExprId;
                v.insert(id);
                self.nodes.push(n);
                id
            }
        }
    }

    pub fn call_site(&mut self, site: CallSite) -> u32 {
        if let Some(&id) = self.call_index.get(&site) {
            return id;
        }
        let id = self.calls.len() as u32;
        self.calls.push(site.clone());
        self.call_index.insert(site, id);
        id
    }

    pub fn constant(&mut self, v: f64) -> ExprId {
        // One representation of zero, so that `x - x` and `0` are the same node.
        let v = if v == 0.0 { 0.0 } else { v };
        self.intern(Node::Const(v.to_bits()))
    }
    pub fn zero(&mut self) -> ExprId {
        self.constant(0.0)
    }
    pub fn one(&mut self) -> ExprId {
        self.constant(1.0)
    }
    pub fn var(&mut self, v: VarId) -> ExprId {
        self.intern(Node::Var(v))
    }

    pub fn as_const(&self, id: ExprId) -> Option<f64> {
        match self.node(id) {
            Node::Const(b) => Some(f64::from_bits(b)),
            _ => None,
        }
    }

    pub fn is_const(&self, id: ExprId, v: f64) -> bool {
        self.as_const(id) == Some(v)
    }

    pub fn neg(&mut self, a: ExprId) -> ExprId {
        match self.node(a) {
            Node::Const(_) => {
                let c = -self.as_const(a).expect("const");
                self.constant(c)
            }
            Node::Neg(x) => x,
            Node::Sub(x, y) => self.sub(y, x),
            _ => self.intern(Node::Neg(a)),
        }
    }

    pub fn add(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.constant(x + y),
            (Some(0.0), None) => b,
            (None, Some(0.0)) => a,
            _ => {
                if let Node::Neg(nb) = self.node(b) {
                    return self.sub(a, nb);
                }
                if let Node::Neg(na) = self.node(a) {
                    return self.sub(b, na);
                }
                self.intern(Node::Add(a, b))
            }
        }
    }

    pub fn sub(&mut self, a: ExprId, b: ExprId) -> ExprId {
        if a == b {
            return self.zero();
        }
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.constant(x - y),
            (Some(0.0), None) => self.neg(b),
            (None, Some(0.0)) => a,
            _ => {
                if let Node::Neg(nb) = self.node(b) {
                    return self.add(a, nb);
                }
                self.intern(Node::Sub(a, b))
            }
        }
    }

    pub fn mul(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.constant(x * y),
            (Some(0.0), _) => self.zero(),
            (_, Some(0.0)) => self.zero(),
            (Some(1.0), _) => b,
            (_, Some(1.0)) => a,
            (Some(-1.0), _) => self.neg(b),
            (_, Some(-1.0)) => self.neg(a),
            _ => {
                // Keep constants on the left: `2*x`, so that equal products share a node.
                if self.as_const(b).is_some() {
                    return self.intern(Node::Mul(b, a));
                }
                match (self.node(a), self.node(b)) {
                    (Node::Neg(x), Node::Neg(y)) => self.mul(x, y),
                    (Node::Neg(x), _) => {
                        let m = self.mul(x, b);
                        self.neg(m)
                    }
                    (_, Node::Neg(y)) => {
                        let m = self.mul(a, y);
                        self.neg(m)
                    }
                    _ => self.intern(Node::Mul(a, b)),
                }
            }
        }
    }

    pub fn div(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if y != 0.0 => self.constant(x / y),
            (Some(0.0), _) => self.zero(),
            (_, Some(1.0)) => a,
            (_, Some(-1.0)) => self.neg(a),
            _ => {
                if a == b {
                    // x/x = 1 is only wrong where x = 0, where the original is NaN anyway.
                    return self.one();
                }
                match (self.node(a), self.node(b)) {
                    (Node::Neg(x), Node::Neg(y)) => self.div(x, y),
                    (Node::Neg(x), _) => {
                        let d = self.div(x, b);
                        self.neg(d)
                    }
                    (_, Node::Neg(y)) => {
                        let d = self.div(a, y);
                        self.neg(d)
                    }
                    _ => self.intern(Node::Div(a, b)),
                }
            }
        }
    }

    pub fn pow(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.constant(pow(x, y)),
            (_, Some(1.0)) => a,
            (_, Some(0.0)) => self.one(),
            _ => self.intern(Node::Pow(a, b)),
        }
    }

    pub fn not(&mut self, a: ExprId) -> ExprId {
        match self.as_const(a) {
            Some(x) => self.constant(if x != 0.0 { 0.0 } else { 1.0 }),
            None => self.intern(Node::Not(a)),
        }
    }

    pub fn and(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(0.0), _) => self.zero(),
            (_, Some(0.0)) => self.zero(),
            (Some(_), _) => b,
            (_, Some(_)) => a,
            _ => self.intern(Node::And(a, b)),
        }
    }

    pub fn or(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), _) if x != 0.0 => self.one(),
            (_, Some(y)) if y != 0.0 => self.one(),
            (Some(_), _) => b,
            (_, Some(_)) => a,
            _ => self.intern(Node::Or(a, b)),
        }
    }

    pub fn rel(&mut self, op: RelOp, lhs: ExprId, rhs: ExprId, event: bool) -> ExprId {
        if let (Some(x), Some(y)) = (self.as_const(lhs), self.as_const(rhs)) {
            return self.constant(if op.apply(x, y) { 1.0 } else { 0.0 });
        }
        self.intern(Node::Rel {
            op,
            lhs,
            rhs,
            event,
        })
    }

    pub fn if_(&mut self, c: ExprId, a: ExprId, b: ExprId) -> ExprId {
        if a == b {
            return a;
        }
        match self.as_const(c) {
            Some(x) if x != 0.0 => a,
            Some(_) => b,
            None => self.intern(Node::If(c, a, b)),
        }
    }

    pub fn call1(&mut self, f: Fn1, a: ExprId) -> ExprId {
        match self.as_const(a) {
            Some(x) => self.constant(f.apply(x)),
            None => self.intern(Node::Call1(f, a)),
        }
    }

    pub fn call2(&mut self, f: Fn2, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.constant(f.apply(x, y)),
            _ => self.intern(Node::Call2(f, a, b)),
        }
    }

    /// The children of a node, in order (a call's: its arguments).
    pub fn children(&self, id: ExprId) -> impl Iterator<Item = ExprId> + '_ {
        let n = self.node(id);
        let args: &[ExprId] = match n {
            Node::Call { call, .. } => &self.calls[call as usize].args,
            _ => &[],
        };
        node_children(n).chain(args.iter().copied())
    }

    /// Every node reachable from `roots`, each once, children before parents.
    pub fn reachable(&self, roots: &[ExprId]) -> Vec<ExprId> {
        self.walk(roots, |id, stack| self.push_children(self.node(id), stack))
    }

    /// Pushes the children of node `n` onto a walk's stack: a call's are its
    /// site's arguments, any other node's its operands.
    fn push_children<A: smallvec::Array<Item = ExprId>>(&self, n: Node, stack: &mut SmallVec<A>) {
        match n {
            Node::Call { call, .. } => stack.extend_from_slice(&self.calls[call as usize].args),
            n => push_operands(n, stack),
        }
    }

    /// As [`Self::reachable`], but a call's output leads only to the
    /// arguments it depends on: `deps(function)` gives, per output, the
    /// argument positions its value reads (`None`: all of them). The
    /// incidence of an equation: `phi = position(u, time)` of the MSL's
    /// `Move` reads `u[1]` only.
    pub fn reachable_through(
        &self,
        roots: &[ExprId],
        deps: &dyn Fn(u32) -> Option<std::rc::Rc<Vec<Vec<u32>>>>,
    ) -> Vec<ExprId> {
        self.walk(roots, |id, stack| match self.node(id) {
            Node::Call { call, output } => {
                let site = &self.calls[call as usize];
                match deps(site.func).filter(|d| (output as usize) < d.len()) {
                    Some(d) => stack.extend(
                        d[output as usize]
                            .iter()
                            .filter_map(|&i| site.args.get(i as usize).copied()),
                    ),
                    None => stack.extend(site.args.iter().copied()),
                }
            }
            n => push_operands(n, stack),
        })
    }

    /// The nodes reachable from `roots` through `children` (which pushes a
    /// node's children), in increasing order. Called per equation on arenas
    /// of hundreds of thousands of nodes: a node is marked as seen with the
    /// walk's number in a table kept by the thread, so that a walk costs its
    /// own nodes only (no set, no table cleared per walk); a walk started
    /// inside another (from `children`) uses a set.
    fn walk(
        &self,
        roots: &[ExprId],
        mut children: impl FnMut(ExprId, &mut WalkStack),
    ) -> Vec<ExprId> {
        let mut stack: WalkStack = roots.iter().copied().collect();
        let mut out = Vec::with_capacity(16);
        VISITS.with(|visits| match visits.try_borrow_mut() {
            Ok(mut visits) => {
                let (marks, walk) = &mut *visits;
                *walk = walk.wrapping_add(1);
                if *walk == 0 {
                    marks.fill(0);
                    *walk = 1;
                }
                if marks.len() < self.nodes.len() {
                    marks.resize(self.nodes.len(), 0);
                }
                let walk = *walk;
                while let Some(id) = stack.pop() {
                    let mark = &mut marks[id as usize];
                    if *mark != walk {
                        *mark = walk;
                        out.push(id);
                        children(id, &mut stack);
                    }
                }
            }
            Err(_) => {
                let mut seen: FxHashSet<ExprId> = FxHashSet::default();
                while let Some(id) = stack.pop() {
                    if seen.insert(id) {
                        out.push(id);
                        children(id, &mut stack);
                    }
                }
            }
        });
        // Children have smaller ids than their parents (arena invariant).
        out.sort_unstable();
        out
    }

    /// Whether a node reachable from `root` satisfies `pred`: a depth-first
    /// search that stops at the first match (unlike [`Self::reachable`],
    /// nothing is collected or sorted).
    pub fn any_node(&self, root: ExprId, mut pred: impl FnMut(Node) -> bool) -> bool {
        // Shared subexpressions are searched once: a scan of the few seen
        // ids first, a hash set once there are many (as in `reachable`).
        // Most expressions are small: the first ids seen and the stack are
        // kept inline, without allocating.
        const SCAN: usize = 24;
        let mut seen: SmallVec<[ExprId; SCAN]> = SmallVec::new();
        let mut seen_set: Option<FxHashSet<ExprId>> = None;
        let mut stack: SmallVec<[ExprId; 16]> = SmallVec::new();
        stack.push(root);
        while let Some(id) = stack.pop() {
            let new = match &mut seen_set {
                Some(set) => set.insert(id),
                None if seen.len() < SCAN => {
                    let new = !seen.contains(&id);
                    seen.push(id);
                    new
                }
                None => {
                    let mut set: FxHashSet<ExprId> = seen.drain(..).collect();
                    let new = set.insert(id);
                    seen_set = Some(set);
                    new
                }
            };
            if !new {
                continue;
            }
            let n = self.node(id);
            if pred(n) {
                return true;
            }
            self.push_children(n, &mut stack);
        }
        false
    }

    /// [`Self::vars_of`] through `memo`: the elements of an array bound to
    /// one call (`profile[i, j] = cycloidProfile(...)`: thousands of
    /// `Call` nodes of one call site, each an output) mention the
    /// variables of the site's arguments, walked once per site.
    pub fn vars_of_memo(&self, root: ExprId, memo: &mut VarsMemo) -> std::rc::Rc<[VarId]> {
        match self.node(root) {
            Node::Call { call, .. } => memo
                .sites
                .entry(call)
                .or_insert_with(|| self.vars_of(root).into())
                .clone(),
            _ => self.vars_of(root).into(),
        }
    }

    /// The variables (`Var`) an expression mentions, sorted, each once.
    pub fn vars_of(&self, root: ExprId) -> Vec<VarId> {
        let mut v: Vec<VarId> = self
            .reachable(&[root])
            .into_iter()
            .filter_map(|id| match self.node(id) {
                Node::Var(v) => Some(v),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Rewrites an expression bottom-up: `f` may replace a leaf node by another
    /// expression (returning `Some`); inner nodes are rebuilt through the
    /// simplifying constructors.
    pub fn rewrite(
        &mut self,
        root: ExprId,
        memo: &mut RewriteMemo,
        f: &mut dyn FnMut(&mut ExprArena, Node) -> Option<ExprId>,
    ) -> ExprId {
        if let Some(&r) = memo.get(&root) {
            return r;
        }
        let node = self.node(root);
        let out = if let Some(r) = f(self, node) {
            r
        } else {
            match node {
                Node::Const(_)
                | Node::Var(_)
                | Node::Der(_)
                | Node::Pre(_)
                | Node::Time
                | Node::Initial
                | Node::Terminal => root,
                Node::Neg(a) => {
                    let a = self.rewrite(a, memo, f);
                    self.neg(a)
                }
                Node::Not(a) => {
                    let a = self.rewrite(a, memo, f);
                    self.not(a)
                }
                Node::Call1(g, a) => {
                    let a = self.rewrite(a, memo, f);
                    self.call1(g, a)
                }
                Node::Add(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.add(a, b)
                }
                Node::Sub(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.sub(a, b)
                }
                Node::Mul(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.mul(a, b)
                }
                Node::Div(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.div(a, b)
                }
                Node::Pow(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.pow(a, b)
                }
                Node::And(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.and(a, b)
                }
                Node::Or(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.or(a, b)
                }
                Node::Call2(g, a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.call2(g, a, b)
                }
                Node::Sample(a, b) => {
                    let (a, b) = (self.rewrite(a, memo, f), self.rewrite(b, memo, f));
                    self.intern(Node::Sample(a, b))
                }
                Node::Rel {
                    op,
                    lhs,
                    rhs,
                    event,
                } => {
                    let (a, b) = (self.rewrite(lhs, memo, f), self.rewrite(rhs, memo, f));
                    self.rel(op, a, b, event)
                }
                Node::If(c, a, b) => {
                    let c = self.rewrite(c, memo, f);
                    let a = self.rewrite(a, memo, f);
                    let b = self.rewrite(b, memo, f);
                    self.if_(c, a, b)
                }
                Node::Call { call, output } => {
                    let site = self.calls[call as usize].clone();
                    let args: Vec<ExprId> = site
                        .args
                        .iter()
                        .map(|&a| self.rewrite(a, memo, f))
                        .collect();
                    let c = self.call_site(CallSite {
                        func: site.func,
                        args,
                    });
                    self.intern(Node::Call { call: c, output })
                }
                Node::Elem { base, len, index } => {
                    let index = self.rewrite(index, memo, f);
                    self.intern(Node::Elem { base, len, index })
                }
            }
        };
        memo.insert(root, out);
        out
    }

    /// Renders an expression in Modelica syntax; `name` names variables.
    pub fn display(&self, id: ExprId, name: &dyn Fn(VarId) -> String) -> String {
        let mut s = String::new();
        self.write(id, name, 0, &mut s);
        s
    }

    fn write(&self, id: ExprId, name: &dyn Fn(VarId) -> String, prec: u8, out: &mut String) {
        // Precedences: 1 or, 2 and, 3 not, 4 relation, 5 additive, 6 multiplicative, 7 power, 8 unary minus operand.
        let paren = |p: u8, out: &mut String, body: &mut dyn FnMut(&mut String)| {
            if p < prec {
                out.push('(');
                body(out);
                out.push(')');
            } else {
                body(out);
            }
        };
        match self.node(id) {
            Node::Const(b) => {
                let v = f64::from_bits(b);
                let t = format_number(v);
                if v < 0.0 && prec > 5 {
                    out.push('(');
                    out.push_str(&t);
                    out.push(')');
                } else {
                    out.push_str(&t);
                }
            }
            Node::Var(v) => out.push_str(&name(v)),
            Node::Der(v) => {
                out.push_str("der(");
                out.push_str(&name(v));
                out.push(')');
            }
            Node::Pre(v) => {
                out.push_str("pre(");
                out.push_str(&name(v));
                out.push(')');
            }
            Node::Time => out.push_str("time"),
            Node::Initial => out.push_str("initial()"),
            Node::Terminal => out.push_str("terminal()"),
            Node::Neg(a) => paren(5, out, &mut |o| {
                o.push('-');
                self.write(a, name, 6, o);
            }),
            Node::Not(a) => paren(3, out, &mut |o| {
                o.push_str("not ");
                self.write(a, name, 4, o);
            }),
            Node::Add(a, b) => paren(5, out, &mut |o| {
                self.write(a, name, 5, o);
                o.push_str(" + ");
                self.write(b, name, 6, o);
            }),
            Node::Sub(a, b) => paren(5, out, &mut |o| {
                self.write(a, name, 5, o);
                o.push_str(" - ");
                self.write(b, name, 6, o);
            }),
            Node::Mul(a, b) => paren(6, out, &mut |o| {
                self.write(a, name, 6, o);
                o.push('*');
                self.write(b, name, 7, o);
            }),
            Node::Div(a, b) => paren(6, out, &mut |o| {
                self.write(a, name, 6, o);
                o.push('/');
                self.write(b, name, 7, o);
            }),
            Node::Pow(a, b) => paren(7, out, &mut |o| {
                self.write(a, name, 8, o);
                o.push('^');
                self.write(b, name, 8, o);
            }),
            Node::And(a, b) => paren(2, out, &mut |o| {
                self.write(a, name, 2, o);
                o.push_str(" and ");
                self.write(b, name, 3, o);
            }),
            Node::Or(a, b) => paren(1, out, &mut |o| {
                self.write(a, name, 1, o);
                o.push_str(" or ");
                self.write(b, name, 2, o);
            }),
            Node::Rel {
                op,
                lhs,
                rhs,
                event,
            } => {
                if !event {
                    out.push_str("noEvent(");
                }
                paren(if event { 4 } else { 9 }, out, &mut |o| {
                    self.write(lhs, name, 5, o);
                    o.push(' ');
                    o.push_str(op.symbol());
                    o.push(' ');
                    self.write(rhs, name, 5, o);
                });
                if !event {
                    out.push(')');
                }
            }
            Node::If(c, a, b) => paren(1, out, &mut |o| {
                o.push_str("if ");
                self.write(c, name, 0, o);
                o.push_str(" then ");
                self.write(a, name, 0, o);
                o.push_str(" else ");
                self.write(b, name, 0, o);
            }),
            Node::Call1(f, a) => {
                out.push_str(f.name());
                out.push('(');
                self.write(a, name, 0, out);
                out.push(')');
            }
            Node::Call2(f, a, b) => {
                out.push_str(f.name());
                out.push('(');
                self.write(a, name, 0, out);
                out.push_str(", ");
                self.write(b, name, 0, out);
                out.push(')');
            }
            Node::Sample(a, b) => {
                out.push_str("sample(");
                self.write(a, name, 0, out);
                out.push_str(", ");
                self.write(b, name, 0, out);
                out.push(')');
            }
            Node::Call { call, output } => {
                let site = &self.calls[call as usize];
                out.push_str(&format!("$fn{}", site.func));
                out.push('(');
                for (i, a) in site.args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write(*a, name, 0, out);
                }
                out.push(')');
                if output > 0 {
                    out.push_str(&format!(".{}", output + 1));
                }
            }
            Node::Elem {
                base,
                len: _,
                index,
            } => {
                out.push_str(&name(base));
                out.push_str("[+");
                self.write(index, name, 0, out);
                out.push(']');
            }
        }
    }
}

/// The pending nodes of a walk, inline while few.
type WalkStack = SmallVec<[ExprId; 32]>;

/// A node's hash in the arena's index.
fn hash_node(n: &Node) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(n)
}

/// Calls `f` on each operand of `n`, in order (a call's arguments are in
/// [`ExprArena::calls`], not here).
#[inline]
fn for_each_operand(n: Node, mut f: impl FnMut(ExprId)) {
    match n {
        Node::Neg(a) | Node::Not(a) | Node::Call1(_, a) | Node::Elem { index: a, .. } => f(a),
        Node::Add(a, b)
        | Node::Sub(a, b)
        | Node::Mul(a, b)
        | Node::Div(a, b)
        | Node::Pow(a, b)
        | Node::And(a, b)
        | Node::Or(a, b)
        | Node::Call2(_, a, b)
        | Node::Sample(a, b)
        | Node::Rel { lhs: a, rhs: b, .. } => {
            f(a);
            f(b);
        }
        Node::If(c, a, b) => {
            f(c);
            f(a);
            f(b);
        }
        _ => {}
    }
}

/// The children of a node other than a call (which keeps its arguments in
/// the call table), without allocating.
fn node_children(n: Node) -> impl Iterator<Item = ExprId> {
    let mut operands: SmallVec<[ExprId; 3]> = SmallVec::new();
    for_each_operand(n, |c| operands.push(c));
    operands.into_iter()
}

/// Pushes the operands of `n` onto a walk's stack one by one (the inner
/// loop of every walk; extending the stack from an iterator costs more:
/// about a third of `reachable` on the 50 x 50 grid, by callgrind).
#[inline]
fn push_operands<A: smallvec::Array<Item = ExprId>>(n: Node, stack: &mut SmallVec<A>) {
    for_each_operand(n, |c| stack.push(c));
}

/// `x^y`, the one definition shared by constant folding, the interpreter and
/// compiled code: small whole exponents by repeated multiplication (exact for
/// negative bases, and what users expect of `x^2`), others by `powf`.
pub fn pow(x: f64, y: f64) -> f64 {
    if y == y.trunc() && y.abs() <= 64.0 {
        x.powi(y as i32)
    } else {
        x.powf(y)
    }
}

/// Shortest decimal text that reads back as the same f64.
pub fn format_number(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_consing_shares_equal_nodes_and_folds_constants() {
        let mut a = ExprArena::new();
        let x = a.var(0);
        let two = a.constant(2.0);
        let p = a.mul(two, x);
        let q = a.mul(x, two);
        assert_eq!(p, q);
        let z = a.sub(p, q);
        assert!(a.is_const(z, 0.0));
        let three = a.constant(3.0);
        let s = a.add(two, three);
        assert_eq!(a.as_const(s), Some(5.0));
        let name = |v: VarId| format!("v{v}");
        let e = a.pow(x, two);
        let m = a.neg(e);
        assert_eq!(a.display(m, &name), "-v0^2");
    }

    /// Every kind of node leads a walk to exactly the operands it was built
    /// from (a call to its site's arguments), through `reachable`,
    /// `reachable_through`, `children` and `any_node`; `reachable_through`
    /// follows only the arguments a call's output depends on.
    #[test]
    fn a_walk_reaches_the_operands_each_kind_of_node_was_built_from() {
        let mut a = ExprArena::new();
        let (x, y, z) = (a.var(0), a.var(1), a.var(2));
        let site = a.call_site(CallSite {
            func: 0,
            args: vec![y, z],
        });
        let cases: Vec<(Node, Vec<ExprId>)> = vec![
            (Node::Neg(x), vec![x]),
            (Node::Not(x), vec![x]),
            (Node::Call1(Fn1::Sin, x), vec![x]),
            (
                Node::Elem {
                    base: 7,
                    len: 3,
                    index: x,
                },
                vec![x],
            ),
            (Node::Add(x, y), vec![x, y]),
            (Node::Sub(y, x), vec![y, x]),
            (Node::Mul(x, z), vec![x, z]),
            (Node::Div(z, y), vec![z, y]),
            (Node::Pow(x, y), vec![x, y]),
            (Node::And(x, y), vec![x, y]),
            (Node::Or(y, z), vec![y, z]),
            (Node::Call2(Fn2::Atan2, z, x), vec![z, x]),
            (Node::Sample(x, y), vec![x, y]),
            (
                Node::Rel {
                    op: RelOp::Lt,
                    lhs: y,
                    rhs: z,
                    event: true,
                },
                vec![y, z],
            ),
            (Node::If(x, y, z), vec![x, y, z]),
            (
                Node::Call {
                    call: site,
                    output: 0,
                },
                vec![y, z],
            ),
            (Node::Der(0), vec![]),
            (Node::Pre(1), vec![]),
            (Node::Time, vec![]),
            (Node::Initial, vec![]),
            (Node::Terminal, vec![]),
        ];
        let all = |_: u32| None;
        for (n, operands) in cases {
            let id = a.intern(n);
            let mut reached = operands.clone();
            reached.push(id);
            reached.sort_unstable();
            reached.dedup();
            assert_eq!(a.reachable(&[id]), reached, "{n:?}");
            assert_eq!(a.reachable_through(&[id], &all), reached, "{n:?}");
            assert_eq!(a.children(id).collect::<Vec<_>>(), operands, "{n:?}");
            for &o in &operands {
                let target = a.node(o);
                assert!(a.any_node(id, |m| m == target), "{n:?}: {target:?}");
            }
        }
        // Nested: the walk goes all the way down, each node once.
        let sum = a.intern(Node::Add(x, y));
        let neg = a.intern(Node::Neg(sum));
        let top = a.intern(Node::If(neg, sum, z));
        assert_eq!(a.reachable(&[top]), vec![x, y, z, sum, neg, top]);
        // Output 0 of the call reads its second argument only.
        let call = a.intern(Node::Call {
            call: site,
            output: 0,
        });
        let second = |_: u32| Some(std::rc::Rc::new(vec![vec![1u32]]));
        assert_eq!(a.reachable_through(&[call], &second), vec![z, call]);
    }
}

/// The variables of each call site's arguments, for
/// [`ExprArena::vars_of_memo`].
#[derive(Default)]
pub struct VarsMemo {
    sites: FxHashMap<u32, std::rc::Rc<[VarId]>>,
}
