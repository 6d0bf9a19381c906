//! Turning nested regions (call stacks: Chrome `B`/`E` and `X`, OTF2
//! Enter/Leave) into the flat state timeline of the model: at every instant a
//! location is in the state of its innermost open region.

use super::{StateId, Time};

/// A region with its extent, as a reader collects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NestedSlice {
    pub start: Time,
    pub end: Time,
    pub state: StateId,
    /// Order of appearance, to break ties between equal extents (the later
    /// one is nested inside the earlier one).
    pub seq: u64,
}

/// Flattens the regions of one location into non-overlapping intervals,
/// appended to `out` as `(start, end, state)` in time order.
///
/// Regions are sorted by (start, longest first, appearance). A region that
/// starts inside another but ends after it is not properly nested; it is
/// clipped to its parent's end. Returns the number of regions clipped.
pub fn flatten_nested(slices: &mut [NestedSlice], out: &mut Vec<(Time, Time, StateId)>) -> u64 {
    sort_nested(slices);
    let mut f = Flattener::default();
    f.feed(slices, out);
    f.finish(out);
    f.clipped
}

/// Sorts regions as [`flatten_nested`] takes them: by start, the longest
/// first, then by appearance.
pub fn sort_nested(slices: &mut [NestedSlice]) {
    slices.sort_unstable_by_key(nested_key);
}

/// Whether `slices` come in the order [`sort_nested`] gives (a reader
/// that holds them in that order already can feed them to a
/// [`Flattener`] as they come).
pub fn in_nested_order(slices: impl IntoIterator<Item = NestedSlice>) -> bool {
    nested_order_span(slices).is_some()
}

/// The span of `slices` (the first start, the latest end; `(0, 0)` for
/// none) when they come in the order [`sort_nested`] gives, found in the
/// one pass that checks it; `None` when they do not.
pub fn nested_order_span(slices: impl IntoIterator<Item = NestedSlice>) -> Option<(Time, Time)> {
    let mut order = NestedOrder::default();
    let mut span = None;
    for s in slices {
        if !order.takes(&s) {
            return None;
        }
        span = Some(span.map_or((s.start, s.end), |(a, z): (Time, Time)| (a, z.max(s.end))));
    }
    Some(span.unwrap_or((0, 0)))
}

/// Checks that regions come in the order [`sort_nested`] gives, one at a
/// time: for a reader that feeds them to a [`Flattener`] as it makes them
/// and stops at the first out of order.
#[derive(Debug, Default, Clone, Copy)]
pub struct NestedOrder {
    last: Option<(Time, std::cmp::Reverse<Time>, u64)>,
}

impl NestedOrder {
    /// Whether `s` comes in that order after the regions taken before
    /// (then it is taken too).
    #[inline]
    pub fn takes(&mut self, s: &NestedSlice) -> bool {
        let k = nested_key(s);
        if self.last.is_some_and(|last| k < last) {
            return false;
        }
        self.last = Some(k);
        true
    }
}

/// The key [`sort_nested`] orders by: start, the longest first, then
/// appearance.
fn nested_key(s: &NestedSlice) -> (Time, std::cmp::Reverse<Time>, u64) {
    (s.start, std::cmp::Reverse(s.end), s.seq)
}

/// [`flatten_nested`] fed in runs: a reader that knows no later region
/// starts before (or, with a longer extent, at) the end of a run feeds the
/// run sorted ([`sort_nested`]) and keeps nothing of it; the result is the
/// whole location's.
#[derive(Debug, Default, Clone)]
pub struct Flattener {
    /// Open regions: (end, state), outermost first.
    /// (Inline for two: the flatteners of many locations are held at
    /// once, and most have one or two regions open.)
    stack: smallvec::SmallVec<[(Time, StateId); 2]>,
    cursor: Time,
    /// Regions clipped to their parent's end so far.
    pub clipped: u64,
}

impl Flattener {
    /// Feeds regions sorted by [`sort_nested`], all after those fed before.
    pub fn feed(&mut self, slices: &[NestedSlice], out: &mut Vec<(Time, Time, StateId)>) {
        for sl in slices {
            self.push(sl, out);
        }
    }

    /// Feeds one region, after (in [`sort_nested`]'s order) those fed
    /// before: [`Self::feed`] a region at a time, for a reader that makes
    /// each as it goes (no list of them).
    #[inline]
    pub fn push(&mut self, sl: &NestedSlice, out: &mut Vec<(Time, Time, StateId)>) {
        let emit = |out: &mut Vec<(Time, Time, StateId)>, a: Time, b: Time, s: StateId| {
            if b > a {
                out.push((a, b, s));
            }
        };
        if sl.end < sl.start {
            return;
        }
        // close the regions that ended before this one starts
        while let Some(&(end, state)) = self.stack.last() {
            if end > sl.start {
                break;
            }
            emit(out, self.cursor, end, state);
            self.cursor = self.cursor.max(end);
            self.stack.pop();
        }
        let mut end = sl.end;
        if let Some(&(parent_end, parent_state)) = self.stack.last() {
            emit(out, self.cursor, sl.start, parent_state);
            if end > parent_end {
                end = parent_end;
                self.clipped += 1;
            }
        }
        self.cursor = sl.start;
        self.stack.push((end, sl.state));
    }

    /// The outermost open region, as (end, state).
    pub fn root(&self) -> Option<(Time, StateId)> {
        self.stack.first().copied()
    }

    /// Moves the end of the outermost open region to `end` (a region fed
    /// with an end not known yet, when every region fed since ends before
    /// `end`).
    pub fn set_root_end(&mut self, end: Time) {
        if let Some(r) = self.stack.first_mut() {
            r.0 = end;
        }
    }

    /// Closes the regions still open.
    pub fn finish(&mut self, out: &mut Vec<(Time, Time, StateId)>) {
        while let Some((end, state)) = self.stack.pop() {
            if end > self.cursor {
                out.push((self.cursor, end, state));
            }
            self.cursor = self.cursor.max(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start: Time, end: Time, state: StateId, seq: u64) -> NestedSlice {
        NestedSlice {
            start,
            end,
            state,
            seq,
        }
    }

    fn flat(mut v: Vec<NestedSlice>) -> (Vec<(Time, Time, StateId)>, u64) {
        let mut out = Vec::new();
        let c = flatten_nested(&mut v, &mut out);
        (out, c)
    }

    #[test]
    fn nested_regions_show_the_innermost() {
        // A [0,10) contains B [2,5) which contains C [3,4); D [12,15) alone
        let (out, c) = flat(vec![
            s(2, 5, 1, 1),
            s(0, 10, 0, 0),
            s(12, 15, 3, 3),
            s(3, 4, 2, 2),
        ]);
        assert_eq!(c, 0);
        assert_eq!(
            out,
            vec![
                (0, 2, 0),
                (2, 3, 1),
                (3, 4, 2),
                (4, 5, 1),
                (5, 10, 0),
                (12, 15, 3)
            ]
        );
    }

    #[test]
    fn equal_extents_nest_by_appearance() {
        let (out, _) = flat(vec![s(0, 2, 0, 0), s(0, 2, 1, 1)]);
        assert_eq!(out, vec![(0, 2, 1)]);
    }

    #[test]
    fn child_ending_at_parent_end() {
        let (out, _) = flat(vec![s(0, 10, 0, 0), s(5, 10, 1, 1), s(10, 12, 2, 2)]);
        assert_eq!(out, vec![(0, 5, 0), (5, 10, 1), (10, 12, 2)]);
    }

    #[test]
    fn improper_nesting_is_clipped() {
        let (out, c) = flat(vec![s(0, 10, 0, 0), s(5, 15, 1, 1)]);
        assert_eq!(c, 1);
        assert_eq!(out, vec![(0, 5, 0), (5, 10, 1)]);
    }

    #[test]
    fn output_never_overlaps() {
        // pseudo-random nested sets: the output is sorted and disjoint
        let mut x: u64 = 12345;
        for _ in 0..200 {
            let mut v = Vec::new();
            for i in 0..20 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let a = (x >> 33) % 100;
                let l = (x >> 17) % 30;
                v.push(s(a, a + l, i as u32, i));
            }
            let (out, _) = flat(v);
            for w in out.windows(2) {
                assert!(w[0].1 <= w[1].0, "{:?}", w);
            }
            assert!(out.iter().all(|o| o.0 < o.1));
        }
    }
}
