//! Modifiers: the merged form of `(a = 1, b(start = 2), redeclare C c)`.
//!
//! Modelica's rule (MLS 7.2.4): an outer modifier overrides an inner one for
//! the same element; a `final` element cannot be modified again; modifiers of
//! an array component apply element-wise unless marked `each`.

use super::InstId;
use super::library::ClassId;
use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::syntax::ast::{self};
use std::rc::Rc;

/// Where a modifier's expressions are evaluated: the instance that wrote them
/// (for component names) and the class scope (for classes and constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    pub inst: Option<InstId>,
    pub class: Option<ClassId>,
}

/// A binding `= expr`, with the scope it is evaluated in. `index` selects one
/// element of the value when an array modifier is split over array elements.
#[derive(Clone, Debug)]
pub struct Binding {
    pub expr: Rc<ast::Expr>,
    pub scope: Scope,
    pub index: Vec<usize>,
}

#[derive(Clone, Debug)]
pub struct Redecl {
    pub element: Rc<ast::Redeclared>,
    /// `redeclare final ...`: no later modifier may redeclare it again.
    pub final_: bool,
    pub scope: Scope,
    pub span: Span,
}

impl Redecl {
    pub fn name(&self) -> &str {
        match &*self.element {
            ast::Redeclared::Component(c) => &c.name.name,
            ast::Redeclared::Class(c) => &c.name.name,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Modifier {
    pub binding: Option<Binding>,
    pub each: bool,
    pub final_: bool,
    pub subs: Vec<SubMod>,
    pub redeclares: Vec<Redecl>,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct SubMod {
    pub name: String,
    pub modifier: Modifier,
    pub span: Span,
}

impl Modifier {
    pub fn is_empty(&self) -> bool {
        self.binding.is_none() && self.subs.is_empty() && self.redeclares.is_empty()
    }

    /// From the text after a declared name: `(start = 1) = 2`.
    pub fn from_modification(
        m: Option<&ast::Modification>,
        scope: Scope,
    ) -> Result<Modifier, Diagnostic> {
        let Some(m) = m else {
            return Ok(Modifier::default());
        };
        let mut out = match &m.class_mod {
            Some(cm) => Modifier::from_class_mod(cm, scope)?,
            None => Modifier::default(),
        };
        if let Some(b) = &m.binding {
            out.binding = Some(Binding {
                expr: Rc::new(b.clone()),
                scope,
                index: Vec::new(),
            });
        }
        out.span = Some(m.span);
        Ok(out)
    }

    /// From a class modification `(a = 1, b.c = 2, redeclare ...)`.
    pub fn from_class_mod(cm: &ast::ClassMod, scope: Scope) -> Result<Modifier, Diagnostic> {
        let mut out = Modifier {
            span: Some(cm.span),
            ..Modifier::default()
        };
        for arg in &cm.args {
            match arg {
                ast::ModArg::Modify {
                    each,
                    final_,
                    path,
                    modification,
                    span,
                } => {
                    let mut inner = Modifier::from_modification(modification.as_ref(), scope)?;
                    inner.each = *each;
                    inner.final_ = *final_;
                    // `a.b.c = 1` nests as a(b(c = 1)).
                    let parts = &path.parts;
                    for (k, p) in parts.iter().enumerate().skip(1).rev() {
                        let _ = k;
                        inner = Modifier {
                            subs: vec![SubMod {
                                name: p.name.clone(),
                                modifier: inner,
                                span: p.span,
                            }],
                            span: Some(*span),
                            ..Modifier::default()
                        };
                    }
                    out.add_sub(SubMod {
                        name: parts[0].name.clone(),
                        modifier: inner,
                        span: parts[0].span,
                    })?;
                }
                ast::ModArg::Redeclare {
                    element,
                    span,
                    final_,
                    ..
                } => out.redeclares.push(Redecl {
                    element: Rc::new(element.clone()),
                    final_: *final_,
                    scope,
                    span: *span,
                }),
            }
        }
        Ok(out)
    }

    fn add_sub(&mut self, s: SubMod) -> Result<(), Diagnostic> {
        if let Some(existing) = self.subs.iter_mut().find(|x| x.name == s.name) {
            // `a(x = 1), a(y = 2)` written separately combine; the same value
            // set twice is an error (MLS 7.2.6).
            if s.modifier.binding.is_some() && existing.modifier.binding.is_some() {
                return Err(Diagnostic::error(
                    DiagnosticKind::DuplicateName,
                    s.span,
                    format!("`{}` is modified twice in the same modification", s.name),
                )
                .with_secondary(existing.span, "first modified here")
                .with_hint("remove one of the two modifications"));
            }
            let merged = merge(&s.modifier, &existing.modifier);
            existing.modifier = merged;
        } else {
            self.subs.push(s);
        }
        Ok(())
    }

    pub fn sub(&self, name: &str) -> Option<&SubMod> {
        self.subs.iter().find(|s| s.name == name)
    }

    pub fn redeclare(&self, name: &str) -> Option<&Redecl> {
        self.redeclares.iter().find(|r| r.name() == name)
    }

    /// The modifier for one element of an array component: every binding
    /// not under `each` selects element `idx` of its value.
    pub fn for_element(&self, idx: &[usize]) -> Modifier {
        let mut m = self.clone();
        if self.each {
            // `each a(...)` on the array a itself: every element takes it.
            m.each = false;
            return m;
        }
        if let Some(b) = &mut m.binding {
            b.index.extend_from_slice(idx);
        }
        for s in &mut m.subs {
            s.modifier = s.modifier.split(idx, true);
        }
        m
    }

    /// `each` belongs to the component whose modification holds it (MLS
    /// 7.2.5): in `A a[3](each v = {1, 2})` it is spent on a's array (every
    /// a[i].v, an array of 2, is {1, 2}); in `B b[2](a(each v = 1))` it
    /// is a's, untouched while b's array is split. `direct`: this modifier
    /// is one of the split component's own element modifications.
    fn split(&self, idx: &[usize], direct: bool) -> Modifier {
        if self.each {
            let mut m = self.clone();
            if direct {
                m.each = false;
            }
            return m;
        }
        let mut m = self.clone();
        if let Some(b) = &mut m.binding {
            b.index.extend_from_slice(idx);
        }
        for s in &mut m.subs {
            s.modifier = s.modifier.split(idx, false);
        }
        m
    }
}

/// `outer` applied over `inner`: outer bindings win, sub-modifiers merge by
/// name, outer redeclarations come first.
pub fn merge(outer: &Modifier, inner: &Modifier) -> Modifier {
    if outer.is_empty() && outer.span.is_none() {
        return inner.clone();
    }
    if inner.is_empty() && inner.span.is_none() {
        return outer.clone();
    }
    // `each` belongs to the binding it qualifies: the outer one wins with
    // its own flag (`x(start = {1, 2})` over `each start = a` splits).
    let each = if outer.binding.is_some() {
        outer.each
    } else {
        outer.each || inner.each
    };
    let mut m = Modifier {
        binding: outer.binding.clone().or_else(|| inner.binding.clone()),
        each,
        final_: outer.final_ || inner.final_,
        subs: Vec::new(),
        redeclares: outer.redeclares.clone(),
        span: outer.span.or(inner.span),
    };
    m.redeclares.extend(inner.redeclares.iter().cloned());
    for s in &outer.subs {
        match inner.sub(&s.name) {
            Some(i) => m.subs.push(SubMod {
                name: s.name.clone(),
                modifier: merge(&s.modifier, &i.modifier),
                span: s.span,
            }),
            None => m.subs.push(s.clone()),
        }
    }
    for s in &inner.subs {
        if outer.sub(&s.name).is_none() {
            m.subs.push(s.clone());
        }
    }
    m
}

/// Checks that an outer modifier does not change a `final` inner one.
pub fn check_final(outer: &Modifier, inner: &Modifier, name: &str) -> Result<(), Diagnostic> {
    if inner.final_
        && let (Some(ob), Some(ib)) = (&outer.binding, &inner.binding)
    {
        return Err(Diagnostic::error(
            DiagnosticKind::Modifier,
            ob.expr.span,
            format!("`{name}` is final and cannot be modified"),
        )
        .with_label("modification of a final element (MLS 7.2.6)")
        .with_secondary(ib.expr.span, "made final here"));
    }
    for r in &outer.redeclares {
        if let Some(i) = inner.redeclares.iter().find(|i| i.name() == r.name())
            && (i.final_ || final_element(&i.element))
        {
            return Err(Diagnostic::error(
                DiagnosticKind::Modifier,
                r.span,
                format!(
                    "`{}` was redeclared final and cannot be redeclared again",
                    r.name()
                ),
            )
            .with_label("redeclaration of a final element (MLS 7.3.3)")
            .with_secondary(i.span, "made final here"));
        }
    }
    for s in &outer.subs {
        if let Some(i) = inner.sub(&s.name) {
            check_final(&s.modifier, &i.modifier, &s.name)?;
        }
    }
    Ok(())
}

/// A redeclared component written `final` (`redeclare final Real p`).
fn final_element(e: &ast::Redeclared) -> bool {
    match e {
        ast::Redeclared::Component(c) => c.final_,
        ast::Redeclared::Class(_) => false,
    }
}
