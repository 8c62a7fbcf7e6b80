//! Patterns of result column names: `--outputs`, `rmoc plot`'s columns and
//! a sweep's summary statistics all pick the columns of a result this way.
//! (Result columns are the simulation's product, so their patterns live
//! here; `output` and `sweep` use them downstream.)

/// Whether the dotted `name` matches `pattern`, as a shell matches paths
/// with `.` for `/`: `*` matches any run of characters and `?` one
/// character within one component (`gear.*` matches `gear.w`, not
/// `gear.frame.x`), `**` as a whole component matches any number of
/// components (`**.w`, `mesh.**`). A pattern component without a
/// subscript also matches the elements of an array of that name: `T`
/// matches `T[1,2]`, `needle.x` matches `needle[3].x`, `der(T)` matches
/// `der(T[1])` (and `?` matches every one-letter array's elements).
pub fn glob(pattern: &str, name: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('.').collect();
    let name: Vec<&str> = name.split('.').collect();
    components(&pattern, &name)
}

fn components(pattern: &[&str], name: &[&str]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((&"**", rest)) => (0..=name.len()).any(|k| components(rest, &name[k..])),
        Some((first, rest)) => match name.split_first() {
            Some((n, name_rest)) => {
                (component(first.as_bytes(), n.as_bytes())
                    || (!first.contains('[')
                        && unsubscripted(n).is_some_and(|a| component(first.as_bytes(), &a))))
                    && components(rest, name_rest)
            }
            None => false,
        },
    }
}

/// A component with its subscripts taken out (`T` of `T[1,2]`, `der(T)`
/// of `der(T[1])`, `a` of `a[1][2]`), if it has any.
fn unsubscripted(component: &str) -> Option<Vec<u8>> {
    if !component.contains('[') {
        return None;
    }
    let mut out = Vec::with_capacity(component.len());
    let mut depth = 0usize;
    for &b in component.as_bytes() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(b),
            _ => {}
        }
    }
    Some(out)
}

/// `*` and `?` within one component (iterative, with one backtrack point).
fn component(p: &[u8], n: &[u8]) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == b'?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_wildcards_within_one_component() {
        assert!(glob("*.w", "joint1.w"));
        assert!(!glob("*.w", "joint1.phi"));
        assert!(glob("w1c", "w1c"));
        assert!(!glob("w1", "w1c"));
        // `*` and `?` stop at dots.
        assert!(glob("mesh.*", "mesh.N"));
        assert!(!glob("mesh.*", "mesh.contact.N"));
        assert!(!glob("*", "mesh.N"));
        assert!(glob("joint?.w", "joint1.w"));
        assert!(!glob("joint?.w", "joint12.w"));
        assert!(glob("x[*]", "x[12]"));
        assert!(glob("*a*b*", "xaybz"));
        assert!(!glob("*a*b", "xaybz"));
        // `**` spans components, none included.
        assert!(glob("mesh.**", "mesh.contact.N"));
        assert!(glob("**.N", "mesh.contact.N"));
        assert!(glob("**.N", "N"));
        assert!(glob("mesh.**.N", "mesh.N"));
        assert!(glob("**", "a.b.c"));
        assert!(!glob("mesh.**.N", "gear.contact.N"));
        // A name without a subscript takes in the array's elements.
        assert!(glob("T", "T[1,2]"));
        assert!(glob("needle.x", "needle[3].x"));
        assert!(glob("needle.*", "needle[3].vx"));
        assert!(glob("**.x", "needle[3].x"));
        assert!(!glob("T", "T2[1]"));
        assert!(!glob("T", "Tx"));
        assert!(!glob("T[1,*]", "T[2,1]"));
        assert!(glob("T[1,*]", "T[1,2]"));
        assert!(!glob("needle.x", "needle[3].frame.x"));
        assert!(glob("der(T)", "der(T[1])"));
        assert!(glob("der(needle.x)", "der(needle[2].x)"));
        assert!(glob("a", "a[1][2]"));
        assert!(!glob("der(T)", "der(T2[1])"));
        assert!(glob("der(*.w)", "der(gear.w)"));
    }
}
