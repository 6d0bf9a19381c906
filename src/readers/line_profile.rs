//! Line-profile tables (PerfVisS, paper 004): pc-sampling tick counts per
//! source line and processor, as CSV or TSV.
//!
//! ```text
//! # source: solver.c
//! # procedure: main 1 40
//! # procedure: update 41 90
//! line,processor,ticks
//! 12,0,5
//! 12,1,7
//! ```
//!
//! The header row names the columns `line`, `processor` and `ticks` (any
//! order, case-insensitive; other columns are ignored); the delimiter is a
//! comma or a tab. `# source:` gives the source file and `# procedure: NAME
//! FIRST LAST` the line range of a procedure. Repeated (line, processor)
//! pairs add up. Result: a [`ProfileMatrix`] with one row per line from the
//! first to the last line sampled (so that runs of blank lines can be found)
//! and one column per processor from 0 to the largest; where that is far
//! more than the lines or processors sampled (beyond 65,536 and four times
//! them), only the sampled ones are rows or columns, named by their numbers.

use std::path::Path;

use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::{Procedure, ProfileMatrix, ProfileMetric, RowKind};

/// The largest matrix accepted (lines × processors).
pub const MAX_CELLS: u64 = 1 << 28;

fn header_columns(line: &str) -> Option<(char, usize, usize, usize)> {
    let delim = if line.contains('\t') { '\t' } else { ',' };
    let cols: Vec<String> = line
        .split(delim)
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let find = |n: &str| cols.iter().position(|c| c == n);
    Some((delim, find("line")?, find("processor")?, find("ticks")?))
}

/// Line spans beyond which only sampled lines become rows (when they are
/// fewer than a quarter of the span).
const SPARSE_BEYOND: u64 = 1 << 16;

/// Whether `head` looks like a line-profile table (its header row).
pub fn looks_like_line_profile(head: &[u8]) -> bool {
    super::input::first_data_line(head).is_some_and(|l| header_columns(&l).is_some())
}

/// Reads a line-profile table.
pub fn read(path: &Path) -> Result<ProfileMatrix> {
    // gzip, a byte-order mark and any line ends are accepted
    let text = super::input::read_text(path, 4 << 30)?;
    let text = text.as_str();
    let err = |line: usize, msg: String| Error::parse(path, Position::line(line as u64 + 1), msg);
    let mut source_file = None;
    let mut procedures = Vec::new();
    let mut header: Option<(char, usize, usize, usize)> = None;
    let mut samples: Vec<(i64, u64, f64, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if let Some(s) = c.strip_prefix("source:") {
                source_file = Some(s.trim().to_string());
            } else if let Some(p) = c.strip_prefix("procedure:") {
                let f: Vec<&str> = p.split_whitespace().collect();
                let (Some(name), Some(a), Some(b)) = (f.first(), f.get(1), f.get(2)) else {
                    return Err(err(
                        i,
                        format!("expected '# procedure: NAME FIRST LAST', found '{line}'"),
                    ));
                };
                let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) else {
                    return Err(err(i, format!("expected line numbers in '{line}'")));
                };
                if b < a {
                    return Err(err(
                        i,
                        format!("procedure {name} ends (line {b}) before it begins (line {a})"),
                    ));
                }
                procedures.push(Procedure {
                    name: name.to_string(),
                    first_line: a,
                    last_line: b,
                });
            }
            continue;
        }
        let Some((delim, li, pi, ti)) = header else {
            header = Some(header_columns(line).ok_or_else(|| {
                err(i, format!("expected a header row naming the columns line, processor and ticks, found '{line}'"))
            })?);
            continue;
        };
        let cols: Vec<&str> = line.split(delim).map(str::trim).collect();
        let get = |k: usize, what: &str| -> Result<&str> {
            cols.get(k).copied().ok_or_else(|| {
                err(
                    i,
                    format!("expected a {what} column, found {} column(s)", cols.len()),
                )
            })
        };
        let l = get(li, "line")?;
        let l: i64 = l
            .parse()
            .map_err(|_| err(i, format!("expected a line number, found '{l}'")))?;
        let p = get(pi, "processor")?;
        let p: u64 = p
            .parse()
            .map_err(|_| err(i, format!("expected a processor number, found '{p}'")))?;
        let t = get(ti, "ticks")?;
        let t: f64 = t
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                err(
                    i,
                    format!("expected a non-negative tick count, found '{t}'"),
                )
            })?;
        if !(0..=1 << 30).contains(&l) {
            return Err(err(
                i,
                format!("expected a line number in 0..=2^30, found {l}"),
            ));
        }
        if p >= 1 << 24 {
            return Err(err(
                i,
                format!("expected a processor number below 2^24, found {p}"),
            ));
        }
        samples.push((l, p, t, i));
    }
    if header.is_none() {
        return Err(Error::parse(
            path,
            Position::none(),
            "expected a header row 'line,processor,ticks', found none",
        ));
    }
    if samples.is_empty() {
        return Err(Error::parse(
            path,
            Position::none(),
            "expected samples after the header, found none",
        ));
    }
    let first = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let last = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let nc = samples.iter().map(|s| s.1).max().unwrap_or(0) + 1;
    // every line from the first to the last (lines without samples are the
    // profile's zero rows), unless that is far more than the lines sampled:
    // then only the sampled lines are rows (sparse)
    let mut sampled: Vec<i64> = samples.iter().map(|s| s.0).collect();
    sampled.sort_unstable();
    sampled.dedup();
    let span = (last - first + 1) as u64;
    let row_ids: Vec<i64> = if span > SPARSE_BEYOND && span > 4 * sampled.len() as u64 {
        sampled
    } else {
        (first..=last).collect()
    };
    // processors likewise: one column each from 0 to the largest, unless a
    // few processors number far apart (then only the sampled ones)
    let mut procs: Vec<u64> = samples.iter().map(|s| s.1).collect();
    procs.sort_unstable();
    procs.dedup();
    let col_ids: Vec<u64> = if nc > SPARSE_BEYOND && nc > 4 * procs.len() as u64 {
        procs
    } else {
        (0..nc).collect()
    };
    let nc = col_ids.len() as u64;
    let nr = row_ids.len() as u64;
    if nr * nc > MAX_CELLS {
        return Err(Error::parse(
            path,
            Position::none(),
            format!(
                "{nr} lines x {nc} processors exceeds the {MAX_CELLS} cells a line profile may have"
            ),
        ));
    }
    // the ticks and the row and column names
    crate::memory::guard(nr * nc * 8 + (nr + nc) * 40, || {
        format!("a line profile of {nr} lines × {nc} processors")
    })
    .map_err(|e| Error::parse(path, Position::none(), e.to_string()))?;
    let (nr, nc) = (nr as usize, nc as usize);
    let mut ticks = vec![0.0; nr * nc];
    for &(l, p, t, _) in &samples {
        let r = row_ids.binary_search(&l).unwrap_or(0);
        let c = col_ids.binary_search(&p).unwrap_or(0);
        ticks[r * nc + c] += t;
    }
    Ok(ProfileMatrix {
        source: path.to_path_buf(),
        format: "line profile table".into(),
        row_kind: RowKind::Line,
        rows: row_ids.iter().map(|l| format!("line {l}")).collect(),
        row_ids,
        callpath: vec![false; nr],
        groups: vec![String::new(); nr],
        columns: col_ids.iter().map(|p| p.to_string()).collect(),
        metrics: vec![ProfileMetric {
            name: "ticks".into(),
            unit: "ticks".into(),
            values: ticks,
        }],
        procedures,
        source_file,
    })
}
