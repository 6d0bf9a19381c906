//! Random access into a gzip file: an index of checkpoints (a block's
//! start in the compressed bits, its offset in the decompressed bytes and
//! the 32 KiB window before it), built by all the threads of a process or
//! all the processes of a job together, each decoding only its parts of
//! the file.
//!
//! The file's DEFLATE stream is cut into parts of about [`PART_BYTES`]
//! compressed bytes. The part after each nominal cut starts at the first
//! block found there ([`find`]); every part is then decoded from its start
//! to the next part's without the window before it ([`inflate`]): what it
//! cannot know is written as markers for the window's bytes. That gives
//! each part's decompressed length and the window at its end in terms of
//! the window at its start, so the windows follow one from the other in
//! file order, 32 KiB a part. A part decoded from a true block start that
//! lands exactly on the next part's start proves that start, so the
//! checkpoints are exact: where a part does not land on the next start,
//! or the stream is not one gzip member ending at the file's end, or its
//! length disagrees with the trailer's, there is no index and the caller
//! decompresses the file from its start as before.
//!
//! The bytes are then decoded by zlib from any checkpoint ([`at::GzAt`]).
//! Each span between checkpoints that a reader decodes whole leaves its
//! CRC-32; after a read (the threads' ranges, or the processes' shares
//! with their sums exchanged) the spans no reader decoded whole are
//! decoded, and the spans' CRCs are combined into each member's and
//! checked against its trailer
//! ([`sums_agree`], [`check_read_shared`]), as zlib checks a whole-file
//! read: a damaged file read by one process's threads is read again by
//! one pipeline, which stops at the damage and says so (a repair, or an
//! error under `--strict`, as before); processes reading shares stop with
//! the member's bytes and both CRCs.

pub mod at;
pub mod find;
pub mod inflate;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::readers::exchange::{Exchange, all_gather, damaged};
use inflate::{WINDOW, decode_part, resolve};

/// Compressed bytes per part, nominally: a checkpoint every megabyte.
pub const PART_BYTES: u64 = 1 << 20;
/// At most this many parts (their windows, 32 KiB each, are kept).
const MAX_PARTS: u64 = 2048;
/// The most compressed bytes a part decoded at once may span (beyond
/// twice the nominal part): where blocks were found too seldom, there is
/// no index rather than a part too large to hold.
const MAX_PART_BYTES: u64 = 64 << 20;
/// Compressed bytes read beyond a part's nominal end to confirm a block
/// found near it (zlib's blocks hold up to 16,384 symbols, some tens of
/// KiB; a block running past them is not taken).
const SLACK: u64 = 256 << 10;

/// A place decoding can start from.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// A block's start, in bits from the file's start.
    pub bit: u64,
    /// Its offset in the decompressed bytes.
    pub out: u64,
    /// The 32 KiB the stream decoded to before it (zeros before the
    /// stream's start).
    pub window: std::sync::Arc<[u8]>,
}

/// The checkpoints of a gzip file.
#[derive(Debug, Clone)]
pub struct Index {
    /// Decompressed bytes.
    pub len: u64,
    /// By offset, the first at the stream's start.
    pub checkpoints: Vec<Checkpoint>,
    /// The gzip members, in file order.
    pub members: Vec<Member>,
}

/// A gzip member of an indexed file.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The checkpoints that start its spans (a span: from one checkpoint
    /// to the next, or to the end).
    pub spans: std::ops::Range<usize>,
    /// The CRC-32 of its bytes, as its trailer says.
    pub crc: u32,
}

impl Index {
    /// The last checkpoint at or before decompressed byte `at`.
    pub fn before(&self, at: u64) -> &Checkpoint {
        &self.checkpoints[self.span_of(at)]
    }

    /// The number of the last checkpoint at or before decompressed byte
    /// `at`: the span it lies in.
    pub fn span_of(&self, at: u64) -> usize {
        self.checkpoints
            .partition_point(|c| c.out <= at)
            .saturating_sub(1)
    }

    /// Whether checkpoint `k` starts a gzip member (its window is not the
    /// bytes before it).
    pub fn starts_member(&self, k: usize) -> bool {
        self.members
            .binary_search_by_key(&k, |m| m.spans.start)
            .is_ok()
    }

    /// The decompressed bytes of span `k` (from checkpoint `k` to the
    /// next, or to the end).
    pub fn span(&self, k: usize) -> std::ops::Range<u64> {
        let a = self.checkpoints.get(k).map_or(self.len, |c| c.out);
        let b = self.checkpoints.get(k + 1).map_or(self.len, |c| c.out);
        a..b.max(a)
    }
}

/// The length of the gzip member header at the start of `h`; `None` when
/// it is not one (or does not end within `h`).
pub(crate) fn member_header(h: &[u8]) -> Option<usize> {
    let &[0x1f, 0x8b, 8, flags] = h.get(..4)? else {
        return None;
    };
    if flags & 0xE0 != 0 {
        return None;
    }
    let mut at = 10usize;
    if flags & 4 != 0 {
        let x = h.get(at..at + 2)?;
        at += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
    }
    for flag in [8, 16] {
        if flags & flag != 0 {
            at += memchr::memchr(0, h.get(at..)?)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    (at <= h.len()).then_some(at)
}

/// Where the DEFLATE stream of a gzip file starts (after its header), and
/// the file's length; `None` when it is not gzip or its header is damaged.
fn layout(file: &File) -> std::io::Result<Option<(u64, u64)>> {
    let len = file.metadata()?.len();
    let mut h = vec![0u8; (64 << 10).min(len as usize)];
    file.read_exact_at(&mut h, 0)?;
    Ok(member_header(&h)
        .map(|at| at as u64)
        .filter(|&at| at + 8 <= len)
        .map(|at| (at, len)))
}

/// The decompressed length of the gzip file at `path` as its last
/// trailer says (modulo 4 GiB, so at least the file's length is taken): an
/// estimate, before an index is built.
pub fn length_estimate(path: &Path) -> Option<u64> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut t = [0u8; 4];
    file.read_exact_at(&mut t, len.checked_sub(4)?).ok()?;
    Some(u64::from(u32::from_le_bytes(t)).max(len))
}

/// How a file's stream is cut: its start, the file's length, the parts.
#[derive(Debug, Clone, Copy)]
struct Plan {
    start: u64,
    len: u64,
    parts: u64,
}

impl Plan {
    fn new(start: u64, len: u64, at_least: u64) -> Plan {
        let span = len - 8 - start;
        let parts = (span / PART_BYTES).clamp(at_least.max(1), MAX_PARTS.max(at_least));
        Plan { start, len, parts }
    }

    /// The nominal start of part `k`, in bytes.
    fn nominal(&self, k: u64) -> u64 {
        let span = self.len - 8 - self.start;
        self.start + (u128::from(span) * u128::from(k) / u128::from(self.parts)) as u64
    }

    /// Whether every part from `starts` (the last to the file's end) is
    /// small enough to be read whole.
    fn parts_fit(&self, starts: &[u64]) -> bool {
        let cap = MAX_PART_BYTES.max(2 * (self.len / self.parts));
        let mut ends = starts.iter().skip(1).copied().chain([self.len * 8]);
        starts
            .iter()
            .all(|&a| ends.next().is_some_and(|b| (b - a) / 8 <= cap))
    }

    /// Where part `k` starts: the stream's start, or the first block found
    /// after its nominal start and before the next part's.
    fn find_start(&self, file: &File, k: u64) -> std::io::Result<Option<u64>> {
        if k == 0 {
            return Ok(Some(self.start * 8));
        }
        let (a, b) = (self.nominal(k), self.nominal(k + 1));
        let mut data = vec![0u8; (b + SLACK).min(self.len).saturating_sub(a) as usize];
        file.read_exact_at(&mut data, a)?;
        Ok(find::find(&data, 0, (b - a) * 8).map(|p| a * 8 + p))
    }

    /// Decodes the part from bit `start` to bit `stop` (the next part's
    /// start; `None`: the last part, to the stream's end).
    fn decode(
        &self,
        file: &File,
        start: u64,
        stop: Option<u64>,
    ) -> std::io::Result<Option<inflate::Part>> {
        let a = start / 8;
        let b = stop.map_or(self.len, |s| (s / 8 + 16).min(self.len));
        let mut data = vec![0u8; (b - a) as usize];
        file.read_exact_at(&mut data, a)?;
        let from_start = start == self.start * 8;
        let part = match stop {
            Some(s) => decode_part(&data, start - a * 8, s - a * 8, true, from_start),
            None => decode_part(&data, start - a * 8, u64::MAX, false, from_start),
        };
        Ok(part.ok().map(|mut p| {
            p.end += a * 8;
            for m in &mut p.members {
                m.0 += a * 8;
            }
            p
        }))
    }

    /// The index from every part's start and decoding (`None` where a
    /// part did not decode); `None` when they do not chain.
    fn assemble(
        &self,
        file: &File,
        starts: &[u64],
        parts: Vec<Option<inflate::Part>>,
    ) -> std::io::Result<Option<Index>> {
        let mut trailer = [0u8; 8];
        file.read_exact_at(&mut trailer, self.len - 8)?;
        let isize = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let zeros: std::sync::Arc<[u8]> = vec![0u8; WINDOW].into();
        let mut window = zeros.clone();
        let mut out = 0u64;
        let mut member = 0u64;
        let mut checkpoints = Vec::with_capacity(starts.len());
        let mut members = Vec::new();
        let mut first = 0;
        for (j, part) in parts.into_iter().enumerate() {
            let Some(part) = part else {
                return Ok(None);
            };
            let last = j + 1 == starts.len();
            let chained = match last {
                false => !part.last && part.end == starts[j + 1],
                true => part.last && part.end == self.len * 8,
            };
            if !chained {
                return Ok(None);
            }
            checkpoints.push(Checkpoint {
                bit: starts[j],
                out,
                window: window.clone(),
            });
            // a member starts with nothing before it: its window is
            // never read
            for &(bit, at, crc) in &part.members {
                members.push(Member {
                    spans: first..checkpoints.len(),
                    crc,
                });
                first = checkpoints.len();
                member = out + at;
                checkpoints.push(Checkpoint {
                    bit,
                    out: member,
                    window: zeros.clone(),
                });
            }
            window = resolve(&part.window, &window).into();
            out += part.len;
        }
        // the last member's length, as its trailer says
        if (out - member) as u32 != isize {
            return Ok(None);
        }
        members.push(Member {
            spans: first..checkpoints.len(),
            crc,
        });
        Ok(Some(Index {
            len: out,
            checkpoints,
            members,
        }))
    }
}

/// The distinct part starts found, in order.
fn starts_of(found: &[Option<u64>]) -> Vec<u64> {
    let mut starts: Vec<u64> = Vec::with_capacity(found.len());
    for &s in found.iter().flatten() {
        if starts.last().is_none_or(|&l| l < s) {
            starts.push(s);
        }
    }
    starts
}

/// The index of the gzip file at `path`, built on all threads: `None` when
/// it is not one gzip member whose blocks chain (see the module's doc) or
/// is smaller than two parts.
pub fn build(path: &Path) -> Result<Option<Index>> {
    let io = |e| Error::io(path, e);
    let file = File::open(path).map_err(io)?;
    let Some((start, len)) = layout(&file).map_err(io)? else {
        return Ok(None);
    };
    // a part for each thread at least, of 64 KiB or more
    let threads = rayon::current_num_threads() as u64;
    let plan = Plan::new(start, len, threads.min((len - 8 - start) / (64 << 10)));
    let found = (0..plan.parts)
        .into_par_iter()
        .map(|k| plan.find_start(&file, k))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io)?;
    let starts = starts_of(&found);
    if starts.len() < 2 || !plan.parts_fit(&starts) {
        return Ok(None);
    }
    let parts = (0..starts.len())
        .into_par_iter()
        .map(|j| plan.decode(&file, starts[j], starts.get(j + 1).copied()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io)?;
    plan.assemble(&file, &starts, parts).map_err(io)
}

/// The index of the gzip file at `path`, built by the processes of `ex`
/// together (each calls it; part `k` is found and decoded by process `k
/// mod n`, and the windows are exchanged): `None` for every process when
/// there is none (as [`build`]). With `span`, a checkpoint about every
/// `span` decompressed bytes or more often (as the last trailer's length,
/// modulo 4 GiB, and the file's size tell; at most [`MAX_PARTS`] of them):
/// for shares that are to start at checkpoints.
pub fn build_shared(
    path: &Path,
    ex: &mut dyn Exchange,
    span: Option<u64>,
) -> Result<Option<Index>> {
    let (rank, n) = (ex.rank(), ex.size().max(1));
    let io = |e| Error::io(path, e);
    // every process reads the same layout; each says it, and all must
    // agree before they share the work
    let opened = File::open(path).and_then(|f| Ok((layout(&f)?, f)));
    let (layout, file, failed) = match opened {
        Ok((l, f)) => (l, Some(f), None),
        Err(e) => (None, None, Some(io(e))),
    };
    let said = layout.map_or(vec![0, 0, 0], |(s, l)| vec![1, s, l]);
    let inbox = all_gather(ex, &said, failed)?;
    if (0..inbox.len()).any(|s| inbox.from(s) != said.as_slice()) {
        return Ok(None);
    }
    let (Some((start, len)), Some(file)) = (layout, file) else {
        return Ok(None);
    };
    // parts enough for the spans asked for (every process estimates
    // alike from the same file)
    let asked = span.map_or(0, |s| {
        length_estimate(path)
            .unwrap_or(len)
            .div_ceil(s.max(1))
            .min(MAX_PARTS)
            .min((len - 8 - start) / (64 << 10))
    });
    let plan = Plan::new(start, len, (n as u64).max(asked));
    let mine: Vec<u64> = (rank as u64..plan.parts).step_by(n).collect();
    let found = mine
        .iter()
        .map(|&k| plan.find_start(&file, k))
        .collect::<std::io::Result<Vec<_>>>();
    let (words, failed) = match found {
        Ok(f) => (f.iter().map(|s| s.map_or(u64::MAX, |s| s)).collect(), None),
        Err(e) => (Vec::new(), Some(io(e))),
    };
    let inbox = all_gather(ex, &words, failed)?;
    let mut found = vec![None; plan.parts as usize];
    for s in 0..inbox.len() {
        for (i, &w) in inbox.from(s).iter().enumerate() {
            let k = s + i * n;
            *found.get_mut(k).ok_or_else(damaged)? = (w != u64::MAX).then_some(w);
        }
    }
    let starts = starts_of(&found);
    if starts.len() < 2 || !plan.parts_fit(&starts) {
        return Ok(None);
    }
    // part j of the starts: decoded by process j mod n
    let decoded = (rank..starts.len())
        .step_by(n)
        .map(|j| plan.decode(&file, starts[j], starts.get(j + 1).copied()))
        .collect::<std::io::Result<Vec<_>>>();
    let (words, failed) = match decoded {
        Ok(d) => (part_words(&d), None),
        Err(e) => (Vec::new(), Some(io(e))),
    };
    let inbox = all_gather(ex, &words, failed)?;
    let mut parts: Vec<Option<inflate::Part>> = vec![None; starts.len()];
    for s in 0..inbox.len() {
        let mut w = inbox.from(s);
        let mut j = s;
        while !w.is_empty() {
            let (p, rest) = part_from_words(w).ok_or_else(damaged)?;
            *parts.get_mut(j).ok_or_else(damaged)? = p;
            w = rest;
            j += n;
        }
    }
    plan.assemble(&file, &starts, parts).map_err(io)
}

/// After a read of `src` by this process's threads: whether, where it is
/// a gzip file's bytes, every member agrees with its trailer's CRC-32 (the
/// spans no reader decoded whole decoded now: [`at::GzAt::sum_missing`];
/// see [`at::GzAt::check`]). A plain file agrees.
pub fn sums_agree(src: &dyn at::ReadAt) -> bool {
    src.gzip()
        .is_none_or(|g| g.sum_missing(&[], (0, 1)).is_ok() && g.check(&[]).is_ok_and(|all| all))
}

/// After the processes of `ex` read their shares of `src` (each calls it;
/// all read the same kind of source, [`shared_source`]): where it is a
/// gzip file's bytes, the spans' CRC-32s each decoded whole are exchanged,
/// the spans none decoded whole are dealt to the processes to decode
/// ([`at::GzAt::sum_missing`]: a share that began inside one, or at a
/// checkpoint's window), exchanged again, and every member checked against
/// its trailer's. The same error for every process when one disagrees (a
/// damaged gzip file is not read in shares, whose records after the damage
/// would be taken where a whole read stops), said by the first
/// ([`Error::OtherProcess`] for the others).
pub fn check_read_shared(path: &Path, src: &dyn at::ReadAt, ex: &mut dyn Exchange) -> Result<()> {
    let Some(g) = src.gzip() else {
        return Ok(());
    };
    let (rank, n) = (ex.rank(), ex.size());
    let inbox = all_gather(ex, &g.sum_words(), None)?;
    let others: Vec<&[u64]> = (0..inbox.len()).map(|s| inbox.from(s)).collect();
    // the spans no process decoded whole, dealt to the processes
    let failed = g.sum_missing(&others, (rank, n)).err();
    let inbox = all_gather(ex, &g.sum_words(), failed.map(|e| Error::io(path, e)))?;
    let others: Vec<&[u64]> = (0..inbox.len()).map(|s| inbox.from(s)).collect();
    match g.check(&others) {
        Ok(true) => Ok(()),
        Err(_) | Ok(false) if rank != 0 => Err(Error::OtherProcess),
        Ok(false) => Err(Error::Invalid(format!(
            "{}: the gzip file changed while it was read (a part of it did not decode \
             whole)",
            path.display()
        ))),
        Err(e) => Err(Error::Invalid(format!(
            "{}: {e}; a damaged gzip file is not read in shares (one process reads \
             what decodes before the damage)",
            path.display()
        ))),
    }
}

/// What the processes of `ex` read their shares of `path` from (each
/// calls it): the file itself when it is plain; when it is gzip
/// (`compressed`), its decompressed bytes through the index they build
/// together, or `None` when it has none (see the module's doc) and it
/// cannot be shared. With `span`, the index's checkpoints lie about every
/// `span` decompressed bytes or more often ([`build_shared`]).
pub fn shared_source(
    path: &Path,
    compressed: bool,
    ex: &mut dyn Exchange,
    span: Option<u64>,
) -> Result<Option<at::Source>> {
    if !compressed {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        return Ok(Some(std::sync::Arc::new(f)));
    }
    Ok(build_shared(path, ex, span)?.map(|index| {
        std::sync::Arc::new(at::GzAt::new(path, std::sync::Arc::new(index))) as at::Source
    }))
}

/// Words per part in an exchange: whether it decoded, its length, end
/// and whether it was the last, then its window four symbols a word (then
/// the number of gzip members that start in it, and their bits, offsets
/// and the CRC-32 of the member before each); a part that did not decode is one word, 0.
const PART_WORDS: usize = 4 + WINDOW / 4;

fn part_words(parts: &[Option<inflate::Part>]) -> Vec<u64> {
    let mut w = Vec::with_capacity(parts.len() * PART_WORDS);
    for p in parts {
        match p {
            Some(p) => {
                w.extend_from_slice(&[1, p.len, p.end, u64::from(p.last)]);
                w.extend(p.window.chunks_exact(4).map(|c| {
                    u64::from(c[0])
                        | u64::from(c[1]) << 16
                        | u64::from(c[2]) << 32
                        | u64::from(c[3]) << 48
                }));
                w.push(p.members.len() as u64);
                w.extend(
                    p.members
                        .iter()
                        .flat_map(|&(b, o, crc)| [b, o, u64::from(crc)]),
                );
            }
            None => w.push(0),
        }
    }
    w
}

fn part_from_words(w: &[u64]) -> Option<(Option<inflate::Part>, &[u64])> {
    if w.first() == Some(&0) {
        return Some((None, &w[1..]));
    }
    let (p, rest) = (w.get(..PART_WORDS)?, &w[PART_WORDS..]);
    let k = usize::try_from(*rest.first()?).ok()?;
    let end = k.checked_mul(3)?.checked_add(1)?;
    let m = rest.get(1..end)?;
    let rest = &rest[end..];
    let members = m
        .chunks_exact(3)
        .map(|x| Some((x[0], x[1], u32::try_from(x[2]).ok()?)))
        .collect::<Option<_>>()?;
    let window = p[4..]
        .iter()
        .flat_map(|&x| {
            [
                x as u16,
                (x >> 16) as u16,
                (x >> 32) as u16,
                (x >> 48) as u16,
            ]
        })
        .collect();
    let part = inflate::Part {
        len: p[1],
        end: p[2],
        last: p[3] == 1,
        window,
        members,
    };
    Some((Some(part), rest))
}

#[cfg(test)]
mod tests {
    use super::at::GzAt;
    use super::inflate::tests::text;
    use super::*;
    use crate::readers::exchange::ThreadExchange;
    use crate::test_rng::XorShift as Rng;
    use std::io::Write;

    pub(crate) fn gzip_file(dir: &Path, name: &str, data: &[u8], level: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        let mut e = flate2::write::GzEncoder::new(
            File::create(&p).unwrap(),
            flate2::Compression::new(level),
        );
        e.write_all(data).unwrap();
        e.finish().unwrap();
        p
    }

    fn check_reads(at: &GzAt, data: &[u8], rng: &mut Rng) {
        use super::at::ReadAt;
        for _ in 0..40 {
            let a = rng.below(data.len() as u64 + 10);
            let mut buf = vec![0u8; rng.below(200_000) as usize + 1];
            let got = at.read_at(&mut buf, a).unwrap();
            let want = &data[(a as usize).min(data.len())..][..got];
            assert_eq!(&buf[..got], want, "at {a}");
            assert!(got > 0 || a >= data.len() as u64);
        }
    }

    #[test]
    fn an_index_built_on_threads_reads_the_bytes_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(21);
        let data = text(&mut rng, 24 << 20);
        let p = gzip_file(dir.path(), "t.json.gz", &data, 6);
        let index = build(&p).unwrap().expect("an index");
        assert_eq!(index.len, data.len() as u64);
        assert!(index.checkpoints.len() > 2, "{}", index.checkpoints.len());
        for c in &index.checkpoints[1..] {
            let o = c.out as usize;
            assert_eq!(&c.window[..], &data[o - WINDOW..o]);
        }
        let at = GzAt::new(&p, std::sync::Arc::new(index));
        check_reads(&at, &data, &mut rng);
    }

    #[test]
    fn processes_build_the_same_index_together() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(23);
        let data = text(&mut rng, 12 << 20);
        let p = gzip_file(dir.path(), "t.json.gz", &data, 9);
        let built = build(&p).unwrap().expect("an index");
        for n in [1, 2, 3, 5] {
            let ends = ThreadExchange::group(n);
            let got: Vec<Option<Index>> = std::thread::scope(|s| {
                let hs: Vec<_> = ends
                    .into_iter()
                    .map(|mut ex| {
                        let p = &p;
                        s.spawn(move || build_shared(p, &mut ex, None).unwrap())
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let first: Vec<(u64, u64)> = got[0]
                .as_ref()
                .expect("an index")
                .checkpoints
                .iter()
                .map(|c| (c.bit, c.out))
                .collect();
            // at least a part per process
            assert!(first.len() >= n, "{n}: {}", first.len());
            for index in got {
                let index = index.expect("an index");
                let cps: Vec<(u64, u64)> =
                    index.checkpoints.iter().map(|c| (c.bit, c.out)).collect();
                assert_eq!(cps, first, "every process the same");
                let crcs = |i: &Index| i.members.iter().map(|m| m.crc).collect::<Vec<_>>();
                assert_eq!(crcs(&index), crcs(&built));
                assert_eq!(index.members[0].spans, 0..index.checkpoints.len());
                for c in &index.checkpoints[1..] {
                    let o = c.out as usize;
                    assert!(c.window[..] == data[o - WINDOW..o]);
                }
                let at = GzAt::new(&p, std::sync::Arc::new(index));
                check_reads(&at, &data, &mut rng);
            }
        }
    }

    /// Members one after the other (as `cat a.gz b.gz`, or `synth`'s stored
    /// head before its records): a checkpoint at each member's start, and
    /// the reads cross from one member into the next.
    #[test]
    fn members_one_after_another_are_read_across() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(31);
        let data = text(&mut rng, 20 << 20);
        let cuts = [0, 1000, 1000, 7 << 20, 7 << 20 | 12345, data.len()];
        let mut all = Vec::new();
        for (k, w) in cuts.windows(2).enumerate() {
            let level = if k == 0 { 0 } else { 6 };
            let p = gzip_file(dir.path(), &format!("m{k}.gz"), &data[w[0]..w[1]], level);
            all.extend(std::fs::read(&p).unwrap());
        }
        let p = dir.path().join("all.gz");
        std::fs::write(&p, &all).unwrap();
        let index = build(&p).unwrap().expect("an index");
        assert_eq!(index.len, data.len() as u64);
        for &c in &cuts[1..cuts.len() - 1] {
            assert!(index.checkpoints.iter().any(|cp| cp.out == c as u64), "{c}");
        }
        let at = GzAt::new(&p, std::sync::Arc::new(index));
        check_reads(&at, &data, &mut rng);
        // in order, across every member
        use super::at::ReadAt;
        let mut got = vec![0u8; data.len()];
        at.read_exact_at(&mut got, 0).unwrap();
        assert!(got == data);
        // garbage after the last member: no index
        all.extend_from_slice(b"not gzip at all");
        std::fs::write(&p, &all).unwrap();
        assert!(build(&p).unwrap().is_none());
    }

    /// A file that changed after its index was built gives read errors
    /// (or other bytes), never a panic; one cut short ends early.
    #[test]
    fn a_file_changed_under_its_index_is_an_error_not_a_panic() {
        use super::at::ReadAt;
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(37);
        let data = text(&mut rng, 8 << 20);
        let p = gzip_file(dir.path(), "t.gz", &data, 6);
        let index = std::sync::Arc::new(build(&p).unwrap().expect("an index"));
        let bytes = std::fs::read(&p).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        for k in 0..6u64 {
            let mut d = bytes.clone();
            match k {
                0 => d.truncate(d.len() / 2),
                1 => d.truncate(20),
                _ => {
                    for _ in 0..50 {
                        let i = rng.below(d.len() as u64) as usize;
                        d[i] = rng.below(256) as u8;
                    }
                }
            }
            std::fs::write(&p, &d).unwrap();
            let at = GzAt::new(&p, index.clone());
            let mut pos = 0;
            while pos < index.len {
                match at.read_at(&mut buf, pos) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => pos += n as u64,
                }
            }
            // anywhere, too
            for _ in 0..10 {
                let _ = at.read_at(&mut buf, rng.below(index.len));
            }
        }
    }

    /// Reads that decode every span whole, in one reader, in forks of it
    /// or in readers of other processes whose sums are put together,
    /// check every member's CRC-32; a member whose trailer disagrees is
    /// named, and one no reader decoded whole is not checked.
    #[test]
    fn spans_decoded_whole_check_every_members_crc() {
        use super::at::{ReadAt, Source};
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(41);
        let data = text(&mut rng, 12 << 20);
        let cuts = [0, 3 << 20, 3 << 20, (7 << 20) + 999, data.len()];
        let mut all = Vec::new();
        let mut trailers = Vec::new();
        for (k, w) in cuts.windows(2).enumerate() {
            let p = gzip_file(dir.path(), &format!("m{k}.gz"), &data[w[0]..w[1]], 6);
            all.extend(std::fs::read(&p).unwrap());
            trailers.push(all.len() - 8);
        }
        let p = dir.path().join("all.gz");
        std::fs::write(&p, &all).unwrap();
        let index = std::sync::Arc::new(build(&p).unwrap().expect("an index"));
        assert_eq!(index.members.len(), 4);
        assert!(
            index.checkpoints.len() > index.members.len(),
            "{}",
            index.checkpoints.len()
        );
        let mut buf = vec![0u8; 1 << 20];
        let read = |at: &GzAt, from: u64, to: u64, buf: &mut [u8]| {
            let mut pos = from;
            while pos < to {
                let k = buf.len().min((to - pos) as usize);
                pos += at.read_at(&mut buf[..k], pos).unwrap() as u64;
            }
        };
        // nothing read: nothing checked; a little: not every member,
        // until the spans not read are decoded
        let at = GzAt::new(&p, index.clone());
        assert!(!at.check(&[]).unwrap());
        read(&at, 5 << 20, 6 << 20, &mut buf);
        assert!(!at.check(&[]).unwrap());
        at.sum_missing(&[], (0, 1)).unwrap();
        assert!(at.check(&[]).unwrap());
        // the bytes before each checkpoint, read first: its window where
        // it is not a member's start
        for c in &index.checkpoints[1..] {
            let at = GzAt::new(&p, index.clone());
            let from = c.out.saturating_sub(5);
            let mut b = [0u8; 10];
            let n = at.read_at(&mut b, from).unwrap();
            assert!(n > 0);
            assert_eq!(&b[..n], &data[from as usize..from as usize + n]);
            read(&at, from, index.len.min(c.out + 1000), &mut buf);
        }
        // in order, whole
        let at = GzAt::new(&p, index.clone());
        read(&at, 0, index.len, &mut buf);
        assert!(at.check(&[]).unwrap());
        // by forks, in three ranges that meet, the last first
        let at = GzAt::new(&p, index.clone());
        let forks: Vec<Source> = (0..3).map(|_| at.fork().unwrap()).collect();
        let third = index.len / 3;
        for k in [2u64, 0, 1] {
            let end = if k == 2 { index.len } else { (k + 1) * third };
            let f = forks[k as usize].gzip().unwrap();
            read(f, k * third, end, &mut buf);
        }
        assert!(at.check(&[]).unwrap());
        // by two processes, each with its own reader: together
        let (a, b) = (GzAt::new(&p, index.clone()), GzAt::new(&p, index.clone()));
        read(&a, 0, index.len / 2, &mut buf);
        read(&b, index.len / 2, index.len, &mut buf);
        assert!(!a.check(&[]).unwrap() && !b.check(&[]).unwrap());
        let words = b.sum_words();
        assert!(a.check(&[&words]).unwrap());
        // each begun inside a span, the spans between dealt to them
        let (a, b) = (GzAt::new(&p, index.clone()), GzAt::new(&p, index.clone()));
        read(&a, 1000, index.len / 3, &mut buf);
        read(&b, index.len / 2, index.len - 1000, &mut buf);
        let (wa, wb) = (a.sum_words(), b.sum_words());
        a.sum_missing(&[&wb], (0, 2)).unwrap();
        b.sum_missing(&[&wa], (1, 2)).unwrap();
        let (wa, wb) = (a.sum_words(), b.sum_words());
        assert!(a.check(&[&wb]).unwrap() && b.check(&[&wa]).unwrap());
        assert!(!a.check(&[]).unwrap());
        // the third member's trailer disagrees: named, once read whole
        let mut bad = all.clone();
        bad[trailers[2]] ^= 4;
        std::fs::write(&p, &bad).unwrap();
        let index = std::sync::Arc::new(build(&p).unwrap().expect("an index"));
        let at = GzAt::new(&p, index.clone());
        read(&at, 0, cuts[2] as u64, &mut buf);
        assert!(at.check(&[]).is_ok_and(|all| !all));
        read(&at, cuts[2] as u64, index.len, &mut buf);
        let e = at.check(&[]).unwrap_err().to_string();
        assert!(e.contains("member 3 of 4"), "{e}");
        assert!(!sums_agree(&at));
    }

    /// Parts too far apart to hold (blocks found too seldom) leave no
    /// index.
    #[test]
    fn parts_too_large_to_hold_are_refused() {
        let plan = Plan {
            start: 10,
            len: 1 << 30,
            parts: 64,
        };
        let mib = 8u64 << 20;
        assert!(plan.parts_fit(&(0..64).map(|k| 80 + k * 16 * mib).collect::<Vec<_>>()));
        // a gap of 70 MiB, and a last part of 200 MiB to the end
        assert!(!plan.parts_fit(&[80, 80 + 70 * mib, 80 + 100 * mib]));
        assert!(!plan.parts_fit(&[80, 80 + 824 * mib]));
        let even: Vec<u64> = (0..20).map(|k| 80 + k * 52 * mib).collect();
        assert!(plan.parts_fit(&even));
    }

    #[test]
    fn what_cannot_be_indexed_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(29);
        // small: one part
        let small = gzip_file(dir.path(), "s.gz", &text(&mut rng, 1000), 6);
        assert!(build(&small).unwrap().is_none());
        let data = text(&mut rng, 6 << 20);
        // not gzip; cut short; a trailer that disagrees
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, &data).unwrap();
        assert!(build(&plain).unwrap().is_none());
        let whole = gzip_file(dir.path(), "w.gz", &data, 6);
        let mut bytes = std::fs::read(&whole).unwrap();
        let cut = dir.path().join("cut.gz");
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
        assert!(build(&cut).unwrap().is_none());
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        let bad = dir.path().join("bad.gz");
        std::fs::write(&bad, &bytes).unwrap();
        assert!(build(&bad).unwrap().is_none());
    }
}
