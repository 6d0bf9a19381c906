//! Streaming writer of NumPy `.npy` files (format version 1.0, little
//! endian, C order): the header states the shape, then the data follows in
//! slabs, so arrays larger than memory can be written.

use std::io::Write;
use std::path::Path;

use super::AtomicFile;
use crate::error::{Error, Result};

/// Element types that can be written.
pub trait NpyElement: Copy + Send + Sync {
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

/// Elements converted, hashed and written at a time: 1 MiB of `f64`.
const SLAB: usize = 1 << 17;

/// `values` as little-endian bytes, in `out` (emptied first).
fn le_bytes<T: NpyElement>(values: &[T], out: &mut Vec<u8>) {
    out.clear();
    for &v in values {
        v.write_le(out);
    }
}

/// [`fnv1a`] from `h` over `values`' little-endian bytes, a slab at a time.
fn fnv1a_of<T: NpyElement>(mut h: u64, values: &[T]) -> u64 {
    let mut buf = Vec::new();
    for slab in values.chunks(SLAB) {
        le_bytes(slab, &mut buf);
        h = fnv1a(h, &buf);
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

    /// Appends elements in C order, a slab of [`SLAB`] at a time (the
    /// file's bytes are never all in memory beside the values); the hash
    /// of a large array is taken on a thread of its own while it is
    /// written.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        self.written += values.len() as u64;
        if self.written > self.expected {
            return Err(Error::Invalid(format!(
                "more elements written to {} than its shape holds",
                self.file.path().display()
            )));
        }
        let (file, buf, start) = (&mut self.file, &mut self.buf, self.fnv);
        let mut write_slabs = |hash: bool| -> Result<u64> {
            let mut h = start;
            for slab in values.chunks(SLAB) {
                le_bytes(slab, buf);
                if hash {
                    h = fnv1a(h, buf);
                }
                file.write_all(buf)
                    .map_err(|e| Error::io(file.path().to_path_buf(), e))?;
            }
            Ok(h)
        };
        self.fnv = if values.len() >= SLAB * 4 {
            std::thread::scope(|s| {
                let hash = s.spawn(|| fnv1a_of(start, values));
                let written = write_slabs(false);
                let h = hash
                    .join()
                    .map_err(|_| Error::Invalid("hashing the array failed".into()));
                written.and(h)
            })?
        } else {
            write_slabs(true)?
        };
        Ok(())
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
    fn large_arrays_hashed_beside_the_writes_as_small_ones() {
        // 4 slabs and more: hashed on a thread of its own; fewer: slab by
        // slab; both the FNV-1a of the file's data bytes
        let d = tempfile::tempdir().unwrap();
        for n in [SLAB * 4 + 3, SLAB + 1, 5] {
            let v: Vec<f64> = (0..n).map(|i| (i as f64).sqrt() - 7.5).collect();
            let p = d.path().join(format!("a{n}.npy"));
            let a = write_array_pending(&p, &[n as u64], &v).unwrap();
            a.file.commit().unwrap();
            let bytes = std::fs::read(&p).unwrap();
            let data = &bytes[header::<f64>(&[n as u64]).len()..];
            assert_eq!(data.len(), n * 8);
            assert_eq!(a.data_bytes, n as u64 * 8);
            assert_eq!(a.data_fnv1a64, fnv1a(FNV_START, data), "{n}");
            assert_eq!(&data[8..16], &v[1].to_le_bytes());
        }
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
