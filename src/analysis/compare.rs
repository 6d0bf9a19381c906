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

/// The window of a phase (paper 002 Fig. 6-9 compares the elimination
/// phase with back substitution):
///
/// * `phase:MARKER` — from the first event of type MARKER (the simulator
///   writes `Iteration` and `Workload phase`) to the first one with
///   another value (markers of one value written by every processor at
///   its own time are one phase), or the end of the trace;
/// * `phase:MARKER=V` — the first phase of value V;
/// * `phase:MARKER#K` — the K-th phase (0-based);
/// * `region:NAME` — from the first start to the last end of the intervals
///   of the state (OTF2 region) NAME, over all locations.
///
/// `None` when `spec` is not a phase; an error names what the trace has when
/// the marker or region never occurs.
pub fn phase_window(
    t: &Trace,
    spec: &str,
) -> Option<Result<(crate::model::Time, crate::model::Time)>> {
    if let Some(name) = spec.strip_prefix("region:") {
        return Some(region_window(t, name.trim()));
    }
    let body = spec.strip_prefix("phase:")?.trim();
    Some(marker_window(t, body))
}

fn marker_window(t: &Trace, body: &str) -> Result<(crate::model::Time, crate::model::Time)> {
    let (name, pick) = if let Some((n, v)) = body.split_once('=') {
        let v: i64 = v.trim().parse().map_err(|_| {
            Error::Invalid(format!(
                "phase:{body}: expected an integer marker value after '='"
            ))
        })?;
        (n.trim(), (Some(v), None))
    } else if let Some((n, k)) = body.rsplit_once('#') {
        let k: usize = k.trim().parse().map_err(|_| {
            Error::Invalid(format!(
                "phase:{body}: expected an occurrence number after '#'"
            ))
        })?;
        (n.trim(), (None, Some(k)))
    } else {
        (body, (None, Some(0)))
    };
    let kind = t.event_types.by_name(name).ok_or_else(|| {
        let names: Vec<&str> = t.event_types.iter().map(|e| e.name.as_str()).collect();
        Error::Invalid(format!(
            "phase marker '{name}' is not an event type of this trace (types: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    })?;
    let mut times: Vec<(crate::model::Time, i64)> = (0..t.events.len())
        .filter(|&i| t.events.kind[i] == kind)
        .map(|i| (t.events.time[i], t.events.value[i]))
        .collect();
    times.sort_unstable();
    // every processor may mark the same phase at its own time: a phase is a
    // run of markers with one value, starting at the first of them
    times.dedup_by_key(|x| x.1);
    let start = match pick {
        (Some(v), _) => times.iter().position(|x| x.1 == v).ok_or_else(|| {
            Error::Invalid(format!(
                "phase marker '{name}' never has the value {v} in this trace ({} occurrence(s))",
                times.len()
            ))
        })?,
        (_, Some(k)) => {
            if k >= times.len() {
                return Err(Error::Invalid(format!(
                    "phase marker '{name}' occurs {} time(s); occurrence #{k} does not exist",
                    times.len()
                )));
            }
            k
        }
        _ => 0,
    };
    let t0 = times[start].0;
    let t1 = times
        .iter()
        .skip(start + 1)
        .map(|x| x.0)
        .find(|&x| x > t0)
        .unwrap_or(t.meta.span);
    if t1 <= t0 {
        return Err(Error::Invalid(format!(
            "phase marker '{name}' at {t0} ns is at the end of the trace: its phase is empty"
        )));
    }
    Ok((t0, t1))
}

fn region_window(t: &Trace, name: &str) -> Result<(crate::model::Time, crate::model::Time)> {
    let id = t.states.by_name(name).ok_or_else(|| {
        Error::Invalid(format!(
            "region:{name}: no state or region of that name in this trace"
        ))
    })?;
    let (mut t0, mut t1) = (crate::model::Time::MAX, 0);
    for l in 0..t.num_locations() as u32 {
        for (a, b, s) in t.intervals.of(l).iter() {
            if s == id {
                t0 = t0.min(a);
                t1 = t1.max(b);
            }
        }
    }
    if t1 <= t0 {
        return Err(Error::Invalid(format!(
            "region:{name}: the region never takes time in this trace"
        )));
    }
    Ok((t0, t1))
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
