//! Moments of utilization (paper 000, SPEC §3.1).
//!
//! For one location with busy intervals `[a_j, b_j)` clipped to the window
//! `[T0, T1)`:
//!
//! * `m0 = Σ (b_j − a_j)`, the busy time;
//! * `m1 = (1/m0) Σ ∫ t dt`, the mean busy time (ns from the trace start);
//! * `μ2 = (1/m0) Σ ∫ (t − m1)² dt`, `m2 = sqrt(3·μ2)` (so that one
//!   interval gives `m2 = m0/2`, and always `2·m2 ≥ m0`);
//! * `μ3 = (1/m0) Σ ∫ (t − m1)³ dt`, `m3 = 3·cbrt(μ3)` (real cube root).
//!
//! With `m0 = 0` the other moments are undefined (`None`).
//!
//! Each interval contributes in closed form (centre `c`, length `L`:
//! variance `L²/12`, third central moment 0) and partial results combine with
//! the parallel-axis (Pébay) formulas, so [`MomentAcc`] merges across
//! threads, GPU work groups and machines. Positions are taken relative to an
//! integer origin per accumulator (the first interval's start), so
//! timestamps near 10^18 ns with 1 ns intervals lose nothing; no raw power
//! sums are formed.

use rayon::prelude::*;
use serde::Serialize;

use crate::model::{IntervalSlice, Time, Trace};

/// A mergeable accumulator of the moments of a set of intervals.
///
/// `w` is the total length, `mean` the centre of mass relative to `origin`,
/// `m2` and `m3` the second and third central moments times `w`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MomentAcc {
    pub origin: Time,
    pub w: f64,
    pub mean: f64,
    pub m2: f64,
    pub m3: f64,
}

/// The scaled moments of one location.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moments {
    /// Busy time (ns).
    pub m0: f64,
    /// Mean busy time (ns from the trace start); `None` when `m0 = 0`.
    pub m1: Option<f64>,
    /// Scaled deviation `sqrt(3 μ2)` (ns).
    pub m2: Option<f64>,
    /// Scaled skew `3 cbrt(μ3)` (ns, signed).
    pub m3: Option<f64>,
}

impl MomentAcc {
    /// The accumulator of one interval `[a, b)`.
    pub fn interval(a: Time, b: Time) -> Self {
        let l = b.saturating_sub(a) as f64;
        MomentAcc {
            origin: a,
            w: l,
            mean: l / 2.0,
            m2: l * l * l / 12.0,
            m3: 0.0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.w == 0.0
    }

    /// Combines two accumulators (parallel-axis / Pébay formulas).
    pub fn merge(self, other: MomentAcc) -> MomentAcc {
        if other.w == 0.0 {
            return self;
        }
        if self.w == 0.0 {
            return other;
        }
        // other's mean relative to self's origin (integer part exact)
        let shift = if other.origin >= self.origin {
            (other.origin - self.origin) as f64
        } else {
            -((self.origin - other.origin) as f64)
        };
        let (wa, wb) = (self.w, other.w);
        let w = wa + wb;
        let delta = other.mean + shift - self.mean;
        let mean = self.mean + delta * wb / w;
        let m2 = self.m2 + other.m2 + delta * delta * wa * wb / w;
        let m3 = self.m3
            + other.m3
            + delta * delta * delta * wa * wb * (wa - wb) / (w * w)
            + 3.0 * delta * (wa * other.m2 - wb * self.m2) / w;
        MomentAcc {
            origin: self.origin,
            w,
            mean,
            m2,
            m3,
        }
    }

    /// The merge of `accs` in order (a display row of processors).
    pub fn merged<'a>(accs: impl IntoIterator<Item = &'a MomentAcc>) -> MomentAcc {
        accs.into_iter()
            .fold(MomentAcc::default(), |a, b| a.merge(*b))
    }

    /// The scaled moments.
    pub fn moments(&self) -> Moments {
        if self.w <= 0.0 {
            return Moments {
                m0: 0.0,
                m1: None,
                m2: None,
                m3: None,
            };
        }
        let mu2 = (self.m2 / self.w).max(0.0);
        let mu3 = self.m3 / self.w;
        Moments {
            m0: self.w,
            m1: Some(self.origin as f64 + self.mean),
            m2: Some((3.0 * mu2).sqrt()),
            m3: Some(3.0 * mu3.cbrt()),
        }
    }
}

/// The accumulator of the intervals of `iv` whose state is in `mask`,
/// clipped to `[t0, t1)`. Two passes over the intervals (mean first, then
/// central moments), relative to the first interval's start.
pub fn accumulate(iv: IntervalSlice<'_>, mask: &[bool], t0: Time, t1: Time) -> MomentAcc {
    let w = iv.window(t0, t1);
    let n = w.len();
    let sel = |i: usize| -> Option<(Time, Time)> {
        if !mask.get(w.state[i] as usize).copied().unwrap_or(false) {
            return None;
        }
        let a = w.start[i].max(t0);
        let b = w.end[i].min(t1);
        (b > a).then_some((a, b))
    };
    two_pass(n, sel)
}

/// The accumulator of the runs `[starts[i], ends[i])` (sorted, disjoint)
/// clipped to `[t0, t1)`: the same two passes as [`accumulate`], for
/// busy runs (moments up to a time cursor).
pub fn accumulate_runs(starts: &[Time], ends: &[Time], t0: Time, t1: Time) -> MomentAcc {
    let n = starts.len().min(ends.len());
    two_pass(n, |i| {
        let (a, b) = (starts[i].max(t0), ends[i].min(t1));
        (b > a).then_some((a, b))
    })
}

/// Two passes over the selected spans of `0..n` (mean first, then central
/// moments), relative to the first span's start.
fn two_pass(n: usize, sel: impl Fn(usize) -> Option<(Time, Time)>) -> MomentAcc {
    let Some(origin) = (0..n).find_map(&sel).map(|(a, _)| a) else {
        return MomentAcc::default();
    };
    // pass 1: total length and centre of mass
    let (mut sw, mut swc) = (0.0f64, 0.0f64);
    for i in 0..n {
        if let Some((a, b)) = sel(i) {
            let l = (b - a) as f64;
            let c = (a - origin) as f64 + l / 2.0;
            sw += l;
            swc += l * c;
        }
    }
    let mean = swc / sw;
    // pass 2: central moments
    let (mut m2, mut m3) = (0.0f64, 0.0f64);
    for i in 0..n {
        if let Some((a, b)) = sel(i) {
            let l = (b - a) as f64;
            let d = (a - origin) as f64 + l / 2.0 - mean;
            let v = l * l / 12.0;
            m2 += l * (d * d + v);
            m3 += l * d * (d * d + 3.0 * v);
        }
    }
    MomentAcc {
        origin,
        w: sw,
        mean,
        m2,
        m3,
    }
}

/// Moments of every location for the states in `mask` (indexed by state
/// id) over `[t0, t1)`, in parallel over locations.
pub fn moments(trace: &Trace, mask: &[bool], t0: Time, t1: Time) -> Vec<Moments> {
    (0..trace.num_locations() as u32)
        .into_par_iter()
        .map(|l| accumulate(trace.intervals.of(l), mask, t0, t1).moments())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn one_interval_closed_form() {
        let m = MomentAcc::interval(100, 300).moments();
        assert_eq!(m.m0, 200.0);
        assert_eq!(m.m1, Some(200.0));
        assert!(approx(m.m2.unwrap(), 100.0));
        assert_eq!(m.m3, Some(0.0));
    }

    #[test]
    fn merge_equals_one_pass() {
        let ivs = [(0u64, 10u64), (15, 16), (40, 70), (71, 100), (130, 131)];
        let mut acc = MomentAcc::default();
        for &(a, b) in &ivs {
            acc = acc.merge(MomentAcc::interval(a, b));
        }
        // direct numeric integration at 1/1000 resolution
        let (mut s0, mut s1) = (0.0, 0.0);
        let steps = 1000;
        for &(a, b) in &ivs {
            for k in 0..(b - a) * steps {
                let t = a as f64 + (k as f64 + 0.5) / steps as f64;
                s0 += 1.0 / steps as f64;
                s1 += t / steps as f64;
            }
        }
        let m1 = s1 / s0;
        let (mut s2, mut s3) = (0.0, 0.0);
        for &(a, b) in &ivs {
            for k in 0..(b - a) * steps {
                let t = a as f64 + (k as f64 + 0.5) / steps as f64;
                s2 += (t - m1).powi(2) / steps as f64;
                s3 += (t - m1).powi(3) / steps as f64;
            }
        }
        let m = acc.moments();
        assert!(approx(m.m0, s0));
        assert!(approx(m.m1.unwrap(), m1));
        assert!((m.m2.unwrap() - (3.0 * s2 / s0).sqrt()).abs() < 1e-3);
        assert!((m.m3.unwrap() - 3.0 * (s3 / s0).cbrt()).abs() < 1e-2);
    }

    #[test]
    fn empty_is_undefined() {
        let m = MomentAcc::default().moments();
        assert_eq!((m.m0, m.m1, m.m2, m.m3), (0.0, None, None, None));
    }
}
