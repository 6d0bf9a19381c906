//! Boxfish tables (LLNL Boxfish): a meta file (`*_meta.yaml`, a stream of
//! YAML documents naming the hardware — network, `dim`, `coords`, the
//! coordinates table — and the tables) and the tables it names: a YAML
//! header (`key`, then a list of `[column, type]`) ended by `...`, then
//! whitespace-separated rows, one per line, until `...` or the end.
//!
//! Every numeric column of the node table (other than the id, the
//! coordinates and the code region) becomes a [`Volume`] over the
//! X × Y × Z cube of the hardware, one step per code region; rows that
//! repeat a node and region (one per core or phase) add up. The meta file
//! may only name tables inside its own directory (judged by real path).

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::{LinkSet, Volume, VolumeSet};

/// Whether `head` (the first bytes of a file) looks like a Boxfish meta file.
pub fn looks_like_boxfish(head: &[u8]) -> bool {
    let s = String::from_utf8_lossy(head);
    s.trim_start().starts_with("---") && s.contains("hardware:") && s.contains("filetype:")
}

fn bad(path: &Path, line: u64, msg: impl Into<String>) -> Error {
    Error::parse(path, Position::line(line), msg)
}

/// A sibling named by the meta file, confined to its directory.
fn sibling(meta: &Path, name: &str) -> Result<PathBuf> {
    let dir = meta.parent().unwrap_or(Path::new("."));
    let p = dir.join(name);
    let real_dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let real = p.canonicalize().map_err(|e| Error::io(&p, e))?;
    if !real.starts_with(&real_dir) {
        return Err(Error::Invalid(format!(
            "{}: the table {name} lies outside the meta file's directory ({})",
            meta.display(),
            real.display()
        )));
    }
    Ok(real)
}

/// A table: its column names and its rows (as f64), with line numbers.
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
}

/// Reads a table file.
fn read_table(path: &Path) -> Result<Table> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    // the header: YAML documents up to the first "..." line
    let mut header_end = None;
    let mut offset = 0usize;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_end() == "..." {
            header_end = Some((i, offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (hline, hbytes, body_start) = header_end.ok_or_else(|| {
        bad(
            path,
            1,
            "expected a YAML header ended by a '...' line, found none",
        )
    })?;
    let docs = YamlLoader::load_from_str(&text[..hbytes])
        .map_err(|e| bad(path, e.marker().line() as u64 + 1, format!("header: {e}")))?;
    let cols = docs
        .iter()
        .find_map(|d| d.as_vec())
        .ok_or_else(|| bad(path, 1, "expected a list of [column, type] in the header"))?;
    let mut columns = Vec::new();
    for c in cols {
        let name = c
            .as_vec()
            .and_then(|v| v.first())
            .and_then(|n| n.as_str())
            .ok_or_else(|| {
                bad(
                    path,
                    1,
                    format!("expected [column, type] in the header, found {c:?}"),
                )
            })?;
        columns.push(name.to_string());
    }
    let mut rows = Vec::new();
    for (k, line) in text[body_start..].lines().enumerate() {
        let lineno = (hline + 2 + k) as u64;
        let l = line.trim();
        if l == "..." {
            break;
        }
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let vals: Vec<&str> = l.split_whitespace().collect();
        if vals.len() != columns.len() {
            return Err(bad(
                path,
                lineno,
                format!(
                    "expected {} values ({}), found {}",
                    columns.len(),
                    columns.join(" "),
                    vals.len()
                ),
            ));
        }
        let mut row = Vec::with_capacity(vals.len());
        for (v, c) in vals.iter().zip(&columns) {
            let x: f64 = v.parse().map_err(|_| {
                bad(
                    path,
                    lineno,
                    format!("expected a number in column {c}, found '{v}'"),
                )
            })?;
            if !x.is_finite() {
                return Err(bad(
                    path,
                    lineno,
                    format!("expected a finite number in column {c}, found '{v}'"),
                ));
            }
            row.push(x);
        }
        rows.push(row);
    }
    Ok(Table { columns, rows })
}

fn get<'a>(y: &'a Yaml, key: &str) -> &'a Yaml {
    &y[key]
}

/// Reads the meta file and its node table.
pub fn read(meta: &Path) -> Result<VolumeSet> {
    read_with(meta, None)
}

/// Reads the tables with the steps taken from the node-table column
/// `steps_by` (`None`: `code_region` where present; `"none"`: one step).
pub fn read_with(meta: &Path, steps_by: Option<&str>) -> Result<VolumeSet> {
    let text = std::fs::read_to_string(meta).map_err(|e| Error::io(meta, e))?;
    let docs = YamlLoader::load_from_str(&text)
        .map_err(|e| bad(meta, e.marker().line() as u64 + 1, e.to_string()))?;
    let hw = docs
        .iter()
        .map(|d| get(d, "hardware"))
        .find(|h| !h.is_badvalue())
        .ok_or_else(|| bad(meta, 1, "expected a document with 'hardware:'"))?;
    let coords: Vec<String> = get(hw, "coords")
        .as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_else(|| vec!["x".into(), "y".into(), "z".into()]);
    if coords.len() != 3 {
        return Err(bad(
            meta,
            1,
            format!("expected three coordinates, found {coords:?}"),
        ));
    }
    let dim = get(hw, "dim");
    let mut dims = [0usize; 3];
    for (d, c) in dims.iter_mut().zip(&coords) {
        let v = dim[c.as_str()]
            .as_i64()
            .ok_or_else(|| bad(meta, 1, format!("expected hardware.dim.{c} as an integer")))?;
        if !(1..=1 << 16).contains(&v) {
            return Err(bad(
                meta,
                1,
                format!("hardware.dim.{c} = {v} is out of range"),
            ));
        }
        *d = v as usize;
    }
    if dims.iter().product::<usize>() > 1 << 26 {
        return Err(bad(
            meta,
            1,
            format!("a torus of {dims:?} nodes is too large"),
        ));
    }
    // the node table: hardware.coords_table, else the table of type NODE
    let table_name = get(hw, "coords_table")
        .as_str()
        .map(String::from)
        .or_else(|| {
            docs.iter()
                .find(|d| {
                    get(d, "filetype").as_str() == Some("table")
                        && get(d, "type").as_str() == Some("NODE")
                })
                .and_then(|d| get(d, "filename").as_str().map(String::from))
        })
        .ok_or_else(|| bad(meta, 1, "expected a node table (hardware.coords_table)"))?;
    let id_field = docs
        .iter()
        .find(|d| get(d, "filename").as_str() == Some(table_name.as_str()))
        .and_then(|d| get(d, "field").as_str().map(String::from))
        .unwrap_or_else(|| "nodeid".into());
    let table_path = sibling(meta, &table_name)?;
    let t = read_table(&table_path)?;
    let col = |name: &str| t.columns.iter().position(|c| c == name);
    let cidx: Vec<usize> = coords
        .iter()
        .map(|c| {
            col(c).ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: no coordinate column '{c}' (columns: {})",
                    table_path.display(),
                    t.columns.join(", ")
                ))
            })
        })
        .collect::<Result<_>>()?;
    let region = match steps_by {
        None => col("code_region"),
        Some("none") => None,
        Some(c) => Some(col(c).ok_or_else(|| {
            Error::Invalid(format!(
                "{}: --steps-by {c}: no such column (columns: {})",
                table_path.display(),
                t.columns.join(", ")
            ))
        })?),
    };
    if let Some(r) = region
        && cidx.contains(&r)
    {
        return Err(Error::Invalid(format!(
            "{}: --steps-by {}: a coordinate cannot be the steps",
            table_path.display(),
            t.columns[r]
        )));
    }
    // the steps: code regions in increasing order
    let mut regions: Vec<i64> = match region {
        Some(r) => t.rows.iter().map(|row| row[r] as i64).collect(),
        None => vec![0],
    };
    regions.sort_unstable();
    regions.dedup();
    let quantities: Vec<usize> = (0..t.columns.len())
        .filter(|&i| !cidx.contains(&i) && Some(i) != region && t.columns[i] != id_field)
        .collect();
    if quantities.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no value columns besides {id_field}, the coordinates and the steps",
            table_path.display()
        )));
    }
    let cells = dims.iter().product::<usize>();
    let mut values = vec![vec![0.0; regions.len() * cells]; quantities.len()];
    for (k, row) in t.rows.iter().enumerate() {
        let mut at = [0usize; 3];
        for (a, ((&ci, &d), c)) in at.iter_mut().zip(cidx.iter().zip(&dims).zip(&coords)) {
            let v = row[ci];
            if v < 0.0 || v >= d as f64 || v.fract() != 0.0 {
                return Err(Error::Invalid(format!(
                    "{}: row {}: {c} = {v} is outside the torus (0..{d})",
                    table_path.display(),
                    k + 1
                )));
            }
            *a = v as usize;
        }
        let step = match region {
            Some(r) => regions.partition_point(|&x| x < row[r] as i64),
            None => 0,
        };
        let cell = at[0] + dims[0] * (at[1] + dims[1] * at[2]);
        for (q, &ci) in quantities.iter().enumerate() {
            // several rows of one node and region (cores, phases) add up
            values[q][step * cells + cell] += row[ci];
        }
    }
    let axes = [0, 1, 2].map(|i| format!("torus {}", coords[i]));
    let volumes = quantities
        .iter()
        .zip(values)
        .map(|(&ci, v)| {
            Volume::new(
                t.columns[ci].clone(),
                "count",
                dims,
                axes.clone(),
                match region {
                    Some(r) => t.columns[r].replace('_', " "),
                    None => "step".to_string(),
                },
                regions.iter().map(|r| r.to_string()).collect(),
                v,
            )
        })
        .collect::<Result<_>>()?;
    let links = match get(hw, "link_coords_table").as_str() {
        Some(name) => Some(read_links(meta, hw, name, &coords, dims, steps_by)?),
        None => None,
    };
    Ok(VolumeSet {
        source: meta.to_path_buf(),
        format: "Boxfish tables".into(),
        volumes,
        links,
    })
}

/// The link table: source and destination coordinates (the columns named by
/// `hardware.source_coords` / `destination_coords`), the step column as for
/// the nodes, the first other column as the value; rows of one link and step
/// add up.
fn read_links(
    meta: &Path,
    hw: &Yaml,
    name: &str,
    coords: &[String],
    dims: [usize; 3],
    steps_by: Option<&str>,
) -> Result<LinkSet> {
    let path = sibling(meta, name)?;
    let t = read_table(&path)?;
    let col = |c: &str| t.columns.iter().position(|x| x == c);
    let ends = |key: &str, default: &str| -> Result<Vec<usize>> {
        coords
            .iter()
            .map(|c| {
                let name = get(get(hw, key), c)
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| format!("{default}{c}"));
                col(&name).ok_or_else(|| {
                    Error::Invalid(format!(
                        "{}: no link column '{name}' (columns: {})",
                        path.display(),
                        t.columns.join(", ")
                    ))
                })
            })
            .collect()
    };
    let s_cols = ends("source_coords", "s")?;
    let d_cols = ends("destination_coords", "t")?;
    let region = match steps_by {
        Some("none") => None,
        Some(c) => col(c),
        None => col("code_region"),
    };
    let value = (0..t.columns.len())
        .find(|&i| {
            !s_cols.contains(&i)
                && !d_cols.contains(&i)
                && Some(i) != region
                && t.columns[i] != "linkid"
        })
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no value column besides the coordinates and the steps",
                path.display()
            ))
        })?;
    let mut regions: Vec<i64> = match region {
        Some(r) => t.rows.iter().map(|row| row[r] as i64).collect(),
        None => vec![0],
    };
    regions.sort_unstable();
    regions.dedup();
    let coord = |row: &[f64], cols: &[usize], k: usize| -> Result<[usize; 3]> {
        let mut at = [0usize; 3];
        for (a, ((&ci, &d), c)) in at.iter_mut().zip(cols.iter().zip(&dims).zip(coords)) {
            let v = row[ci];
            if v < 0.0 || v >= d as f64 || v.fract() != 0.0 {
                return Err(Error::Invalid(format!(
                    "{}: row {}: {c} = {v} is outside the torus (0..{d})",
                    path.display(),
                    k + 1
                )));
            }
            *a = v as usize;
        }
        Ok(at)
    };
    let mut index: std::collections::HashMap<([usize; 3], [usize; 3]), usize> =
        std::collections::HashMap::new();
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    let mut cells: Vec<(usize, usize, f64)> = Vec::with_capacity(t.rows.len());
    for (k, row) in t.rows.iter().enumerate() {
        let (a, b) = (coord(row, &s_cols, k)?, coord(row, &d_cols, k)?);
        let n = index.len();
        let li = *index.entry((a, b)).or_insert_with(|| {
            src.push(a);
            dst.push(b);
            n
        });
        let step = match region {
            Some(r) => regions.partition_point(|&x| x < row[r] as i64),
            None => 0,
        };
        cells.push((step, li, row[value]));
    }
    let n = src.len();
    let mut values = vec![0.0; regions.len() * n];
    for (step, li, v) in cells {
        values[step * n + li] += v;
    }
    let torus = get(hw, "network").as_str().is_some_and(|s| s == "torus");
    Ok(LinkSet {
        name: t.columns[value].clone(),
        dims,
        torus,
        src,
        dst,
        steps: regions.iter().map(|r| r.to_string()).collect(),
        values,
    })
}
