//! Slice events held back from one pipeline's intake and given to their
//! threads together, on all threads.
//!
//! One pipeline ([`super::for_each_event`]) takes its events on one thread
//! while the others parse the next run: that thread is the read's serial
//! chain. At 65,536 threads (a trace not read by ranges, each of which
//! would hold every thread) half of its time went into putting each `X`
//! slice into its thread's records, whose record and slices' end were in
//! no cache at that many threads: two misses a slice (a 708 MB trace on
//! two threads: the intake 0.56-0.64 s without them, 1.05-1.16 with).
//! Here the intake only notes the slice, in one of a few lists by its
//! thread's number; the lists are given to the threads on all threads at
//! once, each list's events by one thread in the order they came, while
//! it fetches the records and slices' ends of the events a few places on
//! ([`AHEAD`]): the misses overlap, on one thread too. Every thread's
//! records are what the intake would have made.

use rayon::prelude::*;

use super::{Expect, ThreadAcc};
use crate::memory;
use crate::model::StateId;

/// How many events ahead a list's task fetches the end of a thread's
/// slices (its record twice as far ahead), before it puts a slice there.
const AHEAD: usize = 8;

/// A `B` event in [`Held::dur`].
const BEGIN: i64 = -1;
/// An `E` event in [`Held::dur`].
const END: i64 = -2;

/// One slice event held back: 24 bytes.
#[derive(Debug, Clone, Copy)]
struct Held {
    thread: u32,
    state: StateId,
    ts: i64,
    /// An `X` slice's duration (never negative), or [`BEGIN`] or [`END`].
    dur: i64,
}

/// At most this many events are held before they are given to their
/// threads: 1.5 MiB.
pub(super) const MAX_HELD: usize = 1 << 16;

/// The fewest threads a trace must have met for its slices to be held
/// back: with fewer, their records stay in the caches and the intake puts
/// a slice in its thread's in a few nanoseconds.
pub(super) const MIN_THREADS: usize = 4096;

/// The slice events held back, in lists by thread number (modulo their
/// count): each list's events in the order the intake met them. They all
/// come from one batch of events, whose [`Expect`] they keep.
#[derive(Debug)]
pub(super) struct Deferred {
    lists: Vec<Vec<Held>>,
    held: usize,
    /// The batch the held events come from (its first byte's offset), and
    /// where the read stood in it.
    batch: Option<(u64, Expect)>,
}

impl Deferred {
    /// Lists for the threads of rayon's pool: a few a thread, so that one
    /// slow list does not hold the others up.
    pub(super) fn new() -> Deferred {
        let n = (4 * rayon::current_num_threads()).clamp(1, 64);
        Deferred {
            lists: vec![Vec::new(); n],
            held: 0,
            batch: None,
        }
    }

    /// Whether an event of the batch at `base` (its first byte's offset)
    /// can be held beside those held: they come from the same batch and
    /// are not too many.
    pub(super) fn has_room(&self, base: u64) -> bool {
        self.held < MAX_HELD && self.batch.is_none_or(|(b, _)| b == base)
    }

    /// Holds an `X` slice of thread `thread` (`dur` not negative) from the
    /// batch at `at.0`, where the read stands as `at.1` says.
    pub(super) fn x(&mut self, thread: u32, ts: i64, dur: i64, state: StateId, at: (u64, Expect)) {
        self.hold(
            Held {
                thread,
                state,
                ts,
                dur: dur.max(0),
            },
            at,
        );
    }

    /// Holds a `B` (`begin`) or `E` event of thread `thread` (`at` as for
    /// [`Deferred::x`]).
    pub(super) fn be(
        &mut self,
        thread: u32,
        ts: i64,
        begin: bool,
        state: StateId,
        at: (u64, Expect),
    ) {
        let dur = if begin { BEGIN } else { END };
        self.hold(
            Held {
                thread,
                state,
                ts,
                dur,
            },
            at,
        );
    }

    fn hold(&mut self, h: Held, at: (u64, Expect)) {
        self.batch.get_or_insert(at);
        let n = self.lists.len();
        self.lists[h.thread as usize % n].push(h);
        self.held += 1;
    }

    /// Gives the held events to `threads` (which holds every thread they
    /// name), on all threads: each list by one.
    pub(super) fn give(&mut self, threads: &mut [ThreadAcc]) {
        let Some((_, expect)) = self.batch.take() else {
            return;
        };
        self.held = 0;
        let _p = crate::phases::span("chrome: held slices given to their threads (all threads)");
        let all = Threads(threads.as_mut_ptr(), threads.len());
        let all = &all;
        self.lists.par_iter_mut().for_each(|list| {
            // the record of the thread [`AHEAD`] events on is fetched, and
            // the end of the slices of the one twice as far
            let events: &[Held] = list;
            let record = |k: usize| {
                events
                    .get(k)
                    .map(|h| h.thread as usize)
                    .filter(|&t| t < all.1)
                    .map(|t| all.0.wrapping_add(t))
            };
            for (i, h) in events.iter().enumerate() {
                if let Some(r) = record(i + 2 * AHEAD) {
                    memory::prefetch(r);
                }
                if let Some(r) = record(i + AHEAD) {
                    // SAFETY: as below (the record is this list's)
                    memory::prefetch(unsafe { &*r }.next_slot());
                }
                let Some(r) = record(i) else {
                    continue;
                };
                // SAFETY: the thread is within `threads` ([`record`]), and
                // every event of a thread is in the one list of its number
                // modulo the lists' count: no other list's task touches
                // this thread's record, and `threads` is borrowed mutably
                // for the whole of this call.
                let t = unsafe { &mut *r };
                match h.dur {
                    BEGIN => t.push_be(h.ts, true, h.state),
                    END => t.push_be(h.ts, false, h.state),
                    dur => t.push_x(h.ts, dur, h.state, expect),
                }
            }
            list.clear();
        });
    }

    /// The events held.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held
    }
}

/// The threads' records, shared by the lists' tasks, each of which
/// touches only its own threads' ([`Deferred::give`]).
struct Threads(*mut ThreadAcc, usize);

// SAFETY: the tasks that share it write to disjoint records
// ([`Deferred::give`]).
unsafe impl Sync for Threads {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    /// A thread's records as far as a test can tell them apart: its
    /// slices, the room of its first chunk (which [`Expect`] sizes), and
    /// its `B`/`E` events with their places.
    type Records = (
        Vec<(u64, u64, StateId)>,
        usize,
        Vec<(i64, u64, bool, StateId)>,
    );

    fn records(t: &ThreadAcc) -> Records {
        let be =
            t.be.as_ref()
                .map(|be| be.iter().copied().collect())
                .unwrap_or_default();
        (t.slices.iter().collect(), t.slices.first.capacity(), be)
    }

    /// Slice events held back and given on 1 to 4 threads, in lists of
    /// any count, from several batches (given between them, and when
    /// many), leave every thread's records as putting each in at once
    /// does: slices past a first chunk, slices kept apart (far from the
    /// chunk's base), `B`/`E` events between them, the first chunk grown
    /// by where the read stands.
    #[test]
    fn held_slices_given_make_the_records_put_at_once() {
        for (seed, threads, events) in [
            (1u64, 1usize, 50usize),
            (2, 7, 3000),
            (3, 300, 20_000),
            (4, 40, 70_000),
        ] {
            let mut rng = XorShift(seed);
            let mut at_once = vec![ThreadAcc::default(); threads];
            let mut given: Vec<Vec<ThreadAcc>> = vec![vec![ThreadAcc::default(); threads]; 4];
            let mut held: Vec<Deferred> = (1..=4)
                .map(|n| crate::test_pool::pool(n).install(Deferred::new))
                .collect();
            let len = 1u64 << 30;
            let mut base = 0u64;
            for k in 0..events {
                if rng.below(500) == 0 {
                    // the next batch
                    base += 1 + rng.below(len / 64);
                }
                let expect = Expect::Read {
                    done: base.min(len),
                    len,
                };
                let t = rng.below(threads as u64) as u32;
                let ts = if rng.below(100) == 0 {
                    1 << 40
                } else {
                    10 * k as i64
                };
                let state = rng.below(5) as StateId;
                let kind = rng.below(10);
                let dur = rng.below(1000) as i64;
                match kind {
                    0 => at_once[t as usize].push_be(ts, true, state),
                    1 => at_once[t as usize].push_be(ts, false, 0),
                    _ => at_once[t as usize].push_x(ts, dur, state, expect),
                }
                for (d, threads) in held.iter_mut().zip(&mut given) {
                    if !d.has_room(base) {
                        d.give(threads);
                    }
                    match kind {
                        0 => d.be(t, ts, true, state, (base, expect)),
                        1 => d.be(t, ts, false, 0, (base, expect)),
                        _ => d.x(t, ts, dur, state, (base, expect)),
                    }
                    assert!(d.held() <= MAX_HELD);
                }
            }
            let want: Vec<_> = at_once.iter().map(records).collect();
            for (n, (d, threads)) in held.iter_mut().zip(&mut given).enumerate() {
                crate::test_pool::pool(n + 1).install(|| d.give(threads));
                assert_eq!(d.held(), 0);
                let got: Vec<_> = threads.iter().map(records).collect();
                assert!(got == want, "seed {seed}, {} threads", n + 1);
            }
        }
    }
}
