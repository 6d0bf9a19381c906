//! Element access tensors (`.npy` of shape `[interval, element, processor,
//! 4]`, the last axis local read, remote read, local write, remote write),
//! reduced while reading to the counts of chosen kinds per interval and
//! element: the tensor itself never sits in memory.

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
