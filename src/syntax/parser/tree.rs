//! The parse tree to the AST: classes, elements, modifications, equations
//! and statements (expressions are in `expressions.rs`).

use super::{P, Rule};
use crate::diag::{Diagnostic, DiagnosticKind, Span};
use crate::syntax::ast::*;

pub(super) struct TreeBuilder {
    pub(super) file: u32,
    /// Added to every position: the parsed text starts at this byte of the file.
    pub(super) offset: usize,
    /// Problems found while building (literals out of range).
    pub(super) errors: std::cell::RefCell<Vec<Diagnostic>>,
}

pub(super) fn unescape(s: &str) -> String {
    let inner = &s[1..s.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl TreeBuilder {
    pub(super) fn new(file: u32, offset: usize) -> TreeBuilder {
        TreeBuilder {
            file,
            offset,
            errors: Default::default(),
        }
    }

    pub(super) fn span(&self, p: &P) -> Span {
        let s = p.as_span();
        Span::new(self.file, s.start() + self.offset, s.end() + self.offset)
    }

    pub(super) fn ident(&self, p: P) -> Ident {
        Ident {
            name: p.as_str().to_string(),
            span: self.span(&p),
        }
    }

    pub(super) fn name(&self, p: P) -> Name {
        let span = self.span(&p);
        Name {
            parts: p.into_inner().map(|i| self.ident(i)).collect(),
            global: false,
            span,
        }
    }

    pub(super) fn type_specifier(&self, p: P) -> Name {
        let global = p.as_str().starts_with('.');
        let inner = p.into_inner().next().expect("type_specifier holds a name");
        let mut n = self.name(inner);
        n.global = global;
        n
    }

    pub(super) fn stored_definition(&self, p: P) -> StoredDefinition {
        let mut within = None;
        let mut classes = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::within_clause => {
                    within = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::name)
                        .map(|n| self.name(n))
                }
                Rule::top_class => {
                    let cd = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::class_definition)
                        .expect("top_class holds a class_definition");
                    classes.push(self.class_definition(cd));
                }
                _ => {}
            }
        }
        StoredDefinition { within, classes }
    }

    pub(super) fn class_kind(&self, p: &P) -> ClassKind {
        let s = p.as_str();
        let last = s.split_whitespace().last().unwrap_or(s);
        match last {
            "model" => ClassKind::Model,
            "block" => ClassKind::Block,
            "connector" => ClassKind::Connector,
            "record" => ClassKind::Record,
            "type" => ClassKind::Type,
            "package" => ClassKind::Package,
            "function" => ClassKind::Function,
            "operator" => ClassKind::Operator,
            _ => ClassKind::Class,
        }
    }

    pub(super) fn class_definition(&self, p: P) -> ClassDef {
        let span = self.span(&p);
        let mut partial = false;
        let mut encapsulated = false;
        let mut kind = ClassKind::Class;
        let mut spec = None;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::K_PARTIAL => partial = true,
                Rule::K_ENCAPSULATED => encapsulated = true,
                Rule::class_kind => {
                    kind = self.class_kind(&c);
                    if c.as_str().starts_with("expandable") {
                        self.errors.borrow_mut().push(
                            Diagnostic::error(
                                DiagnosticKind::Unsupported,
                                self.span(&c),
                                "expandable connectors are not supported",
                            )
                            .with_label("expandable")
                            .with_hint("declare the connector's variables in a plain `connector`"),
                        );
                    }
                }
                Rule::class_specifier => spec = c.into_inner().next(),
                _ => {}
            }
        }
        let spec = spec.expect("class_definition holds a class_specifier");
        let (name, description, body) = self.class_specifier(spec);
        ClassDef {
            name,
            kind,
            partial,
            encapsulated,
            description,
            body,
            span,
        }
    }

    pub(super) fn class_specifier(&self, p: P) -> (Ident, Option<String>, ClassBody) {
        match p.as_rule() {
            Rule::long_class_specifier => {
                let mut it = p.into_inner();
                let head = it.next().expect("class name");
                let mut class_extends = None;
                let name = if head.as_rule() == Rule::class_extends {
                    let mut h = head.into_inner();
                    let kw = h.next().expect("extends keyword");
                    let name = self.ident(h.next().expect("class extends name"));
                    let modification = h.next().map(|m| self.class_modification(m));
                    // From `extends` through the name or its modification
                    // (the rule's own span runs on over the blanks after it).
                    let mut span = self.span(&kw);
                    span.end = modification.as_ref().map_or(name.span.end, |m| m.span.end);
                    class_extends = Some(Box::new(ClassExtends { modification, span }));
                    name
                } else {
                    self.ident(head)
                };
                let mut description = None;
                let mut comp = Composition::default();
                for c in it {
                    match c.as_rule() {
                        Rule::string_comment => description = self.string_comment(c),
                        Rule::composition => comp = self.composition(c),
                        Rule::end_clause => {
                            comp.end_name = c
                                .into_inner()
                                .find(|x| x.as_rule() == Rule::ident)
                                .map(|i| self.ident(i))
                        }
                        _ => {}
                    }
                }
                comp.class_extends = class_extends;
                (name, description, ClassBody::Long(comp))
            }
            Rule::short_class_specifier => {
                let (name, short, description) = self.short_class_specifier(p);
                (name, description, ClassBody::Short(short))
            }
            Rule::enumeration_specifier => {
                let mut it = p.into_inner();
                let name = self.ident(it.next().expect("enumeration name"));
                let mut lits = Vec::new();
                let mut description = None;
                for c in it {
                    match c.as_rule() {
                        Rule::enum_list => {
                            for l in c.into_inner() {
                                if let Some(i) = l.into_inner().next() {
                                    lits.push(self.ident(i));
                                }
                            }
                        }
                        Rule::comment => description = self.comment(c),
                        _ => {}
                    }
                }
                (name, description, ClassBody::Enumeration(lits))
            }
            r => unreachable!("class_specifier alternative {r:?}"),
        }
    }

    pub(super) fn short_class_specifier(&self, p: P) -> (Ident, ShortClass, Option<String>) {
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("short class name"));
        let mut causality = CausalityPrefix::None;
        let mut base = None;
        let mut dims = Vec::new();
        let mut modification = None;
        let mut description = None;
        for c in it {
            match c.as_rule() {
                Rule::base_prefix => {
                    causality = match c.as_str().trim() {
                        "input" => CausalityPrefix::Input,
                        "output" => CausalityPrefix::Output,
                        _ => CausalityPrefix::None,
                    }
                }
                Rule::type_specifier => base = Some(self.type_specifier(c)),
                Rule::array_subscripts => dims = self.subscripts(c),
                Rule::class_modification => modification = Some(self.class_modification(c)),
                Rule::comment => description = self.comment(c),
                _ => {}
            }
        }
        (
            name,
            ShortClass {
                causality,
                base: base.expect("short class has a base"),
                dims,
                modification,
            },
            description,
        )
    }

    pub(super) fn string_comment(&self, p: P) -> Option<String> {
        let parts: Vec<String> = p
            .into_inner()
            .filter(|x| x.as_rule() == Rule::string)
            .map(|s| unescape(s.as_str()))
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.concat())
        }
    }

    pub(super) fn comment(&self, p: P) -> Option<String> {
        p.into_inner()
            .find(|x| x.as_rule() == Rule::string_comment)
            .and_then(|s| self.string_comment(s))
    }

    pub(super) fn composition(&self, p: P) -> Composition {
        let mut comp = Composition::default();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::element_list => self.element_list(c, false, &mut comp),
                Rule::public_section => {
                    for x in c.into_inner() {
                        if x.as_rule() == Rule::element_list {
                            self.element_list(x, false, &mut comp)
                        }
                    }
                }
                Rule::protected_section => {
                    for x in c.into_inner() {
                        if x.as_rule() == Rule::element_list {
                            self.element_list(x, true, &mut comp)
                        }
                    }
                }
                Rule::equation_section => {
                    let mut initial = false;
                    let mut equations = Vec::new();
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_INITIAL => initial = true,
                            Rule::equation => equations.push(self.equation(x)),
                            _ => {}
                        }
                    }
                    comp.equations.push(EquationSection { initial, equations });
                }
                Rule::algorithm_section => {
                    let span = self.span(&c);
                    let mut initial = false;
                    let mut statements = Vec::new();
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_INITIAL => initial = true,
                            Rule::statement => statements.push(self.statement(x)),
                            _ => {}
                        }
                    }
                    comp.algorithms.push(AlgorithmSection {
                        initial,
                        statements,
                        span,
                    });
                }
                Rule::external_clause => comp.external = Some(Box::new(self.external_clause(c))),
                Rule::class_modification => comp.annotations.push(self.class_modification(c)),
                _ => {}
            }
        }
        comp
    }

    pub(super) fn external_clause(&self, p: P) -> External {
        let span = self.span(&p);
        let mut ext = External {
            language: None,
            function: None,
            output: None,
            args: Vec::new(),
            span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::string => ext.language = Some(unescape(c.as_str())),
                Rule::external_function_call => {
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::component_reference => {
                                ext.output = Some(self.component_reference(x))
                            }
                            Rule::ident => ext.function = Some(self.ident(x)),
                            Rule::expression_list => {
                                ext.args = x.into_inner().map(|e| self.expression(e)).collect()
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        ext
    }

    pub(super) fn element_list(&self, p: P, protected: bool, comp: &mut Composition) {
        for e in p.into_inner() {
            if e.as_rule() == Rule::element {
                self.element(e, protected, comp);
            }
        }
    }

    pub(super) fn element(&self, p: P, protected: bool, comp: &mut Composition) {
        let span = self.span(&p);
        let mut redeclare = false;
        let mut final_ = false;
        let mut inner_outer = false;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::K_REDECLARE => redeclare = true,
                Rule::K_FINAL => final_ = true,
                Rule::K_INNER | Rule::K_OUTER => inner_outer = true,
                Rule::import_clause => comp.elements.push(Element::Import(self.import(c))),
                Rule::extends_clause => {
                    let mut it = c.into_inner();
                    let _kw = it.next();
                    let base = self.type_specifier(it.next().expect("extends base"));
                    let modification = it
                        .find(|x| x.as_rule() == Rule::class_modification)
                        .map(|m| self.class_modification(m));
                    comp.elements.push(Element::Extends(Extends {
                        base,
                        modification,
                        protected,
                        span,
                    }))
                }
                Rule::annotation_element => {
                    if let Some(m) = c.into_inner().next().and_then(|a| {
                        a.into_inner()
                            .find(|x| x.as_rule() == Rule::class_modification)
                    }) {
                        comp.annotations.push(self.class_modification(m));
                    }
                }
                Rule::element_body => {
                    let mut replaceable = false;
                    let mut constraint = None;
                    let mut body = None;
                    let mut description = None;
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_REPLACEABLE => replaceable = true,
                            Rule::constraining_clause => constraint = Some(self.constraint(x)),
                            Rule::comment => description = self.comment(x),
                            Rule::class_definition | Rule::component_clause => body = Some(x),
                            _ => {}
                        }
                    }
                    let body = body.expect("element body holds a class or component");
                    if body.as_rule() == Rule::class_definition {
                        let mut def = self.class_definition(body);
                        if def.description.is_none() {
                            def.description = description;
                        }
                        comp.elements.push(Element::Class(ClassElement {
                            def,
                            replaceable,
                            redeclare,
                            final_,
                            protected,
                            constrainedby: constraint,
                        }));
                    } else {
                        for mut comp_decl in self.component_clause(body) {
                            comp_decl.protected = protected;
                            comp_decl.replaceable = replaceable;
                            comp_decl.redeclare = redeclare;
                            comp_decl.final_ = final_;
                            comp_decl.inner_outer = inner_outer;
                            comp_decl.constrainedby = constraint.clone();
                            if comp_decl.description.is_none() {
                                comp_decl.description = description.clone();
                            }
                            comp.elements.push(Element::Component(comp_decl));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn constraint(&self, p: P) -> Constraint {
        let mut base = None;
        let mut modification = None;
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::type_specifier => base = Some(self.type_specifier(x)),
                Rule::class_modification => modification = Some(self.class_modification(x)),
                _ => {}
            }
        }
        Constraint {
            base: base.expect("constrainedby names a class"),
            modification,
        }
    }

    pub(super) fn import(&self, p: P) -> Import {
        let body = p
            .into_inner()
            .find(|x| {
                matches!(
                    x.as_rule(),
                    Rule::import_alias
                        | Rule::import_list
                        | Rule::import_wildcard
                        | Rule::import_name
                )
            })
            .expect("import clause has a body");
        match body.as_rule() {
            Rule::import_alias => {
                let mut it = body.into_inner();
                let alias = self.ident(it.next().expect("alias"));
                let target = self.name(it.next().expect("target"));
                Import::Named { alias, target }
            }
            Rule::import_wildcard => Import::Wildcard {
                package: self.name(body.into_inner().next().expect("package")),
            },
            Rule::import_list => {
                let mut it = body.into_inner();
                let package = self.name(it.next().expect("package"));
                Import::List {
                    package,
                    names: it.map(|i| self.ident(i)).collect(),
                }
            }
            _ => {
                let target = self.name(body.into_inner().next().expect("name"));
                let alias = target.parts.last().expect("name has parts").clone();
                Import::Named { alias, target }
            }
        }
    }

    pub(super) fn type_prefix(&self, p: P) -> TypePrefix {
        let mut t = TypePrefix::default();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::K_FLOW => t.flow = true,
                Rule::K_STREAM => t.stream = true,
                Rule::K_DISCRETE => t.variability = VariabilityPrefix::Discrete,
                Rule::K_PARAMETER => t.variability = VariabilityPrefix::Parameter,
                Rule::K_CONSTANT => t.variability = VariabilityPrefix::Constant,
                Rule::K_INPUT => t.causality = CausalityPrefix::Input,
                Rule::K_OUTPUT => t.causality = CausalityPrefix::Output,
                _ => {}
            }
        }
        t
    }

    pub(super) fn component_clause(&self, p: P) -> Vec<Component> {
        let mut prefix = TypePrefix::default();
        let mut type_name = None;
        let mut type_dims = Vec::new();
        let mut out = Vec::new();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::type_prefix => prefix = self.type_prefix(x),
                Rule::type_specifier => type_name = Some(self.type_specifier(x)),
                Rule::array_subscripts => type_dims = self.subscripts(x),
                Rule::component_list => {
                    for d in x.into_inner() {
                        let tn = type_name.clone().expect("type before declarations");
                        out.push(self.component_declaration(d, prefix, tn, type_dims.clone()));
                    }
                }
                _ => {}
            }
        }
        out
    }

    pub(super) fn component_declaration(
        &self,
        p: P,
        prefix: TypePrefix,
        type_name: Name,
        type_dims: Vec<Subscript>,
    ) -> Component {
        let span = self.span(&p);
        let mut c = Component {
            prefix,
            type_name,
            type_dims,
            name: Ident {
                name: String::new(),
                span,
            },
            dims: Vec::new(),
            modification: None,
            condition: None,
            description: None,
            protected: false,
            replaceable: false,
            redeclare: false,
            final_: false,
            inner_outer: false,
            constrainedby: None,
            span,
        };
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::declaration => {
                    for y in x.into_inner() {
                        match y.as_rule() {
                            Rule::ident => c.name = self.ident(y),
                            Rule::array_subscripts => c.dims = self.subscripts(y),
                            Rule::modification => c.modification = Some(self.modification(y)),
                            _ => {}
                        }
                    }
                }
                Rule::condition_attribute => {
                    c.condition = x
                        .into_inner()
                        .find(|y| y.as_rule() == Rule::expression)
                        .map(|e| self.expression(e))
                }
                Rule::comment => c.description = self.comment(x),
                _ => {}
            }
        }
        c
    }

    pub(super) fn modification(&self, p: P) -> Modification {
        let span = self.span(&p);
        let mut m = Modification {
            class_mod: None,
            binding: None,
            span,
        };
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::class_modification => m.class_mod = Some(self.class_modification(x)),
                Rule::expression => m.binding = Some(self.expression(x)),
                _ => {}
            }
        }
        m
    }

    pub(super) fn class_modification(&self, p: P) -> ClassMod {
        let span = self.span(&p);
        let args = p.into_inner().map(|a| self.argument(a)).collect();
        ClassMod { args, span }
    }

    pub(super) fn argument(&self, p: P) -> ModArg {
        let span = self.span(&p);
        let inner = p.into_inner().next().expect("argument has a body");
        let mut each = false;
        let mut final_ = false;
        let redeclare = inner.as_rule() == Rule::element_redeclaration;
        let mut result = None;
        for x in inner.into_inner() {
            match x.as_rule() {
                Rule::K_EACH => each = true,
                Rule::K_FINAL => final_ = true,
                Rule::element_modification => {
                    let mut path = None;
                    let mut modification = None;
                    for y in x.into_inner() {
                        match y.as_rule() {
                            Rule::name => path = Some(self.name(y)),
                            Rule::modification => modification = Some(self.modification(y)),
                            _ => {}
                        }
                    }
                    result = Some(ModArg::Modify {
                        each,
                        final_,
                        path: path.expect("modified name"),
                        modification,
                        span,
                    });
                }
                Rule::element_replaceable
                | Rule::short_class_definition
                | Rule::component_clause1 => {
                    let element = self.redeclared(x);
                    result = Some(if redeclare {
                        ModArg::Redeclare {
                            each,
                            final_,
                            element,
                            span,
                        }
                    } else {
                        // `replaceable` inside a modification without `redeclare`:
                        // treat as a redeclaration (it only makes sense as one).
                        ModArg::Redeclare {
                            each,
                            final_,
                            element,
                            span,
                        }
                    });
                }
                _ => {}
            }
        }
        result.expect("argument holds a modification or redeclaration")
    }

    pub(super) fn redeclared(&self, p: P) -> Redeclared {
        match p.as_rule() {
            Rule::element_replaceable => {
                let x = p
                    .into_inner()
                    .find(|y| {
                        matches!(
                            y.as_rule(),
                            Rule::short_class_definition | Rule::component_clause1
                        )
                    })
                    .expect("replaceable body");
                self.redeclared(x)
            }
            Rule::short_class_definition => {
                let span = self.span(&p);
                let mut kind = ClassKind::Class;
                let mut result = None;
                for y in p.into_inner() {
                    match y.as_rule() {
                        Rule::class_kind => kind = self.class_kind(&y),
                        Rule::short_class_specifier => {
                            let (name, short, description) = self.short_class_specifier(y);
                            result = Some(ClassDef {
                                name,
                                kind,
                                partial: false,
                                encapsulated: false,
                                description,
                                body: ClassBody::Short(short),
                                span,
                            });
                        }
                        _ => {}
                    }
                }
                Redeclared::Class(Box::new(result.expect("short class")))
            }
            Rule::component_clause1 => {
                let mut prefix = TypePrefix::default();
                let mut type_name = None;
                let mut comp = None;
                for y in p.into_inner() {
                    match y.as_rule() {
                        Rule::type_prefix => prefix = self.type_prefix(y),
                        Rule::type_specifier => type_name = Some(self.type_specifier(y)),
                        Rule::component_declaration1 => {
                            let tn = type_name.clone().expect("type before declaration");
                            comp = Some(self.component_declaration(y, prefix, tn, Vec::new()));
                        }
                        _ => {}
                    }
                }
                Redeclared::Component(Box::new(comp.expect("redeclared component")))
            }
            r => unreachable!("redeclared element {r:?}"),
        }
    }

    // ------------------------------------------------------------ equations

    pub(super) fn equation(&self, p: P) -> Equation {
        let span = self.span(&p);
        let body = p.into_inner().next().expect("equation body");
        let kind = match body.as_rule() {
            Rule::simple_equation => {
                let mut it = body.into_inner();
                let lhs = self.expression(it.next().expect("lhs"));
                match it.next() {
                    Some(r) => EquationKind::Simple {
                        lhs,
                        rhs: self.expression(r),
                    },
                    None => match lhs.kind {
                        ExprKind::Call { func, args } => EquationKind::Call { func, args },
                        _ => {
                            self.errors.borrow_mut().push(
                                Diagnostic::error(DiagnosticKind::Syntax, lhs.span, "expected `=`: an equation is `lhs = rhs`")
                                    .with_label("an expression alone is not an equation")
                                    .with_hint("write `expression = expression;`, or a call such as `assert(...)`"),
                            );
                            EquationKind::Call {
                                func: ComponentRef {
                                    parts: vec![],
                                    global: false,
                                    span: lhs.span,
                                },
                                args: vec![],
                            }
                        }
                    },
                }
            }
            Rule::connect_clause => {
                let mut refs = body
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::component_reference)
                    .map(|x| self.component_reference(x));
                let a = refs.next().expect("connect a");
                let b = refs.next().expect("connect b");
                EquationKind::Connect { a, b }
            }
            Rule::if_equation => {
                let (branches, else_) = self.conditional_blocks(body, |b, x| b.equations(x));
                EquationKind::If { branches, else_ }
            }
            Rule::for_equation => {
                let mut indices = Vec::new();
                let mut eqs = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::for_indices => indices = self.for_indices(x),
                        Rule::equation_block => eqs = self.equations(x),
                        _ => {}
                    }
                }
                EquationKind::For { indices, body: eqs }
            }
            Rule::when_equation => {
                let (branches, _) = self.conditional_blocks(body, |b, x| b.equations(x));
                EquationKind::When { branches }
            }
            r => unreachable!("equation alternative {r:?}"),
        };
        Equation { kind, span }
    }

    pub(super) fn equations(&self, p: P) -> Vec<Equation> {
        p.into_inner()
            .filter(|x| x.as_rule() == Rule::equation)
            .map(|x| self.equation(x))
            .collect()
    }

    pub(super) fn statements(&self, p: P) -> Vec<Statement> {
        p.into_inner()
            .filter(|x| x.as_rule() == Rule::statement)
            .map(|x| self.statement(x))
            .collect()
    }

    /// `if`/`when` forms: condition, block pairs, and an optional else block.
    #[allow(clippy::type_complexity)]
    pub(super) fn conditional_blocks<T>(
        &self,
        p: P,
        block: impl Fn(&Self, P) -> Vec<T>,
    ) -> (Vec<(Expr, Vec<T>)>, Vec<T>) {
        let mut branches = Vec::new();
        let mut else_ = Vec::new();
        let mut cond = None;
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::expression => cond = Some(self.expression(x)),
                Rule::equation_block | Rule::statement_block => {
                    let c = cond.take().expect("condition before block");
                    branches.push((c, block(self, x)));
                }
                Rule::else_equation_block | Rule::else_statement_block => else_ = block(self, x),
                _ => {}
            }
        }
        (branches, else_)
    }

    pub(super) fn for_indices(&self, p: P) -> Vec<ForIndex> {
        p.into_inner()
            .map(|fi| {
                let mut it = fi.into_inner();
                let name = self.ident(it.next().expect("index name"));
                let range = it
                    .find(|x| x.as_rule() == Rule::expression)
                    .map(|e| self.expression(e));
                ForIndex { name, range }
            })
            .collect()
    }

    pub(super) fn statement(&self, p: P) -> Statement {
        let span = self.span(&p);
        let body = p.into_inner().next().expect("statement body");
        let kind = match body.as_rule() {
            Rule::K_BREAK => StatementKind::Break,
            Rule::K_RETURN => StatementKind::Return,
            Rule::ref_statement => {
                let mut it = body.into_inner();
                let target = self.component_reference(it.next().expect("target"));
                let rest = it.next().expect("value or arguments");
                if rest.as_rule() == Rule::assign_value {
                    let value = self.expression(rest.into_inner().next().expect("value"));
                    StatementKind::Assign { target, value }
                } else {
                    StatementKind::Call {
                        func: target,
                        args: self.call_args(rest),
                    }
                }
            }
            Rule::tuple_assignment => {
                let mut it = body.into_inner();
                let targets = self.output_list(it.next().expect("targets"));
                let func = self.component_reference(it.next().expect("function"));
                let args = self.call_args(it.next().expect("args"));
                StatementKind::TupleAssign {
                    targets,
                    func,
                    args,
                }
            }
            Rule::if_statement => {
                let (branches, else_) = self.conditional_blocks(body, |b, x| b.statements(x));
                StatementKind::If { branches, else_ }
            }
            Rule::for_statement => {
                let mut indices = Vec::new();
                let mut stmts = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::for_indices => indices = self.for_indices(x),
                        Rule::statement_block => stmts = self.statements(x),
                        _ => {}
                    }
                }
                StatementKind::For {
                    indices,
                    body: stmts,
                }
            }
            Rule::while_statement => {
                let mut cond = None;
                let mut stmts = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::expression => cond = Some(self.expression(x)),
                        Rule::statement_block => stmts = self.statements(x),
                        _ => {}
                    }
                }
                StatementKind::While {
                    cond: cond.expect("while condition"),
                    body: stmts,
                }
            }
            Rule::when_statement => {
                let (branches, _) = self.conditional_blocks(body, |b, x| b.statements(x));
                StatementKind::When { branches }
            }
            r => unreachable!("statement alternative {r:?}"),
        };
        Statement { kind, span }
    }

    pub(super) fn output_list(&self, p: P) -> Vec<Option<Expr>> {
        // `(a, , c)`: commas are not pairs, so rebuild the slots from the text
        // positions of the expressions between them.
        let text = p.as_str();
        let base = p.as_span().start();
        let exprs: Vec<P> = p.into_inner().collect();
        let mut slots = Vec::new();
        let mut cursor = 0usize;
        let mut iter = exprs.into_iter().peekable();
        loop {
            // The next slot ends at the next top-level comma.
            let next_expr_start = iter.peek().map(|e| e.as_span().start() - base);
            let comma = find_top_level_comma(text, cursor);
            match (next_expr_start, comma) {
                (Some(s), Some(c)) if s < c => {
                    slots.push(Some(self.expression(iter.next().expect("peeked"))));
                    cursor = c + 1;
                }
                (Some(_), Some(c)) => {
                    slots.push(None);
                    cursor = c + 1;
                }
                (Some(_), None) => {
                    slots.push(Some(self.expression(iter.next().expect("peeked"))));
                    break;
                }
                (None, Some(c)) => {
                    slots.push(None);
                    cursor = c + 1;
                }
                (None, None) => {
                    if !slots.is_empty() {
                        slots.push(None);
                    }
                    break;
                }
            }
        }
        slots
    }
}

/// Byte index of the next comma at nesting depth 0 at or after `from`.
pub(super) fn find_top_level_comma(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut in_string = false;
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_string = false;
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth == 0 => return Some(i),
                _ => {}
            }
        }
        i += 1;
    }
    None
}
