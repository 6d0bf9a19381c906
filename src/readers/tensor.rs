//! Element access tensors (`.npy` of shape `[interval, element, processor,
//! 4]`, the last axis local read, remote read, local write, remote write),
//! reduced while reading to the counts of chosen kinds per interval and
//! element: the tensor itself never sits in memory.
//!
//! The same tensor may be a CSV (or TSV) table of its non-zero cells, with
//! a header naming `interval` (or `time bin`, `bin`), `element`,
//! `processor`, `kind` and `count` in any order; kinds are `local-read`,
//! `remote-read`, `local-write`, `remote-write` (or `lr`, `rr`, `lw`, `rw`,
//! or 0–3); repeated cells add up; the shape is one past the largest index
//! of each axis, or larger when a `# shape: T E P` comment says so.

use std::path::Path;

use super::npy::Npy;
use crate::error::{Error, Result};

/// An access tensor file and its shape `[interval, element, processor]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorFile {
    pub path: std::path::PathBuf,
    pub shape: [u64; 3],
}

/// Access counts per interval and element: `values[t * elements + e]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessCounts {
    pub intervals: usize,
    pub elements: usize,
    pub processors: usize,
    pub values: Vec<f64>,
}

/// Reads the tensor at `path`, summing the access kinds marked in `kinds`
/// over all processors (or of `processor` only).
pub fn read_access_counts(
    path: &Path,
    kinds: [bool; 4],
    processor: Option<usize>,
) -> Result<AccessCounts> {
    if !is_npy(path)? {
        return read_csv(path)?.counts(kinds, processor);
    }
    let mut a = Npy::open(path)?;
    let shape = a.header.shape.clone();
    let [t, e, p, k] = shape[..] else {
        return Err(Error::Invalid(format!(
            "{}: expected an access tensor of shape [interval, element, processor, 4], found {shape:?}",
            path.display()
        )));
    };
    if k != 4 {
        return Err(Error::Invalid(format!(
            "{}: the last axis must have 4 kinds, found {k}",
            path.display()
        )));
    }
    if let Some(q) = processor
        && q as u64 >= p
    {
        return Err(Error::Invalid(format!(
            "processor {q} is not in the tensor (it has {p})"
        )));
    }
    if t.saturating_mul(e) > 1 << 30 || p > 1 << 24 {
        return Err(Error::Invalid(format!(
            "{}: a tensor of {t} x {e} x {p} is too large",
            path.display()
        )));
    }
    crate::memory::guard(t.saturating_mul(e).saturating_mul(8), || {
        format!("{}: a tensor of {t} × {e} cells", path.display())
    })?;
    let (t, e, p) = (t as usize, e as usize, p as usize);
    let mut values = vec![0.0; t * e];
    let mut slab = vec![0.0; p * 4];
    for v in values.iter_mut() {
        a.read_f64(&mut slab)?;
        let mut s = 0.0;
        for (q, kinds_of_q) in slab.chunks_exact(4).enumerate() {
            if processor.is_some_and(|x| x != q) {
                continue;
            }
            for (x, on) in kinds_of_q.iter().zip(kinds) {
                if on {
                    s += x;
                }
            }
        }
        *v = s;
    }
    Ok(AccessCounts {
        intervals: t,
        elements: e,
        processors: p,
        values,
    })
}

/// A whole access tensor: `values[((t·E + e)·P + p)·4 + kind]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessTensor {
    pub intervals: usize,
    pub elements: usize,
    pub processors: usize,
    pub values: Vec<f32>,
}

impl AccessTensor {
    /// The count of `kind` (0 local read, 1 remote read, 2 local write,
    /// 3 remote write) of processor `p` on element `e` in interval `t`.
    pub fn at(&self, t: usize, e: usize, p: usize, kind: usize) -> f32 {
        self.values[((t * self.elements + e) * self.processors + p) * 4 + kind]
    }
}

/// The most values a whole tensor may hold in memory (1 GiB of f32).
pub const MAX_TENSOR_VALUES: u64 = 1 << 28;

/// Reads a whole tensor (for views that need every processor apart).
pub fn read_access_tensor(path: &Path) -> Result<AccessTensor> {
    if !is_npy(path)? {
        return read_csv(path)?.dense();
    }
    let mut a = Npy::open(path)?;
    let shape = a.header.shape.clone();
    let [t, e, p, 4] = shape[..] else {
        return Err(Error::Invalid(format!(
            "{}: expected an access tensor of shape [interval, element, processor, 4], found {shape:?}",
            path.display()
        )));
    };
    let n = a.checked_len(MAX_TENSOR_VALUES, "tensor")?;
    let mut values = Vec::with_capacity(n as usize);
    let mut chunk = vec![0.0f64; (p * 4) as usize];
    for _ in 0..t * e {
        a.read_f64(&mut chunk)?;
        values.extend(chunk.iter().map(|&v| v as f32));
    }
    Ok(AccessTensor {
        intervals: t as usize,
        elements: e as usize,
        processors: p as usize,
        values,
    })
}

/// The shape `[interval, element, processor]` of a tensor file (`.npy` or
/// access table).
pub fn shape_of(path: &Path) -> Result<[u64; 3]> {
    if !is_npy(path)? {
        return Ok(read_csv(path)?.shape);
    }
    let shape = Npy::open(path)?.header.shape;
    match shape[..] {
        [t, e, p, 4] => Ok([t, e, p]),
        _ => Err(Error::Invalid(format!(
            "{}: expected an access tensor of shape [interval, element, processor, 4], found {shape:?}",
            path.display()
        ))),
    }
}

/// Whether `path` holds a `.npy` array (else a CSV table is expected).
fn is_npy(path: &Path) -> Result<bool> {
    Ok(super::volume::looks_like_npy(&super::input::peek(
        path, 16,
    )?))
}

/// The header columns of an access table: (separator, interval, element,
/// processor, kind, count), or `None` when `line` is not one.
fn header_columns(line: &str) -> Option<(char, [usize; 5])> {
    let sep = if line.contains('\t') { '\t' } else { ',' };
    let names: Vec<String> = line
        .split(sep)
        .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    let find = |want: &[&str]| names.iter().position(|n| want.contains(&n.as_str()));
    Some((
        sep,
        [
            find(&["interval", "time bin", "time_bin", "bin"])?,
            find(&["element"])?,
            find(&["processor"])?,
            find(&["kind"])?,
            find(&["count"])?,
        ],
    ))
}

/// Whether the first bytes are an access table's header (after comments).
pub fn looks_like_access_csv(head: &[u8]) -> bool {
    super::input::first_data_line(head).is_some_and(|l| header_columns(&l).is_some())
}

/// The largest index accepted on each axis of a CSV tensor.
pub const MAX_INDEX: u64 = 1 << 24;

/// The non-zero cells of an access table and its shape.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseTensor {
    pub path: std::path::PathBuf,
    /// `[interval, element, processor]`.
    pub shape: [u64; 3],
    /// (interval, element, processor, kind, count), in file order.
    pub cells: Vec<(u32, u32, u32, u8, f64)>,
}

fn kind_index(s: &str) -> Option<u8> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "local-read" | "local-reads" | "lr" | "0" => 0,
        "remote-read" | "remote-reads" | "rr" | "1" => 1,
        "local-write" | "local-writes" | "lw" | "2" => 2,
        "remote-write" | "remote-writes" | "rw" | "3" => 3,
        _ => return None,
    })
}

/// Reads an access table (CSV or TSV; gzip, a byte-order mark and any line
/// ends accepted). Errors name the line.
pub fn read_csv(path: &Path) -> Result<SparseTensor> {
    use crate::diagnostics::Position;
    let text = super::input::read_text(path, 4 << 30)?;
    let err = |i: usize, msg: String| Error::parse(path, Position::line(i as u64 + 1), msg);
    let mut header: Option<(char, [usize; 5])> = None;
    let mut declared = [0u64; 3];
    let mut cells = Vec::new();
    let mut max = [0u64; 3];
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            if let Some(v) = c.trim().strip_prefix("shape:") {
                let dims: Vec<&str> = v.split_whitespace().collect();
                let parsed: Option<Vec<u64>> = dims.iter().map(|d| d.parse().ok()).collect();
                match parsed {
                    Some(d) if d.len() == 3 && d.iter().all(|&x| x <= MAX_INDEX) => {
                        declared = [d[0], d[1], d[2]];
                    }
                    _ => {
                        return Err(err(
                            i,
                            format!(
                                "expected '# shape: INTERVALS ELEMENTS PROCESSORS' (each at most {MAX_INDEX}), found '{line}'"
                            ),
                        ));
                    }
                }
            }
            continue;
        }
        let Some((sep, cols)) = header else {
            header = Some(header_columns(line).ok_or_else(|| {
                err(
                    i,
                    format!(
                        "expected a header naming interval, element, processor, kind and count, found '{line}'"
                    ),
                )
            })?);
            continue;
        };
        let fields: Vec<&str> = line.split(sep).map(str::trim).collect();
        let get = |k: usize, what: &str| -> Result<&str> {
            fields.get(cols[k]).copied().ok_or_else(|| {
                err(
                    i,
                    format!(
                        "expected a {what} in column {}, found {} column(s)",
                        cols[k] + 1,
                        fields.len()
                    ),
                )
            })
        };
        let mut idx = [0u32; 3];
        for (a, what) in ["interval", "element", "processor"].iter().enumerate() {
            let f = get(a, what)?;
            let v: u64 = f.parse().ok().filter(|&v| v < MAX_INDEX).ok_or_else(|| {
                err(
                    i,
                    format!(
                        "expected the {what} index from 0 to {}, found '{f}'",
                        MAX_INDEX - 1
                    ),
                )
            })?;
            max[a] = max[a].max(v + 1);
            idx[a] = v as u32;
        }
        let k = get(3, "kind")?;
        let kind = kind_index(k).ok_or_else(|| {
            err(
                i,
                format!("expected a kind local-read, remote-read, local-write or remote-write (or 0-3), found '{k}'"),
            )
        })?;
        let c = get(4, "count")?;
        let count: f64 = c
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                err(
                    i,
                    format!("expected a count (a finite number ≥ 0), found '{c}'"),
                )
            })?;
        cells.push((idx[0], idx[1], idx[2], kind, count));
    }
    if header.is_none() {
        return Err(err(0, "expected a header naming interval, element, processor, kind and count, found an empty table".into()));
    }
    let shape = [
        max[0].max(declared[0]),
        max[1].max(declared[1]),
        max[2].max(declared[2]),
    ];
    if shape.contains(&0) {
        return Err(Error::parse(
            path,
            Position::none(),
            "expected at least one access (a row) or a '# shape:' comment, found neither",
        ));
    }
    Ok(SparseTensor {
        path: path.to_path_buf(),
        shape,
        cells,
    })
}

impl SparseTensor {
    /// Counts of the `kinds` per interval and element, over all processors
    /// or of `processor` only (the `.npy` path's result, from the cells).
    pub fn counts(&self, kinds: [bool; 4], processor: Option<usize>) -> Result<AccessCounts> {
        let [t, e, p] = self.shape;
        if let Some(q) = processor
            && q as u64 >= p
        {
            return Err(Error::Invalid(format!(
                "processor {q} is not in the tensor (it has {p})"
            )));
        }
        crate::memory::guard(t.saturating_mul(e).saturating_mul(8), || {
            format!("{}: a tensor of {t} × {e} cells", self.path.display())
        })?;
        let (t, e) = (t as usize, e as usize);
        let mut values = vec![0.0; t * e];
        for &(ti, ei, pi, k, c) in &self.cells {
            if kinds[k as usize] && processor.is_none_or(|q| q == pi as usize) {
                values[ti as usize * e + ei as usize] += c;
            }
        }
        Ok(AccessCounts {
            intervals: t,
            elements: e,
            processors: p as usize,
            values,
        })
    }

    /// The whole tensor, dense (at most [`MAX_TENSOR_VALUES`] values).
    pub fn dense(&self) -> Result<AccessTensor> {
        let [t, e, p] = self.shape;
        let n = t
            .checked_mul(e)
            .and_then(|x| x.checked_mul(p))
            .and_then(|x| x.checked_mul(4))
            .filter(|&n| n <= MAX_TENSOR_VALUES)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: a tensor of {t} × {e} × {p} × 4 has more than {MAX_TENSOR_VALUES} values",
                    self.path.display()
                ))
            })?;
        crate::memory::guard(n.saturating_mul(4), || {
            format!("{}: a tensor of {t} × {e} × {p} × 4", self.path.display())
        })?;
        let (e, p) = (e as usize, p as usize);
        let mut values = vec![0f32; n as usize];
        for &(ti, ei, pi, k, c) in &self.cells {
            values[((ti as usize * e + ei as usize) * p + pi as usize) * 4 + k as usize] +=
                c as f32;
        }
        Ok(AccessTensor {
            intervals: t as usize,
            elements: e,
            processors: p,
            values,
        })
    }
}
