//! Comparing runs (paper 002 §5, Fig. 6-8 and 6-9): which location of one
//! run corresponds to which of another, and the difference of two
//! per-location results, with its statistics.

use crate::error::{Error, Result};
use crate::model::Trace;

/// For every location of `a`, the corresponding location of `b`: the same
/// index when both runs have as many locations, else the location of `b`
/// with the same name (its path: node / process / thread). An error names
/// the first locations of `a` that `b` lacks.
pub fn correspond(a: &Trace, b: &Trace) -> Result<Vec<u32>> {
    let (na, nb) = (a.num_locations(), b.num_locations());
    if na == nb {
        return Ok((0..na as u32).collect());
    }
    let by_name: std::collections::HashMap<String, u32> =
        (0..nb as u32).map(|l| (b.locations.path(l), l)).collect();
    let mut out = Vec::with_capacity(na);
    let mut missing = Vec::new();
    for l in 0..na as u32 {
        let name = a.locations.path(l);
        match by_name.get(&name) {
            Some(&k) => out.push(k),
            None => missing.push(name),
        }
    }
    if !missing.is_empty() {
        return Err(Error::Invalid(format!(
            "the runs do not correspond: the first has {na} locations, the template {nb}, \
             and {} of the first's are not in the template by name (e.g. {})",
            missing.len(),
            missing
                .iter()
                .take(3)
                .map(|m| format!("'{m}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(out)
}

/// `a − b` cell by cell; empty where either is.
pub fn difference(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<Option<f64>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(x - y),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth;

    #[test]
    fn differences_leave_empty_cells_empty() {
        let d = difference(&[Some(3.0), None, Some(1.0)], &[Some(1.0), Some(2.0), None]);
        assert_eq!(d, vec![Some(2.0), None, None]);
    }

    #[test]
    fn locations_correspond_by_index_or_by_name() {
        let a = synth::random_intervals(4, 3, 1);
        let b = synth::random_intervals(4, 5, 2);
        assert_eq!(correspond(&a, &b).unwrap(), vec![0, 1, 2, 3]);
        // a template with more locations: matched by name
        let big = synth::random_intervals(6, 3, 3);
        assert_eq!(correspond(&a, &big).unwrap(), vec![0, 1, 2, 3]);
        let e = correspond(&big, &a).unwrap_err().to_string();
        assert!(
            e.contains("the first has 6 locations, the template 4"),
            "{e}"
        );
        assert!(e.contains("'rank 4'"), "{e}");
    }
}
