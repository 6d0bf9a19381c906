//! TAU profiles: one `profile.N.C.T` file per thread (node, context,
//! thread) in a directory, or one such directory per metric
//! (`MULTI__TIME`, `MULTI__PAPI_FP_OPS`, ...).
//!
//! ```text
//! 3 templated_functions_MULTI_TIME
//! # Name Calls Subrs Excl Incl ProfileCalls # <metadata>...</metadata>
//! "main" 1 2 10.5 100 0 GROUP="TAU_DEFAULT"
//! "main => compute" 4 0 89.5 89.5 0 GROUP="TAU_CALLPATH"
//! ...
//! 0 aggregates
//! ```
//!
//! Result: a [`ProfileMatrix`] of functions × threads with the metrics
//! `calls`, `subroutines`, `exclusive <METRIC>` and `inclusive <METRIC>`
//! (microseconds for `TIME`). Call paths (`a => b`) are rows flagged as such.
//! The metric name comes from the metadata (`Metric Name`), else from the
//! first line, else `TIME`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::{ProfileMatrix, ProfileMetric, RowKind};

/// The most threads or functions accepted (bounded memory).
pub const MAX_ENTRIES: u64 = 1 << 24;

/// Whether `head` starts like a TAU profile file.
pub fn looks_like_tau(head: &[u8]) -> bool {
    let line = head.split(|&c| c == b'\n').next().unwrap_or(&[]);
    let text = String::from_utf8_lossy(line);
    let mut it = text.split_whitespace();
    matches!((it.next(), it.next()), (Some(n), Some(t)) if n.parse::<u64>().is_ok() && t.starts_with("templated_functions"))
}

/// One function line of one thread.
#[derive(Debug)]
struct Entry {
    name: String,
    group: String,
    calls: f64,
    subrs: f64,
    excl: f64,
    incl: f64,
}

struct ThreadProfile {
    /// (node, context, thread)
    id: (u64, u64, u64),
    metric: String,
    entries: Vec<Entry>,
}

fn thread_id(path: &Path) -> Option<(u64, u64, u64)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("profile.")?;
    let mut it = rest.split('.');
    let id = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    it.next().is_none().then_some(id)
}

fn xml_value<'a>(meta: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("<name>{name}</name>");
    let at = meta.find(&key)? + key.len();
    let rest = &meta[at..];
    let v0 = rest.find("<value>")? + "<value>".len();
    let v1 = rest[v0..].find("</value>")? + v0;
    Some(rest[v0..v1].trim())
}

fn parse_file(path: &Path) -> Result<ThreadProfile> {
    let id = thread_id(path).ok_or_else(|| {
        Error::parse(
            path,
            Position::none(),
            "expected a file named profile.NODE.CONTEXT.THREAD",
        )
    })?;
    // gzip-compressed profiles are read as they are
    let bytes = super::input::read_all(path, 4 << 30)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l));
    let err = |line: u64, msg: String| Error::parse(path, Position::line(line), msg);
    let (_, first) = lines.next().ok_or_else(|| {
        err(
            1,
            "expected 'N templated_functions...', found an empty file".into(),
        )
    })?;
    let mut it = first.split_whitespace();
    let count: u64 = it.next().and_then(|n| n.parse().ok()).ok_or_else(|| {
        err(
            1,
            format!("expected the number of functions, found '{first}'"),
        )
    })?;
    let kind = it.next().unwrap_or("");
    if !kind.starts_with("templated_functions") {
        return Err(err(
            1,
            format!("expected 'templated_functions' after the count, found '{kind}'"),
        ));
    }
    if count > MAX_ENTRIES {
        return Err(err(
            1,
            format!("the file declares {count} functions; refusing an absurd count"),
        ));
    }
    let mut metric = kind
        .strip_prefix("templated_functions_MULTI_")
        .unwrap_or("TIME")
        .to_string();
    let (ln, header) = lines
        .next()
        .ok_or_else(|| err(2, "expected the '# Name Calls Subrs Excl Incl ProfileCalls' line, found the end of the file".into()))?;
    if !header.starts_with("# Name") {
        return Err(err(
            ln,
            format!(
                "expected '# Name Calls Subrs Excl Incl ProfileCalls', found '{}'",
                clip(header)
            ),
        ));
    }
    if let Some(v) = xml_value(header, "Metric Name") {
        metric = v.to_string();
    }
    // the declared count is a claim: reserve by what the file can hold
    let mut entries = Vec::with_capacity((count as usize).min(text.len() / 8 + 1));
    for k in 0..count {
        let (ln, line) = lines.next().ok_or_else(|| {
            err(
                ln + 1 + k,
                format!("expected {count} function lines, found {k}"),
            )
        })?;
        entries.push(parse_entry(line).map_err(|m| err(ln, m))?);
    }
    Ok(ThreadProfile {
        id,
        metric,
        entries,
    })
}

fn clip(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        t.push_str("...");
    }
    t
}

/// `"name" calls subrs excl incl profilecalls GROUP="g"`
fn parse_entry(line: &str) -> std::result::Result<Entry, String> {
    let line = line.trim_end();
    if !line.starts_with('"') {
        return Err(format!(
            "expected a quoted function name, found '{}'",
            clip(line)
        ));
    }
    let (body, group) = match line.rfind(" GROUP=\"") {
        Some(k) => (&line[..k], line[k + 8..].trim_end_matches('"').to_string()),
        None => (line, String::new()),
    };
    let parts: Vec<&str> = body.rsplitn(6, char::is_whitespace).collect();
    if parts.len() < 6 {
        return Err(format!(
            "expected a quoted function name and 5 numbers, found {} field(s)",
            parts.len()
        ));
    }
    let mut nums = [0f64; 5];
    for (slot, tok) in nums.iter_mut().rev().zip(&parts[..5]) {
        *slot = tok
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("expected a number, found '{tok}'"))?;
    }
    let name = parts[5].trim();
    let name = name
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .ok_or_else(|| {
            format!(
                "expected a function name in double quotes, found '{}'",
                clip(name)
            )
        })?;
    Ok(Entry {
        name: name.trim().to_string(),
        group,
        calls: nums[0],
        subrs: nums[1],
        excl: nums[2],
        incl: nums[3],
    })
}

fn profile_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    let root = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let p = e.map_err(|e| Error::io(dir, e))?.path();
        if p.is_file() && thread_id(&p).is_some() {
            // confined by real path: a link out of the profile's directory is refused
            let real = p.canonicalize().map_err(|e| Error::io(&p, e))?;
            if !real.starts_with(&root) {
                return Err(Error::Invalid(format!(
                    "{}: refusing to read {}, which leads outside the profile's directory",
                    p.display(),
                    real.display()
                )));
            }
            v.push(p);
        }
    }
    v.sort_by_key(|p| thread_id(p));
    Ok(v)
}

/// Reads the TAU profiles of a directory (or of the directory of a
/// `profile.N.C.T` file).
pub fn read(path: &Path) -> Result<ProfileMatrix> {
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    };
    // one metric per MULTI__ directory, or the profiles of the directory itself
    let mut metric_dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("MULTI__"))
        })
        .collect();
    metric_dirs.sort();
    if metric_dirs.is_empty() {
        metric_dirs.push(dir.clone());
    }
    let mut sets: Vec<Vec<ThreadProfile>> = Vec::new();
    for d in &metric_dirs {
        let files = profile_files(d)?;
        if files.is_empty() {
            return Err(Error::parse(
                d,
                Position::none(),
                "expected TAU profile files (profile.N.C.T), found none",
            ));
        }
        if files.len() as u64 > MAX_ENTRIES {
            return Err(Error::parse(
                d,
                Position::none(),
                "more TAU profile files than can be read",
            ));
        }
        sets.push(
            files
                .iter()
                .map(|f| parse_file(f))
                .collect::<Result<Vec<_>>>()?,
        );
    }
    // columns: the threads of the first metric; every metric must have the same
    let ids: Vec<(u64, u64, u64)> = sets[0].iter().map(|t| t.id).collect();
    for (d, s) in metric_dirs.iter().zip(&sets) {
        let other: Vec<_> = s.iter().map(|t| t.id).collect();
        if other != ids {
            return Err(Error::parse(
                d,
                Position::none(),
                "expected the same threads as the other metric directories",
            ));
        }
    }
    // rows: functions in order of first appearance
    let mut row_of: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    for t in sets.iter().flatten() {
        for e in &t.entries {
            if !row_of.contains_key(&e.name) {
                row_of.insert(e.name.clone(), rows.len());
                rows.push(e.name.clone());
                groups.push(e.group.clone());
            }
        }
    }
    let (nr, nc) = (rows.len(), ids.len());
    if (nr as u64) * (nc as u64) > 1 << 28 {
        return Err(Error::parse(
            &dir,
            Position::none(),
            format!("{nr} functions x {nc} threads is too large a profile"),
        ));
    }
    let mut metrics = Vec::new();
    let mut calls = vec![0.0; nr * nc];
    let mut subrs = vec![0.0; nr * nc];
    for (si, set) in sets.iter().enumerate() {
        let mname = set[0].metric.clone();
        let unit = if mname.eq_ignore_ascii_case("TIME") {
            "us"
        } else {
            ""
        };
        let mut excl = vec![0.0; nr * nc];
        let mut incl = vec![0.0; nr * nc];
        for (c, t) in set.iter().enumerate() {
            for e in &t.entries {
                let r = row_of[&e.name];
                excl[r * nc + c] = e.excl;
                incl[r * nc + c] = e.incl;
                if si == 0 {
                    calls[r * nc + c] = e.calls;
                    subrs[r * nc + c] = e.subrs;
                }
            }
        }
        metrics.push(ProfileMetric {
            name: format!("exclusive {mname}"),
            unit: unit.into(),
            values: excl,
        });
        metrics.push(ProfileMetric {
            name: format!("inclusive {mname}"),
            unit: unit.into(),
            values: incl,
        });
    }
    metrics.insert(
        0,
        ProfileMetric {
            name: "calls".into(),
            unit: "".into(),
            values: calls,
        },
    );
    metrics.insert(
        1,
        ProfileMetric {
            name: "subroutines".into(),
            unit: "".into(),
            values: subrs,
        },
    );
    Ok(ProfileMatrix {
        source: dir,
        format: "TAU profile".into(),
        row_kind: RowKind::Function,
        callpath: rows.iter().map(|r| r.contains(" => ")).collect(),
        row_ids: (0..nr as i64).collect(),
        rows,
        groups,
        columns: ids.iter().map(|(n, c, t)| format!("{n},{c},{t}")).collect(),
        metrics,
        procedures: Vec::new(),
        source_file: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries() {
        let e = parse_entry(r#""int main(int, char **) C" 1 2 1.5E+03 2000 0 GROUP="TAU_DEFAULT""#)
            .unwrap();
        assert_eq!(e.name, "int main(int, char **) C");
        assert_eq!(
            (e.calls, e.subrs, e.excl, e.incl),
            (1.0, 2.0, 1500.0, 2000.0)
        );
        assert_eq!(e.group, "TAU_DEFAULT");
        assert!(
            parse_entry(r#""f" 1 2 x 4 0 GROUP="g""#)
                .unwrap_err()
                .contains("'x'")
        );
        assert!(
            parse_entry(r#"f 1 2 3 4 0"#)
                .unwrap_err()
                .contains("quoted")
        );
        assert!(parse_entry(r#""f" 1 2"#).unwrap_err().contains("5 numbers"));
    }

    #[test]
    fn metadata_metric() {
        let h = "# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name><value>PAPI_FP_OPS</value></attribute></metadata>";
        assert_eq!(xml_value(h, "Metric Name"), Some("PAPI_FP_OPS"));
        assert!(looks_like_tau(b"12 templated_functions_MULTI_TIME\n"));
        assert!(!looks_like_tau(b"-3 -901 0.0 0 0 0\n"));
    }
}
