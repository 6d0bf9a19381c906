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

use crate::error::{Error, Result};

/// The processes reading one trace, as one of them sees them.
pub trait Exchange {
    /// This process's number, `0..size()`.
    fn rank(&self) -> usize;
    /// How many processes.
    fn size(&self) -> usize;
    /// Sends `out[j]` to process `j` (`out.len() == size()`) and returns
    /// what every process sent to this one, by rank. Every process calls
    /// it the same number of times, in the same order.
    fn all_to_all(&mut self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>>;
}

/// Exchanges `out` as [`Exchange::all_to_all`] does, each message led by
/// whether this process failed (`failed`, its error). Returns what the
/// others sent when no process failed; this process's error when it did;
/// [`Error::OtherProcess`] when only another did.
pub fn exchange_checked(
    ex: &mut dyn Exchange,
    mut out: Vec<Vec<u8>>,
    failed: Option<Error>,
) -> Result<Vec<Vec<u8>>> {
    let flag = u8::from(failed.is_some());
    for m in &mut out {
        m.insert(0, flag);
    }
    let mut got = ex.all_to_all(out)?;
    let other = got.iter().any(|m| m.first() != Some(&0));
    if let Some(e) = failed {
        return Err(e);
    }
    if other {
        return Err(Error::OtherProcess);
    }
    for m in &mut got {
        m.remove(0);
    }
    Ok(got)
}

/// Every process's `bytes`, by rank (each sends the same to all).
pub fn all_gather(
    ex: &mut dyn Exchange,
    bytes: Vec<u8>,
    failed: Option<Error>,
) -> Result<Vec<Vec<u8>>> {
    let out = vec![bytes; ex.size()];
    exchange_checked(ex, out, failed)
}

/// Processes as threads of this one: [`ThreadExchange::group`] makes the
/// `n` ends, one for each thread.
pub struct ThreadExchange {
    rank: usize,
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Receiver<Vec<u8>>>,
}

impl ThreadExchange {
    /// The `n` processes of a group, by rank.
    pub fn group(n: usize) -> Vec<ThreadExchange> {
        // one channel from each process to each: messages of one sender
        // arrive in order, and a receiver takes its senders' in rank order
        let mut senders: Vec<Vec<Sender<Vec<u8>>>> = (0..n).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<Receiver<Vec<u8>>>> = (0..n).map(|_| Vec::new()).collect();
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

    fn all_to_all(&mut self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        if out.len() != self.to.len() {
            return Err(Error::Invalid(format!(
                "{} messages for {} processes",
                out.len(),
                self.to.len()
            )));
        }
        let gone = || Error::Invalid("another thread of the exchange has gone".into());
        for (s, m) in self.to.iter().zip(out) {
            s.send(m).map_err(|_| gone())?;
        }
        self.from
            .iter()
            .map(|r| r.recv().map_err(|_| gone()))
            .collect()
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
                        let r = ex.rank() as u8;
                        let out = (0..3u8).map(|j| vec![r, j]).collect();
                        let first = exchange_checked(&mut ex, out, None).unwrap();
                        // process 1 fails in the second exchange
                        let failed = (r == 1).then(|| Error::Invalid("mine".into()));
                        let second = all_gather(&mut ex, vec![r], failed);
                        (first, second)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, (first, second)) in got.into_iter().enumerate() {
            let want: Vec<Vec<u8>> = (0..3u8).map(|s| vec![s, r as u8]).collect();
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
