//! Events and counter samples as a reader hands them over a block of
//! records at a time, each column in the fewest bytes its values need
//! ([`EventBlock`], [`CounterBlock`]).
//!
//! A raw event takes 24 bytes and its row in the model 20; a trace that is
//! mostly events (Extrae's hardware counters are events) held its raw
//! events, the model's size, beside the reading. In a block, times differ
//! from the block's first by less than 2^32 ns, the locations and the few
//! event types fit a byte or two, and values a few bytes from the block's
//! least: some 10 bytes an event.

use super::builder::{RawCounter, RawEvent};
use super::{LocId, Time};

/// A column of unsigned values in the narrowest of 1, 2, 4 or 8 bytes that
/// holds its largest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Narrow {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Narrow {
    /// `values`, none above `max`, in the width `max` needs.
    fn of(max: u64, values: impl Iterator<Item = u64>) -> Narrow {
        if max <= u64::from(u8::MAX) {
            Narrow::U8(values.map(|v| v as u8).collect())
        } else if max <= u64::from(u16::MAX) {
            Narrow::U16(values.map(|v| v as u16).collect())
        } else if max <= u64::from(u32::MAX) {
            Narrow::U32(values.map(|v| v as u32).collect())
        } else {
            Narrow::U64(values.collect())
        }
    }

    /// Calls `f` with each row and its value, in order.
    #[inline]
    fn each(&self, mut f: impl FnMut(usize, u64)) {
        match self {
            Narrow::U8(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, u64::from(x))),
            Narrow::U16(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, u64::from(x))),
            Narrow::U32(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, u64::from(x))),
            Narrow::U64(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, x)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Narrow::U8(v) => v.len(),
            Narrow::U16(v) => v.len(),
            Narrow::U32(v) => v.len(),
            Narrow::U64(v) => v.len(),
        }
    }

    /// Bytes a row.
    fn width(&self) -> usize {
        match self {
            Narrow::U8(_) => 1,
            Narrow::U16(_) => 2,
            Narrow::U32(_) => 4,
            Narrow::U64(_) => 8,
        }
    }

    /// The column with each value `f` of it, in the width the results need.
    fn mapped(&self, f: impl Fn(u64) -> u64) -> Narrow {
        let mut max = 0;
        self.each(|_, v| max = max.max(f(v)));
        let mut out = Vec::with_capacity(self.len());
        self.each(|_, v| out.push(f(v)));
        Narrow::of(max, out.into_iter())
    }
}

/// The events of one block of records, in their order, as columns: times
/// from the block's earliest, locations, indices into the block's event
/// types, and values from the block's least, each [`Narrow`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventBlock {
    time_base: Time,
    time: Narrow,
    loc: Narrow,
    /// The block's event types, in the order first met.
    kinds: Vec<u32>,
    kind: Narrow,
    value_base: i64,
    value: Narrow,
}

/// Event types looked up by a scan while a block has at most this many
/// (a map beyond).
const SCANNED_KINDS: usize = 32;

impl EventBlock {
    /// The block of `ev`.
    pub(crate) fn pack(ev: &[RawEvent]) -> EventBlock {
        EventBlock::pack_with(ev.len(), |i| {
            let e = &ev[i];
            (e.time, e.loc, e.kind, e.value)
        })
    }

    /// The block of `n` events, the `i`th's time, location, type and value
    /// `row(i)` (called a few times a row).
    pub(crate) fn pack_with(
        n: usize,
        row: impl Fn(usize) -> (Time, LocId, u32, i64),
    ) -> EventBlock {
        let (mut t0, mut t1) = (Time::MAX, 0);
        let (mut v0, mut v1) = (i64::MAX, i64::MIN);
        let mut loc_max = 0;
        for i in 0..n {
            let (t, l, _, v) = row(i);
            t0 = t0.min(t);
            t1 = t1.max(t);
            v0 = v0.min(v);
            v1 = v1.max(v);
            loc_max = loc_max.max(l);
        }
        if n == 0 {
            (t0, v0, v1) = (0, 0, 0);
        }
        // the event types: a scan of the few met so far, the last one hit
        // first (a block's events mostly come in runs of types)
        let mut kinds: Vec<u32> = Vec::new();
        let mut index: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let mut last = 0usize;
        let mut idx: Vec<u32> = Vec::with_capacity(n);
        for r in 0..n {
            let kind = row(r).2;
            let i = if kinds.get(last) == Some(&kind) {
                last
            } else if kinds.len() <= SCANNED_KINDS {
                match kinds.iter().position(|&k| k == kind) {
                    Some(i) => i,
                    None => {
                        kinds.push(kind);
                        if kinds.len() > SCANNED_KINDS {
                            index = kinds
                                .iter()
                                .enumerate()
                                .map(|(i, &k)| (k, i as u32))
                                .collect();
                        }
                        kinds.len() - 1
                    }
                }
            } else {
                let next = kinds.len() as u32;
                let i = *index.entry(kind).or_insert(next);
                if i == next {
                    kinds.push(kind);
                }
                i as usize
            };
            last = i;
            idx.push(i as u32);
        }
        let kind = Narrow::of(
            kinds.len().saturating_sub(1) as u64,
            idx.into_iter().map(u64::from),
        );
        EventBlock {
            time_base: t0,
            time: Narrow::of(t1 - t0, (0..n).map(|i| row(i).0 - t0)),
            loc: Narrow::of(u64::from(loc_max), (0..n).map(|i| u64::from(row(i).1))),
            kinds,
            kind,
            value_base: v0,
            value: Narrow::of(
                v1.wrapping_sub(v0) as u64,
                (0..n).map(|i| row(i).3.wrapping_sub(v0) as u64),
            ),
        }
    }

    /// Each event's time `f` of it, `f` never decreasing (the block's
    /// earliest stays its earliest).
    pub(crate) fn map_times(&mut self, f: impl Fn(Time) -> Time) {
        let (t0, base) = (self.time_base, f(self.time_base));
        self.time = self.time.mapped(|d| f(t0 + d) - base);
        self.time_base = base;
    }

    /// Calls `f` with each event's location and type, in order.
    pub(crate) fn each_location_kind(&self, mut f: impl FnMut(LocId, u32)) {
        let mut locs: Vec<LocId> = Vec::with_capacity(self.len());
        self.loc.each(|_, l| locs.push(l as LocId));
        let kinds = &self.kinds;
        self.kind.each(|i, k| f(locs[i], kinds[k as usize]));
    }

    pub(crate) fn len(&self) -> usize {
        self.time.len()
    }

    /// Bytes the block's rows take.
    pub(crate) fn row_bytes(&self) -> usize {
        self.len() * (self.time.width() + self.loc.width() + self.kind.width() + self.value.width())
    }

    /// Calls `f` with each event's location, in order.
    pub(crate) fn each_location(&self, mut f: impl FnMut(LocId)) {
        self.loc.each(|_, l| f(l as LocId));
    }

    /// The events, in order, into `out` (emptied first).
    pub(crate) fn unpack_into(&self, out: &mut Vec<RawEvent>) {
        out.clear();
        out.resize(
            self.len(),
            RawEvent {
                time: 0,
                loc: 0,
                kind: 0,
                value: 0,
            },
        );
        let t0 = self.time_base;
        self.time.each(|i, t| out[i].time = t0 + t);
        self.loc.each(|i, l| out[i].loc = l as LocId);
        let kinds = &self.kinds;
        self.kind.each(|i, k| out[i].kind = kinds[k as usize]);
        let v0 = self.value_base;
        self.value
            .each(|i, v| out[i].value = v0.wrapping_add(v as i64));
    }

    /// Each event's location `f` of it.
    pub(crate) fn map_locations(&mut self, f: impl Fn(LocId) -> LocId) {
        self.loc = self.loc.mapped(|l| u64::from(f(l as LocId)));
    }

    /// Each event's type `f` of it.
    pub(crate) fn map_kinds(&mut self, f: impl Fn(u32) -> u32) {
        for k in &mut self.kinds {
            *k = f(*k);
        }
    }
}

/// The counter samples of one block of records, in their order: an
/// [`EventBlock`] whose types are the counters and whose values are the
/// samples' where each is a whole number (within 2^53 of 0, not -0), else
/// their bits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CounterBlock {
    rows: EventBlock,
    /// The values are `f64` bits.
    floats: bool,
}

impl CounterBlock {
    /// The block of `v`.
    pub(crate) fn pack(v: &[RawCounter]) -> CounterBlock {
        CounterBlock::pack_with(v.len(), |i| {
            let c = &v[i];
            (c.time, c.loc, c.counter, c.value)
        })
    }

    /// The block of `n` samples, the `i`th's time, location, counter and
    /// value `row(i)` (called a few times a row).
    pub(crate) fn pack_with(
        n: usize,
        row: impl Fn(usize) -> (Time, LocId, u32, f64),
    ) -> CounterBlock {
        const WHOLE: f64 = (1u64 << 53) as f64;
        let floats = !(0..n).all(|i| {
            let v = row(i).3;
            v.fract() == 0.0 && v.abs() <= WHOLE && !(v == 0.0 && v.is_sign_negative())
        });
        let rows = EventBlock::pack_with(n, |i| {
            let (t, l, c, v) = row(i);
            (t, l, c, if floats { v.to_bits() as i64 } else { v as i64 })
        });
        CounterBlock { rows, floats }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Bytes the block's rows take.
    pub(crate) fn row_bytes(&self) -> usize {
        self.rows.row_bytes()
    }

    /// Calls `f` with each sample's location and counter, in order.
    pub(crate) fn each_location_counter(&self, f: impl FnMut(LocId, u32)) {
        self.rows.each_location_kind(f);
    }

    /// The samples, in order, into `out` (emptied first).
    pub(crate) fn unpack_into(&self, out: &mut Vec<RawCounter>, buf: &mut Vec<RawEvent>) {
        self.rows.unpack_into(buf);
        out.clear();
        let floats = self.floats;
        out.extend(buf.iter().map(|e| RawCounter {
            time: e.time,
            value: if floats {
                f64::from_bits(e.value as u64)
            } else {
                e.value as f64
            },
            loc: e.loc,
            counter: e.kind,
        }));
    }

    /// The samples' times, locations and counters (the rows' event
    /// types), to be mapped as an [`EventBlock`]'s; their values stay.
    pub(crate) fn rows_mut(&mut self) -> &mut EventBlock {
        &mut self.rows
    }
}

/// Records gathered into blocks as they come: a block is packed (`pack`)
/// each time `BLOCK` records are staged.
#[derive(Debug)]
pub(crate) struct Staged<T, B> {
    staging: Vec<T>,
    blocks: Vec<B>,
}

impl<T, B> Default for Staged<T, B> {
    fn default() -> Self {
        Staged {
            staging: Vec::new(),
            blocks: Vec::new(),
        }
    }
}

/// Records a block of [`Staged`] (some 1.5 MiB of staged records).
const BLOCK: usize = 1 << 16;

impl<T, B> Staged<T, B> {
    /// Adds `r`, packing the staged records with `pack` when they fill a
    /// block.
    #[inline]
    pub(crate) fn push(&mut self, r: T, pack: impl FnOnce(&[T]) -> B) {
        // (grown by doubling to the block's size, then reused: a trace of
        // a few records stages a few)
        self.staging.push(r);
        if self.staging.len() == BLOCK {
            self.blocks.push(pack(&self.staging));
            self.staging.clear();
        }
    }

    /// The records of `other` after these: the ones staged here packed
    /// into a block first, then `other`'s blocks (its staged ones packed
    /// last), each changed by `map`.
    pub(crate) fn append(
        &mut self,
        other: Staged<T, B>,
        pack: impl Fn(&[T]) -> B,
        map: impl Fn(&mut B),
    ) {
        if !self.staging.is_empty() {
            self.blocks.push(pack(&self.staging));
            self.staging = Vec::new();
        }
        let mut more = other.finish(&pack);
        more.iter_mut().for_each(&map);
        self.blocks.extend(more);
    }

    /// The blocks, the records still staged packed last.
    pub(crate) fn finish(mut self, pack: impl FnOnce(&[T]) -> B) -> Vec<B> {
        if !self.staging.is_empty() {
            self.blocks.push(pack(&self.staging));
        }
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::builder::GLOBAL;

    fn ev(time: Time, loc: LocId, kind: u32, value: i64) -> RawEvent {
        RawEvent {
            time,
            loc,
            kind,
            value,
        }
    }

    fn unpacked(b: &EventBlock) -> Vec<(Time, LocId, u32, i64)> {
        let mut out = Vec::new();
        b.unpack_into(&mut out);
        out.iter()
            .map(|e| (e.time, e.loc, e.kind, e.value))
            .collect()
    }

    fn plain(ev: &[RawEvent]) -> Vec<(Time, LocId, u32, i64)> {
        ev.iter()
            .map(|e| (e.time, e.loc, e.kind, e.value))
            .collect()
    }

    #[test]
    fn a_block_gives_back_its_events_in_the_fewest_bytes() {
        // Extrae's counters: close times, few locations and types, small
        // values: 1 + 1 + 1 + 4 bytes, from 24
        let v: Vec<RawEvent> = (0..1000u64)
            .map(|i| {
                ev(
                    5_000_000_000 + i * 7,
                    (i % 64) as u32,
                    42_000_050 + (i % 8) as u32,
                    (i * 977) as i64,
                )
            })
            .collect();
        let b = EventBlock::pack(&v);
        assert_eq!(unpacked(&b), plain(&v));
        assert_eq!(b.row_bytes(), 1000 * (2 + 1 + 1 + 4));
        // every width at its limits: the whole range of times and values,
        // the global location, many types (past the scan, to the map)
        let mut rng = crate::test_rng::XorShift(7);
        let v: Vec<RawEvent> = (0..5000)
            .map(|i| {
                let t = match i % 3 {
                    0 => 0,
                    1 => u64::MAX,
                    _ => rng.below(1 << 40),
                };
                let value = match i % 4 {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    2 => -1,
                    _ => rng.below(1000) as i64,
                };
                let loc = if i % 7 == 0 {
                    GLOBAL
                } else {
                    rng.below(300) as u32
                };
                ev(t, loc, rng.below(1000) as u32 * 977, value)
            })
            .collect();
        let b = EventBlock::pack(&v);
        assert_eq!(unpacked(&b), plain(&v));
        assert_eq!(b.row_bytes(), 5000 * (8 + 4 + 2 + 8));
        // none, and one
        assert_eq!(unpacked(&EventBlock::pack(&[])), vec![]);
        let one = [ev(3, 1, 2, -5)];
        assert_eq!(unpacked(&EventBlock::pack(&one)), plain(&one));
    }

    #[test]
    fn locations_and_types_mapped_widen_the_column_as_needed() {
        let v: Vec<RawEvent> = (0..300u64)
            .map(|i| ev(i, (i % 3) as u32, (i % 40) as u32, 1))
            .collect();
        let mut b = EventBlock::pack(&v);
        assert_eq!(b.loc.width(), 1);
        b.map_locations(|l| if l == 2 { 70_000 } else { l + 1 });
        b.map_kinds(|k| k * 10 + 3);
        assert_eq!(b.loc.width(), 4);
        let want: Vec<(Time, LocId, u32, i64)> = v
            .iter()
            .map(|e| {
                let loc = if e.loc == 2 { 70_000 } else { e.loc + 1 };
                (e.time, loc, e.kind * 10 + 3, 1)
            })
            .collect();
        assert_eq!(unpacked(&b), want);
        let mut locs = Vec::new();
        b.each_location(|l| locs.push(l));
        assert_eq!(locs, want.iter().map(|w| w.1).collect::<Vec<_>>());
    }
}
