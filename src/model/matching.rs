//! Pairing sends with receives. Per key (sender, receiver, communicator,
//! tag, ...) the n-th send in time order goes with the n-th receive in time
//! order: MPI's non-overtaking rule, also PICL's. A stream that keeps no
//! events counts each side instead ([`Side`]) and pairs the counts
//! ([`match_sides`]) with the same result.

use std::hash::Hash;
use std::mem::MaybeUninit;

use rustc_hash::FxHashMap;

use super::split_at_bounds;

mod parts;
pub use parts::{KeyedEvents, match_parts};

/// A matched pair: the key, and time and bytes of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matched<K> {
    pub key: K,
    pub send_time: u64,
    pub send_bytes: u64,
    pub recv_time: u64,
    pub recv_bytes: u64,
}

/// Matches `sends` with `recvs` (`(key, time, bytes)` each); returns the
/// pairs, by key and then in time order, and how many sends or receives
/// found no partner.
pub fn match_in_order<K: Ord + Hash + Copy + Send + Sync>(
    sends: Vec<(K, u64, u64)>,
    recvs: Vec<(K, u64, u64)>,
) -> (Vec<Matched<K>>, u64) {
    match_into(sends, recvs, |m| Some(*m))
}

/// Pairs at and above which [`match_into`] makes the pairs of different
/// keys on several threads.
const PARALLEL_PAIRS: usize = 1 << 15;

/// [`match_in_order`], each pair made into a `T` by `f` where it is
/// matched (`None`: the pair is left out and counted with the unmatched),
/// in the order of the pairs. A reader gets its messages without a list of
/// [`Matched`] between (OTF2: 56 bytes a pair, written once and read
/// once), and with many pairs the keys are paired on all threads (OTF2's
/// matching was a fifth of a one-core read and all on one thread).
pub fn match_into<K, T, F>(
    sends: Vec<(K, u64, u64)>,
    recvs: Vec<(K, u64, u64)>,
    f: F,
) -> (Vec<T>, u64)
where
    K: Ord + Hash + Copy + Send + Sync,
    T: Send,
    F: Fn(&Matched<K>) -> Option<T> + Sync,
{
    if let Some(done) = match_by_key(&sends, &recvs, &f) {
        return done;
    }
    let (pairs, mut unmatched) = match_sorted(sends, recvs);
    let out: Vec<T> = if pairs.len() >= PARALLEL_PAIRS {
        use rayon::prelude::*;
        pairs.par_iter().filter_map(&f).collect()
    } else {
        pairs.iter().filter_map(&f).collect()
    };
    unmatched += (pairs.len() - out.len()) as u64;
    (out, unmatched)
}

/// [`match_in_order`] by sorting every event by (key, time), then walking
/// both sides by key.
fn match_sorted<K: Ord + Copy + Send>(
    mut sends: Vec<(K, u64, u64)>,
    mut recvs: Vec<(K, u64, u64)>,
) -> (Vec<Matched<K>>, u64) {
    use rayon::slice::ParallelSliceMut;
    // stable: sends (receives) of one key at one time keep their order
    sends.par_sort_by_key(|a| (a.0, a.1));
    recvs.par_sort_by_key(|a| (a.0, a.1));
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(sends.len().min(recvs.len()));
    let mut unmatched = 0u64;
    while i < sends.len() && j < recvs.len() {
        match sends[i].0.cmp(&recvs[j].0) {
            std::cmp::Ordering::Less => {
                unmatched += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                unmatched += 1;
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(Matched {
                    key: sends[i].0,
                    send_time: sends[i].1,
                    send_bytes: sends[i].2,
                    recv_time: recvs[j].1,
                    recv_bytes: recvs[j].2,
                });
                i += 1;
                j += 1;
            }
        }
    }
    unmatched += (sends.len() - i + recvs.len() - j) as u64;
    (out, unmatched)
}

/// [`match_in_order`] without sorting the events, when their keys are few
/// (at most one per 16 sends, as in MPI traces: a key per pair of ranks,
/// communicator and tag): each event's key gets an id (a hash lookup, none
/// while the key repeats), the events' indices are grouped by id in file
/// order (a counting sort), and each group is sorted by time only when it
/// is out of order. The pairs are those sorting gives, in the same order.
/// `None` when the keys are many.
fn match_by_key<K, T, F>(
    sends: &[(K, u64, u64)],
    recvs: &[(K, u64, u64)],
    f: &F,
) -> Option<(Vec<T>, u64)>
where
    K: Ord + Hash + Copy + Send + Sync,
    T: Send,
    F: Fn(&Matched<K>) -> Option<T> + Sync,
{
    if sends.len().max(recvs.len()) >= NO_GROUP as usize {
        return None;
    }
    let limit = (sends.len() / 16).max(64);
    let mut ids: FxHashMap<K, u32> = FxHashMap::default();
    let mut last: Option<(K, u32)> = None;
    let mut send_id = Vec::with_capacity(sends.len());
    for s in sends {
        let id = match last {
            Some((k, id)) if k == s.0 => id,
            _ => {
                let n = ids.len() as u32;
                let id = *ids.entry(s.0).or_insert(n);
                if ids.len() > limit {
                    return None;
                }
                last = Some((s.0, id));
                id
            }
        };
        send_id.push(id);
    }
    // a receive whose key no send has stays unmatched
    last = None;
    let mut recv_id = Vec::with_capacity(recvs.len());
    for r in recvs {
        let id = match last {
            Some((k, id)) if k == r.0 => id,
            _ => {
                let id = ids.get(&r.0).copied().unwrap_or(NO_GROUP);
                last = Some((r.0, id));
                id
            }
        };
        recv_id.push(id);
    }
    let keys = ids.len();
    let (s_at, mut s_idx) = group(send_id.iter().copied(), keys);
    let (r_at, mut r_idx) = group(recv_id.iter().copied(), keys);
    drop((send_id, recv_id));
    let unmatched = (recvs.len() - r_idx.len()) as u64;
    let mut by_key: Vec<(K, u32)> = ids.into_iter().collect();
    by_key.sort_unstable_by_key(|k| k.0);
    let side = |v: &[(K, u64, u64)], i: u32| {
        let e = &v[i as usize];
        (e.1, e.2)
    };
    let (out, left) = pair_groups(
        &by_key,
        (&s_at, &mut s_idx),
        (&r_at, &mut r_idx),
        |i| side(sends, i),
        |i| side(recvs, i),
        f,
    );
    Some((out, unmatched + left))
}

/// The events grouped by their key's id, in the order of `ids` (the
/// events' ids, [`NO_GROUP`] for none): where each id's events start in
/// the indices (one entry more than `keys`), and the indices (`u32`: the
/// caller has fewer events), each id's in the order of `ids`: a counting
/// sort.
fn group(ids: impl Iterator<Item = u32> + Clone, keys: usize) -> (Vec<usize>, Vec<u32>) {
    let mut at = vec![0usize; keys + 1];
    for i in ids.clone().filter(|&i| i != NO_GROUP) {
        at[i as usize + 1] += 1;
    }
    for k in 0..keys {
        at[k + 1] += at[k];
    }
    let mut idx = vec![0u32; at[keys]];
    let mut next = at.clone();
    for (e, i) in ids.enumerate() {
        if i != NO_GROUP {
            idx[next[i as usize]] = e as u32;
            next[i as usize] += 1;
        }
    }
    (at, idx)
}

/// An event whose key no group has.
const NO_GROUP: u32 = u32::MAX;

/// Pairs the events of every group (a key), the keys in `order` (rising,
/// each with its group's id; `at` and `idx` as [`group`] gives them):
/// each group's sends and receives sorted by time where they are not (a
/// stable sort: events at one time keep their order), the `n`-th send with
/// the `n`-th receive, made into values by `f`, in key order (on all
/// threads with many pairs); `send(i)` and `recv(i)` give event `i`'s time
/// and bytes. Returns the values and the events left unpaired or left out
/// by `f`.
fn pair_groups<K, T, F>(
    order: &[(K, u32)],
    (s_at, s_idx): (&[usize], &mut [u32]),
    (r_at, r_idx): (&[usize], &mut [u32]),
    send: impl Fn(u32) -> (u64, u64) + Sync,
    recv: impl Fn(u32) -> (u64, u64) + Sync,
    f: &F,
) -> (Vec<T>, u64)
where
    K: Copy + Send + Sync,
    T: Send,
    F: Fn(&Matched<K>) -> Option<T> + Sync,
{
    let mut s_of = split_at_bounds(s_idx, s_at);
    let mut r_of = split_at_bounds(r_idx, r_at);
    let mut unmatched = 0u64;
    // each key's pairs get their slots in `out`, in key order
    let total: usize = s_of
        .iter()
        .zip(&r_of)
        .map(|(s, r)| s.len().min(r.len()))
        .sum();
    let mut out: Vec<T> = Vec::with_capacity(total);
    let kept: Vec<(usize, usize)> = {
        type Job<'a, K, T> = (
            K,
            &'a mut [u32],
            &'a mut [u32],
            &'a mut [MaybeUninit<T>],
            usize,
        );
        let mut rest = &mut out.spare_capacity_mut()[..total];
        let mut jobs: Vec<Job<'_, K, T>> = Vec::with_capacity(order.len());
        let mut at = 0;
        for &(key, id) in order {
            let s = std::mem::take(&mut s_of[id as usize]);
            let r = std::mem::take(&mut r_of[id as usize]);
            unmatched += s.len().abs_diff(r.len()) as u64;
            let n = s.len().min(r.len());
            let (slots, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            jobs.push((key, s, r, slots, at));
            at += n;
        }
        // a key's pairs into its slots: those `f` keeps first, how many
        let pair = |(key, s, r, slots, at): Job<'_, K, T>| -> (usize, usize) {
            in_time_order(s, r, &send, &recv);
            let mut k = 0;
            for (&si, &ri) in s.iter().zip(r.iter()) {
                let (a, b) = (send(si), recv(ri));
                let m = Matched {
                    key,
                    send_time: a.0,
                    send_bytes: a.1,
                    recv_time: b.0,
                    recv_bytes: b.1,
                };
                if let Some(t) = f(&m) {
                    slots[k].write(t);
                    k += 1;
                }
            }
            (at, k)
        };
        if total >= PARALLEL_PAIRS {
            use rayon::prelude::*;
            jobs.into_par_iter().map(pair).collect()
        } else {
            jobs.into_iter().map(pair).collect()
        }
    };
    // SAFETY: each key wrote the first `k` of its slots `at..`, the keys
    // in rising order of `at`, apart and within `total`
    unsafe { close_up(&mut out, &kept) };
    unmatched += (total - out.len()) as u64;
    (out, unmatched)
}

/// A group's sends and receives (event numbers) each in time order where
/// they are not: a stable sort, events of one key at one time keep their
/// file order.
fn in_time_order(
    s: &mut [u32],
    r: &mut [u32],
    send: impl Fn(u32) -> (u64, u64),
    recv: impl Fn(u32) -> (u64, u64),
) {
    if !s.is_sorted_by_key(|&i| send(i).0) {
        s.sort_by_key(|&i| send(i).0);
    }
    if !r.is_sorted_by_key(|&i| recv(i).0) {
        r.sort_by_key(|&i| recv(i).0);
    }
}

/// A send's partner in [`pair_partners`]: none.
const NO_PARTNER: u64 = u64::MAX;

/// The pairs of every group as [`pair_groups`] makes them (the keys in
/// `order`, `at` and `idx` as [`group`] gives them, on all threads with
/// many pairs), given by their events rather than made into values: for
/// each of the `sends` send events, the receive it pairs with in the high
/// 32 bits and its group's place in `order` in the low, or [`NO_PARTNER`].
/// Returns them, how many pairs there are and the events left unpaired.
fn pair_partners<K: Sync>(
    order: &[(K, u32)],
    (s_at, s_idx): (&[usize], &mut [u32]),
    (r_at, r_idx): (&[usize], &mut [u32]),
    sends: usize,
    send: impl Fn(u32) -> (u64, u64) + Sync,
    recv: impl Fn(u32) -> (u64, u64) + Sync,
) -> (Vec<std::sync::atomic::AtomicU64>, usize, u64) {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    let mut s_of = split_at_bounds(s_idx, s_at);
    let mut r_of = split_at_bounds(r_idx, r_at);
    let partner: Vec<AtomicU64> = (0..sends).map(|_| AtomicU64::new(NO_PARTNER)).collect();
    let (mut unmatched, mut total) = (0u64, 0usize);
    let mut jobs: Vec<(u32, &mut [u32], &mut [u32])> = Vec::with_capacity(order.len());
    for (place, &(_, id)) in order.iter().enumerate() {
        let s = std::mem::take(&mut s_of[id as usize]);
        let r = std::mem::take(&mut r_of[id as usize]);
        unmatched += s.len().abs_diff(r.len()) as u64;
        total += s.len().min(r.len());
        jobs.push((place as u32, s, r));
    }
    let pair = |(place, s, r): (u32, &mut [u32], &mut [u32])| {
        in_time_order(s, r, &send, &recv);
        for (&si, &ri) in s.iter().zip(r.iter()) {
            // each send event lies in one group: written once
            partner[si as usize].store(u64::from(ri) << 32 | u64::from(place), Ordering::Relaxed);
        }
    };
    if total >= PARALLEL_PAIRS {
        jobs.into_par_iter().for_each(pair);
    } else {
        jobs.into_iter().for_each(pair);
    }
    (partner, total, unmatched)
}

/// Gives `out` the values its parts wrote into its spare capacity: part
/// `(at, k)` wrote slots `at..at + k` (indices of `out`, from its length
/// on); each part is moved up against the one before it (the first against
/// `out`'s values), in order, and the length set.
///
/// # Safety
/// Every part's slots were written; the parts come in rising order of
/// `at`, apart, at or after `out.len()`, within the capacity.
unsafe fn close_up<T>(out: &mut Vec<T>, parts: &[(usize, usize)]) {
    let base = out.as_mut_ptr();
    let mut len = out.len();
    for &(at, k) in parts {
        debug_assert!(at >= len);
        if at != len {
            // SAFETY: `at..at + k` was written and lies at or after
            // `len..len + k`; `copy` allows the two to overlap, and what
            // it leaves behind is not read again
            unsafe { std::ptr::copy(base.add(at), base.add(len), k) };
        }
        len += k;
    }
    // SAFETY: `0..len` now holds written values, moved up in order
    unsafe { out.set_len(len) };
}

/// Appends to `out` the values `f` makes of `from..end`, taken from `end`
/// down, on all threads where `parallel` (written in place, in chunks of
/// [`FILTER_CHUNK`], as [`par_filter_map`] does); `out` has room for
/// `end - from` more.
fn extend_down<T: Send>(
    out: &mut Vec<T>,
    from: usize,
    end: usize,
    parallel: bool,
    f: impl Fn(usize) -> Option<T> + Sync,
) {
    use rayon::prelude::*;
    let len = out.len();
    let n = end - from;
    assert!(out.capacity() - len >= n, "room for the values");
    let done: Vec<(usize, usize)> = {
        let slots = &mut out.spare_capacity_mut()[..n];
        let job = |(c, slots): (usize, &mut [MaybeUninit<T>])| {
            // slot `j` of chunk `c`: index `end - 1 - (c * FILTER_CHUNK + j)`
            let top = end - c * FILTER_CHUNK;
            let mut k = 0;
            for i in (top - slots.len()..top).rev() {
                if let Some(t) = f(i) {
                    slots[k].write(t);
                    k += 1;
                }
            }
            (len + c * FILTER_CHUNK, k)
        };
        if parallel {
            slots
                .par_chunks_mut(FILTER_CHUNK)
                .enumerate()
                .map(job)
                .collect()
        } else {
            slots
                .chunks_mut(FILTER_CHUNK)
                .enumerate()
                .map(job)
                .collect()
        }
    };
    // SAFETY: chunk `c` wrote the first `k` of its slots, from
    // `len + c * FILTER_CHUNK`, the chunks in rising order, apart and
    // within the room asserted
    unsafe { close_up(out, &done) };
}

/// Events handed to [`par_filter_map`]'s tasks at a time.
const FILTER_CHUNK: usize = 1 << 14;

/// The events of `parts`, one after the other, filtered and mapped by `f`
/// on all threads, in order, into one vector written in place (rayon's
/// `filter_map(..).collect()` gathers a list of pieces and copies them: at
/// 1 M events it took three times as long; and the parts need not be
/// copied into one first). Each task has a state of its own from `init`
/// (a lookup's cache).
pub fn par_filter_map<E, T, S>(
    parts: &[&[E]],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &E) -> Option<T> + Sync,
) -> Vec<T>
where
    E: Sync,
    T: Send,
{
    use rayon::prelude::*;
    type Job<'a, E, T> = (&'a mut [MaybeUninit<T>], &'a [E], usize);
    let n: usize = parts.iter().map(|p| p.len()).sum();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let done: Vec<(usize, usize)> = {
        let mut rest = &mut out.spare_capacity_mut()[..n];
        let mut jobs: Vec<Job<'_, E, T>> = Vec::new();
        let mut at = 0;
        for c in parts.iter().flat_map(|p| p.chunks(FILTER_CHUNK)) {
            let (slots, tail) = std::mem::take(&mut rest).split_at_mut(c.len());
            rest = tail;
            jobs.push((slots, c, at));
            at += c.len();
        }
        jobs.into_par_iter()
            .map(|(slots, events, at)| {
                let mut state = init();
                let mut k = 0;
                for e in events {
                    if let Some(t) = f(&mut state, e) {
                        slots[k].write(t);
                        k += 1;
                    }
                }
                (at, k)
            })
            .collect()
    };
    // SAFETY: each chunk wrote the first `k` of its slots `at..`, the
    // chunks in order, apart and within `n`
    unsafe { close_up(&mut out, &done) };
    out
}

/// Times kept of the last events of a side, to know the time of the last
/// matched one when the other side has fewer.
pub const TAIL: usize = 4;

/// One side (the sends or the receives) of one key, counted while a
/// stream reads it instead of kept: how many, the bytes of each in order
/// (run-length encoded: `(bytes, count)` runs, one run when every message
/// of the key has one size), how many came before a window's start and
/// before its end, and the times of the last [`TAIL`]. Events must come in
/// time order (a stream checks it), so the `n`-th counted is the `n`-th
/// [`match_in_order`] pairs, and two sides give the matched messages'
/// counts and bytes exactly ([`match_sides`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Side {
    pub n: u64,
    pub runs: Vec<(u64, u64)>,
    /// Events before the window's start.
    pub before: u64,
    /// Events before the window's end.
    pub before_end: u64,
    /// Time of event `i` at `tail[i % TAIL]`, for the last `TAIL`.
    pub tail: [u64; TAIL],
}

impl Side {
    /// Counts one event at `time` of `bytes`, with the window `[t0, t1)`.
    pub fn push(&mut self, time: u64, bytes: u64, (t0, t1): (u64, u64)) {
        match self.runs.last_mut() {
            Some((b, c)) if *b == bytes => *c += 1,
            _ => self.runs.push((bytes, 1)),
        }
        if time < t0 {
            self.before += 1;
        }
        if time < t1 {
            self.before_end += 1;
        }
        self.tail[(self.n % TAIL as u64) as usize] = time;
        self.n += 1;
    }

    /// The time of event `i`, when it is among the last [`TAIL`].
    fn time_of(&self, i: u64) -> Option<u64> {
        (i < self.n && self.n - i <= TAIL as u64).then(|| self.tail[(i % TAIL as u64) as usize])
    }
}

/// The messages two sides of a key make, as [`match_in_order`] pairs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Matched messages, and their bytes (the larger of the two sides').
    pub messages: u64,
    pub bytes: u64,
    /// Those sent in the window, and their bytes.
    pub in_window: u64,
    pub window_bytes: u64,
    /// The later of the last matched send's and receive's times.
    pub last: u64,
    /// Whether `last` is exact: false when a side has more than [`TAIL`]
    /// events past the last matched one (then `last` is the earliest time
    /// kept, a bound from above).
    pub last_exact: bool,
}

/// Pairs the sends and receives of one key: the matched messages and how
/// many sends or receives found no partner.
pub fn match_sides(sends: &Side, recvs: &Side) -> (Tally, u64) {
    let m = sends.n.min(recvs.n);
    let unmatched = sends.n - m + recvs.n - m;
    if m == 0 {
        let none = Tally {
            last_exact: true,
            ..Tally::default()
        };
        return (none, unmatched);
    }
    let (a, b) = (sends.before.min(m), sends.before_end.min(m));
    let mut exact = true;
    let mut last = 0;
    for s in [sends, recvs] {
        match s.time_of(m - 1) {
            Some(t) => last = last.max(t),
            None => {
                exact = false;
                let kept = s.tail[..(s.n as usize).min(TAIL)].iter().min();
                last = last.max(kept.copied().unwrap_or(0));
            }
        }
    }
    (
        Tally {
            messages: m,
            bytes: max_bytes(&sends.runs, &recvs.runs, 0, m),
            in_window: b.saturating_sub(a),
            window_bytes: if b > a {
                max_bytes(&sends.runs, &recvs.runs, a, b)
            } else {
                0
            },
            last,
            last_exact: exact,
        },
        unmatched,
    )
}

/// The sum over events `lo..hi` of the larger of the two sides' bytes
/// (saturating), walking both run lists.
fn max_bytes(x: &[(u64, u64)], y: &[(u64, u64)], lo: u64, hi: u64) -> u64 {
    let (mut i, mut j) = (0usize, 0usize);
    // events left in the current run of each side
    let (mut xl, mut yl) = (x.first().map_or(0, |r| r.1), y.first().map_or(0, |r| r.1));
    let mut at = 0u64;
    let mut sum = 0u64;
    while at < hi && i < x.len() && j < y.len() {
        let step = xl.min(yl).min(hi - at);
        let from = at.max(lo);
        if at + step > from {
            let n = at + step - from;
            sum = sum.saturating_add(x[i].0.max(y[j].0).saturating_mul(n));
        }
        at += step;
        xl -= step;
        yl -= step;
        if xl == 0 {
            i += 1;
            xl = x.get(i).map_or(0, |r| r.1);
        }
        if yl == 0 {
            j += 1;
            yl = y.get(j).map_or(0, |r| r.1);
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_per_key() {
        let sends = vec![
            ((0, 1), 10, 8),
            ((0, 1), 5, 4),
            ((1, 0), 7, 2),
            ((2, 0), 1, 1),
        ];
        let recvs = vec![
            ((0, 1), 20, 8),
            ((0, 1), 9, 4),
            ((1, 0), 8, 2),
            ((3, 0), 2, 1),
        ];
        let (m, u) = match_in_order(sends, recvs);
        assert_eq!(u, 2);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].send_time, m[0].recv_time), (5, 9));
        assert_eq!((m[1].send_time, m[1].recv_time), (10, 20));
        assert_eq!(m[2].key, (1, 0));
    }

    /// Grouping by key gives what sorting gives, pairs in the same order:
    /// few and many keys, times out of order and tied, keys on one side
    /// only.
    #[test]
    fn grouping_by_key_equals_sorting() {
        let mut rng = crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let keys = 1 + rng.next() % 12;
            let n = |rng: &mut crate::test_rng::XorShift| (rng.next() % 3000) as usize;
            let (ns, nr) = (n(&mut rng), n(&mut rng));
            let spread = 1 + rng.next() % 50;
            let mut ev = |len: usize| -> Vec<((u32, u32), u64, u64)> {
                let mut t = 0u64;
                (0..len)
                    .map(|_| {
                        // mostly rising times, some going back, many ties
                        t = (t + rng.next() % 3).saturating_sub(rng.next() % spread / 40);
                        let k = (rng.next() % keys) as u32;
                        ((k, k % 3), t, rng.next() % 4)
                    })
                    .collect()
            };
            let sends = ev(ns);
            let recvs = ev(nr);
            let sorted = match_sorted(sends.clone(), recvs.clone());
            let grouped = match_by_key(&sends, &recvs, &|m| Some(*m));
            if ns / 16 >= 64 || keys <= 64 {
                assert_eq!(grouped.as_ref(), Some(&sorted), "round {round}");
            }
            assert_eq!(match_in_order(sends, recvs), sorted, "round {round}");
        }
        // many keys: left to sorting
        let many: Vec<((u32, u32), u64, u64)> = (0..5000).map(|i| ((i, 0), 1, 1)).collect();
        assert!(match_by_key(&many, &many, &|m| Some(*m)).is_none());
    }

    /// Pairs made into values as they are matched, some left out, give
    /// the pairs of [`match_in_order`] without those, in order, with the
    /// left out counted as unmatched: few keys (paired by key, on several
    /// threads above `PARALLEL_PAIRS`) and many (sorted), on 1 and 3
    /// threads.
    #[test]
    fn pairs_made_into_values_keep_order_and_count_the_left_out() {
        let mut rng = crate::test_rng::XorShift(0x51ed_270b_7a3e_1f09);
        for (keys, n) in [
            (7u64, 1000usize),
            (40, PARALLEL_PAIRS * 3),
            (90_000, 100_000),
        ] {
            let mut ev = |len: usize| -> Vec<((u32, u32), u64, u64)> {
                let mut t = 0u64;
                (0..len)
                    .map(|_| {
                        t = (t + rng.next() % 3).saturating_sub(rng.next() % 2);
                        let k = (rng.next() % keys) as u32;
                        ((k, k % 5), t, rng.next() % 4)
                    })
                    .collect()
            };
            let (sends, recvs) = (ev(n), ev(n + n / 7));
            let (all, left) = match_in_order(sends.clone(), recvs.clone());
            // every third key's pairs and every pair of 3 bytes left out
            let keep = |m: &Matched<(u32, u32)>| m.key.0 % 3 != 1 && m.send_bytes != 3;
            let want: Vec<(u32, u64, u64)> = all
                .iter()
                .filter(|m| keep(m))
                .map(|m| (m.key.0, m.send_time, m.recv_time))
                .collect();
            let dropped = (all.len() - want.len()) as u64;
            for threads in [1, 3] {
                let pool = crate::test_pool::pool(threads);
                let (got, got_left) = pool.install(|| {
                    match_into(sends.clone(), recvs.clone(), |m| {
                        keep(m).then_some((m.key.0, m.send_time, m.recv_time))
                    })
                });
                assert_eq!(got, want, "{keys} keys, {threads} threads");
                assert_eq!(got_left, left + dropped, "{keys} keys, {threads} threads");
            }
        }
    }

    /// Parts of any size (empty ones, ones across several chunks), some
    /// events left out (whole chunks too): the values of the events kept,
    /// in order, as a plain `filter_map` gives them, on 1 and 3 threads;
    /// each task's state starts afresh.
    #[test]
    fn filtering_parts_in_parallel_keeps_their_order() {
        let sizes = [
            0usize,
            5,
            FILTER_CHUNK * 2 + 17,
            0,
            FILTER_CHUNK - 1,
            3 * FILTER_CHUNK,
        ];
        let mut next = 0u64;
        let parts: Vec<Vec<u64>> = sizes
            .iter()
            .map(|&n| {
                next += n as u64;
                (next - n as u64..next).collect()
            })
            .collect();
        let slices: Vec<&[u64]> = parts.iter().map(|p| p.as_slice()).collect();
        // every event of a third of the chunks, and every seventh, left out
        let keep = |x: u64| (x / FILTER_CHUNK as u64) % 3 != 2 && !x.is_multiple_of(7);
        let want: Vec<(u64, u64)> = parts
            .iter()
            .flatten()
            .filter(|&&x| keep(x))
            .map(|&x| (x, x * 3))
            .collect();
        for threads in [1, 3] {
            let pool = crate::test_pool::pool(threads);
            let got = pool.install(|| {
                par_filter_map(
                    &slices,
                    || 0u64,
                    |seen, &x| {
                        *seen += 1;
                        // a task's state never outlives its chunk
                        assert!(*seen as usize <= FILTER_CHUNK);
                        keep(x).then_some((x, x * 3))
                    },
                )
            });
            assert_eq!(got, want, "{threads} threads");
        }
        assert!(par_filter_map::<u64, u64, ()>(&[], || (), |_, &x| Some(x)).is_empty());
    }

    /// Counted sides give what pairing the events gives: the count and
    /// bytes of the matched messages, those sent in a window, and the time
    /// of the last matched (random keys, sizes in runs, surpluses on
    /// either side, windows anywhere).
    #[test]
    fn counted_sides_give_what_pairing_gives() {
        let mut rng = crate::test_rng::XorShift(0x2545f4914f6cdd1d);
        for round in 0..400 {
            let ns = rng.next() % 40;
            let nr = rng.next() % 40;
            let sizes = 1 + rng.next() % 4;
            let ev = |n: u64, rng: &mut crate::test_rng::XorShift| {
                let mut t = 0u64;
                (0..n)
                    .map(|_| {
                        t += rng.next() % 5;
                        (t, 8 * (rng.next() % sizes))
                    })
                    .collect::<Vec<_>>()
            };
            let sends = ev(ns, &mut rng);
            let recvs = ev(nr, &mut rng);
            let t0 = rng.next() % 60;
            let t1 = t0 + rng.next() % 60;
            let (mut s, mut r) = (Side::default(), Side::default());
            for &(t, b) in &sends {
                s.push(t, b, (t0, t1));
            }
            for &(t, b) in &recvs {
                r.push(t, b, (t0, t1));
            }
            let (tally, left) = match_sides(&s, &r);
            let (pairs, want_left) = match_in_order(
                sends.iter().map(|&(t, b)| (0u8, t, b)).collect(),
                recvs.iter().map(|&(t, b)| (0u8, t, b)).collect(),
            );
            assert_eq!(left, want_left, "{round}");
            assert_eq!(tally.messages, pairs.len() as u64, "{round}");
            let bytes = |m: &Matched<u8>| m.send_bytes.max(m.recv_bytes);
            assert_eq!(tally.bytes, pairs.iter().map(bytes).sum::<u64>(), "{round}");
            let win: Vec<_> = pairs
                .iter()
                .filter(|m| m.send_time >= t0 && m.send_time < t1)
                .collect();
            assert_eq!(tally.in_window, win.len() as u64, "{round}");
            assert_eq!(
                tally.window_bytes,
                win.iter().map(|m| bytes(m)).sum::<u64>(),
                "{round}"
            );
            let last = pairs
                .iter()
                .map(|m| m.send_time.max(m.recv_time))
                .max()
                .unwrap_or(0);
            if tally.last_exact {
                assert_eq!(tally.last, last, "{round}");
            } else {
                assert!(tally.last >= last, "{round} {tally:?} {last} {s:?} {r:?}");
                assert!(ns.abs_diff(nr) >= TAIL as u64, "{round}");
            }
        }
    }
}
