//! Sends and receives kept by the part of the locations that read them (a
//! reading thread's). A part numbers its keys as its events come and keeps
//! an event in 16 bytes (its key's number, time, bytes up to 4 GiB), where
//! a list of `(key, time, bytes)` takes 32 with OTF2's key of 16 bytes; and
//! the keys are looked up on every reading thread rather than on one
//! afterwards.
//! [`match_parts`] numbers the parts' keys together, in key order, groups
//! the events by key and pairs them as [`super::match_in_order`] does.

use std::hash::Hash;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{
    Matched, NO_GROUP, NO_PARTNER, PARALLEL_PAIRS, extend_down, group, match_into, pair_partners,
};

const SEND: usize = 0;
const RECV: usize = 1;

/// One side's events of a part, column by column, in the order they came.
#[derive(Default)]
struct Column {
    /// The key's number in the part (in [`match_parts`]: in all parts).
    key: Vec<u32>,
    time: Vec<u64>,
    /// The bytes, [`BIG`] for those in `big` (at the event's place).
    bytes: Vec<u32>,
    big: FxHashMap<usize, u64>,
}

/// The bytes of an event in [`Column::big`].
const BIG: u32 = u32::MAX;

impl Column {
    fn len(&self) -> usize {
        self.time.len()
    }

    #[inline]
    fn push(&mut self, key: u32, time: u64, bytes: u64) {
        match u32::try_from(bytes) {
            Ok(b) if b != BIG => self.bytes.push(b),
            _ => {
                self.big.insert(self.bytes.len(), bytes);
                self.bytes.push(BIG);
            }
        }
        self.key.push(key);
        self.time.push(time);
    }

    /// The time and bytes of event `i`.
    #[inline]
    fn event(&self, i: usize) -> (u64, u64) {
        let b = match self.bytes[i] {
            BIG => self.big.get(&i).copied().unwrap_or(u64::from(BIG)),
            b => u64::from(b),
        };
        (self.time[i], b)
    }
}

/// The sends and receives of a part of the locations, in the order they
/// came, each with its key numbered within the part.
pub struct KeyedEvents<K> {
    ids: FxHashMap<K, u32>,
    /// The part's keys, by number.
    keys: Vec<K>,
    /// At most this many keys are numbered (`u32` numbers, one kept apart
    /// as [`NO_GROUP`]; fewer in a test).
    max_keys: usize,
    /// The last key of each side and its number: a location's sends (and
    /// receives) mostly go to one key after another.
    last: [Option<(K, u32)>; 2],
    sides: [Column; 2],
    /// Each side's events whose key came after `max_keys` others, with
    /// their key: every event of such a key is here, none in `sides`.
    beyond: [Vec<(K, u64, u64)>; 2],
}

impl<K: Hash + Eq + Copy> Default for KeyedEvents<K> {
    fn default() -> Self {
        Self::with_max_keys(NO_GROUP as usize)
    }
}

impl<K: Hash + Eq + Copy> KeyedEvents<K> {
    pub fn new() -> Self {
        Self::default()
    }

    fn with_max_keys(max_keys: usize) -> Self {
        KeyedEvents {
            ids: FxHashMap::default(),
            keys: Vec::new(),
            max_keys,
            last: [None, None],
            sides: [Column::default(), Column::default()],
            beyond: [Vec::new(), Vec::new()],
        }
    }

    /// The events of two lists, in their order.
    pub fn from_lists(sends: Vec<(K, u64, u64)>, recvs: Vec<(K, u64, u64)>) -> Self {
        let mut e = Self::new();
        for (k, t, b) in sends {
            e.send(k, t, b);
        }
        for (k, t, b) in recvs {
            e.recv(k, t, b);
        }
        e
    }

    /// Keeps an event of `side`.
    #[inline]
    fn push(&mut self, side: usize, key: K, time: u64, bytes: u64) {
        let id = match self.last[side] {
            Some((k, id)) if k == key => id,
            _ => {
                let id = match self.ids.get(&key) {
                    Some(&id) => id,
                    None if self.keys.len() < self.max_keys => {
                        let id = self.keys.len() as u32;
                        self.ids.insert(key, id);
                        self.keys.push(key);
                        id
                    }
                    None => {
                        self.beyond[side].push((key, time, bytes));
                        return;
                    }
                };
                self.last[side] = Some((key, id));
                id
            }
        };
        self.sides[side].push(id, time, bytes);
    }

    /// Keeps a send of `bytes` at `time`.
    #[inline]
    pub fn send(&mut self, key: K, time: u64, bytes: u64) {
        self.push(SEND, key, time, bytes);
    }

    /// Keeps a receive of `bytes` at `time`.
    #[inline]
    pub fn recv(&mut self, key: K, time: u64, bytes: u64) {
        self.push(RECV, key, time, bytes);
    }

    /// How many sends and receives the part keeps.
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let n = |s: usize| self.sides[s].len() + self.beyond[s].len();
        (n(SEND), n(RECV))
    }

    /// The part's sends and receives as lists; each key's events in their
    /// order.
    fn into_lists(self) -> [Vec<(K, u64, u64)>; 2] {
        let KeyedEvents {
            keys,
            sides,
            beyond,
            ..
        } = self;
        let mut out = [Vec::new(), Vec::new()];
        for ((c, rest), o) in sides.into_iter().zip(beyond).zip(&mut out) {
            o.reserve_exact(c.len() + rest.len());
            o.extend(c.key.iter().enumerate().map(|(i, &k)| {
                let (t, b) = c.event(i);
                (keys[k as usize], t, b)
            }));
            o.extend(rest);
        }
        out
    }
}

/// Pairs the sends and receives of `parts` (in order: the events of a part
/// come after those of the parts before it) as
/// [`super::match_into`] pairs the lists of their events: each pair made
/// into a `T` by `f`, with the events left unpaired or left out by `f`
/// counted. The values come in no set order (the model sorts its
/// messages): made from the last send back, the sends given back behind
/// them.
pub fn match_parts<K, T, F>(parts: Vec<KeyedEvents<K>>, f: F) -> (Vec<T>, u64)
where
    K: Ord + Hash + Copy + Send + Sync,
    T: Send,
    F: Fn(&Matched<K>) -> Option<T> + Sync,
{
    match_parts_by(parts, f, STRETCH)
}

/// The sends [`match_parts`] makes values of at a time before it gives
/// them back (at least; a thirty-second of them where more).
const STRETCH: usize = 1 << 16;

/// [`match_parts`], the values made at least `stretch` sends at a time.
fn match_parts_by<K, T, F>(mut parts: Vec<KeyedEvents<K>>, f: F, stretch: usize) -> (Vec<T>, u64)
where
    K: Ord + Hash + Copy + Send + Sync,
    T: Send,
    F: Fn(&Matched<K>) -> Option<T> + Sync,
{
    let sum = |n: &dyn Fn(&KeyedEvents<K>) -> usize| parts.iter().map(n).sum::<usize>();
    let most = sum(&|p| p.sides[SEND].len())
        .max(sum(&|p| p.sides[RECV].len()))
        .max(sum(&|p| p.keys.len()));
    let beyond = parts.iter().any(|p| p.beyond.iter().any(|b| !b.is_empty()));
    if most >= NO_GROUP as usize || beyond {
        // more than `u32` numbers: the lists, paired by sorting
        let (mut sends, mut recvs) = (Vec::new(), Vec::new());
        for p in parts {
            let [s, r] = p.into_lists();
            sends.extend(s);
            recvs.extend(r);
        }
        return match_into(sends, recvs, f);
    }
    // every part's keys numbered together, in key order
    let mut all: Vec<(K, u32, u32)> = parts
        .iter()
        .enumerate()
        .flat_map(|(p, e)| {
            e.keys
                .iter()
                .enumerate()
                .map(move |(i, &k)| (k, p as u32, i as u32))
        })
        .collect();
    all.par_sort_unstable_by_key(|a| a.0);
    let mut number: Vec<Vec<u32>> = parts.iter().map(|p| vec![0; p.keys.len()]).collect();
    let mut order: Vec<(K, u32)> = Vec::new();
    for (k, p, i) in all {
        if order.last().is_none_or(|l| l.0 != k) {
            order.push((k, order.len() as u32));
        }
        number[p as usize][i as usize] = (order.len() - 1) as u32;
    }
    parts.par_iter_mut().zip(&number).for_each(|(p, num)| {
        p.ids = FxHashMap::default();
        p.keys = Vec::new();
        for c in &mut p.sides {
            c.key.par_iter_mut().for_each(|k| *k = num[*k as usize]);
        }
    });
    drop(number);
    let ids = |side: usize| {
        parts
            .iter()
            .flat_map(move |p| p.sides[side].key.iter().copied())
    };
    let (s_at, mut s_idx) = group(ids(SEND), order.len());
    let (r_at, mut r_idx) = group(ids(RECV), order.len());
    // the sides apart, the keys' columns done with (a tenth of what the
    // values take)
    let (mut sends, recvs): (Vec<Column>, Vec<Column>) = parts
        .into_iter()
        .map(|p| {
            let [mut s, mut r] = p.sides;
            s.key = Vec::new();
            r.key = Vec::new();
            (s, r)
        })
        .unzip();
    crate::memory::return_freed_memory();
    // event `i` of a side: the part where it lies, then its place there
    let starts = |cols: &[Column]| -> Vec<usize> {
        let mut at = 0;
        cols.iter()
            .map(|c| {
                let s = at;
                at += c.len();
                s
            })
            .collect()
    };
    let (s_start, r_start) = (starts(&sends), starts(&recvs));
    let event = |cols: &[Column], start: &[usize], i: u32| {
        let i = i as usize;
        let p = start.partition_point(|&s| s <= i) - 1;
        cols[p].event(i - start[p])
    };
    let n_sends = s_start
        .last()
        .map_or(0, |&s| s + sends.last().map_or(0, Column::len));
    let (mut partner, total, mut unmatched) = pair_partners(
        &order,
        (&s_at, &mut s_idx),
        (&r_at, &mut r_idx),
        n_sends,
        |i| event(&sends, &s_start, i),
        |i| event(&recvs, &r_start, i),
    );
    drop((s_at, s_idx, r_at, r_idx));
    // the values made send by send from the last one, a stretch at a
    // time, each stretch's sends (their times, bytes and partners)
    // given back behind it: the values grow while the sends shrink, where
    // they were all held at once before (OTF2, 150 MB on 16 threads: the
    // read's peak). Room for a value a send: the pages past the values
    // are never touched.
    let mut out: Vec<T> = Vec::with_capacity(n_sends);
    let stretch = (n_sends / 32).max(stretch).max(1);
    let mut give_back = crate::memory::GiveBack::every(4 * stretch);
    for p in (0..sends.len()).rev() {
        let mut end = sends[p].len();
        while end > 0 {
            let from = end.saturating_sub(stretch);
            let (col, base) = (&sends[p], s_start[p]);
            let links = &partner;
            let make = |i: usize| -> Option<T> {
                let l = links[base + i].load(std::sync::atomic::Ordering::Relaxed);
                if l == NO_PARTNER {
                    return None;
                }
                let (ri, place) = ((l >> 32) as u32, l as u32 as usize);
                let (send_time, send_bytes) = col.event(i);
                let (recv_time, recv_bytes) = event(&recvs, &r_start, ri);
                f(&Matched {
                    key: order[place].0,
                    send_time,
                    send_bytes,
                    recv_time,
                    recv_bytes,
                })
            };
            extend_down(&mut out, from, end, total >= PARALLEL_PAIRS, make);
            let c = &mut sends[p];
            c.time.truncate(from);
            c.time.shrink_to_fit();
            c.bytes.truncate(from);
            c.bytes.shrink_to_fit();
            if !c.big.is_empty() {
                c.big.retain(|&i, _| i < from);
            }
            partner.truncate(base + from);
            partner.shrink_to_fit();
            give_back.freed(end - from);
            end = from;
        }
    }
    unmatched += (total - out.len()) as u64;
    out.shrink_to_fit();
    (out, unmatched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::matching::match_into;
    use crate::test_rng::XorShift;

    /// Parts (some empty, keys shared between parts and sides, a key on
    /// one side only, times out of order and tied, some keys beyond a
    /// part's numbers) pair as the lists of all their events do, with the
    /// same values and the same count left, on 1 and 3 threads, the
    /// values made a few sends at a time or all at once.
    #[test]
    fn parts_pair_as_the_lists_of_their_events() {
        let mut rng = XorShift(0x6a09_e667_f3bc_c908);
        for round in 0..200 {
            let nparts = 1 + (rng.next() % 5) as usize;
            let keys = 1 + rng.next() % if round % 4 == 0 { 3000 } else { 20 };
            let max_keys = if round % 5 == 1 {
                (rng.next() % 8) as usize
            } else {
                NO_GROUP as usize
            };
            let mut parts = Vec::new();
            let (mut sends, mut recvs) = (Vec::new(), Vec::new());
            for _ in 0..nparts {
                let mut p = KeyedEvents::with_max_keys(max_keys);
                // now and then enough pairs to make them on all threads
                let n = if round % 50 == 3 {
                    40_000
                } else if rng.next().is_multiple_of(4) {
                    0
                } else {
                    rng.next() % 2000
                };
                let mut t = 0u64;
                for _ in 0..n {
                    t = (t + rng.next() % 3).saturating_sub(rng.next() % 2);
                    let k = (rng.next() % keys) as u32;
                    let key = (k % 7, k);
                    // some beyond 32 bits, one at the escape's value
                    let bytes = match rng.next() % 40 {
                        0 => u64::from(BIG),
                        1 => (1 << 40) + rng.next() % 3,
                        b => b % 5,
                    };
                    // keys above 3 / 4 of the range are never received
                    if rng.next().is_multiple_of(2) {
                        p.send(key, t, bytes);
                        sends.push((key, t, bytes));
                    } else if u64::from(k) < keys * 3 / 4 {
                        p.recv(key, t, bytes);
                        recvs.push((key, t, bytes));
                    }
                }
                parts.push(p);
            }
            assert_eq!(
                parts.iter().map(|p| p.counts().0).sum::<usize>(),
                sends.len()
            );
            // pairs of 4 bytes left out
            let f = |m: &Matched<(u32, u32)>| {
                (m.send_bytes != 4).then_some((m.key, m.send_time, m.recv_time, m.recv_bytes))
            };
            let (mut want, left) = match_into(sends, recvs, f);
            let threads = if round % 2 == 0 { 1 } else { 3 };
            // the values made a few sends at a time, or all at once
            let stretch = [1 + (rng.next() % 50) as usize, STRETCH][round / 2 % 2];
            let (mut got, got_left) =
                crate::test_pool::pool(threads).install(|| match_parts_by(parts, f, stretch));
            assert_eq!(got_left, left, "round {round}");
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "round {round}");
        }
    }

    /// Past its numbers a part keeps each new key's events apart, and
    /// gives them back with the others, each key's in order.
    #[test]
    fn keys_beyond_a_parts_numbers_keep_their_events() {
        let mut p = KeyedEvents::with_max_keys(2);
        for (i, k) in [1u8, 2, 3, 1, 3, 4, 2].into_iter().enumerate() {
            p.send(k, i as u64, u64::from(k));
        }
        p.recv(3, 9, 3);
        p.recv(1, 8, 1);
        assert_eq!(p.counts(), (7, 2));
        let [s, r] = p.into_lists();
        let keys: Vec<u8> = s.iter().map(|e| e.0).collect();
        assert_eq!(keys, [1, 2, 1, 2, 3, 3, 4]);
        assert_eq!(s[4], (3, 2, 3));
        assert_eq!(s[5], (3, 4, 3));
        assert_eq!(r, [(1, 8, 1), (3, 9, 3)]);
    }
}
