//! The processes of a job that read one trace together (`mpirun … tapestry
//! reduce`) and the bytes they exchange while they read: [`Exchange`] is
//! what a reader needs of them (MPI in the binary; threads of one process
//! in [`ThreadExchange`], for tests and for callers without MPI).
//!
//! Every exchange carries whether its sender failed, so that a process that
//! meets an error still takes part in the exchange the others wait in, and
//! every process then stops together ([`exchange_checked`]): none is left
//! waiting for one that has gone.

use std::sync::mpsc::{Receiver, Sender, channel};

use crate::diagnostics::Position;
use crate::error::{Error, Result};

/// The processes reading one trace, as one of them sees them. Messages are
/// 64-bit words (records go as they lie in memory, and arrive aligned).
pub trait Exchange {
    /// This process's number, `0..size()`.
    fn rank(&self) -> usize;
    /// How many processes.
    fn size(&self) -> usize;
    /// Sends process `j` the `counts[j]` words of `words` that follow the
    /// messages for processes before it (`counts.len() == size()`), and
    /// returns what every process sent to this one, one after the other
    /// by rank, with their lengths. Every process calls it the same number
    /// of times, in the same order.
    fn all_to_all(&mut self, words: &[u64], counts: &[usize]) -> Result<(Vec<u64>, Vec<usize>)>;
}

/// Messages to every process, built one after the other in rank order in
/// one buffer, each led by a word the exchange uses ([`exchange_checked`]).
#[derive(Default)]
pub struct Outbox {
    pub words: Vec<u64>,
    counts: Vec<usize>,
    start: usize,
}

impl Outbox {
    /// An outbox whose messages take about `words` words in all.
    pub fn with_capacity(words: usize) -> Outbox {
        Outbox {
            words: Vec::with_capacity(words),
            ..Default::default()
        }
    }

    /// Begins the message to the next process: push its words to `words`.
    pub fn begin(&mut self) {
        self.start = self.words.len();
        self.words.push(0);
    }

    /// Ends the message begun last.
    pub fn end(&mut self) {
        self.counts.push(self.words.len() - self.start);
    }

    /// The same `message` to every one of `n` processes.
    pub fn to_all(n: usize, message: &[u64]) -> Outbox {
        let mut o = Outbox::with_capacity(n * (message.len() + 1));
        for _ in 0..n {
            o.begin();
            o.words.extend_from_slice(message);
            o.end();
        }
        o
    }
}

/// What every process sent to this one.
pub struct Inbox {
    words: Vec<u64>,
    starts: Vec<usize>,
}

impl Inbox {
    /// The message from process `s` (without the exchange's word).
    pub fn from(&self, s: usize) -> &[u64] {
        &self.words[self.starts[s] + 1..self.starts[s + 1]]
    }

    /// How many processes sent.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Exchanges `out` (one message per process, in rank order) as
/// [`Exchange::all_to_all`] does, each message led by whether this process
/// failed (`failed`, its error). Returns what the others sent when no
/// process failed; this process's error when it did; [`Error::OtherProcess`]
/// when only another did.
pub fn exchange_checked(
    ex: &mut dyn Exchange,
    mut out: Outbox,
    failed: Option<Error>,
) -> Result<Inbox> {
    if out.counts.len() != ex.size() {
        return Err(Error::Invalid(format!(
            "{} messages for {} processes",
            out.counts.len(),
            ex.size()
        )));
    }
    let flag = u64::from(failed.is_some());
    let mut at = 0;
    for &c in &out.counts {
        if c > 0 {
            out.words[at] = flag;
        }
        at += c;
    }
    let (words, counts) = ex.all_to_all(&out.words, &out.counts)?;
    drop(out);
    let mut starts = Vec::with_capacity(counts.len() + 1);
    let mut at = 0;
    starts.push(0);
    let mut other = false;
    for &c in &counts {
        other |= c == 0 || words.get(at) != Some(&0);
        at += c;
        starts.push(at);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if other || at != words.len() {
        return Err(Error::OtherProcess);
    }
    Ok(Inbox { words, starts })
}

/// Every process's `message`, by rank (each sends the same to all).
pub fn all_gather(ex: &mut dyn Exchange, message: &[u64], failed: Option<Error>) -> Result<Inbox> {
    let out = Outbox::to_all(ex.size(), message);
    exchange_checked(ex, out, failed)
}

/// A message that came damaged from another process.
pub fn damaged() -> Error {
    Error::Invalid("a damaged message was received from another process".into())
}

/// Bytes as words: their length, then the bytes, eight a word
/// ([`Words::bytes`] reads them).
pub fn put_bytes(w: &mut Vec<u64>, b: &[u8]) {
    w.push(b.len() as u64);
    w.extend(b.chunks(8).map(|c| {
        let mut x = [0u8; 8];
        x[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(x)
    }));
}

/// A position as two words, `u64::MAX` for what it lacks
/// ([`Words::position`] reads it).
pub fn put_position(w: &mut Vec<u64>, p: Position) {
    w.push(p.line.unwrap_or(u64::MAX));
    w.push(p.byte.unwrap_or(u64::MAX));
}

/// Reads the words another process sent, checking every length against
/// what came ([`damaged`] when it does not fit).
pub struct Words<'a> {
    w: &'a [u64],
    /// Words read so far.
    pub at: usize,
}

impl<'a> Words<'a> {
    pub fn new(w: &'a [u64]) -> Self {
        Words { w, at: 0 }
    }

    pub fn one(&mut self) -> Result<u64> {
        let x = *self.w.get(self.at).ok_or_else(damaged)?;
        self.at += 1;
        Ok(x)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u64]> {
        let end = self.at.checked_add(n).ok_or_else(damaged)?;
        let s = self.w.get(self.at..end).ok_or_else(damaged)?;
        self.at = end;
        Ok(s)
    }

    /// A count of items of `size` words each that the message can hold.
    pub fn count(&mut self, size: usize) -> Result<usize> {
        let n = usize::try_from(self.one()?).map_err(|_| damaged())?;
        if n.checked_mul(size.max(1)).is_none_or(|x| x > self.w.len()) {
            return Err(damaged());
        }
        Ok(n)
    }

    /// Bytes written by [`put_bytes`].
    pub fn bytes(&mut self) -> Result<Vec<u8>> {
        let len = usize::try_from(self.one()?).map_err(|_| damaged())?;
        let words = self.take(len.div_ceil(8))?;
        Ok(words
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .take(len)
            .collect())
    }

    /// A position written by [`put_position`].
    pub fn position(&mut self) -> Result<Position> {
        let opt = |x: u64| (x != u64::MAX).then_some(x);
        Ok(Position {
            line: opt(self.one()?),
            byte: opt(self.one()?),
        })
    }

    /// The words not read yet.
    pub fn rest(&self) -> &'a [u64] {
        self.w.get(self.at..).unwrap_or_default()
    }

    /// Whether every word is read.
    pub fn done(&self) -> bool {
        self.at == self.w.len()
    }
}

/// Processes as threads of this one: [`ThreadExchange::group`] makes the
/// `n` ends, one for each thread.
pub struct ThreadExchange {
    rank: usize,
    to: Vec<Sender<Vec<u64>>>,
    from: Vec<Receiver<Vec<u64>>>,
}

impl ThreadExchange {
    /// The `n` processes of a group, by rank.
    pub fn group(n: usize) -> Vec<ThreadExchange> {
        // one channel from each process to each: messages of one sender
        // arrive in order, and a receiver takes its senders' in rank order
        let mut senders: Vec<Vec<Sender<Vec<u64>>>> = (0..n).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<Receiver<Vec<u64>>>> = (0..n).map(|_| Vec::new()).collect();
        for dst in receivers.iter_mut() {
            for src in senders.iter_mut() {
                let (s, r) = channel();
                src.push(s);
                dst.push(r);
            }
        }
        senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (to, from))| ThreadExchange { rank, to, from })
            .collect()
    }
}

impl Exchange for ThreadExchange {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn all_to_all(&mut self, words: &[u64], counts: &[usize]) -> Result<(Vec<u64>, Vec<usize>)> {
        if counts.len() != self.to.len() || counts.iter().sum::<usize>() != words.len() {
            return Err(Error::Invalid(
                "messages that do not fill the words sent".into(),
            ));
        }
        let gone = || Error::Invalid("another thread of the exchange has gone".into());
        let mut at = 0;
        for (s, &c) in self.to.iter().zip(counts) {
            s.send(words[at..at + c].to_vec()).map_err(|_| gone())?;
            at += c;
        }
        let mut got = Vec::new();
        let mut lens = Vec::with_capacity(self.from.len());
        for r in &self.from {
            let m = r.recv().map_err(|_| gone())?;
            lens.push(m.len());
            got.extend_from_slice(&m);
        }
        Ok((got, lens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_exchange_by_rank_and_stop_together() {
        let ends = ThreadExchange::group(3);
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = ends
                .into_iter()
                .map(|mut ex| {
                    s.spawn(move || {
                        let r = ex.rank() as u64;
                        let mut out = Outbox::default();
                        for j in 0..3u64 {
                            out.begin();
                            // messages of different lengths, one empty
                            out.words.extend((0..j).map(|k| 10 * r + k));
                            out.end();
                        }
                        let inbox = exchange_checked(&mut ex, out, None).unwrap();
                        let first: Vec<Vec<u64>> =
                            (0..inbox.len()).map(|s| inbox.from(s).to_vec()).collect();
                        // process 1 fails in the second exchange
                        let failed = (r == 1).then(|| Error::Invalid("mine".into()));
                        let second = all_gather(&mut ex, &[r], failed).map(|i| i.len());
                        (first, second)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, (first, second)) in got.into_iter().enumerate() {
            let want: Vec<Vec<u64>> = (0..3u64)
                .map(|s| (0..r as u64).map(|k| 10 * s + k).collect())
                .collect();
            assert_eq!(first, want);
            match (r, second) {
                (1, Err(Error::Invalid(m))) => assert_eq!(m, "mine"),
                (1, other) => panic!("{other:?}"),
                (_, Err(Error::OtherProcess)) => {}
                (_, other) => panic!("{other:?}"),
            }
        }
    }
}
