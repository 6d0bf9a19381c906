//! A Chrome trace's bytes cut into one share per process of `mpirun …
//! tapestry reduce`, each cut between two events of the array, so that
//! every process reads and splits only its own bytes.
//!
//! Whether a byte of JSON lies inside a string depends on every quote
//! before it, so a process cannot start at an arbitrary byte. Each process
//! instead walks its nominal range `[a_r, a_r+1)` (an equal part of the
//! bytes after the first event) once, for both things its first byte can
//! be: outside a string or inside one. A backslash escapes the byte after
//! it inside a string and is not JSON anywhere else, so the quotes that
//! count are the same under both: the walk counts them (their parity),
//! and for each of the two it adds up the brackets outside strings (the
//! depth at the end and the lowest depth on the way) and notes a backslash
//! outside a string, and counts the events that end in the range for each
//! depth below the array's level the range may start at (the closing
//! brackets that come back to the array's level before the array closes).
//! Whether the first byte is escaped comes from the run of backslashes
//! before it. One exchange gives every process every range's walk; in
//! file order they give each nominal cut its exact state (inside a string
//! or not, the depth below the array, the line) and the events before it.
//! A cut is then moved on to the end of the event it falls in: the first
//! byte after which the walk is back at the array's level.
//!
//! A cut is used only when the array is still open there; the process
//! whose share holds its end reads on to the end of the file (the rest of
//! the object, a cut-off file) as one process reading the whole file does.
//! A gzip file is cut the same way in its decompressed bytes, read through
//! an index ([`crate::readers::gzip_index`]). A backslash outside a string
//! (not JSON), a gzip file without an index, a head that does not open the
//! array within its first MiB, or a cut 16 or more brackets deep inside an
//! event (its events not counted): the caller reads the whole file in
//! every process as before.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::phases;
use crate::readers::exchange::{Exchange, all_gather, damaged};
use crate::readers::gzip_index::{
    self,
    at::{GzAt, Positioned, ReadAt, Source},
};
use crate::readers::input;
use crate::readers::json_split::{BATCH_BYTES, Nest, Splitter};
#[cfg(target_arch = "x86_64")]
use crate::readers::json_split::{classify16, in_strings16};

/// A process's bytes of the trace.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Share {
    /// Its first byte (0 for the first process, which reads the head).
    pub start: u64,
    /// The line of `start`.
    pub line: u64,
    /// Where it ends, before the next process's share; `None` at the end
    /// of the file.
    pub end: Option<u64>,
    /// The array is the `traceEvents` member of an object.
    pub nested: bool,
    /// No bytes: the array ends before this process's cut.
    pub empty: bool,
    /// The events before `start`: the number in the file of its first
    /// event is `before + 1` (0 for an empty share).
    pub before: u64,
    /// How many events it holds, when another share follows it (the last
    /// share's run to the end of the file, which the walks do not count).
    pub events: Option<u64>,
    /// Its end was guessed at a line break between two events ([`guess`]),
    /// not walked to: its splitter says whether it fell there.
    pub guessed: bool,
}

impl Share {
    /// The splitter of this share's bytes, read from `src` (the file, or
    /// its decompressed bytes).
    pub fn splitter_from(&self, path: &Path, src: Source) -> Result<Splitter> {
        if self.empty {
            return Ok(Splitter::resume(
                path,
                Box::new(std::io::empty()),
                self.start,
                1,
                self.nested,
            )
            .ending_a_share());
        }
        let reader: Box<dyn Read + Send> = Box::new(Positioned {
            src,
            at: self.start,
            end: self.end.unwrap_or(u64::MAX),
            pause: u64::MAX,
        });
        let split = if self.start == 0 {
            Splitter::new(path, reader)
        } else {
            Splitter::resume(path, reader, self.start, self.line, self.nested)
        };
        Ok(match self.end {
            Some(_) if self.guessed => split.ending_a_guessed_share(),
            Some(_) => split.ending_a_share(),
            None => split,
        })
    }
}

/// One range's walk, for each of the two states its first byte can have.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct RangeWalk {
    /// An odd number of quotes that open or close a string.
    odd: bool,
    newlines: u64,
    /// `[first byte outside a string, inside one]`.
    hyp: [Nesting; 2],
}

/// The entry depths (below the array's level) whose events a walk counts.
const DEPTHS: usize = 16;

/// The brackets outside strings of a range, under one hypothesis.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Nesting {
    /// Depth at the end, relative to the start.
    delta: i64,
    /// The lowest depth on the way (the start's, 0, included).
    min: i64,
    /// A backslash outside a string.
    stray: bool,
    /// For each depth `d` the range may start at: the closing brackets
    /// that return to the array's level (relative depth `-d`) before the
    /// array itself closes (relative depth `-d - 1`): the events that end
    /// in the range.
    ends: [u64; DEPTHS],
    /// The depths whose `ends` are not known (bit `d`): a composed walk
    /// whose second part would start deeper than [`DEPTHS`].
    lost: u32,
}

impl RangeWalk {
    /// This range followed by `next`.
    fn then(self, next: RangeWalk) -> RangeWalk {
        let mut hyp = [Nesting::default(); 2];
        for (h, out) in hyp.iter_mut().enumerate() {
            let (a, b) = (self.hyp[h], next.hyp[h ^ usize::from(self.odd)]);
            let mut ends = a.ends;
            let mut lost = a.lost;
            for (d, e) in ends.iter_mut().enumerate() {
                let d = d as i64;
                if d + a.min < 0 {
                    // the array closed within the first part
                    continue;
                }
                match usize::try_from(d + a.delta).ok().filter(|&k| k < DEPTHS) {
                    Some(k) if b.lost & (1 << k) == 0 => *e += b.ends[k],
                    _ => lost |= 1 << d,
                }
            }
            *out = Nesting {
                delta: a.delta + b.delta,
                min: a.min.min(a.delta + b.min),
                stray: a.stray || b.stray,
                ends,
                lost,
            };
        }
        RangeWalk {
            odd: self.odd ^ next.odd,
            newlines: self.newlines + next.newlines,
            hyp,
        }
    }

    fn to_words(self) -> Vec<u64> {
        let mut w = vec![u64::from(self.odd), self.newlines];
        for h in self.hyp {
            w.extend_from_slice(&[
                h.delta as u64,
                h.min as u64,
                u64::from(h.stray),
                u64::from(h.lost),
            ]);
            w.extend_from_slice(&h.ends);
        }
        w
    }

    fn from_words(w: &[u64]) -> Option<RangeWalk> {
        const HYP: usize = 4 + DEPTHS;
        if w.len() != 2 + 2 * HYP {
            return None;
        }
        let hyp = |w: &[u64]| Nesting {
            delta: w[0] as i64,
            min: w[1] as i64,
            stray: w[2] != 0,
            lost: w[3] as u32,
            ends: w[4..HYP].try_into().unwrap_or_default(),
        };
        Some(RangeWalk {
            odd: w[0] != 0,
            newlines: w[1],
            hyp: [hyp(&w[2..2 + HYP]), hyp(&w[2 + HYP..])],
        })
    }
}

/// A walk in progress: both hypotheses at once.
#[derive(Default)]
struct Walk {
    odd: bool,
    /// The next byte is escaped (a backslash before it).
    escaped: bool,
    newlines: u64,
    depth: [i64; 2],
    min: [i64; 2],
    stray: [bool; 2],
    ends: [[u64; DEPTHS]; 2],
}

impl Walk {
    /// Takes one byte. Under hypothesis `h` a byte lies outside a string
    /// when `h` equals the parity of the quotes before it.
    #[inline]
    fn byte(&mut self, c: u8) {
        if c == b'\n' {
            self.newlines += 1;
        }
        if self.escaped {
            self.escaped = false;
            return;
        }
        let h = usize::from(self.odd);
        match c {
            b'"' => self.odd = !self.odd,
            b'\\' => {
                self.escaped = true;
                self.stray[h] = true;
            }
            b'{' | b'[' => self.depth[h] += 1,
            b'}' | b']' => self.close(h),
            _ => {}
        }
    }

    /// A closing bracket under hypothesis `h`: one that comes down to the
    /// lowest depth of the range so far, `-d`, ends an event of a range
    /// that starts `d` deep, whose array has not closed (that is `-d - 1`).
    #[inline]
    fn close(&mut self, h: usize) {
        self.depth[h] -= 1;
        let r = self.depth[h];
        if r <= self.min[h] {
            self.min[h] = r;
            if let Some(e) = self.ends[h].get_mut((-r) as usize) {
                *e += 1;
            }
        }
    }

    /// Takes `buf`: with SSE2 (every x86-64 processor) 16 bytes at a time,
    /// visiting only brackets (which hypothesis each belongs to from the
    /// quotes' prefix XOR); 16 bytes with a backslash (or escaped) one by
    /// one.
    #[cfg(target_arch = "x86_64")]
    fn bytes(&mut self, buf: &[u8]) {
        // SAFETY: SSE2 is part of x86-64 itself.
        unsafe { self.bytes_sse2(buf) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    fn bytes_sse2(&mut self, buf: &[u8]) {
        let mut j = 0;
        while let Some(b) = buf.get(j..j + 16) {
            let Ok(b) = <&[u8; 16]>::try_from(b) else {
                break;
            };
            let c = classify16(b);
            if self.escaped || c.backslash != 0 {
                for &x in b {
                    self.byte(x);
                }
                j += 16;
                continue;
            }
            self.newlines += u64::from(c.newline.count_ones());
            // a bracket is outside a string under the hypothesis of the
            // parity of the quotes before it (hypothesis 1: the range
            // starts in a string); the two are apart, each in order
            let odd_before = in_strings16(c.quote, self.odd);
            let brackets = c.open | c.close;
            for (h, mut bits) in [(0, brackets & !odd_before), (1, brackets & odd_before)] {
                while bits != 0 {
                    let k = bits.trailing_zeros();
                    bits &= bits - 1;
                    if c.open & (1 << k) != 0 {
                        self.depth[h] += 1;
                    } else {
                        self.close(h);
                    }
                }
            }
            self.odd ^= c.quote.count_ones() % 2 == 1;
            j += 16;
        }
        for &c in &buf[j..] {
            self.byte(c);
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn bytes(&mut self, buf: &[u8]) {
        for &c in buf {
            self.byte(c);
        }
    }

    fn done(self) -> RangeWalk {
        let hyp = |h: usize| Nesting {
            delta: self.depth[h],
            min: self.min[h],
            stray: self.stray[h],
            ends: self.ends[h],
            lost: 0,
        };
        RangeWalk {
            odd: self.odd,
            newlines: self.newlines,
            hyp: [hyp(0), hyp(1)],
        }
    }
}

/// The bytes read at once.
const CHUNK: usize = 1 << 20;
/// The bytes one thread walks (a process's range is walked by its threads).
const PIECE: u64 = 8 << 20;

/// Whether the byte at `at` follows an odd run of backslashes (which ends
/// at or after `floor`, a byte that is not one).
fn escaped_at(file: &dyn ReadAt, at: u64, floor: u64) -> std::io::Result<bool> {
    let mut run = 0u64;
    let mut end = at;
    let mut buf = [0u8; 4096];
    while end > floor {
        let k = ((end - floor) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..k], end - k as u64)?;
        let tail = buf[..k].iter().rev().take_while(|&&c| c == b'\\').count();
        run += tail as u64;
        if tail < k {
            break;
        }
        end -= k as u64;
    }
    Ok(run % 2 == 1)
}

/// The walk of bytes `[from, to)` of `file` (the bytes before `from` down
/// to `floor` only for the backslashes right before it).
fn walk_range(file: &dyn ReadAt, from: u64, to: u64, floor: u64) -> std::io::Result<RangeWalk> {
    let pieces: Vec<(u64, u64)> = (from..to)
        .step_by(PIECE as usize)
        .map(|a| (a, (a + PIECE).min(to)))
        .collect();
    let walk = |(a, b): (u64, u64)| -> std::io::Result<RangeWalk> {
        let mut w = Walk {
            escaped: escaped_at(file, a, floor)?,
            ..Default::default()
        };
        let mut buf = vec![0u8; CHUNK.min((b - a) as usize)];
        let mut at = a;
        while at < b {
            let k = ((b - at) as usize).min(CHUNK);
            file.read_exact_at(&mut buf[..k], at)?;
            w.bytes(&buf[..k]);
            at += k as u64;
        }
        Ok(w.done())
    };
    // a gzip file's bytes are decoded in order by one reader
    let walks = match file.in_order() {
        true => pieces
            .into_iter()
            .map(walk)
            .collect::<std::io::Result<Vec<_>>>()?,
        false => pieces
            .into_par_iter()
            .map(walk)
            .collect::<std::io::Result<Vec<_>>>()?,
    };
    Ok(walks
        .into_iter()
        .fold(RangeWalk::default(), |acc, w| acc.then(w)))
}

/// The exact state at a nominal cut.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    in_string: bool,
    /// Depth below the array's level (0: between its values).
    depth: i64,
    /// The array has not ended before the cut.
    open: bool,
    line: u64,
    /// The events that end before the cut (while the array is open).
    events: u64,
}

impl Entry {
    /// The events that end before the cut moved to the end of the event it
    /// falls in (that one included).
    fn events_at_end_of_event(&self) -> u64 {
        self.events + u64::from(self.depth > 0)
    }
}

/// The state at each range's start, the first at the first event (`line`):
/// `None` when a backslash lies outside a string before the array ends, or
/// a range inside it starts deeper than the walks count events.
fn entries(line: u64, walks: &[RangeWalk]) -> Option<Vec<Entry>> {
    let mut e = Entry {
        in_string: false,
        depth: 0,
        open: true,
        line,
        events: 0,
    };
    let mut out = Vec::with_capacity(walks.len());
    for w in walks {
        out.push(e);
        let h = w.hyp[usize::from(e.in_string)];
        let mut events = e.events;
        if e.open {
            let d = usize::try_from(e.depth).ok().filter(|&d| d < DEPTHS)?;
            if h.stray || h.lost & (1 << d) != 0 {
                return None;
            }
            events += h.ends[d];
        }
        e = Entry {
            in_string: e.in_string ^ w.odd,
            depth: e.depth + h.delta,
            open: e.open && e.depth + h.min >= 0,
            line: e.line + w.newlines,
            events,
        };
    }
    Some(out)
}

/// Where the event that a cut at `at` (in state `e`) falls in ends: the
/// first offset at or after `at` back at the array's level, with the lines
/// between; `None` when the file ends first.
fn event_end(
    file: &dyn ReadAt,
    at: u64,
    e: &Entry,
    floor: u64,
) -> std::io::Result<Option<(u64, u64)>> {
    if !e.in_string && e.depth == 0 {
        return Ok(Some((at, 0)));
    }
    // the splitter's own rule for the end of an event
    let Ok(depth) = usize::try_from(e.depth) else {
        return Ok(None);
    };
    let mut nest = Nest {
        depth,
        in_string: e.in_string,
        escaped: e.in_string && escaped_at(file, at, floor)?,
    };
    let mut lines = 0u64;
    let mut pos = at;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = file.read_at(&mut buf, pos)?;
        if n == 0 {
            return Ok(None);
        }
        let chunk = &buf[..n];
        let end = chunk.iter().enumerate().find_map(|(k, &c)| nest.byte(c, k));
        let seen = &chunk[..end.unwrap_or(n)];
        lines += memchr::memchr_iter(b'\n', seen).count() as u64;
        if let Some(end) = end {
            return Ok(Some((pos + end as u64, lines)));
        }
        pos += n as u64;
    }
}

/// The head of the file: where its first event starts, on which line, and
/// whether the array is an object's `traceEvents`; `None` when the array
/// holds no event within the first MiB.
fn head(path: &Path, f: &Source) -> Option<(u64, u64, bool)> {
    let mut s = Splitter::new(
        path,
        Box::new(Positioned {
            src: f.clone(),
            at: 0,
            end: BATCH_BYTES as u64,
            pause: u64::MAX,
        }),
    );
    let batch = s.next_batch().ok()??;
    let (start, _) = *batch.spans.first()?;
    let line = batch.position(start as usize).line?;
    let first = batch.base + u64::from(start);
    // the value that holds the array opens before its first event: an
    // object (then the array is its `traceEvents`) or the array itself
    let mut before = vec![0u8; first as usize];
    f.read_exact_at(&mut before, 0).ok()?;
    let body = before.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&before);
    let nested = body.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{');
    Some((first, line, nested))
}

/// The fewest processes that cut a gzip trace through its index: fewer
/// each decompress it whole, as before. On dev's 2 cores (`reduce field
/// --bins 64` of 22.9 MB of `gzip -6`, 241 MB of JSON, one thread a
/// process), all processes' CPU time through the index against each
/// decompressing it twice: 2.59 against 2.33 s at `-n 2`, 3.16 against
/// 3.28 at `-n 4`, 4.04 against 5.55 at `-n 8`.
pub(super) const GZIP_MIN_PROCESSES: usize = 4;

/// This process's share of the Chrome trace at `path`, cut with the other
/// processes of `ex` (each calls it), and what to read it from: `None`
/// when the file cannot be cut (one process, a gzip file without an index,
/// no event in the first MiB, a backslash outside a string, a cut 16 or
/// more brackets deep inside an event) and every process is to read it
/// whole. A gzip file is indexed by [`GZIP_MIN_PROCESSES`] processes or
/// more together ([`gzip_index::build_shared`]) and cut in its
/// decompressed bytes.
pub(super) fn plan(
    path: &Path,
    inp: &input::Input,
    ex: &mut dyn Exchange,
) -> Result<Option<(Share, Source)>> {
    let (rank, n) = (ex.rank(), ex.size().max(1));
    let gzip_whole = inp.compressed && n < GZIP_MIN_PROCESSES;
    // (a plain file that does not open is not cut: every process says so
    // in the exchange below; a gzip file's index is built together, its
    // failures said to every process)
    let file: Option<Source> = match (n > 1 && !gzip_whole, inp.compressed) {
        (false, _) => None,
        (true, false) => File::open(path).ok().map(|f| Arc::new(f) as Source),
        (true, true) => gzip_index::shared_source(path, true, ex, None)?,
    };
    // every process says whether it can cut and what it walked; all decide
    // alike from what all said
    let mine = || -> Option<(u64, u64, bool, u64, RangeWalk)> {
        let file = file.as_ref()?;
        let len = file.size().ok()?;
        let (first, line, nested) = head(path, file)?;
        let (a, b) = range(first, len, n, rank);
        let w = walk_range(file.as_ref(), a, b, first).ok()?;
        Some((first, len, nested, line, w))
    };
    let said = mine();
    let mut words = vec![0u64; 5];
    if let Some((first, len, nested, line, w)) = said {
        words = vec![1, first, len, u64::from(nested), line];
        words.extend(w.to_words());
    }
    let inbox = all_gather(ex, &words, None)?;
    if inbox.len() != n {
        return Err(damaged());
    }
    let Some((first, len, nested, line, _)) = said else {
        return Ok(None);
    };
    let mut walks = Vec::with_capacity(n);
    for s in 0..n {
        let w = inbox.from(s);
        // each process walked the same file alike, or none cuts
        if w.first() != Some(&1) || w.get(1..5) != Some(&[first, len, u64::from(nested), line]) {
            return Ok(None);
        }
        walks.push(RangeWalk::from_words(&w[5..]).ok_or_else(damaged)?);
    }
    let Some(file) = file else {
        return Ok(None);
    };
    let head = Head {
        first,
        len,
        nested,
        line,
    };
    Ok(share_of(path, file.as_ref(), &head, &walks, rank)?.map(|s| (s, file)))
}

/// Where the events array starts and how the file is laid out: what every
/// share is cut from.
struct Head {
    /// The first event's offset.
    first: u64,
    /// The file's length.
    len: u64,
    /// The array is an object's `traceEvents`.
    nested: bool,
    /// The first event's line.
    line: u64,
}

/// Share `rank` of `walks.len()`, from every nominal range's walk: `None`
/// when the file cannot be cut (a backslash outside a string, a range that
/// starts too deep inside an event).
fn share_of(
    path: &Path,
    file: &dyn ReadAt,
    head: &Head,
    walks: &[RangeWalk],
    rank: usize,
) -> Result<Option<Share>> {
    let n = walks.len();
    let Head {
        first,
        len,
        nested,
        line,
    } = *head;
    let Some(at) = entries(line, walks) else {
        return Ok(None);
    };
    // where the cut of range k moves to, its line and the events before
    // it, when the array is open there and an event ends before the file
    // does
    let cut = |k: usize| -> Result<Option<(u64, u64, u64)>> {
        if k >= n {
            return Ok(None);
        }
        let e = &at[k];
        if !e.open {
            return Ok(None);
        }
        let (a, _) = range(first, len, n, k);
        let end = event_end(file, a, e, first).map_err(|err| Error::io(path, err))?;
        Ok(end
            .filter(|&(p, _)| p < len)
            .map(|(p, lines)| (p, e.line + lines, e.events_at_end_of_event())))
    };
    let next = cut(rank + 1)?;
    let this = match rank {
        0 => Some((0, 1, 0)),
        _ => cut(rank)?,
    };
    let share = match this {
        Some((start, line, before)) => Share {
            start,
            line,
            end: next.map(|(p, _, _)| p),
            nested,
            empty: false,
            before,
            events: next.map(|(_, _, upto)| upto.saturating_sub(before)),
            guessed: false,
        },
        None => Share {
            start: len,
            line: 0,
            end: None,
            nested,
            empty: true,
            before: 0,
            events: Some(0),
            guessed: false,
        },
    };
    Ok(Some(share))
}

/// What the threads of one process read a Chrome trace's ranges from:
/// the file, or a gzip file's decompressed bytes through the index the
/// threads build ([`gzip_index::build`]); `None` for a gzip file without
/// one (it is read by one pipeline).
pub(super) fn source(path: &Path, inp: &input::Input) -> Result<Option<Source>> {
    if !inp.compressed {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        return Ok(Some(Arc::new(f)));
    }
    let index = phases::span("gzip: index (all threads)");
    let built = gzip_index::build(path)?;
    // the compressed parts each thread read leave before the ranges' read
    crate::memory::return_freed_memory();
    drop(index);
    Ok(built.map(|i| Arc::new(GzAt::new(path, Arc::new(i))) as Source))
}

/// The trace at `path` (read from `src`, [`source`]) cut into `n` shares
/// for the threads of one process, in file order (each range walked on
/// all threads): `None` when it cannot be cut (no event in the first MiB,
/// a backslash outside a string, a cut 16 or more brackets deep inside an
/// event, a read that fails) and is to be read whole.
pub(super) fn cut(path: &Path, src: &Source, n: usize) -> Result<Option<Vec<Share>>> {
    let Some(head) = to_cut(path, src, n) else {
        return Ok(None);
    };
    let (first, len) = (head.first, head.len);
    // the ranges walked side by side (a gzip reader each), each range's
    // pieces side by side within it when the bytes are the file's
    let walks = (0..n)
        .into_par_iter()
        .map(|k| {
            let (a, b) = range(first, len, n, k);
            let file = src.fork().ok()?;
            walk_range(file.as_ref(), a, b, first).ok()
        })
        .collect::<Option<Vec<_>>>();
    let Some(walks) = walks else {
        return Ok(None);
    };
    let mut shares = Vec::with_capacity(n);
    for k in 0..n {
        let Some(s) = share_of(path, src.as_ref(), &head, &walks, k)? else {
            return Ok(None);
        };
        shares.push(s);
    }
    Ok(Some(shares))
}

/// The head of the trace read from `src` to cut into `n` shares for the
/// threads of one process ([`head`]): `None` for fewer than two shares,
/// or no event in its first MiB.
fn to_cut(path: &Path, src: &Source, n: usize) -> Option<Head> {
    if n < 2 {
        return None;
    }
    let (first, line, nested) = head(path, src)?;
    Some(Head {
        first,
        len: src.size().ok()?,
        nested,
        line,
    })
}

/// The bytes after a nominal cut searched for a line break between two
/// events.
const GUESS_WINDOW: usize = 64 << 10;

/// The plain file at `path` cut into up to `n` shares for the threads of
/// one process, each cut guessed at the first line break between two
/// events after its nominal place (a `}` and a `{` with a comma and a line
/// break between them, only blanks besides), without walking the file:
/// only the lines before each cut are counted. A guess can be wrong (the
/// pattern inside a string or a nested value, or after the events array):
/// the share before it then says so when it is read, its end not between
/// two events ([`Share::guessed`]), and the caller cuts again with
/// [`cut`]. Fewer shares when a nominal cut has no line break near it (a
/// file on one line has none); `None` when there would be one, or the
/// file is gzip or has no event within its first MiB.
pub(super) fn guess(path: &Path, src: &Source, n: usize) -> Result<Option<Vec<Share>>> {
    let Some(Head {
        first, len, nested, ..
    }) = to_cut(path, src, n)
    else {
        return Ok(None);
    };
    let file = src;
    let mut cuts: Vec<u64> = Vec::with_capacity(n);
    let mut buf = vec![0u8; GUESS_WINDOW];
    for k in 1..n {
        let (a, _) = range(first, len, n, k);
        let got = file.read_at(&mut buf, a).map_err(|e| Error::io(path, e))?;
        let Some(p) = boundary(&buf[..got]).map(|p| a + p as u64) else {
            continue;
        };
        if p < len && cuts.last().is_none_or(|&c| c < p) {
            cuts.push(p);
        }
    }
    if cuts.is_empty() {
        return Ok(None);
    }
    // the lines of each share, counted on all threads
    let starts: Vec<u64> = std::iter::once(0).chain(cuts.iter().copied()).collect();
    let lines = starts
        .par_iter()
        .enumerate()
        .map(|(k, &a)| {
            // a reader of its own on each thread (a gzip reader keeps
            // its place)
            let f = file.fork()?;
            newlines(f.as_ref(), a, cuts.get(k).copied().unwrap_or(len))
        })
        .collect::<std::io::Result<Vec<u64>>>()
        .map_err(|e| Error::io(path, e))?;
    let mut line = 1;
    let mut shares = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        shares.push(Share {
            start,
            line,
            end: cuts.get(k).copied(),
            nested,
            empty: false,
            before: 0,
            events: None,
            guessed: true,
        });
        line += lines[k];
    }
    Ok(Some(shares))
}

/// Where a guessed cut falls in `b`: just after the first `}` that a
/// comma and a line break (and blanks) separate from a `{`.
fn boundary(b: &[u8]) -> Option<usize> {
    let blank = |c: u8| matches!(c, b' ' | b'\t' | b'\r');
    for j in memchr::memchr_iter(b'\n', b) {
        let mut comma = false;
        let mut i = j;
        while i > 0 {
            match b[i - 1] {
                c if blank(c) => i -= 1,
                b',' if !comma => {
                    comma = true;
                    i -= 1;
                }
                _ => break,
            }
        }
        if i == 0 || b[i - 1] != b'}' {
            continue;
        }
        let mut k = j + 1;
        while k < b.len() {
            match b[k] {
                c if blank(c) || c == b'\n' => k += 1,
                b',' if !comma => {
                    comma = true;
                    k += 1;
                }
                _ => break,
            }
        }
        if comma && b.get(k) == Some(&b'{') {
            return Some(i);
        }
    }
    None
}

/// The line breaks in bytes `[from, to)` of `file`.
fn newlines(file: &dyn ReadAt, from: u64, to: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK.min(to.saturating_sub(from) as usize)];
    let (mut at, mut n) = (from, 0u64);
    while at < to {
        let k = ((to - at) as usize).min(CHUNK);
        file.read_exact_at(&mut buf[..k], at)?;
        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
        at += k as u64;
    }
    Ok(n)
}

/// The nominal range `k` of `n`: an equal part of the bytes from the first
/// event to the end.
fn range(first: u64, len: u64, n: usize, k: usize) -> (u64, u64) {
    let span = len.saturating_sub(first) as u128;
    let at = |k: usize| first + (span * k as u128 / n as u128) as u64;
    (at(k), at(k + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift as Rng;

    /// The walk byte by byte, the reference of the vector walk.
    fn walk_bytes(buf: &[u8], escaped: bool) -> RangeWalk {
        let mut w = Walk {
            escaped,
            ..Default::default()
        };
        for &c in buf {
            w.byte(c);
        }
        w.done()
    }

    fn walk_fast(buf: &[u8], escaped: bool) -> RangeWalk {
        let mut w = Walk {
            escaped,
            ..Default::default()
        };
        w.bytes(buf);
        w.done()
    }

    /// Text full of what changes the walk: quotes, brackets, backslash
    /// runs, newlines.
    fn noisy(rng: &mut Rng, n: usize) -> Vec<u8> {
        const PICK: &[u8] = b"\"\"{}[]\\\\\n ab,:";
        (0..n)
            .map(|_| PICK[rng.below(PICK.len() as u64) as usize])
            .collect()
    }

    #[test]
    fn the_vector_walk_is_the_byte_walk_and_walks_compose() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..400 {
            let n = rng.below(300) as usize;
            let mut text = noisy(&mut rng, n);
            if round % 3 == 0 {
                // long stretches without a backslash take the vector path
                text.retain(|&c| c != b'\\');
            }
            let n = text.len();
            let esc = rng.below(2) == 1;
            let whole = walk_bytes(&text, esc);
            assert_eq!(walk_fast(&text, esc), whole, "{round}");
            // split anywhere: the two walks, composed, are the whole one
            let cut = rng.below(n as u64 + 1) as usize;
            let run = text[..cut]
                .iter()
                .rev()
                .take_while(|&&c| c == b'\\')
                .count();
            let esc2 = if run == cut {
                esc ^ (run % 2 == 1)
            } else {
                run % 2 == 1
            };
            let mut parts = walk_bytes(&text[..cut], esc).then(walk_bytes(&text[cut..], esc2));
            // what the composition cannot count (a second part that would
            // start deeper than the walks count) it says, and only that
            let mut whole = whole;
            for (p, w) in parts.hyp.iter_mut().zip(whole.hyp.iter_mut()) {
                for d in 0..DEPTHS {
                    if p.lost & (1 << d) != 0 {
                        (p.ends[d], w.ends[d]) = (0, 0);
                    }
                }
                p.lost = 0;
            }
            assert_eq!(parts, whole, "{round} at {cut}");
        }
    }

    /// A trace whose strings hold what a cut must not be fooled by:
    /// brackets, escaped quotes, runs of backslashes, newlines.
    fn tricky(rng: &mut Rng, events: usize, nested: bool) -> String {
        let mut ev = Vec::new();
        for k in 0..events {
            let name: String = (0..rng.below(12))
                .map(|_| match rng.below(9) {
                    0 => "\\\"",
                    1 => "\\\\",
                    2 => "{[",
                    3 => "]}",
                    4 => "\\n",
                    5 => "\\\\\\\"",
                    _ => "x",
                })
                .collect();
            let sep = if k % 5 == 0 { ",\n  " } else { "," };
            ev.push(format!(
                r#"{{"ph":"X","pid":1,"tid":{},"ts":{k},"dur":1,"name":"{name}","args":{{"a":[1,{{"b":"{name}"}}]}}}}{sep}"#,
                k % 3
            ));
        }
        let body = ev.concat();
        let body = body.trim_end_matches([',', '\n', ' ']);
        if nested {
            format!(
                "\n  \n  {{\"otherData\":{{\"v\":\"[{{\"}},\"traceEvents\":[\n{body}\n],\n\"displayTimeUnit\":\"ns\",\"samples\":[{{\"a\":1}},{{\"b\":[2]}}]}}\n"
            )
        } else {
            format!(" \n\t\r\n  [{body}]\n")
        }
    }

    /// Each process's share of `path`, cut by `n` processes (threads).
    fn plans(path: &Path, n: usize) -> Vec<Option<(Share, Source)>> {
        let ends = crate::readers::exchange::ThreadExchange::group(n);
        std::thread::scope(|s| {
            let hs: Vec<_> = ends
                .into_iter()
                .map(|mut ex| {
                    s.spawn(move || {
                        let inp = input::open(path).unwrap();
                        plan(path, &inp, &mut ex).unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// Events' spans in a file.
    type Spans = Vec<(u64, u64)>;

    /// The events' spans (in the file) that the serial splitter finds, and
    /// those the shares' splitters find, cut by `n` processes (threads),
    /// with the number of shares that are not empty.
    fn spans(path: &Path, n: usize) -> (Spans, Spans, usize) {
        let all = |mut s: Splitter| {
            let mut v = Vec::new();
            while let Some(b) = s.next_batch().unwrap() {
                v.extend(
                    b.spans
                        .iter()
                        .map(|&(a, e)| (b.base + a as u64, b.base + e as u64)),
                );
            }
            (v, s.truncated.is_some())
        };
        let f = input::open(path).unwrap().reader;
        let (serial, cut) = all(Splitter::new(path, f));
        let plans = plans(path, n);
        if n == 1 || serial.is_empty() {
            // one process, or no event to cut at: the whole file
            assert!(plans.iter().all(Option::is_none));
            return (serial.clone(), serial, 1);
        }
        let mut shared = Vec::new();
        let mut used = 0;
        let mut cuts = 0;
        for (p, src) in plans.iter().flatten() {
            used += usize::from(!p.empty);
            let (v, t) = all(p.splitter_from(path, src.clone()).unwrap());
            // the walks' count of the share's events, and of those before
            if !p.empty {
                assert_eq!(p.before, shared.len() as u64, "{}", path.display());
            }
            if let Some(k) = p.events {
                assert_eq!(k, v.len() as u64, "{} {n}", path.display());
            }
            cuts += usize::from(t);
            shared.extend(v);
        }
        assert_eq!(
            cut,
            cuts == 1,
            "the truncation, said once: {} {n}",
            path.display()
        );
        assert!(plans.iter().all(Option::is_some), "{n} processes cut");
        (serial, shared, used)
    }

    /// The shares' events, in rank order, are the file's, each once, on
    /// traces whose strings are full of brackets, quotes and backslashes
    /// at every cut, for 1 to 9 processes; a share whose cut falls after
    /// the array is empty, and the process before it reads the rest.
    #[test]
    fn shares_split_into_the_files_events() {
        let d = tempfile::tempdir().unwrap();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut many = 0;
        for (k, events) in [1usize, 2, 7, 60, 400].into_iter().enumerate() {
            for nested in [false, true] {
                let text = tricky(&mut rng, events, nested);
                let p = d.path().join(format!("t{k}{nested}.json"));
                std::fs::write(&p, &text).unwrap();
                for n in 1..=9 {
                    let (serial, shared, used) = spans(&p, n);
                    assert_eq!(
                        shared, serial,
                        "{events} events, nested {nested}, {n} processes"
                    );
                    many = many.max(used);
                }
                // cut short inside the array: the last share says so
                let q = d.path().join(format!("c{k}{nested}.json"));
                std::fs::write(&q, &text[..text.len() * 2 / 3]).unwrap();
                for n in [2, 3, 5] {
                    let (serial, shared, _) = spans(&q, n);
                    assert_eq!(shared, serial, "cut: {events} events, {n}");
                }
            }
        }
        assert!(many >= 8, "the shares are used ({many})");
    }

    /// A gzip trace is indexed by the processes together and cut in its
    /// decompressed bytes: the shares' events are the file's, each once;
    /// a gzip file cut short has no index and is read whole by each.
    #[test]
    fn a_gzip_trace_is_cut_through_its_index() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for nested in [false, true] {
            let text = tricky(&mut rng, 20_000, nested);
            let p = d.path().join(format!("t{nested}.json.gz"));
            let mut e = flate2::write::GzEncoder::new(
                File::create(&p).unwrap(),
                flate2::Compression::default(),
            );
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap();
            // fewer processes each decompress it whole
            assert!(plans(&p, 3).iter().all(Option::is_none));
            for n in [4, 5, 7] {
                assert!(plans(&p, n).iter().all(Option::is_some), "indexed by {n}");
                let (serial, shared, used) = spans(&p, n);
                assert_eq!(shared, serial, "nested {nested}, {n} processes");
                assert_eq!(used, n);
            }
            let bytes = std::fs::read(&p).unwrap();
            let q = d.path().join(format!("c{nested}.json.gz"));
            std::fs::write(&q, &bytes[..bytes.len() * 2 / 3]).unwrap();
            assert!(plans(&q, 4).iter().all(Option::is_none));
        }
    }

    /// A cut deeper inside an event than the walks count events for is no
    /// place to cut either: every process reads the whole file.
    #[test]
    fn a_cut_deep_inside_an_event_leaves_the_file_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("deep.json");
        // events of unequal lengths: no cut falls between two
        let deep = |k: usize| {
            let x = "x".repeat(4000 + 37 * k);
            format!("{}\"{x}\"{}", "[".repeat(40), "]".repeat(40))
        };
        let ev: Vec<String> = (0..9)
            .map(|k| {
                format!(
                    r#"{{"ph":"X","pid":1,"tid":1,"ts":{k},"dur":1,"name":"a","args":{{"v":{}}}}}"#,
                    deep(k)
                )
            })
            .collect();
        std::fs::write(&p, format!("[{}]", ev.join(","))).unwrap();
        let p = p.as_path();
        let plans = plans(p, 4);
        assert!(plans.iter().all(Option::is_none));
    }

    /// A backslash outside a string (not JSON) is no place to cut: no
    /// process cuts, whatever range it is in.
    #[test]
    fn a_stray_backslash_leaves_the_file_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("stray.json");
        let mut ev: Vec<String> = (0..50)
            .map(|k| format!(r#"{{"ph":"X","pid":1,"tid":1,"ts":{k},"dur":1,"name":"a"}}"#))
            .collect();
        ev[30] = r#"{"ph":"X","pid":1,\"tid":1,"ts":30,"dur":1,"name":"a"}"#.into();
        std::fs::write(&p, format!("[{}]", ev.join(","))).unwrap();
        let p = p.as_path();
        let plans = plans(p, 4);
        assert!(plans.iter().all(Option::is_none));
    }
}
