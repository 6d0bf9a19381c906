//! Reductions of profile matrices (SPEC §3.4, paper 004); the
//! communication matrix is in [`super::comm`].

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{ProfileMatrix, ProfileMetric, RowKind, Trace};

/// The metrics of [`trace_profile`].
pub const TRACE_PROFILE_METRICS: [&str; 2] = ["exclusive time", "visits"];

/// The profile of a trace: one row per state (function, region) with
/// time in it, one column per location; metrics "exclusive time" (ns in
/// the state as the innermost region, summed over its intervals) and
/// "visits" (its intervals: a region interrupted by a nested one counts
/// once per piece).
pub fn trace_profile(trace: &Trace) -> ProfileMatrix {
    use rayon::prelude::*;
    let ns = trace.states.len();
    let nl = trace.num_locations();
    let per: Vec<(Vec<u64>, Vec<u64>)> = (0..nl as u32)
        .into_par_iter()
        .map(|l| {
            let (mut t, mut v) = (vec![0u64; ns], vec![0u64; ns]);
            let iv = trace.intervals.of(l);
            for i in 0..iv.len() {
                let s = iv.state[i] as usize;
                if s < ns {
                    t[s] += iv.end[i] - iv.start[i];
                    v[s] += 1;
                }
            }
            (t, v)
        })
        .collect();
    let used: Vec<usize> = (0..ns)
        .filter(|&s| per.iter().any(|(_, v)| v[s] > 0))
        .collect();
    let mut time = Vec::with_capacity(used.len() * nl);
    let mut visits = Vec::with_capacity(used.len() * nl);
    for &s in &used {
        for (t, v) in &per {
            time.push(t[s] as f64);
            visits.push(v[s] as f64);
        }
    }
    let rows: Vec<String> = used
        .iter()
        .map(|&s| {
            trace
                .states
                .get(s as u32)
                .map(|st| st.name.clone())
                .unwrap_or_else(|| format!("state {s}"))
        })
        .collect();
    ProfileMatrix {
        source: trace.meta.source.clone(),
        format: "trace profile".into(),
        row_kind: RowKind::Function,
        row_ids: (0..rows.len() as i64).collect(),
        callpath: vec![false; rows.len()],
        groups: vec![String::new(); rows.len()],
        rows,
        columns: (0..nl).map(|l| l.to_string()).collect(),
        metrics: vec![
            ProfileMetric {
                name: TRACE_PROFILE_METRICS[0].into(),
                unit: "ns".into(),
                values: time,
            },
            ProfileMetric {
                name: TRACE_PROFILE_METRICS[1].into(),
                unit: "count".into(),
                values: visits,
            },
        ],
        procedures: Vec::new(),
        source_file: None,
    }
}

/// Statistics of one row of a profile over its columns.
#[derive(Debug, Clone, Serialize)]
pub struct RowStats {
    pub row: String,
    pub id: i64,
    pub min: f64,
    pub min_column: usize,
    pub max: f64,
    pub max_column: usize,
    pub mean: f64,
    /// Population variance over the columns.
    pub variance: f64,
    pub total: f64,
}

/// Per-row min and max (with their columns), mean and variance of metric `m`.
pub fn row_stats(p: &ProfileMatrix, m: usize) -> Result<Vec<RowStats>> {
    let met = p
        .metrics
        .get(m)
        .ok_or_else(|| Error::Invalid(format!("no metric number {m}")))?;
    let c = p.num_columns();
    if c == 0 {
        return Ok(Vec::new());
    }
    Ok(met
        .values
        .chunks(c)
        .enumerate()
        .map(|(r, row)| {
            let (mut mi, mut ma) = (0, 0);
            for (j, v) in row.iter().enumerate() {
                if *v < row[mi] {
                    mi = j;
                }
                if *v > row[ma] {
                    ma = j;
                }
            }
            let total: f64 = row.iter().sum();
            let mean = total / c as f64;
            RowStats {
                row: p.rows[r].clone(),
                id: p.row_ids[r],
                min: row[mi],
                min_column: mi,
                max: row[ma],
                max_column: ma,
                mean,
                variance: row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c as f64,
                total,
            }
        })
        .collect())
}

/// A procedure (or function) with its total.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub name: String,
    pub total: f64,
    pub percent: f64,
}

/// The `top` procedures by total of metric `m`: for line profiles the lines
/// of each procedure's range add up; for function profiles the functions
/// (call paths excluded) are ranked.
pub fn ranked_procedures(p: &ProfileMatrix, m: usize, top: usize) -> Result<Vec<Ranked>> {
    if m >= p.metrics.len() {
        return Err(Error::Invalid(format!("no metric number {m}")));
    }
    let totals = p.row_totals(m);
    let mut items: Vec<(String, f64)> = match p.row_kind {
        RowKind::Line => {
            if p.procedures.is_empty() {
                return Err(Error::Invalid(
                    "the line profile names no procedures ('# procedure:' lines)".into(),
                ));
            }
            p.procedures
                .iter()
                .map(|pr| {
                    let t = p
                        .row_ids
                        .iter()
                        .zip(&totals)
                        .filter(|(id, _)| (pr.first_line..=pr.last_line).contains(*id))
                        .map(|(_, t)| *t)
                        .sum();
                    (pr.name.clone(), t)
                })
                .collect()
        }
        RowKind::Function => (0..p.num_rows())
            .filter(|&r| !p.callpath[r])
            .map(|r| (p.rows[r].clone(), totals[r]))
            .collect(),
    };
    let grand: f64 = match p.row_kind {
        RowKind::Line => totals.iter().sum(),
        RowKind::Function => items.iter().map(|i| i.1).sum(),
    };
    items.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(items
        .into_iter()
        .take(top)
        .map(|(name, total)| Ranked {
            name,
            total,
            percent: if grand > 0.0 {
                100.0 * total / grand
            } else {
                0.0
            },
        })
        .collect())
}

/// How binned rows combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BinBy {
    Max,
    Sum,
}

/// The overview of a profile (paper 004): runs of more than `skip` zero
/// rows removed, `bin` rows combined by max or sum, then cut into `strips`
/// strips placed side by side.
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    pub rows: usize,
    /// Columns of the result: `strips × profile columns`.
    pub cols: usize,
    /// Row-major values; padding cells (after the last row of the last strip) are `None`.
    pub values: Vec<Option<f64>>,
    /// For each result row and strip, the id (line number) of the first source row.
    pub first_id: Vec<Option<i64>>,
    /// Removed runs of zero rows: (first id, last id).
    pub skipped: Vec<(i64, i64)>,
}

pub fn overview(
    p: &ProfileMatrix,
    m: usize,
    skip: usize,
    bin: usize,
    by: BinBy,
    strips: usize,
) -> Result<Overview> {
    let met = p
        .metrics
        .get(m)
        .ok_or_else(|| Error::Invalid(format!("no metric number {m}")))?;
    if bin == 0 || strips == 0 {
        return Err(Error::Invalid("bin and strips must be at least 1".into()));
    }
    let c = p.num_columns();
    let row = |r: usize| &met.values[r * c..(r + 1) * c];
    let zero = |r: usize| row(r).iter().all(|v| *v == 0.0);
    // 1. drop runs of more than `skip` zero rows
    let mut kept: Vec<usize> = Vec::new();
    let mut skipped = Vec::new();
    let mut r = 0;
    let n = p.num_rows();
    while r < n {
        if zero(r) {
            let run = (r..n).take_while(|&k| zero(k)).count();
            if run > skip {
                skipped.push((p.row_ids[r], p.row_ids[r + run - 1]));
            } else {
                kept.extend(r..r + run);
            }
            r += run;
        } else {
            kept.push(r);
            r += 1;
        }
    }
    // 2. bin
    let binned: Vec<(i64, Vec<f64>)> = kept
        .chunks(bin)
        .map(|g| {
            let mut acc = vec![0.0f64; c];
            for &r in g {
                for (a, v) in acc.iter_mut().zip(row(r)) {
                    *a = match by {
                        BinBy::Max => f64::max(*a, *v),
                        BinBy::Sum => *a + v,
                    };
                }
            }
            (p.row_ids[g[0]], acc)
        })
        .collect();
    // 3. strips side by side
    let per = binned.len().div_ceil(strips).max(1);
    let cols = strips * c;
    let mut values = vec![None; per * cols];
    let mut first_id = vec![None; per * strips];
    for (i, (id, v)) in binned.iter().enumerate() {
        let (s, rr) = (i / per, i % per);
        first_id[rr * strips + s] = Some(*id);
        for (j, x) in v.iter().enumerate() {
            values[rr * cols + s * c + j] = Some(*x);
        }
    }
    Ok(Overview {
        rows: per,
        cols,
        values,
        first_id,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Procedure, ProfileMetric};

    fn lines() -> ProfileMatrix {
        // 8 lines × 2 processors
        let v = vec![
            1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 1.0, 0.0, 0.0, 3.0, 3.0, 4.0, 0.0,
        ];
        ProfileMatrix {
            source: "t".into(),
            format: "test".into(),
            row_kind: RowKind::Line,
            rows: (1..=8).map(|l| format!("line {l}")).collect(),
            row_ids: (1..=8).collect(),
            callpath: vec![false; 8],
            groups: vec![String::new(); 8],
            columns: vec!["0".into(), "1".into()],
            metrics: vec![ProfileMetric {
                name: "ticks".into(),
                unit: "ticks".into(),
                values: v,
            }],
            procedures: vec![
                Procedure {
                    name: "a".into(),
                    first_line: 1,
                    last_line: 4,
                },
                Procedure {
                    name: "b".into(),
                    first_line: 5,
                    last_line: 8,
                },
            ],
            source_file: None,
        }
    }

    #[test]
    fn row_statistics_and_ranking() {
        let p = lines();
        let s = row_stats(&p, 0).unwrap();
        assert_eq!(
            (s[0].min, s[0].min_column, s[0].max, s[0].max_column),
            (1.0, 0, 2.0, 1)
        );
        assert_eq!((s[0].mean, s[0].variance), (1.5, 0.25));
        let r = ranked_procedures(&p, 0, 5).unwrap();
        assert_eq!(r[0].name, "b");
        assert_eq!(r[0].total, 16.0);
        assert_eq!(r[1].total, 3.0);
    }

    #[test]
    fn overview_skips_bins_and_strips() {
        let p = lines();
        let o = overview(&p, 0, 2, 1, BinBy::Sum, 1).unwrap();
        // lines 2-4 (3 zero rows) skipped; line 6 (1 zero row) kept
        assert_eq!(o.skipped, vec![(2, 4)]);
        assert_eq!(o.rows, 5);
        let o = overview(&p, 0, 2, 2, BinBy::Max, 2).unwrap();
        // kept: 1,5,6,7,8 → bins (1,5) (6,7) (8) → 3 rows → strips of 2
        assert_eq!((o.rows, o.cols), (2, 4));
        assert_eq!(o.values[0..4], [Some(5.0), Some(2.0), Some(4.0), Some(0.0)]);
        assert_eq!(o.first_id, vec![Some(1), Some(8), Some(6), None]);
        assert_eq!(o.values[4..8], [Some(3.0), Some(3.0), None, None]);
    }
}
