//! Reads at positions of a gzip file's decompressed bytes, from the
//! checkpoints of its [`Index`]: zlib decodes from the checkpoint before
//! the position, given the window before it as a stored block ahead of
//! the stream's bits (shifted to the byte where the block starts).
//! A reader keeps where it is and the last bytes it decoded, so reads in
//! order, or a little back, decode nothing twice.
//!
//! Each span between checkpoints that a reader (or a fork of it) decodes
//! whole leaves its CRC-32, so that after a read (and the spans no reader
//! decoded whole decoded then: [`GzAt::sum_missing`]) the bytes are
//! checked against the members' trailers ([`GzAt::check`]), as zlib checks
//! a whole-file read: the parts are decoded out of order, by several
//! readers, so one CRC over the stream cannot be kept, but the spans'
//! CRCs combine into the member's.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::Index;
use super::inflate::WINDOW;

/// Reads at positions: a plain file, or a gzip file's decompressed bytes.
pub trait ReadAt: Send + Sync {
    /// Reads up to `buf.len()` bytes at `at`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<usize>;

    /// Fills `buf` from `at`, or fails.
    fn read_exact_at(&self, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, at)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    at += n as u64;
                }
            }
        }
        Ok(())
    }

    /// Its length in bytes.
    fn size(&self) -> std::io::Result<u64>;

    /// Whether reads should come in order, from one thread (each jump
    /// back costs a decoding).
    fn in_order(&self) -> bool {
        false
    }

    /// Another reader of the same bytes, for another thread (a gzip
    /// reader keeps its own place).
    fn fork(&self) -> std::io::Result<Source>;

    /// The gzip file's reader, where these are a gzip file's bytes.
    fn gzip(&self) -> Option<&GzAt> {
        None
    }
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
        FileExt::read_at(self, buf, at)
    }

    fn fork(&self) -> std::io::Result<Source> {
        Ok(Arc::new(self.try_clone()?))
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// What shares are read from: a plain file, or a gzip file's decompressed
/// bytes through its index.
pub type Source = Arc<dyn ReadAt>;

/// A source's bytes `[at, end)` read in order; no read crosses `pause`,
/// and beyond it each reads at most [`PAST_PAUSE`] bytes (a share that
/// ends at `pause` reads on only to its last line's end: a gzip file's
/// bytes past it are decoded for that, not a buffer's worth).
pub struct Positioned {
    pub src: Source,
    pub at: u64,
    pub end: u64,
    pub pause: u64,
}

/// Bytes a read of [`Positioned`] takes at most past its pause.
pub const PAST_PAUSE: u64 = 64 << 10;

impl Read for Positioned {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = match self.pause.checked_sub(self.at) {
            Some(0) | None => PAST_PAUSE,
            Some(r) => r,
        };
        let want = (self.end.saturating_sub(self.at))
            .min(buf.len() as u64)
            .min(room) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.src.read_at(&mut buf[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The bytes of a file from a bit on, shifted to start a byte, after a
/// stored block of the window before it.
struct Shifted {
    file: BufReader<File>,
    /// The stored block still to give.
    head: Vec<u8>,
    given: usize,
    /// Bits to drop from the first byte (0–7).
    shift: u32,
    /// The byte the next output byte takes its high bits from.
    carry: Option<u8>,
}

impl Read for Shifted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.given < self.head.len() {
            let n = buf.len().min(self.head.len() - self.given);
            buf[..n].copy_from_slice(&self.head[self.given..self.given + n]);
            self.given += n;
            return Ok(n);
        }
        if self.shift == 0 {
            return self.file.read(buf);
        }
        let Some(mut prev) = self.carry else {
            return Ok(0);
        };
        let n = self.file.read(buf)?;
        if n == 0 {
            // the last byte's high bits, alone
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = prev >> self.shift;
            self.carry = None;
            return Ok(1);
        }
        for b in &mut buf[..n] {
            let next = *b;
            *b = (prev >> self.shift) | (next << (8 - self.shift));
            prev = next;
        }
        self.carry = Some(prev);
        Ok(n)
    }
}

/// Where a reader is: zlib decoding from a checkpoint, and the bytes it
/// decoded last.
struct Cursor {
    dec: flate2::read::DeflateDecoder<Shifted>,
    /// The checkpoint it started from.
    from: u64,
    /// The offset of the next byte `dec` gives.
    pos: u64,
    /// The bytes before `pos`, from `kept_from`.
    kept: Vec<u8>,
    kept_from: u64,
    /// The span `pos` lies in (see [`Index::span`]), and the CRC-32 of
    /// its bytes before `pos`.
    span: usize,
    sum: crc32fast::Hasher,
}

/// Bytes kept behind a reader's position (reads a little back are
/// served from them).
const KEEP: usize = 256 << 10;

/// Reads at positions of a gzip file's decompressed bytes (see the
/// module's doc).
pub struct GzAt {
    path: PathBuf,
    index: Arc<Index>,
    cursor: Mutex<Option<Cursor>>,
    /// Each span's CRC-32 with [`KNOWN`] set, once a reader of the file
    /// (this one or one it was forked from or to) decoded it whole; 0
    /// before.
    sums: Arc<[AtomicU64]>,
}

/// The bit of a span's word that says its CRC-32 (the low 32 bits) is
/// known.
const KNOWN: u64 = 1 << 32;

impl GzAt {
    /// A reader of the file at `path` with its `index`.
    pub fn new(path: &Path, index: Arc<Index>) -> GzAt {
        let sums = (0..index.checkpoints.len())
            .map(|_| AtomicU64::new(0))
            .collect();
        GzAt {
            path: path.to_path_buf(),
            index,
            cursor: Mutex::new(None),
            sums,
        }
    }

    /// The spans' CRC-32s known here, a word each (the CRC with [`KNOWN`]
    /// set; 0: no reader of this process decoded the span whole), to be
    /// put beside other processes' in [`GzAt::check`].
    pub fn sum_words(&self) -> Vec<u64> {
        self.sums
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .collect()
    }

    /// The CRC-32 of span `k`, where a reader here or a process whose
    /// [`GzAt::sum_words`] are among `others` decoded it whole.
    fn known(&self, others: &[&[u64]], k: usize) -> Option<u32> {
        std::iter::once(self.sums[k].load(Ordering::Relaxed))
            .chain(others.iter().filter_map(|o| o.get(k).copied()))
            .find(|w| w & KNOWN != 0)
            .map(|w| w as u32)
    }

    /// Decodes the spans that no reader of this process, nor of the
    /// processes whose [`GzAt::sum_words`] are `others`, decoded whole
    /// (those a share began inside, or read from a checkpoint's window),
    /// so that their CRC-32s are known: process `k` of `n` (`deal`) the
    /// `k`-th, `k + n`-th, … of them, for the others to take from its
    /// words in turn.
    pub fn sum_missing(&self, others: &[&[u64]], (k, n): (usize, usize)) -> std::io::Result<()> {
        let missing = (0..self.sums.len()).filter(|&s| self.known(others, s).is_none());
        let mut buf = Vec::new();
        for s in missing.skip(k).step_by(n.max(1)) {
            let span = self.index.span(s);
            if span.is_empty() {
                self.sums[s].store(KNOWN, Ordering::Relaxed);
                continue;
            }
            buf.resize(256 << 10, 0);
            let mut c = self.open_span(s)?;
            while c.pos < span.end && self.sums[s].load(Ordering::Relaxed) & KNOWN == 0 {
                let take = buf.len().min((span.end - c.pos) as usize);
                if self.decode(&mut c, &mut buf[..take])? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            }
        }
        Ok(())
    }

    /// Checks each gzip member whose spans were all decoded whole, by the
    /// readers of this process or of the processes whose
    /// [`GzAt::sum_words`] are `others`, against the CRC-32 of its
    /// trailer: `Ok(true)` when every member was checked, `Ok(false)`
    /// when some could not be (a span no reader decoded whole), an error
    /// naming the first member whose bytes disagree.
    pub fn check(&self, others: &[&[u64]]) -> std::io::Result<bool> {
        let mut all = true;
        for (m, member) in self.index.members.iter().enumerate() {
            let mut sum = crc32fast::Hasher::new();
            let mut whole = true;
            for k in member.spans.clone() {
                let Some(crc) = self.known(others, k) else {
                    whole = false;
                    break;
                };
                let len = self.index.span(k);
                sum.combine(&crc32fast::Hasher::new_with_initial_len(
                    crc,
                    len.end - len.start,
                ));
            }
            if !whole {
                all = false;
                continue;
            }
            let got = sum.finalize();
            if got != member.crc {
                // (the span after the last starts at the end)
                let bytes = |k: usize| self.index.span(k).start;
                let (a, b) = (bytes(member.spans.start), bytes(member.spans.end));
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the gzip data is damaged: bytes {a}–{b} (member {} of {}) decode to a \
                         CRC-32 of {got:08x} where the member's trailer says {:08x}",
                        m + 1,
                        self.index.members.len(),
                        member.crc
                    ),
                ));
            }
        }
        Ok(all)
    }

    /// The file's index.
    pub fn index(&self) -> &Arc<Index> {
        &self.index
    }

    /// A reader at the last checkpoint at or before `at`.
    fn open(&self, at: u64) -> std::io::Result<Cursor> {
        self.open_span(self.index.span_of(at))
    }

    /// A reader at checkpoint `span`.
    fn open_span(&self, span: usize) -> std::io::Result<Cursor> {
        let c = self
            .index
            .checkpoints
            .get(span)
            .ok_or_else(|| std::io::Error::other("no such checkpoint"))?;
        let mut file = File::open(&self.path)?;
        use std::io::Seek;
        file.seek(std::io::SeekFrom::Start(c.bit / 8))?;
        let shift = (c.bit % 8) as u32;
        let mut file = BufReader::with_capacity(256 << 10, file);
        let carry = if shift == 0 {
            None
        } else {
            let mut b = [0u8; 1];
            file.read_exact(&mut b)?;
            Some(b[0])
        };
        // a stored block (not the last) of the window
        let mut head = Vec::with_capacity(5 + WINDOW);
        let n = WINDOW as u16;
        head.push(0);
        head.extend_from_slice(&n.to_le_bytes());
        head.extend_from_slice(&(!n).to_le_bytes());
        head.extend_from_slice(&c.window);
        let mut dec = flate2::read::DeflateDecoder::new(Shifted {
            file,
            head,
            given: 0,
            shift,
            carry,
        });
        let mut skip = vec![0u8; WINDOW];
        dec.read_exact(&mut skip)?;
        Ok(Cursor {
            dec,
            from: c.bit,
            pos: c.out,
            kept: Vec::with_capacity(2 * KEEP),
            kept_from: c.out,
            span,
            sum: crc32fast::Hasher::new(),
        })
    }

    /// Adds `bytes`, the last that `c` decoded (they end at its position),
    /// to its span's CRC-32, leaving the CRC of each span they end.
    fn sum(&self, c: &mut Cursor, mut bytes: &[u8]) {
        let mut at = c.pos - bytes.len() as u64;
        while c.span < self.sums.len() {
            let end = self.index.span(c.span).end;
            let k = (end.saturating_sub(at)).min(bytes.len() as u64) as usize;
            c.sum.update(&bytes[..k]);
            at += k as u64;
            bytes = &bytes[k..];
            if at < end {
                return;
            }
            let crc = std::mem::take(&mut c.sum).finalize();
            self.sums[c.span].store(KNOWN | u64::from(crc), Ordering::Relaxed);
            c.span += 1;
        }
    }
}

impl GzAt {
    /// Decodes up to `buf.len()` bytes into `c`, keeping them, on into the
    /// next gzip member where one ends (0 only at the end).
    fn decode(&self, c: &mut Cursor, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = c.decode(buf)?;
            self.sum(c, &buf[..n]);
            if n > 0 || c.pos >= self.index.len {
                return Ok(n);
            }
            // a member ended: the next starts at a checkpoint here
            let cp = self.index.before(c.pos);
            if cp.out != c.pos || cp.bit == c.from {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the gzip stream ended at byte {} of the {} its index holds",
                        c.pos, self.index.len
                    ),
                ));
            }
            let mut next = self.open(c.pos)?;
            next.kept = std::mem::take(&mut c.kept);
            next.kept_from = c.kept_from;
            *c = next;
        }
    }
}

impl Cursor {
    /// Decodes up to `buf.len()` bytes, keeping them.
    fn decode(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.dec.read(buf)?;
        let end = self.pos + n as u64;
        if n >= KEEP {
            self.kept.clear();
            self.kept.extend_from_slice(&buf[n - KEEP..n]);
            self.kept_from = end - KEEP as u64;
        } else {
            self.kept.extend_from_slice(&buf[..n]);
            if self.kept.len() > 2 * KEEP {
                let d = self.kept.len() - KEEP;
                self.kept.drain(..d);
                self.kept_from += d as u64;
            }
        }
        self.pos = end;
        Ok(n)
    }
}

impl ReadAt for GzAt {
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
        let len = self.index.len;
        if at >= len || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min((len - at).min(usize::MAX as u64) as usize);
        let buf = &mut buf[..want];
        let mut guard = self
            .cursor
            .lock()
            .map_err(|_| std::io::Error::other("a reader of the gzip file failed"))?;
        // bytes it decoded a moment ago
        if let Some(c) = guard.as_ref()
            && at >= c.kept_from
            && at < c.pos
        {
            let from = (at - c.kept_from) as usize;
            let n = want.min(c.kept.len() - from);
            buf[..n].copy_from_slice(&c.kept[from..from + n]);
            return Ok(n);
        }
        // on from where it is, unless a checkpoint lies nearer
        let span = self.index.span_of(at);
        let checkpoint = self.index.span(span).start;
        let reuse = guard
            .as_ref()
            .is_some_and(|c| c.pos <= at && c.pos >= checkpoint);
        // the bytes just before a checkpoint inside a member are its
        // window: a share that starts at a checkpoint looks at the byte
        // before it without decoding the span it ends (unless the reader
        // is there already: a read in order decodes every span whole)
        let next = span + 1;
        let there = guard.as_ref().is_some_and(|c| c.pos == at);
        if !there
            && let Some(c) = self.index.checkpoints.get(next)
            && c.out - at <= WINDOW as u64
            && c.window.len() == WINDOW
            && !self.index.starts_member(next)
        {
            let from = WINDOW - (c.out - at) as usize;
            let n = want.min(WINDOW - from);
            buf[..n].copy_from_slice(&c.window[from..from + n]);
            return Ok(n);
        }
        if !reuse {
            *guard = Some(self.open(at)?);
        }
        let c = guard
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no reader"))?;
        let mut scratch = vec![0u8; (64 << 10).min((at - c.pos) as usize)];
        while c.pos < at {
            let k = scratch.len().min((at - c.pos) as usize);
            if self.decode(c, &mut scratch[..k])? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        self.decode(c, buf)
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.index.len)
    }

    fn in_order(&self) -> bool {
        true
    }

    fn fork(&self) -> std::io::Result<Source> {
        Ok(Arc::new(GzAt {
            path: self.path.clone(),
            index: self.index.clone(),
            cursor: Mutex::new(None),
            sums: self.sums.clone(),
        }))
    }

    fn gzip(&self) -> Option<&GzAt> {
        Some(self)
    }
}
