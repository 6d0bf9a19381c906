//! Reading NumPy `.npy` arrays (version 1–3, little-endian, C order) of
//! unsigned, signed or floating-point numbers, streamed as `f64`.

use std::io::{BufReader, Read};
use std::path::Path;

use crate::diagnostics::Position;
use crate::error::{Error, Result};

/// The header of an array.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    pub descr: String,
    pub shape: Vec<u64>,
    /// Bytes per element.
    pub item: usize,
}

fn dict_value<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = dict[at..].trim_start().strip_prefix(':')?.trim_start();
    Some(rest)
}

/// An open array: its header and a reader positioned at the data
/// (gzip-compressed files are read transparently).
pub struct Npy {
    pub header: NpyHeader,
    reader: BufReader<Box<dyn Read + Send>>,
    path: std::path::PathBuf,
    /// Elements read so far.
    read: u64,
    /// Byte offset of the data in the (decompressed) file.
    data_start: u64,
    /// The most data bytes the file can hold: its size, or for gzip its
    /// size times deflate's largest ratio (1032:1).
    capacity: u64,
    damage: super::input::DamageHandle,
}

impl Npy {
    pub fn open(path: &Path) -> Result<Npy> {
        let input = super::input::open(path)?;
        let capacity = if input.compressed {
            input.file_len.saturating_mul(1032)
        } else {
            input.file_len
        };
        let damage = input.damage.clone();
        let mut r = BufReader::with_capacity(1 << 20, input.reader);
        let bad = |pos: u64, msg: String| Error::parse(path, Position::byte(pos), msg);
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| bad(0, "expected the .npy magic, found a shorter file".into()))?;
        if &magic[..6] != b"\x93NUMPY" {
            return Err(bad(0, "expected the .npy magic '\\x93NUMPY'".into()));
        }
        let hlen = match magic[6] {
            1 => {
                let mut b = [0u8; 2];
                r.read_exact(&mut b)
                    .map_err(|_| bad(8, "truncated header length".into()))?;
                u16::from_le_bytes(b) as usize
            }
            2 | 3 => {
                let mut b = [0u8; 4];
                r.read_exact(&mut b)
                    .map_err(|_| bad(8, "truncated header length".into()))?;
                u32::from_le_bytes(b) as usize
            }
            v => {
                return Err(bad(
                    6,
                    format!("expected .npy version 1, 2 or 3, found {v}"),
                ));
            }
        };
        if hlen > 1 << 20 {
            return Err(bad(8, format!("header of {hlen} bytes; refusing")));
        }
        let mut h = vec![0u8; hlen];
        r.read_exact(&mut h)
            .map_err(|_| bad(10, "truncated header".into()))?;
        let dict = String::from_utf8_lossy(&h).into_owned();
        let descr = dict_value(&dict, "descr")
            .and_then(|v| v.strip_prefix('\''))
            .and_then(|v| v.split('\'').next())
            .ok_or_else(|| bad(10, format!("expected 'descr' in the header, found {dict}")))?
            .to_string();
        let item = match descr.as_str() {
            "<u4" | "<i4" | "<f4" | "|u1" | "<u2" => descr_size(&descr),
            "<u8" | "<i8" | "<f8" => 8,
            d => {
                return Err(bad(
                    10,
                    format!(
                        "expected a little-endian numeric dtype (<u4, <u8, <i8, <f4, <f8, ...), found '{d}'"
                    ),
                ));
            }
        };
        if dict_value(&dict, "fortran_order").is_some_and(|v| v.starts_with("True")) {
            return Err(bad(
                10,
                "expected C order, found fortran_order: True".into(),
            ));
        }
        let shape_text = dict_value(&dict, "shape")
            .and_then(|v| v.strip_prefix('('))
            .and_then(|v| v.split(')').next())
            .ok_or_else(|| bad(10, "expected 'shape' in the header".into()))?;
        let shape = shape_text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u64>()
                    .map_err(|_| bad(10, format!("expected integer dimensions, found '{s}'")))
            })
            .collect::<Result<Vec<_>>>()?;
        let data_start = if magic[6] == 1 { 10 } else { 12 } + hlen as u64;
        Ok(Npy {
            header: NpyHeader { descr, shape, item },
            reader: r,
            path: path.to_path_buf(),
            read: 0,
            data_start,
            capacity,
            damage,
        })
    }

    /// The number of elements, checked: the shape's product without
    /// overflow, non-zero, at most `max`, and present in the file's bytes
    /// (a header cannot claim more than the file holds).
    pub fn checked_len(&self, max: u64, what: &str) -> Result<u64> {
        let shape = &self.header.shape;
        let n = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&n| n > 0 && n <= max)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: a {what} of shape {shape:?} is empty or has more than {max} values",
                    self.path.display()
                ))
            })?;
        let need = n.saturating_mul(self.header.item as u64);
        if need
            > self
                .capacity
                .saturating_sub(self.data_start.min(self.capacity))
        {
            return Err(Error::Invalid(format!(
                "{}: shape {shape:?} needs {need} bytes of data, the file can hold at most {}",
                self.path.display(),
                self.capacity.saturating_sub(self.data_start)
            )));
        }
        crate::memory::guard(
            need.saturating_mul(8 / self.header.item.max(1) as u64),
            || format!("{} (an array of shape {shape:?})", self.path.display()),
        )?;
        Ok(n)
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.header.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the next `out.len()` elements as f64.
    pub fn read_f64(&mut self, out: &mut [f64]) -> Result<()> {
        let n = out.len();
        let mut buf = vec![0u8; n * self.header.item];
        let got = super::input::read_up_to(&mut self.reader, &mut buf)
            .map_err(|e| Error::io(&self.path, e))?;
        if got < buf.len() {
            let at = self.data_start + self.read * self.header.item as u64 + got as u64;
            let gz = self
                .damage
                .get()
                .map(|d| format!(" ({})", d.describe()))
                .unwrap_or_default();
            return Err(Error::parse(
                &self.path,
                Position::byte(at),
                format!(
                    "expected {} elements of data ({} bytes from byte {}), the data ends here{gz}",
                    self.len(),
                    self.len().saturating_mul(self.header.item as u64),
                    self.data_start
                ),
            ));
        }
        self.read += n as u64;
        let it = self.header.item;
        for (o, c) in out.iter_mut().zip(buf.chunks_exact(it)) {
            *o = match self.header.descr.as_str() {
                "|u1" => c[0] as f64,
                "<u2" => u16::from_le_bytes([c[0], c[1]]) as f64,
                "<u4" => u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                "<i4" => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                "<f4" => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                "<u8" => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64,
                "<i8" => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64,
                _ => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            };
        }
        Ok(())
    }
}

fn descr_size(d: &str) -> usize {
    match d {
        "|u1" => 1,
        "<u2" => 2,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::npy::write_array;

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.npy");
        write_array(&p, &[2, 3], &[1u32, 2, 3, 4, 5, 6]).unwrap();
        let mut a = Npy::open(&p).unwrap();
        assert_eq!(a.header.shape, vec![2, 3]);
        let mut v = vec![0.0; 6];
        a.read_f64(&mut v).unwrap();
        assert_eq!(v, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!(a.read_f64(&mut [0.0]).is_err());
        std::fs::write(&p, b"not npy at all").unwrap();
        assert!(Npy::open(&p).is_err());
    }
}
