//! The Modelica Standard Library's interpolation tables without C: its
//! external objects `Modelica.Blocks.Types.ExternalCombiTable1D` and
//! `ExternalCombiTable2D` (classes that extend `ExternalObject`, MLS
//! 12.9.7) are made while flattening, from their constructor's arguments,
//! and the `external "C"` functions of `ModelicaStandardTables` that read
//! them become calls of the embedded standard library's own interpolation
//! (`stdlib/Tables`: `interpolate1D`, `interpolate2D`), on the table's
//! elements.
//!
//! So a table object is a compile-time value: its matrix (parameters
//! stay parameters), the columns it serves, and the smoothness and
//! extrapolation, which must be known when the model is compiled. The
//! matrix comes inline (`table = [...]`) or from a text file in the MSL's
//! format (`#1`, then `double name(rows, columns)` and the numbers),
//! named relative to the model's file. What the native functions do not
//! cover (time tables, Akima and Steffen splines, MAT files) is refused
//! with a diagnostic naming the alternative.

use super::*;
use crate::instantiate::library::ClassId;

/// The prefix of the C functions given native meaning here.
pub(super) const PREFIX: &str = "ModelicaStandardTables_";

/// A table object, made by its constructor while flattening.
#[derive(Clone, Debug)]
pub(in crate::instantiate) enum TableObject {
    /// `ExternalCombiTable1D`: abscissa in column 1; `columns` are the
    /// (1-based) table columns that the functions' `icol` = 1, 2, ...
    /// select.
    OneD {
        table: Value,
        columns: Vec<usize>,
        smoothness: i64,
        extrapolation: i64,
    },
    /// `ExternalCombiTable2D`: u1's grid in column 1, u2's in row 1.
    TwoD {
        table: Value,
        smoothness: i64,
        extrapolation: i64,
    },
    /// `ExternalCombiTimeTable`: time in column 1 (a repeated time is a
    /// jump); `start` and `shift` are scaled times (parameters).
    Time {
        table: Value,
        columns: Vec<usize>,
        start: Value,
        shift: Value,
        constant_segments: bool,
        extrapolation: i64,
        /// The MSL's `TimeEvents`: 1 at every point, 2 at jumps, 3 none.
        time_events: i64,
    },
}

/// The MSL's `Modelica.Blocks.Types.Smoothness` literals in order (its
/// enumeration values are 1, 2, ...), and the embedded `Tables.Smoothness`
/// value each maps to (`None`: not provided).
const SMOOTHNESS: [(&str, Option<i64>); 6] = [
    ("LinearSegments", Some(1)),
    ("ContinuousDerivative", None),
    ("ConstantSegments", None),
    ("MonotoneContinuousDerivative1", Some(2)),
    ("MonotoneContinuousDerivative2", None),
    ("ModifiedContinuousDerivative", None),
];

/// Column `c` (0-based) of a matrix value, as a vector.
fn table_column(table: &Value, c: usize) -> Value {
    Value {
        ty: ScalarType::Real,
        dims: vec![table.dims[0]],
        elems: table
            .elems
            .iter()
            .skip(c)
            .step_by(table.dims[1])
            .copied()
            .collect(),
    }
}

impl Flattener<'_> {
    /// Where an argument is evaluated: the caller's context, or (a default,
    /// which may name only constants) the class around the function.
    fn arg_ctx(&self, caller: bool, ctx: &Ctx, function: ClassId) -> Ctx {
        if caller {
            ctx.clone()
        } else {
            Ctx::model(Scope {
                inst: None,
                class: self.lib.entry(function).parent,
            })
        }
    }

    /// Whether `class` is an external-object class (it extends
    /// `ExternalObject`).
    pub(in crate::instantiate) fn is_external_object(
        &mut self,
        class: ClassId,
    ) -> Result<bool, Diagnostic> {
        let Some(def) = self.lib.def(class)? else {
            return Ok(false);
        };
        let ast::ClassBody::Long(comp) = &def.body else {
            return Ok(false);
        };
        Ok(comp.elements.iter().any(|e| {
            matches!(e, ast::Element::Extends(x)
                if x.base.parts.len() == 1 && x.base.parts[0].name == "ExternalObject")
        }))
    }

    /// Makes the object of external-object class `class` that `binding`
    /// (a call of its constructor) describes.
    pub(in crate::instantiate) fn construct_table_object(
        &mut self,
        class: ClassId,
        binding: &ast::Expr,
        ctx: &Ctx,
    ) -> Result<TableObject, Diagnostic> {
        let full = self.lib.entry(class).full_name.clone();
        let ExprKind::Call { args, .. } = &binding.kind else {
            return Err(Diagnostic::error(
                DiagnosticKind::Modifier,
                binding.span,
                format!(
                    "an external object of `{full}` must be bound to a call of its constructor"
                ),
            )
            .with_hint(format!(
                "write `{full}(...)` with the constructor's arguments"
            )));
        };
        let Some(ctor) = self.lib.member_class(class, "constructor")? else {
            return Err(Diagnostic::error(
                DiagnosticKind::UnresolvedName,
                binding.span,
                format!("`{full}` has no function `constructor`"),
            ));
        };
        let c_name = self.external_c_name(ctor).unwrap_or_default();
        let kind = c_name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('_').next())
            .unwrap_or("");
        if !matches!(kind, "CombiTable1D" | "CombiTable2D" | "CombiTimeTable") {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                binding.span,
                format!("the external object `{full}` (C function `{c_name}`) is not supported"),
            )
            .with_hint("rmoc provides the MSL's interpolation tables (CombiTable1D, CombiTable2D, CombiTimeTable) as external objects, and no other"));
        }
        let bound = self.bind_inputs(ctor, args, &full)?;
        let arg = |name: &str| bound.iter().find(|(n, _, _)| n == name);
        let string_of = |f: &mut Self, name: &str| -> Result<String, Diagnostic> {
            match arg(name) {
                Some((_, e, c)) => {
                    let c = f.arg_ctx(*c, ctx, ctor);
                    f.eval_string(e, &c)
                }
                None => Ok(String::new()),
            }
        };
        let table_name = string_of(self, "tableName")?;
        let file_name = string_of(self, "fileName")?;
        let mut table = None;
        if let Some((_, e, c)) = arg("table") {
            let v = self.eval_expr(e, &self.arg_ctx(*c, ctx, ctor))?;
            if !v.elems.is_empty() {
                table = Some((v, e.span));
            }
        }
        let uses_file = !file_name.is_empty() && file_name != "NoName";
        // A file, when named, wins over the matrix (as the MSL's C code).
        let (table, span) = match (table, uses_file) {
            (_, true) => {
                let span = arg("fileName").map_or(binding.span, |(_, e, _)| e.span);
                (
                    self.read_msl_table_file(&file_name, &table_name, span)?,
                    span,
                )
            }
            (Some(t), false) => t,
            (None, false) => {
                return Err(Diagnostic::error(
                    DiagnosticKind::Table,
                    binding.span,
                    "the table has no data",
                )
                .with_hint("give `table = [...]`, or `fileName` and `tableName`"));
            }
        };
        if table.dims.len() != 2 {
            return Err(Diagnostic::error(
                DiagnosticKind::Table,
                span,
                format!(
                    "a table must be a matrix, not of shape {}",
                    shape_text(&table.dims)
                ),
            ));
        }
        let (rows, cols) = (table.dims[0], table.dims[1]);
        let smoothness = self.table_enum(&bound, "smoothness", ctor, ctx, 1)?;
        let Some(&(literal, mapped)) = usize::try_from(smoothness.0 - 1)
            .ok()
            .and_then(|k| SMOOTHNESS.get(k))
        else {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                smoothness.1,
                "not a Smoothness value",
            ));
        };
        let constant_segments = literal == "ConstantSegments";
        let Some(smooth) = mapped.or(constant_segments
            .then_some(1)
            .filter(|_| kind == "CombiTimeTable"))
        else {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                smoothness.1,
                format!("table smoothness `{literal}` is not supported"),
            )
            .with_hint("use Smoothness.LinearSegments or Smoothness.MonotoneContinuousDerivative1 (a monotone cubic)"));
        };
        let extrapolation = self.table_enum(&bound, "extrapolation", ctor, ctx, 2)?.0;
        if kind == "CombiTimeTable" {
            if smooth != 1 {
                return Err(Diagnostic::error(
                    DiagnosticKind::Unsupported,
                    smoothness.1,
                    format!("a time table's smoothness `{literal}` is not supported"),
                )
                .with_hint("use Smoothness.LinearSegments or Smoothness.ConstantSegments"));
            }
            if rows == 0 || cols < 2 {
                return Err(Diagnostic::error(
                    DiagnosticKind::Table,
                    span,
                    format!(
                        "a time table needs at least one row and two columns (time in column 1); this one is {rows} x {cols}"
                    ),
                ));
            }
            let times = table_column(&table, 0).elems;
            self.assert_ordered(&times, RelOp::Ge, "the time table's times (column 1)", span);
            let scalar = |f: &mut Self, name: &str| -> Result<Value, Diagnostic> {
                match arg(name) {
                    Some((_, e, c)) => {
                        let c = f.arg_ctx(*c, ctx, ctor);
                        f.eval_expr(e, &c)
                    }
                    None => Ok(Value::scalar(ScalarType::Real, f.arena.zero())),
                }
            };
            let start = scalar(self, "startTime")?;
            let shift = scalar(self, "shiftTime")?;
            let time_events = self.table_enum(&bound, "timeEvents", ctor, ctx, 1)?.0;
            let columns = self.table_columns(
                arg("columns").map(|(_, e, c)| (e.clone(), *c)),
                ctx,
                ctor,
                cols,
            )?;
            return Ok(TableObject::Time {
                table,
                columns,
                start,
                shift,
                constant_segments,
                extrapolation,
                time_events,
            });
        }
        if kind == "CombiTable2D" {
            if rows >= 2 && cols >= 2 {
                let grid1: Vec<ExprId> = (1..rows).map(|r| table.elems[r * cols]).collect();
                let grid2 = table.elems[1..cols].to_vec();
                self.assert_ordered(
                    &grid1,
                    RelOp::Gt,
                    "the 2-D table's column 1 (the grid of u1)",
                    span,
                );
                self.assert_ordered(
                    &grid2,
                    RelOp::Gt,
                    "the 2-D table's row 1 (the grid of u2)",
                    span,
                );
            }
            if rows < 2 || cols < 2 {
                return Err(Diagnostic::error(
                    DiagnosticKind::Table,
                    span,
                    format!(
                        "a 2-D table needs at least 2 rows and 2 columns (its grids in row 1 and column 1); this one is {rows} x {cols}"
                    ),
                ));
            }
            return Ok(TableObject::TwoD {
                table,
                smoothness: smooth,
                extrapolation,
            });
        }
        if rows == 0 || cols < 2 {
            return Err(Diagnostic::error(
                DiagnosticKind::Table,
                span,
                format!(
                    "a 1-D table needs at least one row and two columns (the abscissa in column 1); this one is {rows} x {cols}"
                ),
            ));
        }
        let abscissa = table_column(&table, 0).elems;
        self.assert_ordered(
            &abscissa,
            RelOp::Gt,
            "the table's abscissa (column 1)",
            span,
        );
        let columns = self.table_columns(
            arg("columns").map(|(_, e, c)| (e.clone(), *c)),
            ctx,
            ctor,
            cols,
        )?;
        Ok(TableObject::OneD {
            table,
            columns,
            smoothness: smooth,
            extrapolation,
        })
    }

    /// The table columns a constructor's `columns` argument names (all but
    /// the first when it has none).
    fn table_columns(
        &mut self,
        given: Option<(ast::Expr, bool)>,
        ctx: &Ctx,
        ctor: ClassId,
        cols: usize,
    ) -> Result<Vec<usize>, Diagnostic> {
        let mut columns = Vec::new();
        match given {
            Some((e, c)) => {
                let c = self.arg_ctx(c, ctx, ctor);
                let v = self.eval_expr(&e, &c)?;
                for &x in &v.elems {
                    let k = self.const_value(x, e.span)?;
                    if k.fract() != 0.0 || k < 1.0 || k > cols as f64 {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Table,
                            e.span,
                            format!(
                                "table column {k} does not exist: the table has columns 1 to {cols}"
                            ),
                        ));
                    }
                    columns.push(k as usize);
                }
            }
            None => columns.extend(2..=cols),
        }
        Ok(columns)
    }

    /// An initial assert that `xs` rise strictly (`op` = `Gt`) or do not
    /// fall (`Ge`), naming `what` (a table's grid; most are parameters, so
    /// known only when the run starts).
    fn assert_ordered(&mut self, xs: &[ExprId], op: RelOp, what: &str, span: Span) {
        let mut all = None;
        for w in xs.windows(2) {
            let ok = self.arena.rel(op, w[1], w[0], false);
            all = Some(match all {
                Some(a) => self.arena.and(a, ok),
                None => ok,
            });
        }
        let how = if op == RelOp::Gt {
            "be strictly increasing"
        } else {
            "not decrease"
        };
        if let Some(condition) = all {
            self.asserts.push(crate::flat::Assert {
                condition,
                message: format!("{what} must {how}"),
                level: crate::flat::AssertLevel::Error,
                span,
                initial: true,
            });
        }
    }

    /// Whether `name` is an output of function `class`.
    fn is_output_of(&mut self, class: ClassId, name: &str) -> Result<bool, Diagnostic> {
        let def = self.lib.def(class)?;
        Ok(match def.as_deref().map(|d| &d.body) {
            Some(ast::ClassBody::Long(comp)) => comp.elements.iter().any(|e| {
                matches!(e, ast::Element::Component(c)
                    if c.name.name == name && c.prefix.causality == ast::CausalityPrefix::Output)
            }),
            _ => false,
        })
    }

    /// The name of the C function a function class calls, if it is external.
    fn external_c_name(&mut self, class: ClassId) -> Option<String> {
        let def = self.lib.def(class).ok()??;
        let ast::ClassBody::Long(comp) = &def.body else {
            return None;
        };
        comp.external
            .as_ref()?
            .function
            .as_ref()
            .map(|f| f.name.clone())
    }

    /// The arguments of a call of function `class` matched to its inputs:
    /// (input name, expression, whether the expression is the caller's
    /// rather than the input's default).
    fn bind_inputs(
        &mut self,
        class: ClassId,
        args: &[Arg],
        what: &str,
    ) -> Result<Vec<(String, ast::Expr, bool)>, Diagnostic> {
        // The inputs as declared in the function itself (an external
        // function's body is its declarations; `contents` refuses it).
        let def = self.lib.def(class)?;
        let inputs: Vec<(String, Option<ast::Expr>)> = match def.as_deref().map(|d| &d.body) {
            Some(ast::ClassBody::Long(comp)) => comp
                .elements
                .iter()
                .filter_map(|e| match e {
                    ast::Element::Component(c)
                        if c.prefix.causality == ast::CausalityPrefix::Input =>
                    {
                        Some((
                            c.name.name.clone(),
                            c.modification.as_ref().and_then(|m| m.binding.clone()),
                        ))
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let names: Vec<&str> = inputs.iter().map(|x| x.0.as_str()).collect();
        let mut given: Vec<Option<(ast::Expr, bool)>> = vec![None; inputs.len()];
        for (i, e) in super::calls::match_arguments(&names, args, what)? {
            given[i] = Some((e.clone(), true));
        }
        let mut out = Vec::new();
        for ((name, default), g) in inputs.into_iter().zip(given) {
            if let Some((e, caller)) = g.or_else(|| default.map(|d| (d, false))) {
                out.push((name, e, caller));
            }
        }
        Ok(out)
    }

    /// An enumeration argument of a table constructor, known at compile
    /// time: its value (1, 2, ...) and where it was written.
    fn table_enum(
        &mut self,
        bound: &[(String, ast::Expr, bool)],
        name: &str,
        ctor: ClassId,
        ctx: &Ctx,
        default: i64,
    ) -> Result<(i64, Span), Diagnostic> {
        let Some((_, e, caller)) = bound.iter().find(|(n, _, _)| n == name) else {
            return Ok((default, Span::default()));
        };
        let v = self.eval_expr(e, &self.arg_ctx(*caller, ctx, ctor))?;
        if !v.is_scalar() {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                e.span,
                format!("`{name}` must be a scalar"),
            ));
        }
        let x = self.const_value(v.elems[0], e.span)?;
        Ok((x as i64, e.span))
    }

    /// A call of one of the MSL's table functions (`class`, whose external
    /// clause is `ext`): the interpolation on the table object's data.
    pub(super) fn msl_table_function(
        &mut self,
        class: ClassId,
        ext: &ast::External,
        func: &ComponentRef,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Vec<Value>, Diagnostic> {
        let fname = func.dotted();
        let c_name = ext.function.as_ref().map_or("", |f| f.name.as_str());
        let bound = self.bind_inputs(class, args, &fname)?;
        // The C function's arguments, as the caller's expressions.
        let mut c_args = Vec::new();
        for a in &ext.args {
            let input = match &a.kind {
                ExprKind::Ref(r) if r.parts.len() == 1 && r.parts[0].subscripts.is_empty() => {
                    &r.parts[0].ident.name
                }
                _ => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        a.span,
                        format!("`{c_name}`: only inputs can be passed here"),
                    ));
                }
            };
            let Some((_, e, caller)) = bound.iter().find(|(n, _, _)| n == input) else {
                if self.is_output_of(class, input)? {
                    // An output passed to the C function (the 2-D
                    // abscissa ranges): the value returned here.
                    continue;
                }
                return Err(Diagnostic::error(
                    DiagnosticKind::Call,
                    span,
                    format!("`{fname}` needs input `{input}`"),
                ));
            };
            c_args.push((e.clone(), *caller));
        }
        let Some((first, _)) = c_args.first() else {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("`{c_name}` has no table argument"),
            ));
        };
        let object = self.table_object_of(first, ctx)?;
        let mut values = Vec::new();
        for (e, caller) in &c_args[1..] {
            values.push((
                self.eval_expr(e, &self.arg_ctx(*caller, ctx, class))?,
                e.span,
            ));
        }
        let function = c_name.strip_prefix(PREFIX).unwrap_or(c_name);
        let unsupported = || {
            Diagnostic::error(
                DiagnosticKind::Unsupported,
                span,
                format!("the table function `{c_name}` (called by `{fname}`) is not supported"),
            )
            .with_hint("rmoc provides the values of 1-D and 2-D tables and their abscissa ranges")
        };
        match (&object, function) {
            (
                TableObject::OneD {
                    table,
                    columns,
                    smoothness,
                    extrapolation,
                },
                "CombiTable1D_getValue",
            ) => {
                let [(icol, icol_span), (u, _)] = &values[..] else {
                    return Err(unsupported());
                };
                let column = self.served_column(icol, *icol_span, columns)?;
                let args = [
                    table_column(table, 0),
                    table_column(table, column - 1),
                    u.clone(),
                    self.integer(*smoothness),
                    self.integer(*extrapolation),
                ];
                self.call_stdlib("Tables.interpolate1D", &args, span)
            }
            (
                TableObject::TwoD {
                    table,
                    smoothness,
                    extrapolation,
                },
                "CombiTable2D_getValue",
            ) => {
                let [(u1, _), (u2, _)] = &values[..] else {
                    return Err(unsupported());
                };
                let args = [
                    table.clone(),
                    u1.clone(),
                    u2.clone(),
                    self.integer(*smoothness),
                    self.integer(*extrapolation),
                ];
                self.call_stdlib("Tables.interpolate2D", &args, span)
            }
            (
                TableObject::Time {
                    table,
                    columns,
                    start,
                    shift,
                    constant_segments,
                    extrapolation,
                    ..
                },
                "CombiTimeTable_getValue",
            ) => {
                let Some(((icol, icol_span), (t, _))) = values.first().zip(values.get(1)) else {
                    return Err(unsupported());
                };
                let column = self.served_column(icol, *icol_span, columns)?;
                let flag = Value::scalar(
                    ScalarType::Boolean,
                    self.arena.constant(f64::from(*constant_segments)),
                );
                let next = match values.get(2) {
                    Some((v, _)) => v.clone(),
                    None => Value::scalar(ScalarType::Real, self.arena.constant(1e300)),
                };
                let args = [
                    table_column(table, 0),
                    table_column(table, column - 1),
                    t.clone(),
                    start.clone(),
                    shift.clone(),
                    flag,
                    self.integer(*extrapolation),
                    next,
                ];
                self.call_stdlib("Tables.timeTableValue", &args, span)
            }
            (
                TableObject::Time {
                    table,
                    start,
                    shift,
                    extrapolation,
                    time_events,
                    ..
                },
                "CombiTimeTable_nextTimeEvent",
            ) => {
                let Some((t, _)) = values.first() else {
                    return Err(unsupported());
                };
                if *time_events == 3 {
                    return Ok(vec![Value::scalar(
                        ScalarType::Real,
                        self.arena.constant(1e300),
                    )]);
                }
                let times = table_column(table, 0);
                let at_points = Value::scalar(
                    ScalarType::Boolean,
                    self.arena.constant(f64::from(*time_events == 1)),
                );
                let periodic = Value::scalar(
                    ScalarType::Boolean,
                    self.arena.constant(f64::from(*extrapolation == 3)),
                );
                let args = [
                    times,
                    t.clone(),
                    start.clone(),
                    shift.clone(),
                    at_points,
                    periodic,
                ];
                self.call_stdlib("Tables.nextTimeEvent", &args, span)
            }
            (TableObject::Time { table, .. }, "CombiTimeTable_minimumTime") => {
                Ok(vec![Value::scalar(ScalarType::Real, table.elems[0])])
            }
            (TableObject::Time { table, .. }, "CombiTimeTable_maximumTime") => {
                let last = (table.dims[0] - 1) * table.dims[1];
                Ok(vec![Value::scalar(ScalarType::Real, table.elems[last])])
            }
            (TableObject::OneD { table, .. }, "CombiTable1D_minimumAbscissa") => {
                Ok(vec![Value::scalar(ScalarType::Real, table.elems[0])])
            }
            (TableObject::OneD { table, .. }, "CombiTable1D_maximumAbscissa") => {
                let last = (table.dims[0] - 1) * table.dims[1];
                Ok(vec![Value::scalar(ScalarType::Real, table.elems[last])])
            }
            (TableObject::TwoD { table, .. }, "CombiTable2D_minimumAbscissa") => {
                let n = table.dims[1];
                Ok(vec![Value {
                    ty: ScalarType::Real,
                    dims: vec![2],
                    elems: vec![table.elems[n], table.elems[1]],
                }])
            }
            (TableObject::TwoD { table, .. }, "CombiTable2D_maximumAbscissa") => {
                let (m, n) = (table.dims[0], table.dims[1]);
                Ok(vec![Value {
                    ty: ScalarType::Real,
                    dims: vec![2],
                    elems: vec![table.elems[(m - 1) * n], table.elems[n - 1]],
                }])
            }
            _ => Err(unsupported()),
        }
    }

    /// The table column that `icol` (1, 2, ... over the columns a table
    /// serves) selects.
    fn served_column(
        &mut self,
        icol: &Value,
        span: Span,
        columns: &[usize],
    ) -> Result<usize, Diagnostic> {
        let Some(&icol) = icol.elems.first().filter(|_| icol.is_scalar()) else {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                span,
                "the column must be a scalar Integer",
            ));
        };
        let k = self.const_value(icol, span)?;
        (k >= 1.0 && k.fract() == 0.0)
            .then(|| columns.get(k as usize - 1).copied())
            .flatten()
            .ok_or_else(|| {
                Diagnostic::error(
                    DiagnosticKind::Table,
                    span,
                    format!(
                        "the table serves {} column(s); there is no column {k}",
                        columns.len()
                    ),
                )
            })
    }

    fn integer(&mut self, v: i64) -> Value {
        Value::scalar(ScalarType::Integer, self.arena.constant(v as f64))
    }

    /// Calls function `path` of the embedded standard library.
    fn call_stdlib(
        &mut self,
        path: &str,
        args: &[Value],
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        let Some(class) = self.lib.stdlib_class(path)? else {
            return Err(Diagnostic::error(
                DiagnosticKind::UnresolvedName,
                span,
                format!("the standard library has no `{path}`"),
            ));
        };
        self.call_compiled(class, args, span)
    }

    /// The table object a function argument names (a component of the
    /// current instance).
    fn table_object_of(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<TableObject, Diagnostic> {
        let not_object = || {
            Diagnostic::error(DiagnosticKind::Call, e.span, "expected the name of a table object")
                .with_hint("pass the component declared as `parameter ExternalCombiTable1D tableID = ExternalCombiTable1D(...)`")
        };
        let ExprKind::Ref(r) = &e.kind else {
            return Err(not_object());
        };
        if r.parts.len() != 1 || !r.parts[0].subscripts.is_empty() {
            return Err(not_object());
        }
        let name = &r.parts[0].ident.name;
        let Some(inst) = ctx.scope.inst else {
            return Err(not_object());
        };
        self.ensure_component(inst, name)?;
        self.table_objects
            .get(&(inst, name.clone()))
            .cloned()
            .ok_or_else(not_object)
    }

    /// Matrix `table_name` of a table file in the MSL's text format: a
    /// first line `#1`, then for each matrix a line `double name(rows,
    /// columns)` followed by its numbers; `#` starts a comment.
    fn read_msl_table_file(
        &mut self,
        file_name: &str,
        table_name: &str,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        if file_name.to_ascii_lowercase().ends_with(".csv") {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                span,
                format!("table file `{file_name}`: CSV files are not supported for the MSL's tables"),
            )
            .with_hint("write it in the MSL's text format (`#1`, then `double name(rows, columns)` and the rows), or use the embedded `Tables.readCSV`"));
        }
        if file_name.to_ascii_lowercase().ends_with(".mat") {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                span,
                format!("table file `{file_name}`: MAT files are not supported"),
            )
            .with_hint("write the table as text (`#1`, then `double name(rows, columns)` and the rows) or give it inline as `table = [...]`"));
        }
        // A relative name is taken from the model's folder: it is written in
        // the user's model, though the MSL's blocks pass it on from their
        // own files.
        let relative = std::path::Path::new(file_name).is_relative();
        let (path, root) = match (&self.lib.model_dir, relative) {
            (Some(dir), true) => (dir.join(file_name), Some(0)),
            _ => (
                self.data_file_path(file_name, span),
                relative.then(|| self.lib.root_of(span.file)).flatten(),
            ),
        };
        let text = std::fs::read_to_string(&path).map_err(|err| {
            Diagnostic::error(
                DiagnosticKind::Io,
                span,
                format!("cannot read the table file `{}`: {err}", path.display()),
            )
            .with_hint("a relative name is taken from the folder of the model's file")
        })?;
        self.lib.files_read.push((path.clone(), root));
        let shown = path.display().to_string();
        let bad = |line: usize, msg: String| {
            Diagnostic::error(DiagnosticKind::Table, span, format!("{shown}:{line}: {msg}"))
                .with_hint("a table file starts with the line `#1`; each matrix follows a line `double name(rows, columns)`")
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, l))
                if l.trim_start_matches('\u{feff}').split_whitespace().next() == Some("#1") => {}
            _ => return Err(bad(1, "the first line must be `#1`".into())),
        }
        let mut numbers: Vec<f64> = Vec::new();
        let mut want: Option<(usize, usize, usize)> = None;
        for (k, line) in lines {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some((rows, cols, _)) = want {
                for field in line.split(|c: char| c == ',' || c == ';' || c.is_whitespace()) {
                    if field.is_empty() {
                        continue;
                    }
                    let x: f64 = field
                        .parse()
                        .map_err(|_| bad(k + 1, format!("`{field}` is not a number")))?;
                    numbers.push(x);
                }
                if numbers.len() >= rows * cols {
                    break;
                }
                continue;
            }
            let head = line.split_whitespace().next().unwrap_or("");
            if head != "double" && head != "float" {
                continue;
            }
            let decl = line[head.len()..].trim();
            let Some((name, dims)) = decl.split_once('(') else {
                return Err(bad(k + 1, format!("expected `{head} name(rows, columns)`")));
            };
            if name.trim() != table_name {
                continue;
            }
            let dims = dims.trim_end_matches(')');
            let parsed: Vec<usize> = dims
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect();
            let [rows, cols] = parsed[..] else {
                return Err(bad(
                    k + 1,
                    format!("expected `{head} {table_name}(rows, columns)`"),
                ));
            };
            want = Some((rows, cols, k + 1));
        }
        let Some((rows, cols, at)) = want else {
            return Err(Diagnostic::error(DiagnosticKind::Table,
                span,
                format!("{shown}: no matrix named `{table_name}`"),
            )
            .with_hint("`tableName` must name a matrix declared in the file as `double NAME(rows, columns)`"));
        };
        if numbers.len() != rows * cols {
            return Err(bad(
                at,
                format!(
                    "`{table_name}` is declared {rows} x {cols} but {} numbers follow",
                    numbers.len()
                ),
            ));
        }
        let elems = numbers
            .into_iter()
            .map(|x| self.arena.constant(x))
            .collect();
        Ok(Value {
            ty: ScalarType::Real,
            dims: vec![rows, cols],
            elems,
        })
    }
}
