//! `modelDescription.xml` for FMI 2.0 and 3.0, written from an
//! [`Interface`]. The element order follows the standards' schemas (the
//! interface elements, units, default experiment, variables, structure);
//! an element that would be empty is left out (the schemas want at least
//! one child where the element is present).

use super::{
    FmiCausality, FmiVariability, FmiVariable, FmiVersion, FmuKinds, Interface, ValueSource,
};
use crate::flat::ScalarType;
use crate::structure::Causal;
use std::fmt::Write;

/// Escapes `s` for an XML attribute.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

/// A number as the XML schema's double reads it back exactly.
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else if x.is_nan() {
        "NaN".into()
    } else if x > 0.0 {
        "INF".into()
    } else {
        "-INF".into()
    }
}

fn causality(c: FmiCausality) -> &'static str {
    match c {
        FmiCausality::Independent => "independent",
        FmiCausality::Parameter => "parameter",
        FmiCausality::CalculatedParameter => "calculatedParameter",
        FmiCausality::Input => "input",
        FmiCausality::Output => "output",
        FmiCausality::Local => "local",
    }
}

fn variability(v: FmiVariability) -> &'static str {
    match v {
        FmiVariability::Fixed => "fixed",
        FmiVariability::Discrete => "discrete",
        FmiVariability::Continuous => "continuous",
    }
}

/// The `initial` attribute, where the standard allows one.
fn initial(v: &FmiVariable) -> Option<&'static str> {
    match v.causality {
        FmiCausality::Independent | FmiCausality::Input => None,
        // A parameter, or a state with `fixed = true`: its start value.
        _ if v.start.is_some() => Some("exact"),
        _ => Some("calculated"),
    }
}

/// A start value in the variable's type.
fn start_text(v: &FmiVariable, x: f64) -> String {
    match v.ty {
        ScalarType::Real => num(x),
        ScalarType::Integer => format!("{}", x as i64),
        ScalarType::Boolean => (x != 0.0).to_string(),
    }
}

/// The variables the description lists: FMI 2 has no event-indicator
/// variables.
fn listed(iface: &Interface, version: FmiVersion) -> impl Iterator<Item = (usize, &FmiVariable)> {
    iface.variables.iter().enumerate().filter(move |(_, v)| {
        version == FmiVersion::Three || !matches!(v.source, ValueSource::Indicator(_))
    })
}

/// `UnitDefinitions`: each unit the variables use, once, sorted (left out
/// when there is none).
fn unit_definitions(o: &mut String, iface: &Interface) {
    let units = units(iface);
    if units.is_empty() {
        return;
    }
    let _ = writeln!(o, "  <UnitDefinitions>");
    for u in units {
        let _ = writeln!(o, "    <Unit name=\"{}\"/>", esc(u));
    }
    let _ = writeln!(o, "  </UnitDefinitions>");
}

/// The units the variables use, each once, sorted.
fn units(iface: &Interface) -> Vec<&str> {
    let mut u: Vec<&str> = iface
        .variables
        .iter()
        .filter_map(|v| v.unit.as_deref())
        .filter(|u| !u.is_empty())
        .collect();
    u.sort_unstable();
    u.dedup();
    u
}

/// The initial unknowns: outputs, calculated parameters, states and
/// derivatives, except the states that start at their exact start values
/// (`fixed = true`), by table index, ascending.
fn initial_unknowns(iface: &Interface) -> Vec<usize> {
    let mut k: Vec<usize> = iface
        .variables
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            matches!(
                v.causality,
                FmiCausality::Output | FmiCausality::CalculatedParameter
            )
        })
        .map(|(k, _)| k)
        .chain(iface.states.iter().copied())
        .chain(iface.derivatives.iter().copied())
        .filter(|&k| iface.variables[k].start.is_none())
        .collect();
    k.sort_unstable();
    k.dedup();
    k
}

fn default_experiment(out: &mut String, c: &Causal) {
    let e = &c.experiment;
    let mut attrs = String::new();
    if let Some(t) = e.start_time {
        let _ = write!(attrs, " startTime=\"{}\"", num(t));
    }
    if let Some(t) = e.stop_time {
        let _ = write!(attrs, " stopTime=\"{}\"", num(t));
    }
    if let Some(t) = e.tolerance {
        let _ = write!(attrs, " tolerance=\"{}\"", num(t));
    }
    if let Some(t) = e.interval {
        let _ = write!(attrs, " stepSize=\"{}\"", num(t));
    }
    if !attrs.is_empty() {
        let _ = writeln!(out, "  <DefaultExperiment{attrs}/>");
    }
}

/// The description of `iface` for FMI `version`.
pub fn write(
    iface: &Interface,
    c: &Causal,
    version: FmiVersion,
    kinds: FmuKinds,
    identifier: &str,
    token: &str,
) -> String {
    match version {
        FmiVersion::Two => write2(iface, c, kinds, identifier, token),
        FmiVersion::Three => write3(iface, c, kinds, identifier, token),
    }
}

const TOOL: &str = concat!("rmoc ", env!("CARGO_PKG_VERSION"));

fn write2(iface: &Interface, c: &Causal, kinds: FmuKinds, id: &str, token: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"{}\" guid=\"{}\" generationTool=\"{TOOL}\" variableNamingConvention=\"flat\" numberOfEventIndicators=\"{}\">",
        esc(&iface.model_name),
        esc(token),
        iface.indicators.len()
    );
    if kinds.model_exchange {
        let _ = writeln!(
            o,
            "  <ModelExchange modelIdentifier=\"{id}\" canNotUseMemoryManagementFunctions=\"true\" canGetAndSetFMUstate=\"true\" providesDirectionalDerivative=\"true\"/>"
        );
    }
    if kinds.co_simulation {
        let _ = writeln!(
            o,
            "  <CoSimulation modelIdentifier=\"{id}\" canHandleVariableCommunicationStepSize=\"true\" canNotUseMemoryManagementFunctions=\"true\" canGetAndSetFMUstate=\"true\" providesDirectionalDerivative=\"true\"/>"
        );
    }
    unit_definitions(&mut o, iface);
    default_experiment(&mut o, c);
    let _ = writeln!(o, "  <ModelVariables>");
    for (k, v) in listed(iface, FmiVersion::Two) {
        let _ = write!(
            o,
            "    <ScalarVariable name=\"{}\" valueReference=\"{k}\"",
            esc(&v.name)
        );
        if let Some(d) = &v.description {
            let _ = write!(o, " description=\"{}\"", esc(d));
        }
        let _ = write!(
            o,
            " causality=\"{}\" variability=\"{}\"",
            causality(v.causality),
            variability(v.variability)
        );
        if let Some(i) = initial(v) {
            let _ = write!(o, " initial=\"{i}\"");
        }
        let _ = write!(o, ">\n      <{}", type_name2(v.ty));
        if let Some(s) = v.start {
            let _ = write!(o, " start=\"{}\"", start_text(v, s));
        }
        if v.ty == ScalarType::Real {
            if let Some(u) = v.unit.as_deref().filter(|u| !u.is_empty()) {
                let _ = write!(o, " unit=\"{}\"", esc(u));
            }
            if let Some(s) = v.derivative_of {
                // (1-based index of the state's ScalarVariable.)
                let _ = write!(o, " derivative=\"{}\"", s + 1);
            }
        }
        let _ = writeln!(o, "/>\n    </ScalarVariable>");
    }
    let _ = writeln!(o, "  </ModelVariables>");
    let _ = writeln!(o, "  <ModelStructure>");
    let section = |o: &mut String, name: &str, idx: &[usize]| {
        if idx.is_empty() {
            return;
        }
        let _ = writeln!(o, "    <{name}>");
        for k in idx {
            let _ = writeln!(o, "      <Unknown index=\"{}\"/>", k + 1);
        }
        let _ = writeln!(o, "    </{name}>");
    };
    section(&mut o, "Outputs", &iface.outputs);
    section(&mut o, "Derivatives", &iface.derivatives);
    section(&mut o, "InitialUnknowns", &initial_unknowns(iface));
    let _ = writeln!(o, "  </ModelStructure>");
    let _ = writeln!(o, "</fmiModelDescription>");
    o
}

fn type_name2(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Real => "Real",
        ScalarType::Integer => "Integer",
        ScalarType::Boolean => "Boolean",
    }
}

fn type_name3(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Real => "Float64",
        ScalarType::Integer => "Int32",
        ScalarType::Boolean => "Boolean",
    }
}

fn write3(iface: &Interface, c: &Causal, kinds: FmuKinds, id: &str, token: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<fmiModelDescription fmiVersion=\"3.0\" modelName=\"{}\" instantiationToken=\"{}\" generationTool=\"{TOOL}\" variableNamingConvention=\"flat\">",
        esc(&iface.model_name),
        esc(token),
    );
    if kinds.model_exchange {
        let _ = writeln!(
            o,
            "  <ModelExchange modelIdentifier=\"{id}\" canGetAndSetFMUState=\"true\" canSerializeFMUState=\"false\" providesDirectionalDerivatives=\"true\"/>"
        );
    }
    if kinds.co_simulation {
        let _ = writeln!(
            o,
            "  <CoSimulation modelIdentifier=\"{id}\" canHandleVariableCommunicationStepSize=\"true\" canGetAndSetFMUState=\"true\" canSerializeFMUState=\"false\" providesDirectionalDerivatives=\"true\" hasEventMode=\"false\"/>"
        );
    }
    unit_definitions(&mut o, iface);
    default_experiment(&mut o, c);
    let _ = writeln!(o, "  <ModelVariables>");
    for (k, v) in listed(iface, FmiVersion::Three) {
        let _ = write!(
            o,
            "    <{} name=\"{}\" valueReference=\"{k}\"",
            type_name3(v.ty),
            esc(&v.name)
        );
        if let Some(d) = &v.description {
            let _ = write!(o, " description=\"{}\"", esc(d));
        }
        let _ = write!(
            o,
            " causality=\"{}\" variability=\"{}\"",
            causality(v.causality),
            variability(v.variability)
        );
        if let Some(i) = initial(v) {
            let _ = write!(o, " initial=\"{i}\"");
        }
        if let Some(s) = v.start {
            let _ = write!(o, " start=\"{}\"", start_text(v, s));
        }
        if v.ty == ScalarType::Real {
            if let Some(u) = v.unit.as_deref().filter(|u| !u.is_empty()) {
                let _ = write!(o, " unit=\"{}\"", esc(u));
            }
            if let Some(s) = v.derivative_of {
                // (The state's value reference.)
                let _ = write!(o, " derivative=\"{s}\"");
            }
        }
        let _ = writeln!(o, "/>");
    }
    let _ = writeln!(o, "  </ModelVariables>");
    let _ = writeln!(o, "  <ModelStructure>");
    for k in &iface.outputs {
        let _ = writeln!(o, "    <Output valueReference=\"{k}\"/>");
    }
    for k in &iface.derivatives {
        let _ = writeln!(o, "    <ContinuousStateDerivative valueReference=\"{k}\"/>");
    }
    for k in initial_unknowns(iface) {
        let _ = writeln!(o, "    <InitialUnknown valueReference=\"{k}\"/>");
    }
    for k in &iface.indicators {
        let _ = writeln!(o, "    <EventIndicator valueReference=\"{k}\"/>");
    }
    let _ = writeln!(o, "  </ModelStructure>");
    let _ = writeln!(o, "</fmiModelDescription>");
    o
}
