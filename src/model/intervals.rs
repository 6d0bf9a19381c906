//! State intervals: per location, sorted by start and non-overlapping, stored
//! column by column in one allocation per column (CSR by location).
//!
//! 20 bytes per interval: 10^8 intervals take 2 GB.

use serde::Serialize;

use super::{LocId, StateId, Time};

/// All state intervals of a trace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Intervals {
    /// `offsets[l]..offsets[l + 1]` are the intervals of location `l`.
    pub(crate) offsets: Vec<u64>,
    pub(crate) start: Vec<Time>,
    pub(crate) end: Vec<Time>,
    pub(crate) state: Vec<StateId>,
}

/// The intervals of one location (or a window of them), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct IntervalSlice<'a> {
    pub start: &'a [Time],
    pub end: &'a [Time],
    pub state: &'a [StateId],
}

impl Intervals {
    /// Builds from columns already sorted by (location, start) and free of
    /// overlaps; `offsets` has one entry per location plus one.
    pub(crate) fn from_columns(
        offsets: Vec<u64>,
        start: Vec<Time>,
        end: Vec<Time>,
        state: Vec<StateId>,
    ) -> Self {
        debug_assert_eq!(start.len(), end.len());
        debug_assert_eq!(start.len(), state.len());
        debug_assert_eq!(*offsets.last().unwrap_or(&0) as usize, start.len());
        Intervals {
            offsets,
            start,
            end,
            state,
        }
    }

    /// Total number of intervals.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Number of locations the columns are split into.
    pub fn num_locations(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The intervals of location `loc` (empty for an unknown location).
    pub fn of(&self, loc: LocId) -> IntervalSlice<'_> {
        let l = loc as usize;
        if l + 1 >= self.offsets.len() {
            return IntervalSlice::empty();
        }
        let (a, b) = (self.offsets[l] as usize, self.offsets[l + 1] as usize);
        IntervalSlice {
            start: &self.start[a..b],
            end: &self.end[a..b],
            state: &self.state[a..b],
        }
    }

    /// All columns at once (every location), in location order.
    pub fn all(&self) -> IntervalSlice<'_> {
        IntervalSlice {
            start: &self.start,
            end: &self.end,
            state: &self.state,
        }
    }

    /// The CSR offsets (one per location plus one).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Bytes held by the columns.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::vec;
        vec(&self.offsets) + vec(&self.start) + vec(&self.end) + vec(&self.state)
    }
}

impl<'a> IntervalSlice<'a> {
    pub fn empty() -> Self {
        IntervalSlice {
            start: &[],
            end: &[],
            state: &[],
        }
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The intervals that overlap `[t0, t1)`, without copying (they are not
    /// clipped: the first may start before `t0`, the last end after `t1`).
    ///
    /// Relies on the intervals being sorted and non-overlapping, so that both
    /// starts and ends are non-decreasing.
    pub fn window(&self, t0: Time, t1: Time) -> IntervalSlice<'a> {
        if t1 <= t0 {
            return IntervalSlice::empty();
        }
        let a = self.end.partition_point(|&e| e <= t0);
        let b = self.start.partition_point(|&s| s < t1).max(a);
        IntervalSlice {
            start: &self.start[a..b],
            end: &self.end[a..b],
            state: &self.state[a..b],
        }
    }

    /// Iterates `(start, end, state)`.
    pub fn iter(&self) -> impl Iterator<Item = (Time, Time, StateId)> + 'a {
        let (s, e, st) = (self.start, self.end, self.state);
        (0..s.len()).map(move |i| (s[i], e[i], st[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Intervals {
        // loc 0: [0,10) [10,20) [30,40); loc 1: none; loc 2: [5,6)
        Intervals::from_columns(
            vec![0, 3, 3, 4],
            vec![0, 10, 30, 5],
            vec![10, 20, 40, 6],
            vec![0, 1, 0, 2],
        )
    }

    #[test]
    fn per_location_slices() {
        let iv = sample();
        assert_eq!(iv.len(), 4);
        assert_eq!(iv.num_locations(), 3);
        assert_eq!(iv.of(0).len(), 3);
        assert!(iv.of(1).is_empty());
        assert_eq!(iv.of(2).iter().collect::<Vec<_>>(), vec![(5, 6, 2)]);
        assert!(iv.of(7).is_empty());
    }

    #[test]
    fn window_queries() {
        let iv = sample();
        let l0 = iv.of(0);
        let w: Vec<_> = l0.window(10, 30).iter().collect();
        assert_eq!(w, vec![(10, 20, 1)]);
        let w: Vec<_> = l0.window(9, 31).iter().collect();
        assert_eq!(w, vec![(0, 10, 0), (10, 20, 1), (30, 40, 0)]);
        assert!(l0.window(20, 30).is_empty());
        assert!(l0.window(40, 100).is_empty());
        assert!(l0.window(5, 5).is_empty());
        assert_eq!(l0.window(0, 1).len(), 1);
    }
}
