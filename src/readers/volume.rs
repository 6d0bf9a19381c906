//! Volumes from NumPy: a 3D array of shape `(Z, Y, X)` (C order, x fastest) or a 4D array `(T, Z, Y, X)` of f32,
//! f64, u8/u16/u32/u64 or i32/i64 opens as one [`Volume`] (T steps). This is
//! how a field from any other tool reaches the data-parallel views.

use std::path::Path;

use super::npy::Npy;
use crate::error::{Error, Result};
use crate::model::{Volume, VolumeSet};

/// The most values a volume may hold (2 GiB of f64).
pub const MAX_VALUES: u64 = 1 << 28;

/// Whether `head` starts an `.npy` array.
pub fn looks_like_npy(head: &[u8]) -> bool {
    head.starts_with(b"\x93NUMPY")
}

/// Reads a 3D or 4D array as a volume; NaN and infinite values are errors
/// with their element index.
pub fn read(path: &Path) -> Result<VolumeSet> {
    let mut a = Npy::open(path)?;
    let shape = a.header.shape.clone();
    let (t, z, y, x) = match shape[..] {
        [z, y, x] => (1, z, y, x),
        [t, z, y, x] => (t, z, y, x),
        _ => {
            return Err(Error::Invalid(format!(
                "{}: expected a 3D (Z, Y, X) or 4D (T, Z, Y, X) array, found shape {shape:?}",
                path.display()
            )));
        }
    };
    let n = a.checked_len(MAX_VALUES, "volume")?;
    let mut values = vec![0.0; n as usize];
    a.read_f64(&mut values)?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::Invalid(format!(
            "{}: element {i} is {} (volumes need finite values)",
            path.display(),
            values[i]
        )));
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "value".into());
    let v = Volume::new(
        name,
        "",
        [x as usize, y as usize, z as usize],
        ["x".into(), "y".into(), "z".into()],
        "T",
        (0..t).map(|k| k.to_string()).collect(),
        values,
    )?;
    Ok(VolumeSet {
        source: path.to_path_buf(),
        format: "NumPy volume".into(),
        volumes: vec![v],
        links: None,
    })
}
