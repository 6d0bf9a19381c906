//! Hardware-counter samples for a simulation (`synth --counters N`), as
//! Extrae writes them: at each state change of a processor, the counts of
//! the state that ended, one value per counter (in Paraver, an event record
//! of type–value pairs; in Chrome JSON, a `C` event of one argument per
//! counter). The counts follow from the state and its length (cycles at
//! 2.4 GHz, instructions at an IPC per state, misses and branches as rates
//! of the instructions) with a small deterministic jitter.
//!
//! Real traces of this kind are mostly events: in the shared Extrae trace
//! (`qsort.prv`) 422 of the 800 records are events. These samples give the
//! synthetic workloads the same shape, for benchmarks of the readers.

use super::sink::{Layout, Record, RecordSink, SimState};
use crate::error::{Error, Result};
use crate::model::{LocId, Time};

/// One hardware counter: its PAPI name, Extrae's Paraver event type, and
/// a description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HardwareCounter {
    pub name: &'static str,
    pub paraver_type: u32,
    pub description: &'static str,
}

/// The counters `--counters N` samples: the first N of these.
pub const HARDWARE_COUNTERS: [HardwareCounter; 8] = [
    counter("PAPI_TOT_INS", 42_000_050, "Instructions completed"),
    counter("PAPI_TOT_CYC", 42_000_059, "Total cycles"),
    counter("PAPI_L1_DCM", 42_000_000, "L1 data cache misses"),
    counter("PAPI_L2_DCM", 42_000_002, "L2 data cache misses"),
    counter("PAPI_L3_TCM", 42_000_008, "L3 cache misses"),
    counter("PAPI_BR_INS", 42_000_055, "Branch instructions"),
    counter(
        "PAPI_BR_MSP",
        42_000_046,
        "Conditional branch instructions mispredicted",
    ),
    counter("PAPI_FP_OPS", 42_000_102, "Floating point operations"),
];

const fn counter(
    name: &'static str,
    paraver_type: u32,
    description: &'static str,
) -> HardwareCounter {
    HardwareCounter {
        name,
        paraver_type,
        description,
    }
}

/// The counters of a layout that asks for `n`.
pub fn counters(n: u32) -> &'static [HardwareCounter] {
    &HARDWARE_COUNTERS[..(n as usize).min(HARDWARE_COUNTERS.len())]
}

/// The counts of `n` counters over a state of `ns` nanoseconds; `noise`
/// (any bits) jitters them by up to ±10 %.
pub fn counts(state: SimState, ns: Time, noise: u64, out: &mut [i64]) {
    // instructions per cycle, and the rates of the instructions that are
    // L1 misses and floating-point operations: computation against waiting
    // (a spin loop) and sending (copies)
    let (ipc, l1, fp) = match state {
        SimState::Running => (1.6, 0.03, 0.5),
        SimState::Waiting => (0.4, 0.005, 0.0),
        SimState::Sending => (0.7, 0.02, 0.0),
    };
    let jitter = 0.9 + 0.2 * ((noise >> 11) as f64 / (1u64 << 53) as f64);
    let cycles = ns as f64 * 2.4;
    let ins = cycles * ipc * jitter;
    let l1_misses = ins * l1;
    let branches = ins * 0.12;
    let all = [
        ins,
        cycles,
        l1_misses,
        l1_misses * 0.25,
        l1_misses * 0.25 * 0.3,
        branches,
        branches * 0.04 / jitter,
        ins * fp,
    ];
    for (o, v) in out.iter_mut().zip(all) {
        *o = v.round() as i64;
    }
}

/// Passes records on to `inner` and, before each state record, the counts
/// of the state that processor ran before ([`RecordSink::counters`], at
/// the new state's start); the last state of each processor is counted at
/// the end of the run. Records stay in time order.
pub struct CounterSink<'a> {
    inner: &'a mut dyn RecordSink,
    n: usize,
    /// Per processor, the state whose counts are still to be given: its
    /// length, its state, and its start (for the jitter).
    pending: Vec<Option<(Time, SimState, Time)>>,
    values: Vec<i64>,
    /// Samples given.
    pub samples: u64,
}

impl<'a> CounterSink<'a> {
    /// `n` counters (1 to [`HARDWARE_COUNTERS`]' length).
    pub fn new(inner: &'a mut dyn RecordSink, n: u32) -> Result<Self> {
        if n == 0 || n as usize > HARDWARE_COUNTERS.len() {
            return Err(Error::Invalid(format!(
                "the number of hardware counters must be in 1..={}, got {n}",
                HARDWARE_COUNTERS.len()
            )));
        }
        Ok(CounterSink {
            inner,
            n: n as usize,
            pending: Vec::new(),
            values: vec![0; n as usize],
            samples: 0,
        })
    }

    fn give(&mut self, loc: LocId, at: Time) -> Result<()> {
        let Some(p) = self.pending.get_mut(loc as usize) else {
            return Ok(());
        };
        if let Some((ns, state, start)) = p.take() {
            let noise = splitmix(u64::from(loc) << 40 ^ start);
            counts(state, ns, noise, &mut self.values);
            self.inner.counters(loc, at, &self.values)?;
            self.samples += 1;
        }
        Ok(())
    }
}

/// A well-mixed 64-bit hash of `x` (SplitMix64's finaliser).
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl RecordSink for CounterSink<'_> {
    fn begin(&mut self, layout: &Layout) -> Result<()> {
        self.pending = vec![None; layout.procs as usize];
        let mut layout = layout.clone();
        layout.counters = counters(self.n as u32).to_vec();
        self.inner.begin(&layout)
    }

    fn record(&mut self, r: &Record) -> Result<()> {
        if let Record::State {
            loc,
            start,
            end,
            state,
        } = *r
        {
            self.give(loc, start)?;
            if let Some(p) = self.pending.get_mut(loc as usize) {
                *p = Some((end - start, state, start));
            }
        }
        self.inner.record(r)
    }

    fn counters(&mut self, loc: LocId, time: Time, values: &[i64]) -> Result<()> {
        self.inner.counters(loc, time, values)
    }

    fn finish(&mut self, end: Time) -> Result<()> {
        for loc in 0..self.pending.len() {
            self.give(loc as LocId, end)?;
        }
        self.inner.finish(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cycles follow the length; instructions the state's IPC within the
    /// jitter; the rates stay ordered (L1 ≥ L2 ≥ L3 misses, branches ≥
    /// mispredictions); waiting does no floating-point work.
    #[test]
    fn counts_follow_the_state_and_its_length() {
        let mut v = [0i64; 8];
        for noise in [0, u64::MAX, 0x1234_5678_9abc_def0] {
            counts(SimState::Running, 1_000_000, noise, &mut v);
            assert_eq!(v[1], 2_400_000);
            assert!((3_456_000..=4_224_000).contains(&v[0]), "{v:?}");
            assert!(v[2] >= v[3] && v[3] >= v[4] && v[4] > 0, "{v:?}");
            assert!(v[5] > v[6] && v[6] > 0 && v[7] > 0, "{v:?}");
            counts(SimState::Waiting, 1_000_000, noise, &mut v);
            assert!(v[0] < 1_100_000 && v[7] == 0, "{v:?}");
        }
        // fewer counters: the first ones
        let mut three = [0i64; 3];
        counts(SimState::Sending, 5_000, 7, &mut three);
        counts(SimState::Sending, 5_000, 7, &mut v);
        assert_eq!(three, v[..3]);
    }
}
