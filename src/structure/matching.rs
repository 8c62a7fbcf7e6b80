//! Maximum bipartite matching of equations to unknowns, and the
//! Dulmage-Mendelsohn split of an unmatched system into its over- and
//! under-determined parts.
//!
//! Matching is by augmenting paths (Duff's MC21 / Pothen-Fan with a cheap
//! greedy start), O(n * edges) in the worst case and close to linear on the
//! sparse, chain-like incidence of connected component models.

/// Incidence of a square or rectangular system: `rows[e]` lists the unknowns
/// (column indices) equation `e` mentions.
#[derive(Clone, Debug, Default)]
pub struct Incidence {
    pub rows: Vec<Vec<usize>>,
    pub ncols: usize,
}

impl Incidence {
    pub fn cols(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.ncols];
        for (e, r) in self.rows.iter().enumerate() {
            for &v in r {
                c[v].push(e);
            }
        }
        c
    }
}

/// `row_of[col]` and `col_of[row]` of a maximum matching.
#[derive(Clone, Debug)]
pub struct Matching {
    pub col_of: Vec<Option<usize>>,
    pub row_of: Vec<Option<usize>>,
}

impl Matching {
    pub fn size(&self) -> usize {
        self.col_of.iter().filter(|c| c.is_some()).count()
    }
}

/// A maximum matching. Rows are matched in order, each by a cheap assignment
/// first, then by a depth-first augmenting path (iterative, so deep chains of
/// thousands of components do not overflow the stack).
pub fn maximum_matching(inc: &Incidence) -> Matching {
    let nrows = inc.rows.len();
    let mut col_of = vec![None; nrows];
    let mut row_of: Vec<Option<usize>> = vec![None; inc.ncols];
    // Cheap assignment.
    for (e, r) in inc.rows.iter().enumerate() {
        if let Some(&v) = r.iter().find(|&&v| row_of[v].is_none()) {
            row_of[v] = Some(e);
            col_of[e] = Some(v);
        }
    }
    let mut visited = vec![usize::MAX; inc.ncols];
    for start in 0..nrows {
        if col_of[start].is_some() {
            continue;
        }
        augment(inc, start, start, &mut col_of, &mut row_of, &mut visited);
    }
    Matching { col_of, row_of }
}

/// Searches an augmenting path from unmatched row `start`; `stamp` marks the
/// columns visited in this search. Returns whether the matching grew.
pub fn augment(
    inc: &Incidence,
    start: usize,
    stamp: usize,
    col_of: &mut [Option<usize>],
    row_of: &mut [Option<usize>],
    visited: &mut [usize],
) -> bool {
    // Stack of (row, next position in its incidence list); `via[k]` is the
    // column that led to stack entry k.
    let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
    let mut via: Vec<usize> = Vec::new();
    while let Some(&mut (row, ref mut pos)) = stack.last_mut() {
        // First a free column directly.
        let r = &inc.rows[row];
        let mut free = None;
        for &v in r {
            if row_of[v].is_none() && visited[v] != stamp {
                free = Some(v);
                break;
            }
        }
        if let Some(v) = free {
            visited[v] = stamp;
            // Flip the path: the top row takes the free column, and each row
            // below takes the column that led from it to the next row.
            let top = stack.len() - 1;
            col_of[stack[top].0] = Some(v);
            row_of[v] = Some(stack[top].0);
            for k in 0..top {
                let (rk, ck) = (stack[k].0, via[k]);
                col_of[rk] = Some(ck);
                row_of[ck] = Some(rk);
            }
            return true;
        }
        let mut advanced = false;
        while *pos < r.len() {
            let v = r[*pos];
            *pos += 1;
            if visited[v] == stamp {
                continue;
            }
            visited[v] = stamp;
            if let Some(next) = row_of[v] {
                via.push(v);
                stack.push((next, 0));
                advanced = true;
                break;
            }
        }
        if !advanced {
            stack.pop();
            via.pop();
        }
    }
    false
}

/// The Dulmage-Mendelsohn coarse decomposition of a system with a maximum
/// matching: rows reachable from unmatched rows by alternating paths form the
/// over-determined part; columns reachable from unmatched columns the
/// under-determined part.
#[derive(Debug, Default)]
pub struct DmParts {
    pub over_rows: Vec<usize>,
    pub over_cols: Vec<usize>,
    pub under_rows: Vec<usize>,
    pub under_cols: Vec<usize>,
}

pub fn dulmage_mendelsohn(inc: &Incidence, m: &Matching) -> DmParts {
    let cols = inc.cols();
    let mut parts = DmParts::default();
    // Over-determined: from each unmatched row, go row -> any column -> its matched row.
    let mut row_seen = vec![false; inc.rows.len()];
    let mut col_seen = vec![false; inc.ncols];
    let mut stack: Vec<usize> = (0..inc.rows.len())
        .filter(|&e| m.col_of[e].is_none())
        .collect();
    for &e in &stack {
        row_seen[e] = true;
    }
    while let Some(e) = stack.pop() {
        for &v in &inc.rows[e] {
            if !col_seen[v] {
                col_seen[v] = true;
                if let Some(r) = m.row_of[v]
                    && !row_seen[r]
                {
                    row_seen[r] = true;
                    stack.push(r);
                }
            }
        }
    }
    parts.over_rows = (0..inc.rows.len()).filter(|&e| row_seen[e]).collect();
    parts.over_cols = (0..inc.ncols).filter(|&v| col_seen[v]).collect();
    // Under-determined: from each unmatched column, column -> any row -> its matched column.
    let mut row_seen = vec![false; inc.rows.len()];
    let mut col_seen = vec![false; inc.ncols];
    let mut stack: Vec<usize> = (0..inc.ncols).filter(|&v| m.row_of[v].is_none()).collect();
    for &v in &stack {
        col_seen[v] = true;
    }
    while let Some(v) = stack.pop() {
        for &e in &cols[v] {
            if !row_seen[e] {
                row_seen[e] = true;
                if let Some(c) = m.col_of[e]
                    && !col_seen[c]
                {
                    col_seen[c] = true;
                    stack.push(c);
                }
            }
        }
    }
    parts.under_rows = (0..inc.rows.len()).filter(|&e| row_seen[e]).collect();
    parts.under_cols = (0..inc.ncols).filter(|&v| col_seen[v]).collect();
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(rows: &[&[usize]], ncols: usize) -> Incidence {
        Incidence {
            rows: rows.iter().map(|r| r.to_vec()).collect(),
            ncols,
        }
    }

    #[test]
    fn finds_a_perfect_matching_that_needs_augmenting_paths() {
        // The greedy start matches row 0 to col 0, and rows 1, 2 then need paths.
        let i = inc(&[&[0, 1], &[0], &[1, 2]], 3);
        let m = maximum_matching(&i);
        assert_eq!(m.size(), 3);
        assert_eq!(m.col_of[1], Some(0));
        assert_eq!(m.col_of[0], Some(1));
        assert_eq!(m.col_of[2], Some(2));
    }

    #[test]
    fn long_chains_do_not_overflow() {
        // Row k mentions cols k and k+1, greedy takes col k... reversed order forces long paths.
        let n = 20_000;
        let rows: Vec<Vec<usize>> = (0..n)
            .map(|k| if k == 0 { vec![0] } else { vec![k - 1, k] })
            .collect();
        let i = Incidence { rows, ncols: n };
        assert_eq!(maximum_matching(&i).size(), n);
    }

    #[test]
    fn splits_over_and_under_determined_parts() {
        // x = 1; 2x = 3; y unmentioned.
        let i = inc(&[&[0], &[0]], 2);
        let m = maximum_matching(&i);
        let dm = dulmage_mendelsohn(&i, &m);
        assert_eq!(dm.over_rows, vec![0, 1]);
        assert_eq!(dm.over_cols, vec![0]);
        assert_eq!(dm.under_cols, vec![1]);
    }
}
