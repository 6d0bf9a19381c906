//! Streaming split of a Chrome trace into its event objects.
//!
//! The file is either a bare array of events or an object whose
//! `traceEvents` member is that array. The splitter reads the stream in
//! blocks and yields batches of complete event objects (as byte spans), so
//! that they can be parsed in parallel while memory stays bounded; the other
//! members of the top-level object are skipped.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::diagnostics::Position;
use crate::error::{Error, Result};

/// Target size of a batch: 1 MiB (about 10,000 events) keeps the parsed
/// events of the batches in flight small (4 MiB took 15 % more peak
/// memory on a 239 MB trace, in the same time).
pub const BATCH_BYTES: usize = 1 << 20;
/// The largest single JSON value accepted (bounded memory).
pub const MAX_VALUE: usize = 256 << 20;

/// A run of complete event objects.
pub struct Batch {
    pub data: Vec<u8>,
    /// `(start, end)` of each event object in `data`.
    pub spans: Vec<(u32, u32)>,
    /// Offset of `data[0]` in the (decompressed) file.
    pub base: u64,
    /// Line number of `data[0]`.
    pub base_line: u64,
}

impl Batch {
    /// Position of byte `off` of `data`.
    pub fn position(&self, off: usize) -> Position {
        let off = off.min(self.data.len());
        let lines = memchr::memchr_iter(b'\n', &self.data[..off]).count() as u64;
        Position {
            line: Some(self.base_line + lines),
            byte: Some(self.base + off as u64),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Start,
    /// Inside the top-level object, before a key (or `}`).
    TopObject,
    /// Inside the events array; `nested` tells whether it is the
    /// `traceEvents` member (then `]` returns to the object).
    Events {
        nested: bool,
    },
    Done,
}

/// What ended the stream early, if it did.
#[derive(Debug, Clone)]
pub struct Truncation {
    pub pos: Position,
    pub bytes: u64,
}

pub struct Splitter {
    path: PathBuf,
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// The bytes of `buf`'s allocation from its start that were written
    /// (by a read, a copy or zeros), at least its length: a read into them
    /// needs no zeroing first ([`Splitter::fill`]).
    init: usize,
    base: u64,
    base_line: u64,
    eof: bool,
    phase: Phase,
    /// Set when the input ended inside the events.
    pub truncated: Option<Truncation>,
    /// `displayTimeUnit` and other small top-level string members.
    pub top_strings: Vec<(String, String)>,
    /// Buffers of batches done with ([`Splitter::recycle`]), filled again
    /// without new pages, each with the bytes of it that were written (its
    /// length when given back).
    spare: Vec<(Vec<u8>, usize)>,
    /// The input is a share of the events array that ends between two
    /// events ([`Splitter::ending_a_share`]): its end is not a cut file.
    share_end: bool,
    /// The bytes a batch is read up to ([`BATCH_BYTES`] unless
    /// [`Splitter::with_batch_bytes`] says otherwise).
    batch_bytes: usize,
    /// The share's end was guessed ([`Splitter::ending_a_guessed_share`]).
    guessed_end: bool,
    /// A guessed end did not fall between two events of the array.
    pub misplaced_end: bool,
}

pub(crate) enum Scan {
    /// A complete value ends at this index (exclusive).
    Complete(usize),
    /// More input is needed.
    Incomplete,
    /// Not JSON: message.
    Bad(String),
}

/// The bytes that open or close a string, an object or an array.
#[cfg(any(test, not(target_arch = "x86_64")))]
static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Finds the end of the JSON value starting at `buf[i]` (which is not
/// whitespace). Strings and nesting are tracked; the content is validated
/// later by the event parser.
pub(crate) fn scan_value(buf: &[u8], i: usize) -> Scan {
    let n = buf.len();
    match buf[i] {
        b'"' => match scan_string(buf, i) {
            Some(e) => Scan::Complete(e),
            None => Scan::Incomplete,
        },
        b'{' | b'[' => match container_end(buf, i) {
            Some(e) => Scan::Complete(e),
            None => Scan::Incomplete,
        },
        c if c == b'-' || c.is_ascii_alphanumeric() => {
            let mut j = i;
            while j < n && (buf[j].is_ascii_alphanumeric() || matches!(buf[j], b'-' | b'+' | b'.'))
            {
                j += 1;
            }
            if j == n {
                Scan::Incomplete
            } else {
                Scan::Complete(j)
            }
        }
        c => Scan::Bad(format!(
            "expected a JSON value, found '{}'",
            char::from(c).escape_default()
        )),
    }
}

/// The end of the object or array starting at `buf[i]` (`{` or `[`), as
/// [`scan_value`] finds it: with SSE2 (every x86-64 processor), 16 bytes
/// at a time, visiting only the brackets outside strings (which bytes lie
/// in strings comes from the quotes' prefix XOR); a run of 16 bytes that
/// holds a backslash is taken byte by byte. `None` when the value does not
/// end within `buf`.
#[cfg(target_arch = "x86_64")]
fn container_end(buf: &[u8], i: usize) -> Option<usize> {
    // SAFETY: SSE2 is part of x86-64 itself: every processor that runs
    // this build has it.
    unsafe { container_end_sse2(buf, i) }
}

/// Which of 16 bytes are quotes, opening and closing brackets,
/// backslashes and line ends, a bit each (bit k: byte k): what the scans of JSON 16
/// bytes at a time look at (the splitter here, `reduce`'s walk of its
/// byte share).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Classes16 {
    pub quote: u32,
    pub open: u32,
    pub close: u32,
    pub backslash: u32,
    pub newline: u32,
}

/// [`Classes16`] of `b`, with SSE2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn classify16(b: &[u8; 16]) -> Classes16 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: `b` holds the 16 bytes loaded; no alignment is needed.
    let v: __m128i = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
    let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
    let bits = |m: __m128i| _mm_movemask_epi8(m) as u32;
    Classes16 {
        quote: bits(eq(b'"')),
        open: bits(_mm_or_si128(eq(b'{'), eq(b'['))),
        close: bits(_mm_or_si128(eq(b'}'), eq(b']'))),
        backslash: bits(eq(b'\\')),
        newline: bits(eq(b'\n')),
    }
}

/// Which of 16 bytes lie in strings (bit k: byte k), from their quotes
/// (none of them escaped) and whether the first byte starts in one: the
/// parity of the quotes up to each byte, a prefix XOR. A quote that opens
/// a string counts as in it, one that closes it as outside.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn in_strings16(quote: u32, starts_in_string: bool) -> u32 {
    let mut x = quote;
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    if starts_in_string {
        x = !x;
    }
    x & 0xFFFF
}

/// [`container_end`] with SSE2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn container_end_sse2(buf: &[u8], i: usize) -> Option<usize> {
    let mut st = Nest::default();
    let mut j = i;
    while let Some(b) = buf.get(j..j + 16) {
        let b: &[u8; 16] = b.try_into().ok()?;
        let c = classify16(b);
        if c.backslash != 0 {
            // rare in traces: these 16 bytes one by one
            for (k, &c) in b.iter().enumerate() {
                if let Some(end) = st.byte(c, j + k) {
                    return Some(end);
                }
            }
            j += 16;
            continue;
        }
        let (mut q, mut open, mut close) = (c.quote, c.open, c.close);
        if st.escaped {
            // the first byte is escaped (a backslash ended the last run)
            q &= !1;
            open &= !1;
            close &= !1;
            st.escaped = false;
        }
        // only the brackets outside strings are visited
        let mut bits = (open | close) & !in_strings16(q, st.in_string) & 0xFFFF;
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if open & (1 << k) != 0 {
                st.depth += 1;
            } else {
                st.depth -= 1;
                if st.depth == 0 {
                    return Some(j + k as usize + 1);
                }
            }
        }
        st.in_string ^= q.count_ones() % 2 == 1;
        j += 16;
    }
    buf.iter()
        .enumerate()
        .skip(j)
        .find_map(|(k, &c)| st.byte(c, k))
}

/// Where a byte-by-byte walk through a container stands: the splitter's
/// rule for where an event ends, which the processes of `reduce` follow
/// too when they move their cuts to the end of an event.
#[derive(Default)]
pub(crate) struct Nest {
    /// Open brackets outside strings.
    pub depth: usize,
    pub in_string: bool,
    /// The byte after a backslash in a string, still to be skipped.
    pub escaped: bool,
}

impl Nest {
    /// Takes byte `c` (at `k`): the end of the walk (`k + 1`) when `c`
    /// brings it back to depth 0 outside a string (a closing bracket, or
    /// the quote that ends a string begun at depth 0).
    #[inline]
    pub(crate) fn byte(&mut self, c: u8, k: usize) -> Option<usize> {
        if self.escaped {
            self.escaped = false;
        } else if self.in_string {
            match c {
                b'"' => {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some(k + 1);
                    }
                }
                b'\\' => self.escaped = true,
                _ => {}
            }
        } else {
            match c {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(k + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// [`container_end`] byte by byte, over the bytes that can change the
/// nesting (elsewhere than on x86-64, and the reference of its test).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn container_end_bytes(buf: &[u8], i: usize) -> Option<usize> {
    let n = buf.len();
    let mut depth = 0usize;
    let mut j = i;
    while j < n {
        // bytes that cannot change the nesting, skipped at once
        while j < n && !STRUCTURAL[buf[j] as usize] {
            j += 1;
        }
        if j == n {
            break;
        }
        match buf[j] {
            b'"' => {
                j = scan_string(buf, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(not(target_arch = "x86_64"))]
fn container_end(buf: &[u8], i: usize) -> Option<usize> {
    container_end_bytes(buf, i)
}

/// The least bytes of the events array [`scan_events_ahead`] scans on
/// several threads, and the least each thread takes.
const AHEAD_BYTES: usize = 512 << 10;
const AHEAD_SEGMENT: usize = 128 << 10;

/// The events of the array from `buf[i]` (the start of one) found on all
/// threads: `buf` cut into segments, each scanned from the first place in
/// it that looks like the start of an event (a `{` after a `,` after a
/// `}`, whitespace between), as far as the next segment's. A segment's
/// events count only where the events before it, scanned from a true
/// start, end at the place it was scanned from: what one scan from `i`
/// finds, where the guess is right (a guess inside a string is never
/// where an event starts, so a scan that reaches it shows it right).
/// Their spans are added to `spans`; the end of the last is returned, from
/// where the one scan goes on (to the array's end, an event cut by the
/// buffer's end, or the first segment whose start was not confirmed).
/// `None` when nothing was found this way: one thread, a buffer too small
/// to share, or one that could hold more events than a batch takes.
///
/// On one thread the splitter's scan took 0.29 s of a 708 MB trace's read
/// of 65,536 threads, a chain that all the other threads wait on.
fn scan_events_ahead(buf: &[u8], i: usize, spans: &mut Vec<(u32, u32)>) -> Option<usize> {
    use rayon::prelude::*;
    let len = buf.len().checked_sub(i)?;
    let threads = rayon::current_num_threads();
    // (`{}` and a comma: 3 bytes an event at least)
    if threads < 2 || len < AHEAD_BYTES || len / 3 + spans.len() >= MAX_SPANS {
        return None;
    }
    let k = threads.min(len / AHEAD_SEGMENT);
    let mut starts = vec![i];
    for s in 1..k {
        let from = (i + s * len / k).max(starts[starts.len() - 1] + 1);
        if let Some(g) = guess_event_start(buf, from, i + (s + 1) * len / k) {
            starts.push(g);
        }
    }
    let runs: Vec<_> = (0..starts.len())
        .into_par_iter()
        .map(|s| {
            let stop = starts.get(s + 1).copied().unwrap_or(usize::MAX);
            let mut own = Vec::new();
            let next = scan_run(buf, starts[s], stop, &mut own);
            (own, next)
        })
        .collect();
    let mut end = None;
    for (s, (own, next)) in runs.into_iter().enumerate() {
        if let Some(&(_, e)) = own.last() {
            end = Some(e as usize);
        }
        spans.extend(own);
        // the next segment counts where this one's events end at its start
        if next.is_none() || next != starts.get(s + 1).copied() {
            break;
        }
    }
    end
}

/// The newlines in `data`: on all threads for a batch that
/// [`scan_events_ahead`] would share.
fn count_lines(data: &[u8]) -> u64 {
    use rayon::prelude::*;
    let count = |d: &[u8]| memchr::memchr_iter(b'\n', d).count() as u64;
    if data.len() < AHEAD_BYTES || rayon::current_num_threads() < 2 {
        return count(data);
    }
    data.par_chunks(AHEAD_SEGMENT).map(count).sum()
}

/// At most this many events a batch.
const MAX_SPANS: usize = 1 << 20;

/// The first place from `from` up to `to` that looks like the start of an
/// event of the array: a `{` after a `,` after a `}` (whitespace between).
fn guess_event_start(buf: &[u8], from: usize, to: usize) -> Option<usize> {
    let to = to.min(buf.len());
    let mut at = from;
    while at < to {
        let c = at + memchr::memchr(b',', buf.get(at..to)?)?;
        let before = buf[..c]
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map(|p| buf[p]);
        let after = skip_ws(buf, c + 1);
        if before == Some(b'}') && buf.get(after) == Some(&b'{') {
            return Some(after);
        }
        at = c + 1;
    }
    None
}

/// The events of the array from `buf[start]` (an event, or the commas and
/// whitespace before one) that start before `stop`, as the splitter's
/// scan takes them: their spans into `spans`, and the start of the first
/// event at or after `stop`. `None` where the scan meets anything else
/// first: the array's end, a value cut by the buffer's end, a bad value or
/// a byte that starts no event.
fn scan_run(buf: &[u8], start: usize, stop: usize, spans: &mut Vec<(u32, u32)>) -> Option<usize> {
    let mut i = start;
    loop {
        i = skip_ws(buf, i);
        match buf.get(i)? {
            b',' => i += 1,
            b'{' if i >= stop => return Some(i),
            b'{' => match scan_value(buf, i) {
                Scan::Complete(e) if e <= u32::MAX as usize => {
                    spans.push((i as u32, e as u32));
                    i = e;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// End (exclusive) of the string starting with the quote at `buf[i]`.
fn scan_string(buf: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    // most strings of a trace are short keys and names: looked at byte by
    // byte first, the vector search only for what is longer
    let short = buf.len().min(j + 32);
    while j < short {
        match buf[j] {
            b'"' => return Some(j + 1),
            b'\\' => break,
            _ => j += 1,
        }
    }
    loop {
        let k = memchr::memchr2(b'"', b'\\', &buf[j..])?;
        j += k;
        if buf[j] == b'\\' {
            j += 2;
            if j > buf.len() {
                return None;
            }
        } else {
            return Some(j + 1);
        }
    }
}

fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && matches!(buf[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// A splitter that keeps up to two batches read ahead, for a caller that
/// tops it up while it works on the batch before ([`ReadAhead::top_up`]
/// in one arm of `rayon::join`). A read error waits in the queue behind
/// the batches read before it, so errors come out in file order.
pub struct ReadAhead {
    pub split: Splitter,
    queue: std::collections::VecDeque<Result<Batch>>,
    done: bool,
}

impl ReadAhead {
    /// Starts with one batch read.
    pub fn new(split: Splitter) -> Self {
        let mut r = ReadAhead {
            split,
            queue: Default::default(),
            done: false,
        };
        r.top_up();
        r
    }

    /// Reads one more batch unless two wait or the input is done.
    pub fn top_up(&mut self) {
        if self.done || self.queue.len() >= 2 {
            return;
        }
        match self.split.next_batch() {
            Ok(Some(batch)) => self.queue.push_back(Ok(batch)),
            Ok(None) => self.done = true,
            Err(e) => {
                self.queue.push_back(Err(e));
                self.done = true;
            }
        }
    }

    /// The next batch in file order (or the read error in its place).
    pub fn next(&mut self) -> Option<Result<Batch>> {
        self.queue.pop_front()
    }
}

impl Splitter {
    pub fn new(path: &Path, reader: Box<dyn Read + Send>) -> Self {
        Splitter {
            path: path.to_path_buf(),
            reader,
            buf: Vec::new(),
            init: 0,
            base: 0,
            base_line: 1,
            eof: false,
            phase: Phase::Start,
            truncated: None,
            top_strings: Vec::new(),
            spare: Vec::new(),
            share_end: false,
            batch_bytes: BATCH_BYTES,
            guessed_end: false,
            misplaced_end: false,
        }
    }

    /// The same splitter, for an input whose end was guessed to fall
    /// between two events of the array: where it does not, the splitter
    /// ends there and says so ([`Splitter::misplaced_end`]) instead of
    /// failing; where it does, the share after it starts where it should.
    pub fn ending_a_guessed_share(mut self) -> Self {
        self.share_end = true;
        self.guessed_end = true;
        self
    }

    /// The same splitter, reading batches of about `bytes` (at least 4
    /// KiB; a batch still holds at least one whole event).
    pub fn with_batch_bytes(mut self, bytes: usize) -> Self {
        self.batch_bytes = bytes.max(4 << 10);
        self
    }

    /// A splitter of `reader`, the bytes of a file from offset `base` (on
    /// line `base_line`), which lies inside the events array between two
    /// events (`nested`: the array is the `traceEvents` member of an
    /// object). Positions are the file's.
    pub fn resume(
        path: &Path,
        reader: Box<dyn Read + Send>,
        base: u64,
        base_line: u64,
        nested: bool,
    ) -> Self {
        let mut s = Splitter::new(path, reader);
        s.base = base;
        s.base_line = base_line;
        s.phase = Phase::Events { nested };
        s
    }

    /// The same splitter, for an input that ends between two events of the
    /// array (a share of the file): there it ends cleanly, with no
    /// truncation; a share that ends inside an event is an error (the file
    /// changed since the shares were cut).
    pub fn ending_a_share(mut self) -> Self {
        self.share_end = true;
        self
    }

    /// Gives back the bytes of a batch that was parsed, for a later batch.
    pub fn recycle(&mut self, mut data: Vec<u8>) {
        if self.spare.len() < 2 {
            let written = data.len();
            data.clear();
            self.spare.push((data, written));
        }
    }

    /// Reads up to `want` bytes more into the buffer; short only at the
    /// end of the input. Into room already written where there is some,
    /// without zeroing it first: `read_to_end` zeroed each batch's room
    /// before reading into it (the reader cannot take unwritten memory on
    /// stable Rust), 1 MiB a batch on the splitter's thread, which a read
    /// of many threads on many cores waits on.
    fn fill(&mut self, want: usize) -> Result<()> {
        let len = self.buf.len();
        let need = len + want;
        let at = self.buf.as_ptr();
        self.buf.reserve(want);
        if self.buf.as_ptr() != at {
            // moved: only its bytes up to its length were copied
            self.init = len;
        }
        if self.init < need {
            // SAFETY: the bytes up to `init` (within the allocation, at
            // least the length) were written; zeros written after them
            unsafe { self.buf.set_len(self.init.max(len)) };
            self.buf.resize(need, 0);
            self.init = need;
        } else {
            // SAFETY: within the allocation (reserved above) and written
            // before: bytes, any value of which is a valid `u8`
            unsafe { self.buf.set_len(need) };
        }
        let mut got = 0;
        while got < want {
            match self.reader.read(&mut self.buf[len + got..need]) {
                Ok(0) => break,
                Ok(n) => got += n.min(want - got),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(len + got);
                    return Err(Error::io(&self.path, e));
                }
            }
        }
        self.buf.truncate(len + got);
        if got < want {
            self.eof = true;
        }
        Ok(())
    }

    fn pos_at(&self, i: usize) -> Position {
        let lines = memchr::memchr_iter(b'\n', &self.buf[..i.min(self.buf.len())]).count() as u64;
        Position {
            line: Some(self.base_line + lines),
            byte: Some(self.base + i as u64),
        }
    }

    fn err(&self, i: usize, msg: impl Into<String>) -> Error {
        Error::parse(&self.path, self.pos_at(i), msg)
    }

    /// The next batch of event objects, or `None` when there are no more.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        loop {
            if self.phase == Phase::Done {
                return self.finish_trailing();
            }
            while !self.eof && self.buf.len() < self.batch_bytes {
                let want = self.batch_bytes - self.buf.len();
                self.fill(want)?;
            }
            let mut spans = Vec::new();
            let consumed = self.scan(&mut spans)?;
            if consumed > 0 || !spans.is_empty() {
                let (mut rest, written) = self.spare.pop().unwrap_or_default();
                let at = rest.as_ptr();
                rest.extend_from_slice(&self.buf[consumed..]);
                // (moved: only the bytes copied in were written)
                let written = if rest.as_ptr() == at { written } else { 0 };
                self.init = written.max(rest.len());
                let data = std::mem::replace(&mut self.buf, rest);
                let mut data = data;
                data.truncate(consumed);
                let batch = Batch {
                    spans,
                    base: self.base,
                    base_line: self.base_line,
                    data,
                };
                self.base += consumed as u64;
                self.base_line += count_lines(&batch.data);
                if batch.spans.is_empty() {
                    continue;
                }
                return Ok(Some(batch));
            }
            // nothing complete in the buffer
            if self.eof {
                return self.at_eof();
            }
            if self.buf.len() > MAX_VALUE {
                return Err(self.err(
                    0,
                    format!(
                        "expected JSON values of at most {} MiB, found a larger one",
                        MAX_VALUE >> 20
                    ),
                ));
            }
            let more = self.buf.len().max(self.batch_bytes);
            self.fill(more)?;
        }
    }

    /// The input ended before the events were closed.
    fn at_eof(&mut self) -> Result<Option<Batch>> {
        let i = skip_ws(&self.buf, 0);
        if self.share_end {
            let between = matches!(self.phase, Phase::Events { .. }) && i == self.buf.len();
            if between || self.guessed_end {
                self.misplaced_end = !between;
                self.phase = Phase::Done;
                self.buf.clear();
                return Ok(None);
            }
            return Err(self.err(
                i,
                "the file changed while it was read (an event crosses the end of a share)",
            ));
        }
        match self.phase {
            Phase::Start if i == self.buf.len() => Err(self.err(
                0,
                "expected a JSON array or object of trace events, found an empty file",
            )),
            Phase::Events { .. } | Phase::TopObject => {
                self.truncated = Some(Truncation {
                    pos: self.pos_at(i),
                    bytes: (self.buf.len() - i) as u64,
                });
                self.phase = Phase::Done;
                self.buf.clear();
                Ok(None)
            }
            _ => Err(self.err(i, "unexpected end of file")),
        }
    }

    /// After the top-level value: only whitespace may follow.
    fn finish_trailing(&mut self) -> Result<Option<Batch>> {
        loop {
            let i = skip_ws(&self.buf, 0);
            if i < self.buf.len() {
                return Err(self.err(
                    i,
                    format!(
                        "expected the end of the file after the trace, found '{}'",
                        char::from(self.buf[i]).escape_default()
                    ),
                ));
            }
            self.base += self.buf.len() as u64;
            self.buf.clear();
            if self.eof {
                return Ok(None);
            }
            self.fill(64 << 10)?;
        }
    }

    /// Scans as far as complete values allow; returns the bytes consumed.
    fn scan(&mut self, spans: &mut Vec<(u32, u32)>) -> Result<usize> {
        let buf_len = self.buf.len();
        let mut i = 0usize;
        let mut consumed = 0usize;
        let mut ahead_tried = false;
        loop {
            i = skip_ws(&self.buf, i);
            if i >= buf_len {
                return Ok(if self.phase == Phase::Done {
                    i
                } else {
                    consumed
                });
            }
            match self.phase {
                Phase::Start => {
                    let j = if self.buf[i..].starts_with(b"\xEF\xBB\xBF") {
                        i + 3
                    } else {
                        i
                    };
                    match self.buf[j] {
                        b'[' => self.phase = Phase::Events { nested: false },
                        b'{' => self.phase = Phase::TopObject,
                        c => {
                            return Err(self.err(
                                j,
                                format!(
                                    "expected '[' or '{{' starting a Chrome trace, found '{}'",
                                    char::from(c).escape_default()
                                ),
                            ));
                        }
                    }
                    i = j + 1;
                    consumed = i;
                }
                Phase::TopObject => {
                    let c = self.buf[i];
                    if c == b'}' {
                        self.phase = Phase::Done;
                        return Ok(i + 1);
                    }
                    if c == b',' {
                        i += 1;
                        consumed = i;
                        continue;
                    }
                    if c != b'"' {
                        return Err(self.err(
                            i,
                            format!(
                                "expected a member name in the trace object, found '{}'",
                                char::from(c).escape_default()
                            ),
                        ));
                    }
                    let Some(kend) = scan_string(&self.buf, i) else {
                        return Ok(consumed);
                    };
                    let key = String::from_utf8_lossy(&self.buf[i + 1..kend - 1]).into_owned();
                    let mut j = skip_ws(&self.buf, kend);
                    if j >= buf_len {
                        return Ok(consumed);
                    }
                    if self.buf[j] != b':' {
                        return Err(self.err(
                            j,
                            format!(
                                "expected ':' after member \"{key}\", found '{}'",
                                char::from(self.buf[j]).escape_default()
                            ),
                        ));
                    }
                    j = skip_ws(&self.buf, j + 1);
                    if j >= buf_len {
                        return Ok(consumed);
                    }
                    if key == "traceEvents" {
                        if self.buf[j] != b'[' {
                            return Err(self.err(
                                j,
                                "expected an array as \"traceEvents\", found another value",
                            ));
                        }
                        self.phase = Phase::Events { nested: true };
                        i = j + 1;
                        consumed = i;
                        continue;
                    }
                    match scan_value(&self.buf, j) {
                        Scan::Complete(e) => {
                            if self.buf[j] == b'"' && e - j < 4096 {
                                let v =
                                    String::from_utf8_lossy(&self.buf[j + 1..e - 1]).into_owned();
                                self.top_strings.push((key, v));
                            }
                            i = e;
                            consumed = i;
                        }
                        Scan::Incomplete => return Ok(consumed),
                        Scan::Bad(m) => return Err(self.err(j, m)),
                    }
                }
                Phase::Events { nested } => {
                    let c = self.buf[i];
                    if c == b']' {
                        self.phase = if nested {
                            Phase::TopObject
                        } else {
                            Phase::Done
                        };
                        i += 1;
                        consumed = i;
                        if !nested {
                            return Ok(consumed);
                        }
                        continue;
                    }
                    if c == b',' {
                        i += 1;
                        consumed = i;
                        continue;
                    }
                    if c != b'{' {
                        return Err(self.err(
                            i,
                            format!(
                                "expected an event object in the event array, found '{}'",
                                char::from(c).escape_default()
                            ),
                        ));
                    }
                    if !ahead_tried {
                        ahead_tried = true;
                        if let Some(e) = scan_events_ahead(&self.buf, i, spans) {
                            i = e;
                            consumed = i;
                            continue;
                        }
                    }
                    match scan_value(&self.buf, i) {
                        Scan::Complete(e) => {
                            if e > u32::MAX as usize {
                                return Err(self.err(i, "event object too large"));
                            }
                            spans.push((i as u32, e as u32));
                            i = e;
                            consumed = i;
                            if spans.len() >= MAX_SPANS {
                                return Ok(consumed);
                            }
                        }
                        Scan::Incomplete => return Ok(consumed),
                        Scan::Bad(m) => return Err(self.err(i, m)),
                    }
                }
                Phase::Done => return Ok(i),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_end_where_the_byte_scan_says() {
        let mut rng = crate::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        // without backslashes (the 16-byte runs taken by their quotes and
        // brackets), with a few, and with many (taken byte by byte)
        let alphabets: [&[u8]; 3] = [
            br#"{}[]""aaaa ,:{"#,
            br#"{}[]""aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ ,:{"#,
            br#"{}[]"\\a ,:{"#,
        ];
        for round in 0..60_000 {
            let alphabet = alphabets[round % 3];
            let len = 1 + rng.below(if round % 4 == 0 { 200 } else { 48 }) as usize;
            let mut b: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            b[0] = if rng.below(2) == 0 { b'{' } else { b'[' };
            let i = 0;
            assert_eq!(
                container_end(&b, i),
                container_end_bytes(&b, i),
                "{:?}",
                String::from_utf8_lossy(&b)
            );
        }
        // a long event with escapes across the 16-byte runs
        let ev = br#"{"name":"a \"quoted\" \\ name","args":{"v":[1,2,{"w":"}"}]},"ph":"X"} tail"#;
        for pad in 0..40 {
            let mut b = vec![b' '; pad];
            b.extend_from_slice(ev);
            assert_eq!(container_end(&b, pad), container_end_bytes(&b, pad));
            assert_eq!(container_end(&b, pad), Some(pad + ev.len() - 5));
            assert_eq!(container_end(&b[..pad + ev.len() - 6], pad), None);
        }
    }

    type Split = (Vec<String>, Option<Truncation>, Vec<(String, String)>);

    fn split(text: &str) -> Result<Split> {
        let mut s = Splitter::new(
            Path::new("t.json"),
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        );
        let mut out = Vec::new();
        while let Some(b) = s.next_batch()? {
            for (a, e) in &b.spans {
                out.push(String::from_utf8(b.data[*a as usize..*e as usize].to_vec()).unwrap());
            }
        }
        Ok((out, s.truncated, s.top_strings))
    }

    #[test]
    fn array_and_object_forms() {
        let (ev, t, _) = split(r#"[{"a":1}, {"b":"}"} ]"#).unwrap();
        assert_eq!(ev, vec![r#"{"a":1}"#, r#"{"b":"}"}"#]);
        assert!(t.is_none());
        let (ev, t, top) = split(
            r#"{"x":[1,{"y":2}],"traceEvents":[{"a":"\"]"}],"displayTimeUnit":"ns","z":{"q":[]}}"#,
        )
        .unwrap();
        assert_eq!(ev, vec![r#"{"a":"\"]"}"#]);
        assert!(t.is_none());
        assert_eq!(top, vec![("displayTimeUnit".to_string(), "ns".to_string())]);
    }

    #[test]
    fn truncated_and_bad_inputs() {
        let (ev, t, _) = split(r#"[{"a":1},{"b":2"#).unwrap();
        assert_eq!(ev.len(), 1);
        assert!(t.unwrap().bytes > 0);
        let (ev, t, _) = split("[{\"a\":1},\n").unwrap();
        assert_eq!(ev.len(), 1);
        assert!(t.is_some());
        assert!(split("").unwrap_err().to_string().contains("empty"));
        let e = split("[1]").unwrap_err().to_string();
        assert!(e.contains("expected an event object"), "{e}");
        let e = split("[{}] x").unwrap_err().to_string();
        assert!(e.contains("end of the file"), "{e}");
        let e = split("nope").unwrap_err().to_string();
        assert!(e.contains("'[' or '{'"), "{e}");
    }

    /// A reader that hands out at most a few bytes a call.
    struct Trickle(std::io::Cursor<Vec<u8>>, usize);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let k = buf.len().min(self.1 * 997);
            self.0.read(&mut buf[..k])
        }
    }

    /// Several batches' worth of events whose strings are short, exactly
    /// 32 bytes, long, escaped and full of brackets, read a few bytes at a
    /// time, with every batch's buffer given back: every event comes out
    /// whole, once, in order.
    #[test]
    fn batches_over_short_reads_and_recycled_buffers() {
        let mut want = Vec::new();
        for i in 0..120_000usize {
            let name = match i % 5 {
                0 => "x".to_string(),
                1 => "y".repeat(31),
                2 => format!("{}\\\"{{[", "z".repeat(40 + i % 50)),
                3 => "}]{[\\\\".to_string(),
                _ => format!("n{i}"),
            };
            want.push(format!(
                r#"{{"ph":"X","name":"{name}","args":{{"a":[{i},{{"b":"]"}}]}}}}"#
            ));
        }
        let text = format!("{{\"traceEvents\":[\n{}\n]}}", want.join(",\n"));
        assert!(text.len() > 2 * BATCH_BYTES);
        let mut s = Splitter::new(
            Path::new("t.json"),
            Box::new(Trickle(std::io::Cursor::new(text.into_bytes()), 0)),
        );
        let mut got = Vec::new();
        let mut batches = 0;
        while let Some(b) = s.next_batch().unwrap() {
            batches += 1;
            for (a, e) in &b.spans {
                got.push(String::from_utf8(b.data[*a as usize..*e as usize].to_vec()).unwrap());
            }
            s.recycle(b.data);
        }
        assert!(batches > 2, "{batches}");
        assert!(s.truncated.is_none());
        assert_eq!(got.len(), want.len());
        assert!(got == want);
    }

    /// Events whose strings look like the start of the next event
    /// (`"},{"`) in a share `fakes` of them (1 in `fakes`; none at 0), some
    /// with newlines between, as one array's text.
    fn events_with_fakes(n: usize, fakes: u64, seed: u64) -> String {
        let mut rng = crate::test_rng::XorShift(seed);
        let mut ev = Vec::new();
        for i in 0..n {
            let name = if fakes > 0 && rng.below(fakes) == 0 {
                format!(r#"a}},{{"ph":"X","n":{i}}}, {{b"#)
            } else {
                format!("n{}", rng.below(1 << 20))
            };
            ev.push(format!(
                r#"{{"ph":"X","ts":{i},"dur":3,"name":"{name}","args":{{"v":[1,{{"w":"}}"}}]}}}}"#
            ));
        }
        let sep = [",", ",\n", " , ", ",,"];
        let mut text = String::from("[");
        for (i, e) in ev.iter().enumerate() {
            if i > 0 {
                text.push_str(sep[i % sep.len()]);
            }
            text.push_str(e);
        }
        text.push(']');
        text
    }

    /// The events found ahead on several threads are those one scan finds
    /// from the same place, in order, ending with a whole event: all of
    /// them where no string looks like an event's start, a first run of
    /// them where strings do (a segment scanned from such a place is not
    /// taken), none on one thread or in a buffer too small to share.
    #[test]
    fn events_found_ahead_are_those_one_scan_finds() {
        for (fakes, seed) in [(0u64, 1u64), (50, 2), (3, 3), (1, 4)] {
            let text = events_with_fakes(20_000, fakes, seed);
            let buf = text.as_bytes();
            assert!(buf.len() > 2 * AHEAD_BYTES);
            let mut one = Vec::new();
            assert_eq!(scan_run(buf, 1, usize::MAX, &mut one), None);
            for threads in [1, 2, 3, 8] {
                let mut got = vec![(0, 0)];
                let end =
                    crate::test_pool::pool(threads).install(|| scan_events_ahead(buf, 1, &mut got));
                let got = &got[1..];
                if threads == 1 {
                    assert_eq!(end, None);
                    continue;
                }
                let end = end.expect("found ahead");
                assert!(!got.is_empty() && got.len() <= one.len());
                assert_eq!(got, &one[..got.len()], "{fakes} {threads}");
                assert_eq!(end, got[got.len() - 1].1 as usize);
                if fakes == 0 {
                    assert_eq!(got.len(), one.len(), "{threads}");
                }
            }
            // a buffer below what is shared
            let short = &buf[..AHEAD_BYTES - 1];
            let mut got = Vec::new();
            let end = crate::test_pool::pool(4).install(|| scan_events_ahead(short, 1, &mut got));
            assert_eq!((end, got.len()), (None, 0));
        }
    }

    /// The splitter on several threads gives the batches it gives on one:
    /// the same events, offsets and lines, and the same error, at the same
    /// place, for an event that is not one.
    #[test]
    fn batches_on_several_threads_are_those_on_one() {
        let batches = |text: &str, threads: usize| {
            crate::test_pool::pool(threads).install(|| {
                let mut s = Splitter::new(
                    Path::new("t.json"),
                    Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
                );
                let mut out = Vec::new();
                loop {
                    match s.next_batch() {
                        Ok(Some(b)) => {
                            out.push(format!("{} {} {:?}", b.base, b.base_line, b.spans));
                            s.recycle(b.data);
                        }
                        Ok(None) => return (out, None),
                        Err(e) => return (out, Some(e.to_string())),
                    }
                }
            })
        };
        for fakes in [0, 3] {
            let text = events_with_fakes(40_000, fakes, 9);
            let want = batches(&text, 1);
            assert!(want.0.len() > 2 && want.1.is_none());
            assert_eq!(batches(&text, 4), want);
            // a number where an event should be, deep in the second batch
            let at = text[BATCH_BYTES + BATCH_BYTES / 2..].find("},").unwrap();
            let mut bad = text.clone();
            bad.insert_str(BATCH_BYTES + BATCH_BYTES / 2 + at + 2, "\n7,");
            let want = batches(&bad, 1);
            let e = want.1.clone().expect("an error");
            assert!(e.contains("expected an event object"), "{e}");
            assert_eq!(batches(&bad, 4), want);
        }
    }
}
