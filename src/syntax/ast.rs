//! The abstract syntax tree of one `.rmo` file.
//!
//! Invariants: every node carries the byte span of the text it came from (in the
//! file named by `Span::file`); the tree holds exactly what was written, with no
//! name resolution and no evaluation. Later stages (instantiate) own meaning.

use crate::diag::Span;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A dotted class or package name, `Mechanics.Rotational.Inertia`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Name {
    pub parts: Vec<Ident>,
    /// Written with a leading dot: lookup starts at the top level.
    pub global: bool,
    pub span: Span,
}

impl Name {
    pub fn dotted(&self) -> String {
        let s: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
        s.join(".")
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredDefinition {
    pub within: Option<Name>,
    pub classes: Vec<ClassDef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClassKind {
    Model,
    Block,
    Connector,
    Record,
    Type,
    Package,
    Function,
    Class,
    Operator,
}

impl ClassKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ClassKind::Model => "model",
            ClassKind::Block => "block",
            ClassKind::Connector => "connector",
            ClassKind::Record => "record",
            ClassKind::Type => "type",
            ClassKind::Package => "package",
            ClassKind::Function => "function",
            ClassKind::Class => "class",
            ClassKind::Operator => "operator",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassDef {
    pub name: Ident,
    pub kind: ClassKind,
    pub partial: bool,
    pub encapsulated: bool,
    pub description: Option<String>,
    pub body: ClassBody,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClassBody {
    Long(Composition),
    /// `type Angle = Real(unit = "rad")`, `model A = B(k = 2)`.
    Short(ShortClass),
    Enumeration(Vec<Ident>),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShortClass {
    pub causality: CausalityPrefix,
    pub base: Name,
    pub dims: Vec<Subscript>,
    pub modification: Option<ClassMod>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Composition {
    pub elements: Vec<Element>,
    pub equations: Vec<EquationSection>,
    pub algorithms: Vec<AlgorithmSection>,
    /// A function's `external` clause.
    pub external: Option<Box<External>>,
    /// `model extends M(...)`: the class extends the inherited class of its
    /// name, with these modifications.
    pub class_extends: Option<Box<ClassExtends>>,
    pub annotations: Vec<ClassMod>,
    /// The name after `end`; must equal the class name.
    pub end_name: Option<Ident>,
}

/// `external "C" out = name(args) annotation(...);`
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct External {
    /// The language string (`"C"`, `"FORTRAN 77"`, `"builtin"`).
    pub language: Option<String>,
    /// The external function's name; `None` for the default call.
    pub function: Option<Ident>,
    pub output: Option<ComponentRef>,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// The header of `model extends M(mods) ... end M;`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassExtends {
    pub modification: Option<ClassMod>,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EquationSection {
    pub initial: bool,
    pub equations: Vec<Equation>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AlgorithmSection {
    pub initial: bool,
    pub statements: Vec<Statement>,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Element {
    Import(Import),
    Extends(Extends),
    Class(ClassElement),
    Component(Component),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Import {
    /// `import A.B.C;` binds `C`; `import D = A.B.C;` binds `D`.
    Named { alias: Ident, target: Name },
    /// `import A.B.*;`
    Wildcard { package: Name },
    /// `import A.B.{C, D};`
    List { package: Name, names: Vec<Ident> },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Extends {
    pub base: Name,
    pub modification: Option<ClassMod>,
    pub protected: bool,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassElement {
    pub def: ClassDef,
    pub replaceable: bool,
    pub redeclare: bool,
    pub final_: bool,
    pub protected: bool,
    pub constrainedby: Option<Constraint>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Constraint {
    pub base: Name,
    pub modification: Option<ClassMod>,
}

/// The variability a declaration states by its prefix (`discrete`,
/// `parameter`, `constant`, or none); the variability a flat variable ends
/// up with, after its type and its equations are seen, is
/// `flat::Variability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum VariabilityPrefix {
    #[default]
    Continuous,
    Discrete,
    Parameter,
    Constant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CausalityPrefix {
    #[default]
    None,
    Input,
    Output,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TypePrefix {
    pub flow: bool,
    pub stream: bool,
    pub variability: VariabilityPrefix,
    pub causality: CausalityPrefix,
}

/// One declared component: `parameter Real k[3](each start = 1) = {1, 2, 3} "gains";`
/// (a `component_clause` with several declarations yields one `Component` each).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Component {
    pub prefix: TypePrefix,
    pub type_name: Name,
    /// Dimensions written after the type: `Real[3] x`.
    pub type_dims: Vec<Subscript>,
    pub name: Ident,
    pub dims: Vec<Subscript>,
    pub modification: Option<Modification>,
    pub condition: Option<Expr>,
    pub description: Option<String>,
    pub protected: bool,
    pub replaceable: bool,
    pub redeclare: bool,
    pub final_: bool,
    pub inner_outer: bool,
    pub constrainedby: Option<Constraint>,
    pub span: Span,
}

/// What follows a declared name: `(start = 1)`, `= expr`, or both.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Modification {
    pub class_mod: Option<ClassMod>,
    pub binding: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassMod {
    pub args: Vec<ModArg>,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ModArg {
    /// `each final a.b(c = 1) = 2`
    Modify {
        each: bool,
        final_: bool,
        path: Name,
        modification: Option<Modification>,
        span: Span,
    },
    /// `redeclare CubicLaw law(k3 = 2e4)` or `redeclare model M = N`.
    Redeclare {
        each: bool,
        final_: bool,
        element: Redeclared,
        span: Span,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Redeclared {
    Component(Box<Component>),
    Class(Box<ClassDef>),
}

// ---------------------------------------------------------------- equations

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Equation {
    pub kind: EquationKind,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum EquationKind {
    Simple {
        lhs: Expr,
        rhs: Expr,
    },
    Connect {
        a: ComponentRef,
        b: ComponentRef,
    },
    /// `if c1 then .. elseif c2 then .. else .. end if`; `else_` is empty when absent.
    If {
        branches: Vec<(Expr, Vec<Equation>)>,
        else_: Vec<Equation>,
    },
    For {
        indices: Vec<ForIndex>,
        body: Vec<Equation>,
    },
    When {
        branches: Vec<(Expr, Vec<Equation>)>,
    },
    /// `assert(..)`, `reinit(..)`, `terminate(..)` or another call used as an equation.
    Call {
        func: ComponentRef,
        args: Vec<Arg>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForIndex {
    pub name: Ident,
    pub range: Option<Expr>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Statement {
    pub kind: StatementKind,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum StatementKind {
    Assign {
        target: ComponentRef,
        value: Expr,
    },
    /// `(a, , c) := f(x)`
    TupleAssign {
        targets: Vec<Option<Expr>>,
        func: ComponentRef,
        args: Vec<Arg>,
    },
    Call {
        func: ComponentRef,
        args: Vec<Arg>,
    },
    If {
        branches: Vec<(Expr, Vec<Statement>)>,
        else_: Vec<Statement>,
    },
    For {
        indices: Vec<ForIndex>,
        body: Vec<Statement>,
    },
    While {
        cond: Expr,
        body: Vec<Statement>,
    },
    When {
        branches: Vec<(Expr, Vec<Statement>)>,
    },
    Break,
    Return,
}

// ---------------------------------------------------------------- expressions

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    ElemAdd,
    ElemSub,
    ElemMul,
    ElemDiv,
    ElemPow,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "^",
            BinOp::ElemAdd => ".+",
            BinOp::ElemSub => ".-",
            BinOp::ElemMul => ".*",
            BinOp::ElemDiv => "./",
            BinOp::ElemPow => ".^",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "<>",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnOp {
    Neg,
    Plus,
    Not,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ExprKind {
    Real(f64),
    Integer(i64),
    Bool(bool),
    String(String),
    Ref(ComponentRef),
    Call {
        func: ComponentRef,
        args: Vec<Arg>,
    },
    /// `{expr for i in range}` or `f(expr for i in range)`.
    Comprehension {
        func: Option<ComponentRef>,
        body: Box<Expr>,
        indices: Vec<ForIndex>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    If {
        branches: Vec<(Expr, Expr)>,
        else_: Box<Expr>,
    },
    Range {
        start: Box<Expr>,
        step: Option<Box<Expr>>,
        stop: Box<Expr>,
    },
    /// `{a, b, c}`
    Array(Vec<Expr>),
    /// `[a, b; c, d]`
    Matrix(Vec<Vec<Expr>>),
    /// `(a, b)`: only valid as the target of a multiple-output call.
    Tuple(Vec<Option<Expr>>),
    /// `end` inside a subscript.
    End,
    /// `function f(k = 2)`: function `f` with inputs bound, passed as an
    /// argument.
    FunctionPartial {
        func: Name,
        args: Vec<(Ident, Expr)>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Arg {
    Positional(Expr),
    Named(Ident, Expr),
}

/// `a.b[1].c[i, :]`
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ComponentRef {
    pub parts: Vec<RefPart>,
    pub global: bool,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefPart {
    pub ident: Ident,
    pub subscripts: Vec<Subscript>,
}

impl ComponentRef {
    /// The reference as written, without subscripts: `a.b.c`.
    pub fn dotted(&self) -> String {
        let s: Vec<&str> = self.parts.iter().map(|p| p.ident.name.as_str()).collect();
        s.join(".")
    }
    /// Whether the reference is a plain dotted name (a class or function name).
    pub fn as_name(&self) -> Option<Name> {
        if self.parts.iter().any(|p| !p.subscripts.is_empty()) {
            return None;
        }
        Some(Name {
            parts: self.parts.iter().map(|p| p.ident.clone()).collect(),
            global: self.global,
            span: self.span,
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Subscript {
    /// `:`
    All(Span),
    Index(Expr),
}
