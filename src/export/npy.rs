//! Streaming writer of NumPy `.npy` files (format version 1.0, little
//! endian, C order): the header states the shape, then the data follows in
//! slabs, so arrays larger than memory can be written.

use std::io::Write;
use std::path::Path;

use super::AtomicFile;
use crate::error::{Error, Result};

/// Element types that can be written.
pub trait NpyElement: Copy {
    /// NumPy dtype descriptor, e.g. `<u4`.
    const DESCR: &'static str;
    fn write_le(self, out: &mut Vec<u8>);
}

impl NpyElement for u32 {
    const DESCR: &'static str = "<u4";
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl NpyElement for f64 {
    const DESCR: &'static str = "<f8";
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl NpyElement for f32 {
    const DESCR: &'static str = "<f4";
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl NpyElement for u64 {
    const DESCR: &'static str = "<u8";
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// The `.npy` header for `shape` and element type `T`.
pub fn header<T: NpyElement>(shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        T::DESCR,
        shape_text
    );
    // magic (6) + version (2) + length (2) + dict + '\n' is a multiple of 64
    let total = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - total % 64) % 64));
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h
}

/// Writes an array of known shape slab by slab.
pub struct NpyWriter<T: NpyElement> {
    file: AtomicFile,
    expected: u64,
    written: u64,
    buf: Vec<u8>,
    /// FNV-1a (64-bit) of the data bytes written so far.
    fnv: u64,
    _t: std::marker::PhantomData<T>,
}

/// FNV-1a 64-bit offset basis.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a 64-bit hash over `bytes`.
pub fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A written array not yet in place: its file (see
/// [`AtomicFile::commit_pair`]) and what identifies its data.
pub struct PendingArray {
    pub file: AtomicFile,
    /// Bytes of data after the header.
    pub data_bytes: u64,
    /// FNV-1a 64-bit hash of those bytes.
    pub data_fnv1a64: u64,
}

impl<T: NpyElement> NpyWriter<T> {
    pub fn create(path: &Path, shape: &[u64]) -> Result<Self> {
        let expected = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::Invalid(format!("array shape {shape:?} is too large")))?;
        let mut file = AtomicFile::create(path, &[])?;
        file.write_all(&header::<T>(shape))
            .map_err(|e| Error::io(path, e))?;
        Ok(NpyWriter {
            file,
            expected,
            written: 0,
            buf: Vec::new(),
            fnv: FNV_START,
            _t: std::marker::PhantomData,
        })
    }

    /// Appends elements in C order.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        self.buf.clear();
        for &v in values {
            v.write_le(&mut self.buf);
        }
        self.written += values.len() as u64;
        if self.written > self.expected {
            return Err(Error::Invalid(format!(
                "more elements written to {} than its shape holds",
                self.file.path().display()
            )));
        }
        self.fnv = fnv1a(self.fnv, &self.buf);
        let p = self.file.path().to_path_buf();
        self.file.write_all(&self.buf).map_err(|e| Error::io(p, e))
    }

    /// Checks that the shape is filled and makes the file appear.
    pub fn finish(self) -> Result<()> {
        self.finish_pending()?.file.commit()
    }

    /// Checks that the shape is filled; the file appears when the caller
    /// commits it (with its companion, [`AtomicFile::commit_pair`]).
    pub fn finish_pending(self) -> Result<PendingArray> {
        if self.written != self.expected {
            return Err(Error::Invalid(format!(
                "{} holds {} of {} elements",
                self.file.path().display(),
                self.written,
                self.expected
            )));
        }
        Ok(PendingArray {
            data_bytes: self.written * std::mem::size_of::<T>() as u64,
            data_fnv1a64: self.fnv,
            file: self.file,
        })
    }
}

/// Writes a whole array, not yet in place (for a pair with its sidecar).
pub fn write_array_pending<T: NpyElement>(
    path: &Path,
    shape: &[u64],
    data: &[T],
) -> Result<PendingArray> {
    let mut w = NpyWriter::create(path, shape)?;
    w.write(data)?;
    w.finish_pending()
}

/// Writes a whole array at once.
pub fn write_array<T: NpyElement>(path: &Path, shape: &[u64], data: &[T]) -> Result<()> {
    let mut w = NpyWriter::create(path, shape)?;
    w.write(data)?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_readable() {
        let h = header::<u32>(&[2, 3, 4, 4]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        let text = String::from_utf8_lossy(&h[10..]);
        assert!(text.contains("'shape': (2, 3, 4, 4)"));
        assert!(text.ends_with('\n'));
        assert!(String::from_utf8_lossy(&header::<f64>(&[5])).contains("(5,)"));
    }

    #[test]
    fn writes_and_checks_shape() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.npy");
        write_array(&p, &[2, 2], &[1u32, 2, 3, 4]).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let h = header::<u32>(&[2, 2]).len();
        assert_eq!(bytes.len(), h + 16);
        assert_eq!(&bytes[h..h + 4], &1u32.to_le_bytes());
        assert!(write_array(&p, &[3], &[1u32]).is_err());
    }
}
