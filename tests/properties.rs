//! Property tests of the building blocks of the readers and the model.

use proptest::prelude::*;
use tapestry::model::{
    BuildOptions, Format, LocationKind, NestedSlice, StateClass, TimeUnit, TraceBuilder,
    flatten_nested,
};
use tapestry::readers::decimal::parse_scaled;

proptest! {
    /// Any nanosecond count written as decimal microseconds reads back exactly.
    #[test]
    fn decimal_microseconds_round_trip(ns in 0i64..i64::MAX / 2, neg in any::<bool>()) {
        let v = if neg { -ns } else { ns };
        let text = format!("{}{}.{:03}", if v < 0 { "-" } else { "" }, v.unsigned_abs() / 1000, v.unsigned_abs() % 1000);
        prop_assert_eq!(parse_scaled(text.as_bytes(), 3), Ok(v));
    }

    /// Window queries return exactly the intervals that overlap the window.
    #[test]
    fn window_query_matches_brute_force(
        raw in prop::collection::vec((0u64..1000, 1u64..50), 0..60),
        t0 in 0u64..1200,
        len in 0u64..400,
    ) {
        let mut b = TraceBuilder::new(Format::Synthetic, "p", TimeUnit::nanoseconds(), false);
        b.locations.add("l", LocationKind::Thread, None, 0);
        b.states.add("s", StateClass::Busy, None, 0);
        for (s, l) in &raw {
            b.interval(0, *s, s + l, 0);
        }
        let t = b.finish(BuildOptions::default()).unwrap();
        let all: Vec<_> = t.intervals.of(0).iter().collect();
        // the builder's output is sorted and disjoint
        for w in all.windows(2) {
            prop_assert!(w[0].1 <= w[1].0);
        }
        let t1 = t0 + len;
        // an empty window holds nothing
        let want: Vec<_> = all.iter().copied().filter(|&(s, e, _)| t1 > t0 && s < t1 && e > t0).collect();
        let got: Vec<_> = t.intervals.of(0).window(t0, t1).iter().collect();
        prop_assert_eq!(got, want);
    }

    /// Flattening nested regions never overlaps, stays inside the union of
    /// the regions, and covers all of it when they are properly nested
    /// (nothing had to be clipped).
    #[test]
    fn flattening_covers_the_union(raw in prop::collection::vec((0u64..500, 0u64..80), 0..40)) {
        let mut slices: Vec<NestedSlice> = raw
            .iter()
            .enumerate()
            .map(|(i, &(s, l))| NestedSlice { start: s, end: s + l, state: i as u32, seq: i as u64 })
            .collect();
        let mut out = Vec::new();
        let clipped = flatten_nested(&mut slices, &mut out);
        let mut covered = vec![false; 600];
        for &(s, l) in &raw {
            for c in covered.iter_mut().take((s + l) as usize).skip(s as usize) {
                *c = true;
            }
        }
        let mut flat = vec![false; 600];
        for &(a, b, _) in &out {
            for f in flat.iter_mut().take(b as usize).skip(a as usize) {
                prop_assert!(!*f, "overlap");
                *f = true;
            }
        }
        for (f, c) in flat.iter().zip(&covered) {
            prop_assert!(!*f || *c, "outside the union");
        }
        if clipped == 0 {
            prop_assert_eq!(flat, covered);
        }
    }
}
