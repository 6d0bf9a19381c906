//! Opening input files (gzip transparent) and reading them in line-aligned
//! blocks that are parsed in parallel while the next blocks are read.
//!
//! Memory stays bounded by a few blocks whatever the size of the file.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use rayon::prelude::*;

use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::readers::gzip_index::at::{Positioned, Source};

/// Size of one block handed to a parser thread.
pub const BLOCK_SIZE: usize = 2 << 20;
/// The longest line accepted; longer lines are an error (bounded memory).
pub const MAX_LINE: usize = 64 << 20;

/// Bytes read from trace files through [`open`] by this process (for
/// progress displays: the window divides it by the file's size).
static BYTES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytes read from trace files through [`open`] so far, by all threads.
pub fn bytes_read() -> u64 {
    BYTES_READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// A reader that counts what it reads into [`BYTES_READ`].
struct Counting<R>(R);

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        BYTES_READ.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Where a gzip stream broke off (truncated, corrupt or failing its
/// checksum): the decompressed data ends at `decompressed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GzipDamage {
    /// Bytes of decompressed data delivered before the damage.
    pub decompressed: u64,
    /// Compressed bytes read from the file when it was found.
    pub compressed: u64,
    /// Size of the file on disk.
    pub file_len: u64,
    /// What the decompressor said.
    pub reason: String,
}

impl GzipDamage {
    /// A sentence for warnings and errors.
    pub fn describe(&self) -> String {
        format!(
            "the gzip stream breaks off ({}) after {} of the file's {} compressed bytes; \
             the decompressed data ends at byte {}",
            self.reason, self.compressed, self.file_len, self.decompressed
        )
    }
}

/// Shared view of the damage a gzip input met (none until it does).
#[derive(Clone, Default)]
pub struct DamageHandle(
    std::sync::Arc<std::sync::Mutex<Option<GzipDamage>>>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

impl DamageHandle {
    /// The damage met so far, if any.
    pub fn get(&self) -> Option<GzipDamage> {
        self.0.lock().map(|g| g.clone()).unwrap_or(None)
    }

    /// Records the damage met so far, once per input, as a `damaged-gzip`
    /// repair of `file` at its decompressed offset (`--strict`: an error);
    /// `what` names the records read before it ("records", "events").
    pub fn report(
        &self,
        diagnostics: &mut crate::diagnostics::Diagnostics,
        file: &Path,
        what: &str,
    ) -> Result<()> {
        let Some(d) = self.get() else {
            return Ok(());
        };
        if self.1.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        diagnostics.repair(
            "damaged-gzip",
            file,
            Position::byte(d.decompressed),
            1,
            || format!("{}; the {what} before it are read", d.describe()),
        )
    }

    fn set(&self, d: GzipDamage) {
        if let Ok(mut g) = self.0.lock() {
            g.get_or_insert(d);
        }
    }
}

/// A gzip decoder that ends the stream where it is damaged instead of
/// failing, and records where ([`DamageHandle`]): the readers repair a
/// truncated `.gz` as they repair a truncated plain file (or refuse it,
/// with the offset, under `--strict` and for whole-file reads).
struct TolerantGz<R> {
    inner: R,
    delivered: u64,
    compressed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    file_len: u64,
    damage: DamageHandle,
    broken: bool,
}

impl<R: Read> Read for TolerantGz<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.broken {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.delivered += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.broken = true;
                let reason = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    "the file ends inside it".to_string()
                } else {
                    e.to_string()
                };
                self.damage.set(GzipDamage {
                    decompressed: self.delivered,
                    compressed: self.compressed.load(std::sync::atomic::Ordering::Relaxed),
                    file_len: self.file_len,
                    reason,
                });
                Ok(0)
            }
        }
    }
}

/// Counts the compressed bytes a decoder has read.
struct CountInto<R>(R, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl<R: Read> Read for CountInto<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// An open input: the decompressed byte stream of a file.
pub struct Input {
    pub path: PathBuf,
    pub reader: Box<dyn Read + Send>,
    /// Whether the file is gzip-compressed.
    pub compressed: bool,
    /// Size of the file on disk.
    pub file_len: u64,
    /// Where the gzip stream broke off, once it has (the reader then ends
    /// there instead of failing).
    pub damage: DamageHandle,
    /// The file itself, for reads at positions, when the stream is its
    /// bytes as they are (not gzip, not a share of it).
    positional: Option<std::sync::Arc<File>>,
}

/// Whether the file at `path` is gzip-compressed (its first two bytes),
/// and its metadata; a directory is an error.
fn sniff(path: &Path) -> Result<(std::fs::Metadata, bool)> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = f.metadata().map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "is a directory, expected a trace file",
            ),
        ));
    }
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
    Ok((meta, n == 2 && magic == [0x1f, 0x8b]))
}

/// Whether the file at `path` is gzip-compressed, as [`open`] finds it
/// (without setting up its reader).
pub fn is_gzip(path: &Path) -> Result<bool> {
    Ok(sniff(path)?.1)
}

/// Opens `path`, decompressing gzip transparently.
pub fn open(path: &Path) -> Result<Input> {
    let (meta, compressed) = sniff(path)?;
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let damage = DamageHandle::default();
    let positional = if compressed {
        None
    } else {
        f.try_clone().ok().map(std::sync::Arc::new)
    };
    let reader: Box<dyn Read + Send> = if compressed {
        let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        Box::new(TolerantGz {
            inner: MultiGzDecoder::new(BufReader::with_capacity(
                1 << 20,
                CountInto(Counting(f), counter.clone()),
            )),
            delivered: 0,
            compressed: counter,
            file_len: meta.len(),
            damage: damage.clone(),
            broken: false,
        })
    } else {
        Box::new(Counting(f))
    };
    Ok(Input {
        path: path.to_path_buf(),
        reader,
        compressed,
        file_len: meta.len(),
        damage,
        positional,
    })
}

/// Opens the lines of a plain (uncompressed) file whose first byte lies in
/// `[from, to)`: the reader starts at the first line that begins at or
/// after `from` and stops after the line that contains byte `to - 1`. The
/// shares `[b_k, b_k+1)` of a file thus see every line exactly once.
/// Line numbers of the blocks count from the share's start; byte offsets
/// are the file's.
pub fn open_share(path: &Path, from: u64, to: u64) -> Result<LineBlocks> {
    let input = open(path)?;
    if input.compressed {
        return Err(unsplittable_gzip(path));
    }
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    open_share_at(path, std::sync::Arc::new(f), from, to)
}

/// The error for a gzip file that has no index
/// ([`crate::readers::gzip_index`]) and so cannot be read in shares.
pub fn unsplittable_gzip(path: &Path) -> Error {
    Error::Invalid(format!(
        "{} is gzip-compressed with no blocks found to start a reader at (a small or \
         damaged file, or one compressed as blocks of fixed codes, as zlib-ng's level 1 \
         does), so it cannot be split among readers: decompress it first",
        path.display()
    ))
}

/// [`open_share`] of the bytes of `src`: the file, or a gzip file's
/// decompressed bytes through its index (`path` names them in messages).
pub fn open_share_at(path: &Path, src: Source, from: u64, to: u64) -> Result<LineBlocks> {
    use std::io::BufRead;
    let len = src.size().map_err(|e| Error::io(path, e))?;
    let mut start = from;
    let at = from.saturating_sub(1);
    let reader: Box<dyn Read + Send> = Box::new(Positioned {
        src,
        at,
        end: u64::MAX,
        pause: to,
    });
    let mut r = BufReader::with_capacity(1 << 20, reader);
    if from > 0 {
        // the line containing byte from - 1 belongs to the previous share
        let mut skipped = Vec::new();
        let n = r
            .read_until(b'\n', &mut skipped)
            .map_err(|e| Error::io(path, e))?;
        start = from - 1 + n as u64;
    }
    let share = ShareReader {
        inner: r,
        left: to.saturating_sub(start),
        last: b'\n',
        done: start >= to,
    };
    let mut lb = LineBlocks::new(Input {
        path: path.to_path_buf(),
        reader: Box::new(Counting(share)),
        compressed: false,
        file_len: len,
        damage: DamageHandle::default(),
        positional: None,
    });
    lb.next_byte = start;
    Ok(lb)
}

/// Reads a file up to a byte boundary, then on to the end of the line
/// that crosses it.
struct ShareReader {
    inner: BufReader<Box<dyn Read + Send>>,
    left: u64,
    last: u8,
    done: bool,
}

impl Read for ShareReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left > 0 {
            let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
            let n = self.inner.read(&mut buf[..want])?;
            if n == 0 {
                self.done = true;
            } else {
                self.left -= n as u64;
                self.last = buf[n - 1];
            }
            return Ok(n);
        }
        // past the boundary: finish the line it cut, if it cut one
        if self.last == b'\n' {
            self.done = true;
            return Ok(0);
        }
        let avail = self.inner.fill_buf()?;
        if avail.is_empty() {
            self.done = true;
            return Ok(0);
        }
        let (n, end) = match memchr::memchr(b'\n', avail) {
            Some(k) => (k + 1, true),
            None => (avail.len(), false),
        };
        let n = n.min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.inner.consume(n);
        self.last = buf[n - 1];
        if end && self.last == b'\n' {
            self.done = true;
        }
        Ok(n)
    }
}

/// The error for a whole-file read of a damaged gzip file.
fn damaged(path: &Path, d: &GzipDamage) -> Error {
    Error::parse(path, Position::byte(d.decompressed), d.describe())
}

/// The first `n` bytes of the decompressed content of `path`.
pub fn peek(path: &Path, n: usize) -> Result<Vec<u8>> {
    let mut input = open(path)?;
    let mut buf = vec![0u8; n];
    let got = read_up_to(&mut input.reader, &mut buf).map_err(|e| Error::io(path, e))?;
    buf.truncate(got);
    Ok(buf)
}

/// `p`, a file read beside `trace`, by its real path; refused when it
/// leads (through links or `..`) outside the trace's directory.
pub fn confined(trace: &Path, p: &Path) -> Result<PathBuf> {
    let dir = trace
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let real_dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let real = p.canonicalize().map_err(|e| Error::io(p, e))?;
    if !real.starts_with(&real_dir) {
        return Err(Error::Invalid(format!(
            "{}: refusing to read {} (it leads to {}, outside the trace's directory)",
            trace.display(),
            p.display(),
            real.display()
        )));
    }
    Ok(real)
}

/// The whole decompressed content of `path`, at most `max` bytes (a
/// larger one is refused at that offset, before it is all in memory).
pub fn read_all(path: &Path, max: u64) -> Result<Vec<u8>> {
    let mut input = open(path)?;
    let mut bytes = Vec::new();
    let got = (&mut input.reader)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if let Some(d) = input.damage.get() {
        return Err(damaged(path, &d));
    }
    if got as u64 > max {
        return Err(Error::parse(
            path,
            Position::byte(max),
            format!(
                "expected a file of at most {} MiB (decompressed), found a larger one",
                max >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// The whole decompressed content of a small text file (tables,
/// coordinates, profiles), at most `max` bytes: a UTF-8 byte-order mark
/// dropped, bare-CR line ends turned into LF, invalid UTF-8 refused at its
/// byte offset.
pub fn read_text(path: &Path, max: u64) -> Result<String> {
    let mut bytes = read_all(path, max)?;
    let start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let first_end = memchr::memchr2(b'\n', b'\r', &bytes[start..]).map(|k| start + k);
    if let Some(k) = first_end
        && bytes[k] == b'\r'
        && bytes.get(k + 1) != Some(&b'\n')
    {
        for b in &mut bytes[start..] {
            if *b == b'\r' {
                *b = b'\n';
            }
        }
    }
    let bytes = bytes.split_off(start);
    String::from_utf8(bytes).map_err(|e| {
        Error::parse(
            path,
            Position::byte((e.utf8_error().valid_up_to() + start) as u64),
            "expected UTF-8 text",
        )
    })
}

/// The first line of `head` (the first bytes of a text table) that is
/// neither empty nor a `#` comment, trimmed; a byte-order mark and any
/// line ends accepted. Format detection of tables looks at their header.
pub fn first_data_line(head: &[u8]) -> Option<String> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = String::from_utf8_lossy(head).replace('\r', "\n");
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
}

/// The least block a thread reads and parses in a batch of
/// [`LineBlocks::for_each_parallel`] (unless the reader's own block is
/// smaller).
pub const MIN_THREAD_BLOCK: usize = 256 << 10;

/// Each thread's block in a batch of `k` blocks, for a reader whose block
/// is `block`: a batch holds two blocks' bytes at any number of threads
/// (down to [`MIN_THREAD_BLOCK`] each). Two batches are in flight, their
/// text and what it was parsed into (PICL's records take 1.6 times their
/// text); with a whole block per thread that grew with the cores, and a
/// read at 16 threads peaked at 1.9 times its peak at one (PICL, 65,536
/// processors: 309 MiB against 160, over a model of 125).
pub fn block_per_thread(block: usize, k: usize) -> usize {
    (block.saturating_mul(2) / k.max(1)).clamp(block.min(MIN_THREAD_BLOCK), block.max(1))
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A run of whole lines of the input.
#[derive(Debug)]
pub struct Block {
    pub data: Vec<u8>,
    /// Line number (1-based) of the first line of the block.
    pub first_line: u64,
    /// Byte offset (in the decompressed stream) of the first byte.
    pub first_byte: u64,
    /// The final block of the input; its last line may lack a newline.
    pub last: bool,
}

impl Block {
    /// Iterates the lines of the block as `(line number, byte offset, line)`,
    /// without the line terminator (`\n` or `\r\n`).
    pub fn lines(&self) -> impl Iterator<Item = (u64, u64, &[u8])> {
        let data = &self.data[..];
        let mut pos = 0usize;
        let mut line = self.first_line;
        let base = self.first_byte;
        std::iter::from_fn(move || {
            if pos >= data.len() {
                return None;
            }
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |k| pos + k);
            let mut l = &data[pos..end];
            if let [rest @ .., b'\r'] = l {
                l = rest;
            }
            let item = (line, base + pos as u64, l);
            pos = end + 1;
            line += 1;
            Some(item)
        })
    }

    /// The block's bytes from stream offset `byte` (a line's, as
    /// [`Block::lines`] gives it) on: that line and the lines after it,
    /// for parsers that load a few bytes past the end of a line.
    pub fn from_byte(&self, byte: u64) -> Option<&[u8]> {
        let at = usize::try_from(byte.checked_sub(self.first_byte)?).ok()?;
        self.data.get(at..)
    }

    /// Whether the block's data ends without a newline (a truncated last line).
    pub fn ends_unterminated(&self) -> bool {
        self.last && !self.data.is_empty() && self.data.last() != Some(&b'\n')
    }
}

/// Splits an input into line-aligned blocks.
pub struct LineBlocks {
    input: Input,
    carry: Vec<u8>,
    next_line: u64,
    next_byte: u64,
    eof: bool,
    block_size: usize,
    /// Bare carriage returns end the lines (old Mac files): read as line
    /// feeds, byte for byte; `None` until the first line end is seen.
    bare_cr: Option<bool>,
    /// Buffers of blocks already parsed, used again for the next blocks
    /// (a fresh buffer costs a page fault per 4 KiB).
    spare: Vec<Vec<u8>>,
}

impl LineBlocks {
    /// Where the gzip stream broke off, once it has (the blocks end
    /// there), shared.
    pub fn damage_handle(&self) -> DamageHandle {
        self.input.damage.clone()
    }

    pub fn new(input: Input) -> Self {
        Self::with_block_size(input, BLOCK_SIZE)
    }

    pub fn with_block_size(input: Input, block_size: usize) -> Self {
        LineBlocks {
            input,
            carry: Vec::new(),
            next_line: 1,
            next_byte: 0,
            eof: false,
            block_size: block_size.max(1),
            bare_cr: None,
            spare: Vec::new(),
        }
    }

    /// Line ends: decides from the first one seen whether they are bare
    /// CRs, and turns those of `carry[from..]` into LFs (same offsets).
    fn normalise(&mut self, from: usize) {
        if self.bare_cr.is_none() {
            let data = &self.carry[from.min(self.carry.len())..];
            if let Some(k) = memchr::memchr2(b'\n', b'\r', data) {
                if data[k] == b'\n' {
                    self.bare_cr = Some(false);
                } else if k + 1 < data.len() {
                    self.bare_cr = Some(data[k + 1] != b'\n');
                } else if self.eof {
                    self.bare_cr = Some(true);
                }
            }
        }
        if self.bare_cr == Some(true) {
            let from = from.min(self.carry.len());
            for b in &mut self.carry[from..] {
                if *b == b'\r' {
                    *b = b'\n';
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.input.path
    }

    /// The bytes left to read when the input is a plain file (not gzip,
    /// not a share of it): a bound on what its records can hold.
    pub fn plain_bytes_left(&self) -> Option<u64> {
        (!self.input.compressed && self.input.positional.is_some())
            .then(|| self.input.file_len.saturating_sub(self.next_byte))
    }

    /// Starts the block stream after `lines` lines already consumed (e.g. a
    /// header read separately) whose bytes were `bytes`.
    pub fn skip_counted(&mut self, lines: u64, bytes: u64) {
        self.next_line += lines;
        self.next_byte += bytes;
    }

    /// Prepends bytes that were read ahead of the block stream.
    pub fn push_front(&mut self, bytes: &[u8]) {
        let mut v = bytes.to_vec();
        v.extend_from_slice(&self.carry);
        self.carry = v;
        self.normalise(0);
    }

    /// Reads the rest of the current line (for headers) and returns it
    /// without its terminator; `None` at the end of the input.
    pub fn read_line(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            if let Some(k) = memchr::memchr(b'\n', &self.carry) {
                let rest = self.carry.split_off(k + 1);
                let mut line = std::mem::replace(&mut self.carry, rest);
                self.next_line += 1;
                self.next_byte += line.len() as u64;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(line));
            }
            if self.eof {
                if self.carry.is_empty() {
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.carry);
                self.next_byte += line.len() as u64;
                self.next_line += 1;
                return Ok(Some(line));
            }
            if self.carry.len() > MAX_LINE {
                return Err(self.too_long());
            }
            self.fill(64 << 10)?;
        }
    }

    /// The byte offset (in the decompressed content) of the next line.
    pub fn next_byte_offset(&self) -> u64 {
        self.next_byte
    }

    /// The line number the next line read will have.
    pub fn next_line_number(&self) -> u64 {
        self.next_line
    }

    /// Cuts the blocks still to be read at about `size` bytes.
    pub fn set_block_size(&mut self, size: usize) {
        self.block_size = size.max(1);
    }

    /// Numbers the lines from `line` on (a share whose lines before are
    /// counted elsewhere).
    pub fn set_next_line_number(&mut self, line: u64) {
        self.next_line = line;
    }

    fn too_long(&self) -> Error {
        Error::parse(
            &self.input.path,
            Position {
                line: Some(self.next_line),
                byte: Some(self.next_byte),
            },
            format!(
                "expected a line of at most {} MiB, found a longer one",
                MAX_LINE >> 20
            ),
        )
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        let old = self.carry.len();
        self.carry.resize(old + want, 0);
        let got = read_up_to(&mut self.input.reader, &mut self.carry[old..]).map_err(|e| {
            Error::io(
                &self.input.path,
                std::io::Error::new(e.kind(), format!("{e} (after byte {})", self.next_byte)),
            )
        })?;
        self.carry.truncate(old + got);
        if got < want {
            self.eof = true;
        }
        // undecided line ends look at the new bytes (and a CR just before
        // them, whose next byte has now arrived): each byte is scanned once
        let from = if self.bare_cr.is_none() {
            old.saturating_sub(1)
        } else {
            old
        };
        self.normalise(from);
        Ok(())
    }

    /// The next block, or `None` at the end of the input.
    pub fn next_block(&mut self) -> Result<Option<Block>> {
        while !self.eof && self.carry.len() < self.block_size {
            let want = self.block_size - self.carry.len();
            self.fill(want)?;
        }
        if self.carry.is_empty() {
            return Ok(None);
        }
        let cut = loop {
            if self.eof {
                break self.carry.len();
            }
            if let Some(k) = memchr::memrchr(b'\n', &self.carry) {
                break k + 1;
            }
            if self.carry.len() > MAX_LINE {
                return Err(self.too_long());
            }
            self.fill(self.block_size)?;
        };
        let mut rest = self.spare.pop().unwrap_or_default();
        rest.clear();
        rest.extend_from_slice(&self.carry[cut..]);
        let mut data = std::mem::replace(&mut self.carry, rest);
        data.truncate(cut);
        let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
        let block = Block {
            first_line: self.next_line,
            first_byte: self.next_byte,
            last: self.eof && self.carry.is_empty(),
            data,
        };
        self.next_line += lines;
        self.next_byte += cut as u64;
        Ok(Some(block))
    }

    fn next_batch(&mut self, k: usize) -> Result<Vec<Block>> {
        let mut v = Vec::with_capacity(k);
        while v.len() < k {
            match self.next_block()? {
                Some(b) => v.push(b),
                None => break,
            }
        }
        Ok(v)
    }

    /// Parses all remaining blocks in parallel with `parse` and hands each
    /// block with its result to `consume` in file order. A plain file is
    /// read at positions by all the threads (no thread reads for the
    /// others: one thread copies from the page cache at about 3 GB/s,
    /// which would cap the parsing of many cores); a compressed input, a
    /// share or bare-CR line ends are read by one thread, a batch ahead of
    /// the parsing.
    pub fn for_each_parallel<T, P, C>(&mut self, parse: P, mut consume: C) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&Block, T) -> Result<()>,
    {
        self.for_each_batch(parse, |blocks, parsed| {
            for (b, p) in blocks.iter().zip(parsed) {
                consume(b, p)?;
            }
            Ok(())
        })
    }

    /// [`Self::for_each_parallel`], handing `consume` a whole batch at a
    /// time: its blocks in file order and what `parse` made of each. A
    /// consumer whose every call has a cost of its own (PICL's cut and
    /// matching, split among the threads) pays it once a batch, whatever
    /// the number of threads (a batch's blocks get smaller with more of
    /// them: [`block_per_thread`]).
    pub fn for_each_batch<T, P, C>(&mut self, parse: P, consume: C) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&[Block], Vec<T>) -> Result<()>,
    {
        match self.positional_file() {
            Some(file) => self.for_each_positional(&file, parse, consume),
            None => self.for_each_serial(parse, consume),
        }
    }

    /// The file to read the rest of the input from at positions, when it
    /// can be: a plain file whose line ends are LFs (or CRLFs), decided
    /// from the first line end (bare CRs are rewritten as they are read).
    fn positional_file(&mut self) -> Option<std::sync::Arc<File>> {
        let file = self.input.positional.clone()?;
        if self.bare_cr.is_none() && !self.eof && self.fill(64 << 10).is_err() {
            return None; // the serial reader meets the error again and says it
        }
        (self.bare_cr == Some(false)).then_some(file)
    }

    /// [`Self::for_each_parallel`] on a plain file: batches of a block per
    /// thread ([`block_per_thread`]: a batch holds two blocks' bytes
    /// whatever the threads), each cut after the first line end past its nominal start,
    /// read and its lines counted in parallel, then parsed in parallel,
    /// then consumed in order. Two batches are in flight: while one is
    /// consumed (in order, on this thread), the next is read and parsed
    /// by the others, so the serial consumer is not a barrier every batch
    /// waits on. A line longer than [`MAX_LINE`] hands the rest to the
    /// serial reader, which reports it.
    fn for_each_positional<T, P, C>(&mut self, file: &File, parse: P, mut consume: C) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&[Block], Vec<T>) -> Result<()>,
    {
        let path = self.input.path.clone();
        let end = file
            .metadata()
            .map_err(|e| positioned_io(&path, e, 0))?
            .len();
        // the bytes already read ahead are read again at their positions
        self.carry.clear();
        let k = rayon::current_num_threads().max(2);
        let (mut pos, mut line) = (self.next_byte, self.next_line);
        // a small input's batches are smaller: the two in flight hold four
        // blocks' bytes, at most a 16th of what is left to read (with 2 MiB
        // blocks, 8 MiB beside the 41 MiB model of 65,536 threads of five
        // broadcasts each, read from 57 MB)
        let whole = (self.block_size as u64)
            .min((end.saturating_sub(pos) / 64).max(MIN_THREAD_BLOCK as u64))
            as usize;
        let size = block_per_thread(whole, k) as u64;
        let mut bufs: Vec<Vec<u8>> = std::mem::take(&mut self.spare);
        // the batch read and parsed, waiting to be consumed
        let mut pending: Option<(Vec<Block>, Vec<T>)> = None;
        loop {
            let more = pos < end;
            let mine: Vec<Vec<u8>> = bufs.drain(bufs.len().saturating_sub(k)..).collect();
            let mut next = None;
            let consumed = rayon::in_place_scope(|s| -> Result<Vec<Vec<u8>>> {
                if more {
                    let (next, parse, path) = (&mut next, &parse, &path);
                    s.spawn(move |_| {
                        let _p = crate::phases::span("lines: read and parse a batch (all threads)");
                        *next = Some(read_batch(
                            file,
                            path,
                            (pos, line, end),
                            (k, size),
                            mine,
                            parse,
                        ));
                    });
                }
                consume_batch(pending.take(), &mut consume)
            });
            // the consumed batch's faults come first: it is earlier in the file
            bufs.extend(consumed?);
            match next {
                None => break,
                Some(next) => match next? {
                    Some(batch) => {
                        (pos, line) = (batch.pos, batch.line);
                        pending = Some((batch.blocks, batch.parsed));
                    }
                    // no line end within MAX_LINE of the next cut
                    None => return self.serial_from(file, pos, line, parse, consume),
                },
            }
        }
        bufs.truncate(k);
        self.spare = bufs;
        (self.next_byte, self.next_line, self.eof) = (pos, line, true);
        Ok(())
    }

    /// Goes on from byte `pos` (line `line`) with the serial reader.
    fn serial_from<T, P, C>(
        &mut self,
        file: &File,
        pos: u64,
        line: u64,
        parse: P,
        consume: C,
    ) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&[Block], Vec<T>) -> Result<()>,
    {
        use std::io::{Seek, SeekFrom};
        let mut f = file
            .try_clone()
            .map_err(|e| Error::io(&self.input.path, e))?;
        f.seek(SeekFrom::Start(pos))
            .map_err(|e| Error::io(&self.input.path, e))?;
        self.input.reader = Box::new(Counting(f));
        self.input.positional = None;
        self.carry.clear();
        (self.next_byte, self.next_line, self.eof) = (pos, line, false);
        self.for_each_serial(parse, consume)
    }

    /// Parses all remaining blocks in parallel with `parse` and hands each
    /// block with its result to `consume` in file order, in three stages
    /// that overlap: while one batch (a block per thread) is consumed on
    /// this thread, the next is parsed by the pool and the one after it
    /// read (decompressed, for gzip) by one thread. The serial consumer is
    /// thus not a barrier that the parse and the read wait on, as the
    /// positional path ([`Self::for_each_positional`]) has it. A read error
    /// comes out after every block before it was consumed; a consumer's
    /// error stops everything after it.
    fn for_each_serial<T, P, C>(&mut self, parse: P, consume: C) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&[Block], Vec<T>) -> Result<()>,
    {
        // a block per thread, two blocks' bytes a batch, as on the
        // positional path
        let k = rayon::current_num_threads().max(2);
        let whole = self.block_size;
        self.block_size = block_per_thread(whole, k);
        let r = self.for_each_serial_blocks(k, parse, consume);
        self.block_size = whole;
        r
    }

    /// [`Self::for_each_serial`] in batches of `k` blocks.
    fn for_each_serial_blocks<T, P, C>(&mut self, k: usize, parse: P, mut consume: C) -> Result<()>
    where
        T: Send,
        P: Fn(&Block) -> T + Sync,
        C: FnMut(&[Block], Vec<T>) -> Result<()>,
    {
        let mut to_parse = self.next_batch(k)?;
        let mut to_consume: Option<(Vec<Block>, Vec<T>)> = None;
        let mut read_error: Option<Error> = None;
        while !to_parse.is_empty() || to_consume.is_some() {
            let mut read = None;
            let mut parsed = None;
            let consumed = rayon::in_place_scope(|s| -> Result<Vec<Vec<u8>>> {
                // nothing to parse once the input ended (or failed): the
                // last batch is consumed alone
                if !to_parse.is_empty() {
                    // the read first: the longest stage, started before the
                    // parse's jobs can take every thread
                    let (this, read) = (&mut *self, &mut read);
                    s.spawn(move |_| *read = Some(this.next_batch(k)));
                    let (blocks, parsed, parse) =
                        (std::mem::take(&mut to_parse), &mut parsed, &parse);
                    s.spawn(move |_| {
                        let p: Vec<T> = blocks.par_iter().map(parse).collect();
                        *parsed = Some((blocks, p));
                    });
                }
                consume_batch(to_consume.take(), &mut consume)
            });
            for data in consumed? {
                if self.spare.len() < k {
                    self.spare.push(data);
                }
            }
            to_consume = parsed;
            match read {
                Some(Ok(blocks)) => to_parse = blocks,
                Some(Err(e)) => read_error = Some(e),
                None => {}
            }
        }
        read_error.map_or(Ok(()), Err)
    }
}

/// Hands the blocks of a parsed batch (if any) with their results to
/// `consume`, in order; their buffers back, for later blocks.
fn consume_batch<T>(
    batch: Option<(Vec<Block>, Vec<T>)>,
    consume: &mut impl FnMut(&[Block], Vec<T>) -> Result<()>,
) -> Result<Vec<Vec<u8>>> {
    let Some((blocks, parsed)) = batch else {
        return Ok(Vec::new());
    };
    consume(&blocks, parsed)?;
    Ok(blocks.into_iter().map(|b| b.data).collect())
}

/// An I/O error of `path` with the byte it was met at.
fn positioned_io(path: &Path, e: std::io::Error, at: u64) -> Error {
    Error::io(
        path,
        std::io::Error::new(e.kind(), format!("{e} (at byte {at})")),
    )
}

/// A batch of [`LineBlocks::for_each_positional`]: its blocks, what
/// `parse` made of them, and the byte and line it ends before.
struct PositionalBatch<T> {
    blocks: Vec<Block>,
    parsed: Vec<T>,
    pos: u64,
    line: u64,
}

/// Reads the batch from byte `pos` (line `line`) of a file of `end`
/// bytes: `k` blocks of about `size` bytes, each cut after the first line
/// end past its nominal start, read into the buffers `bufs` (more are
/// made) and their lines counted in parallel, then parsed in parallel.
/// `None` when no line end comes within [`MAX_LINE`] of the first cut.
fn read_batch<T, P>(
    file: &File,
    path: &Path,
    (pos, mut line, end): (u64, u64, u64),
    (k, size): (usize, u64),
    mut bufs: Vec<Vec<u8>>,
    parse: &P,
) -> Result<Option<PositionalBatch<T>>>
where
    T: Send,
    P: Fn(&Block) -> T + Sync,
{
    let cuts: Vec<Option<u64>> = (1..=k as u64)
        .into_par_iter()
        .map(|i| {
            line_start_from(file, pos + i * size, end).map_err(|(e, at)| positioned_io(path, e, at))
        })
        .collect::<Result<_>>()?;
    let mut bounds = vec![pos];
    for c in cuts {
        let Some(c) = c else { break };
        let last = bounds[bounds.len() - 1];
        bounds.push(c.max(last));
    }
    if bounds.len() == 1 {
        return Ok(None);
    }
    let ranges: Vec<(u64, u64)> = bounds
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| (w[0], w[1]))
        .collect();
    // the buffers are sized here, on one thread: allocated from the
    // parsing threads, they would spread over their heaps. A buffer used
    // again keeps its bytes (overwritten by the read): only what it grows
    // by is zeroed, not every block (2 % of a one-core Paraver read)
    let spare: Vec<Vec<u8>> = ranges
        .iter()
        .map(|&(a, z)| {
            let need = (z - a) as usize;
            let mut v = bufs.pop().unwrap_or_default();
            v.truncate(need);
            v.reserve_exact(need - v.len());
            v
        })
        .collect();
    let read: Vec<(Vec<u8>, u64)> = ranges
        .par_iter()
        .zip(spare)
        .map(|(&(a, z), mut data)| {
            use std::os::unix::fs::FileExt;
            data.resize((z - a) as usize, 0);
            file.read_exact_at(&mut data, a)
                .map_err(|e| positioned_io(path, e, a))?;
            let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
            Ok((data, lines))
        })
        .collect::<Result<_>>()?;
    let mut blocks = Vec::with_capacity(read.len());
    for (&(a, z), (data, lines)) in ranges.iter().zip(read) {
        BYTES_READ.fetch_add(z - a, std::sync::atomic::Ordering::Relaxed);
        blocks.push(Block {
            data,
            first_line: line,
            first_byte: a,
            last: z == end,
        });
        line += lines;
    }
    let parsed: Vec<T> = blocks.par_iter().map(parse).collect();
    Ok(Some(PositionalBatch {
        blocks,
        parsed,
        pos: bounds[bounds.len() - 1],
        line,
    }))
}

/// Where the first line that starts at or after byte `at` starts: just
/// past the first LF at or after `at - 1`, or `end`; `None` when no LF
/// comes within [`MAX_LINE`] bytes. An error comes with its position.
fn line_start_from(
    file: &File,
    at: u64,
    end: u64,
) -> std::result::Result<Option<u64>, (std::io::Error, u64)> {
    use std::os::unix::fs::FileExt;
    if at >= end {
        return Ok(Some(end));
    }
    let mut buf = vec![0u8; 64 << 10];
    let mut from = at - 1;
    while from < end {
        let want = buf.len().min((end - from) as usize);
        file.read_exact_at(&mut buf[..want], from)
            .map_err(|e| (e, from))?;
        if let Some(k) = memchr::memchr(b'\n', &buf[..want]) {
            return Ok(Some(from + k as u64 + 1));
        }
        from += want as u64;
        if from - at > MAX_LINE as u64 {
            return Ok(None);
        }
    }
    Ok(Some(end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn input_from(bytes: &[u8], gz: bool) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(if gz { "x.gz" } else { "x.txt" });
        let mut f = File::create(&p).unwrap();
        if gz {
            let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            e.write_all(bytes).unwrap();
            e.finish().unwrap();
        } else {
            f.write_all(bytes).unwrap();
        }
        (dir, p)
    }

    #[test]
    fn a_batch_holds_two_blocks_at_any_number_of_threads() {
        let mib = 1 << 20;
        assert_eq!(block_per_thread(2 * mib, 1), 2 * mib);
        assert_eq!(block_per_thread(2 * mib, 2), 2 * mib);
        assert_eq!(block_per_thread(2 * mib, 4), mib);
        assert_eq!(block_per_thread(2 * mib, 16), MIN_THREAD_BLOCK);
        assert_eq!(block_per_thread(2 * mib, 64), MIN_THREAD_BLOCK);
        // a reader's own small block is kept (the tests' blocks of bytes)
        assert_eq!(block_per_thread(100, 16), 100);
        assert_eq!(block_per_thread(1, 0), 1);
    }

    #[test]
    fn blocks_are_line_aligned_and_numbered() {
        let mut text = Vec::new();
        for i in 0..1000 {
            writeln!(text, "line {i}").unwrap();
        }
        text.extend_from_slice(b"tail-without-newline");
        for gz in [false, true] {
            let (_d, p) = input_from(&text, gz);
            let mut lb = LineBlocks::with_block_size(open(&p).unwrap(), 100);
            let mut all = Vec::new();
            let mut last_seen = false;
            while let Some(b) = lb.next_block().unwrap() {
                for (ln, off, l) in b.lines() {
                    assert_eq!(&text[off as usize..off as usize + l.len()], l);
                    all.push((ln, String::from_utf8(l.to_vec()).unwrap()));
                }
                if b.last {
                    assert!(b.ends_unterminated());
                    last_seen = true;
                }
            }
            assert!(last_seen);
            assert_eq!(all.len(), 1001);
            assert_eq!(all[0], (1, "line 0".to_string()));
            assert_eq!(all[999], (1000, "line 999".to_string()));
            assert_eq!(all[1000].1, "tail-without-newline");
        }
    }

    /// A plain file of the numbers `0..n`, one a line.
    fn numbered_lines(n: u32) -> (tempfile::TempDir, PathBuf) {
        let mut text = Vec::new();
        for i in 0..n {
            writeln!(text, "{i}").unwrap();
        }
        input_from(&text, false)
    }

    #[test]
    fn parallel_batches_keep_order() {
        let (_d, p) = numbered_lines(5000);
        let mut lb = LineBlocks::with_block_size(open(&p).unwrap(), 64);
        let mut seen = Vec::new();
        lb.for_each_parallel(
            |b| {
                b.lines()
                    .map(|(_, _, l)| std::str::from_utf8(l).unwrap().parse::<u32>().unwrap())
                    .collect::<Vec<_>>()
            },
            |_, v| {
                seen.extend(v);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..5000).collect::<Vec<_>>());
    }

    /// A consumer's error ends the reading there: no later block is
    /// consumed (the next batch, read and parsed meanwhile, is dropped),
    /// whatever the threads and block sizes.
    #[test]
    fn a_consumer_error_stops_in_file_order() {
        let (_d, p) = numbered_lines(3000);
        for threads in [1, 2, 4] {
            let pool = crate::test_pool::pool(threads);
            for size in [16usize, 64, 1000] {
                let mut lb = LineBlocks::with_block_size(open(&p).unwrap(), size);
                let mut seen = Vec::new();
                let r = pool.install(|| {
                    lb.for_each_parallel(
                        |b| {
                            b.lines()
                                .map(|(_, _, l)| std::str::from_utf8(l).unwrap().parse().unwrap())
                                .collect::<Vec<u32>>()
                        },
                        |_, v| {
                            if v.contains(&1500) {
                                return Err(Error::Invalid("stop at 1500".into()));
                            }
                            seen.extend(v);
                            Ok(())
                        },
                    )
                });
                assert!(r.is_err(), "{threads} threads, blocks of {size}");
                // every line before the failing block, none after it
                let n = seen.len() as u32;
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
                // (lines from 1000 on take 5 bytes: a block holds at most
                // size / 5 + 2 of them)
                assert!(n <= 1500 && 1500 - n <= size as u32 / 5 + 2, "{n}");
            }
        }
    }

    /// Reading at positions in parallel (plain files) gives the lines,
    /// line numbers, byte offsets and last block of the serial reader:
    /// LF and CRLF ends, bare CRs (read serially), an unterminated last
    /// line, lines longer than a block, a header read first, gzip.
    #[test]
    fn parallel_reading_equals_the_serial_blocks() {
        type Line = (u64, u64, Vec<u8>);
        let serial = |p: &Path, size: usize, header: usize| -> (Vec<Line>, bool) {
            let mut lb = LineBlocks::with_block_size(open(p).unwrap(), size);
            for _ in 0..header {
                lb.read_line().unwrap();
            }
            let (mut out, mut last) = (Vec::new(), false);
            while let Some(b) = lb.next_block().unwrap() {
                out.extend(b.lines().map(|(n, o, l)| (n, o, l.to_vec())));
                last = b.ends_unterminated();
            }
            (out, last)
        };
        let parallel = |p: &Path, size: usize, header: usize| -> (Vec<Line>, bool) {
            let mut lb = LineBlocks::with_block_size(open(p).unwrap(), size);
            for _ in 0..header {
                lb.read_line().unwrap();
            }
            let (mut out, mut last) = (Vec::new(), false);
            lb.for_each_parallel(
                |b| {
                    let v: Vec<Line> = b.lines().map(|(n, o, l)| (n, o, l.to_vec())).collect();
                    (v, b.ends_unterminated(), b.last)
                },
                |_, (v, unterminated, is_last)| {
                    out.extend(v);
                    if is_last {
                        last = unterminated;
                    }
                    Ok(())
                },
            )
            .unwrap();
            (out, last)
        };
        let pool = crate::test_pool::pool(3);
        let mut texts: Vec<Vec<u8>> = Vec::new();
        let mut t = Vec::new();
        for i in 0..700 {
            writeln!(t, "rec {i} {}", "y".repeat((i * 37) % 230)).unwrap();
        }
        texts.push(t.clone());
        t.extend_from_slice(b"unterminated tail");
        texts.push(t.clone());
        texts.push(
            String::from_utf8(t.clone())
                .unwrap()
                .replace('\n', "\r\n")
                .into_bytes(),
        );
        texts.push(
            String::from_utf8(t.clone())
                .unwrap()
                .replace('\n', "\r")
                .into_bytes(),
        );
        texts.push(b"\n\n\nx\n\n".to_vec());
        texts.push(Vec::new());
        for text in &texts {
            for gz in [false, true] {
                let (_d, p) = input_from(text, gz);
                for size in [1usize, 7, 100, 1000, 1 << 20] {
                    for header in [0usize, 3] {
                        let want = serial(&p, size, header);
                        let got = pool.install(|| parallel(&p, size, header));
                        assert_eq!(got, want, "block size {size}, header {header}, gz {gz}");
                    }
                }
            }
        }
    }

    #[test]
    fn shares_see_every_line_once() {
        let mut text = Vec::new();
        for i in 0..997 {
            writeln!(text, "line {i} {}", "x".repeat(i % 13)).unwrap();
        }
        text.extend_from_slice(b"last-unterminated");
        let (_d, p) = input_from(&text, false);
        let len = text.len() as u64;
        for n in [1u64, 2, 3, 7, 64, 500] {
            let mut lines = Vec::new();
            for k in 0..n {
                let (a, b) = (len * k / n, len * (k + 1) / n);
                let mut lb = open_share(&p, a, b).unwrap();
                lb.block_size = 50;
                while let Some(bl) = lb.next_block().unwrap() {
                    for (_, off, l) in bl.lines() {
                        assert!(off >= a && off < b.max(a + 1), "{off} outside [{a}, {b})");
                        assert_eq!(&text[off as usize..off as usize + l.len()], l);
                        lines.push(l.to_vec());
                    }
                }
            }
            let want: Vec<Vec<u8>> = text.split(|&c| c == b'\n').map(|l| l.to_vec()).collect();
            assert_eq!(lines, want, "{n} shares");
        }
        let (_d, g) = input_from(&text, true);
        assert!(open_share(&g, 0, 10).is_err());
    }

    /// The bytes left are known for a plain file (after what was read),
    /// not for gzip nor a share.
    #[test]
    fn bytes_left_of_a_plain_file_only() {
        let text = b"head\nrest1\nrest2\n";
        let (_d, p) = input_from(text, false);
        let mut lb = LineBlocks::new(open(&p).unwrap());
        assert_eq!(lb.plain_bytes_left(), Some(text.len() as u64));
        lb.read_line().unwrap();
        assert_eq!(lb.plain_bytes_left(), Some(text.len() as u64 - 5));
        let (_d, g) = input_from(text, true);
        assert_eq!(LineBlocks::new(open(&g).unwrap()).plain_bytes_left(), None);
        assert_eq!(open_share(&p, 5, 11).unwrap().plain_bytes_left(), None);
    }

    #[test]
    fn header_line_then_blocks() {
        let (_d, p) = input_from(b"head\r\nrest1\nrest2\n", false);
        let mut lb = LineBlocks::new(open(&p).unwrap());
        assert_eq!(lb.read_line().unwrap().unwrap(), b"head");
        let b = lb.next_block().unwrap().unwrap();
        assert_eq!(b.first_line, 2);
        assert_eq!(b.first_byte, 6);
        assert_eq!(
            b.lines().map(|(_, _, l)| l.to_vec()).collect::<Vec<_>>(),
            vec![b"rest1".to_vec(), b"rest2".to_vec()]
        );
    }

    #[test]
    fn reading_is_counted_for_progress() {
        let (_d, p) = input_from(&vec![b'x'; 10_000], false);
        let before = bytes_read();
        let mut i = open(&p).unwrap();
        let mut sink = Vec::new();
        i.reader.read_to_end(&mut sink).unwrap();
        // other tests may read at the same time: at least this file's bytes
        assert!(bytes_read() - before >= 10_000);
    }
}
