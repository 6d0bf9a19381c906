//! Execution control (paper 001 §3.3.2): a time cursor that advances
//! frame by frame by **events per frame** or **clock ticks per frame**,
//! whichever comes first, forward or backward, optionally looping a range;
//! and the statistics up to the cursor (events, messages and bytes sent and
//! received, time per state summed over the locations), which go down when
//! the cursor moves back. Every query is a binary search over prefix data
//! built once, so scrubbing costs the same at any position.

use serde::Serialize;

use super::metric::Occupancy;
use crate::error::{Error, Result};
use crate::model::{Time, Trace};

/// How a frame advances the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Records per frame (0: no limit by records).
    pub events: u64,
    /// Nanoseconds per frame (0: no limit by time).
    pub ticks: Time,
    /// Move towards time 0.
    pub backward: bool,
}

/// The records of a trace in time order, and the prefix sums behind the
/// statistics.
pub struct Timeline {
    /// Times of every record: interval starts, point events, message sends
    /// and receives, counter samples.
    times: Vec<Time>,
    send: Vec<Time>,
    send_bytes: Vec<u64>,
    recv: Vec<Time>,
    recv_bytes: Vec<u64>,
    /// Per state: the time spent in it by all locations up to any t.
    state_curves: Vec<Occupancy>,
    pub state_names: Vec<String>,
    pub span: Time,
}

/// The statistics up to a cursor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub time: Time,
    /// Records at or before the cursor.
    pub events: u64,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    /// Time in each state in `[0, cursor)`, summed over the locations (ns).
    pub state_time: Vec<u64>,
}

/// Parses a time as users type it: `1500` (ns), `100ns`, `20us`, `1.5ms`,
/// `3s`.
pub fn parse_time(s: &str) -> Result<Time> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 0)
    } else if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (n, 3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 9)
    } else {
        (s, 0)
    };
    let v = crate::readers::decimal::parse_scaled(num.trim().as_bytes(), scale).map_err(|e| {
        Error::Invalid(format!(
            "expected a time like 1500, 20us, 1.5ms or 3s, found '{s}' ({})",
            e.describe()
        ))
    })?;
    u64::try_from(v)
        .map_err(|_| Error::Invalid(format!("expected a non-negative time, found '{s}'")))
}

fn prefix(v: &[u64]) -> Vec<u64> {
    let mut acc = 0u64;
    v.iter()
        .map(|x| {
            acc = acc.saturating_add(*x);
            acc
        })
        .collect()
}

impl Timeline {
    pub fn new(t: &Trace) -> Timeline {
        let mut times = Vec::new();
        let mut per_state: Vec<Vec<(Time, i64)>> = vec![Vec::new(); t.states.len()];
        for l in 0..t.num_locations() as u32 {
            let iv = t.intervals.of(l);
            for i in 0..iv.len() {
                times.push(iv.start[i]);
                if let Some(v) = per_state.get_mut(iv.state[i] as usize) {
                    v.push((iv.start[i], 1));
                    v.push((iv.end[i], -1));
                }
            }
        }
        times.extend_from_slice(&t.events.time);
        times.extend_from_slice(&t.counters.time);
        let m = &t.messages;
        times.extend_from_slice(&m.send_time);
        times.extend_from_slice(&m.recv_time);
        use rayon::slice::ParallelSliceMut;
        times.par_sort_unstable();
        // messages are sorted by send time; receives need their own order
        let mut by_recv: Vec<(Time, u64)> = m
            .recv_time
            .iter()
            .copied()
            .zip(m.bytes.iter().copied())
            .collect();
        by_recv.par_sort_unstable();
        let state_curves = per_state.into_iter().map(Occupancy::from_edges).collect();
        Timeline {
            times,
            send: m.send_time.clone(),
            send_bytes: prefix(&m.bytes),
            recv: by_recv.iter().map(|x| x.0).collect(),
            recv_bytes: prefix(&by_recv.iter().map(|x| x.1).collect::<Vec<_>>()),
            state_curves,
            state_names: (0..t.states.len() as u32)
                .map(|s| t.states.get(s).map(|x| x.name.clone()).unwrap_or_default())
                .collect(),
            span: t.meta.span,
        }
    }

    /// The statistics up to `time` (records at or before it; state time in
    /// `[0, time)`).
    pub fn stats(&self, time: Time) -> Stats {
        let upto = |v: &[Time]| v.partition_point(|&x| x <= time);
        let sent = upto(&self.send);
        let recv = upto(&self.recv);
        Stats {
            time,
            events: upto(&self.times) as u64,
            messages_sent: sent as u64,
            bytes_sent: if sent == 0 {
                0
            } else {
                self.send_bytes[sent - 1]
            },
            messages_received: recv as u64,
            bytes_received: if recv == 0 {
                0
            } else {
                self.recv_bytes[recv - 1]
            },
            state_time: self.state_curves.iter().map(|o| o.total_at(time)).collect(),
        }
    }

    /// The cursor after one frame from `at`: `events` records further (or
    /// back) or `ticks` ns, whichever is nearer; within `[lo, hi]`, wrapping
    /// to the other end when `looping` and the cursor is at an end.
    pub fn advance(
        &self,
        at: Time,
        step: Step,
        (lo, hi): (Time, Time),
        looping: bool,
    ) -> Result<Time> {
        if step.events == 0 && step.ticks == 0 {
            return Err(Error::Invalid(
                "a frame must advance by events or ticks (both are 0)".into(),
            ));
        }
        if lo > hi {
            return Err(Error::Invalid(format!("the range {lo}..{hi} is empty")));
        }
        let at = at.clamp(lo, hi);
        if looping {
            if !step.backward && at == hi {
                return Ok(lo);
            }
            if step.backward && at == lo {
                return Ok(hi);
            }
        }
        let mut cands = Vec::new();
        if step.ticks > 0 {
            cands.push(if step.backward {
                at.saturating_sub(step.ticks)
            } else {
                at.saturating_add(step.ticks)
            });
        }
        if step.events > 0 {
            let n = step.events as usize;
            if step.backward {
                // the n-th distinct record time before `at`
                let i = self.times.partition_point(|&x| x < at);
                cands.push(if i >= n { self.times[i - n] } else { 0 });
            } else {
                let i = self.times.partition_point(|&x| x <= at);
                let k = i.saturating_add(n - 1);
                cands.push(self.times.get(k).copied().unwrap_or(Time::MAX));
            }
        }
        let next = if step.backward {
            cands.into_iter().max().unwrap_or(at)
        } else {
            cands.into_iter().min().unwrap_or(at)
        };
        Ok(next.clamp(lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};

    fn trace() -> Trace {
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let p0 = b.locations.add("p0", LocationKind::Thread, None, 0);
        let p1 = b.locations.add("p1", LocationKind::Thread, None, 1);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let wait = b.states.add("wait", StateClass::Idle, None, 1);
        b.interval(p0, 0, 100, run);
        b.interval(p0, 100, 300, wait);
        b.interval(p1, 50, 250, run);
        b.message(p0, p1, 100, 150, 64, 0);
        b.message(p1, p0, 200, 260, 32, 0);
        b.finish(BuildOptions::default()).unwrap()
    }

    #[test]
    fn huge_steps_go_to_the_ends() {
        let t = trace();
        let tl = Timeline::new(&t);
        let step = Step {
            events: u64::MAX,
            ticks: 0,
            backward: false,
        };
        assert_eq!(tl.advance(60, step, (0, 300), false).unwrap(), 300);
        let back = Step {
            backward: true,
            ..step
        };
        assert_eq!(tl.advance(260, back, (0, 300), false).unwrap(), 0);
        let ticks = Step {
            events: 0,
            ticks: Time::MAX,
            backward: false,
        };
        assert_eq!(tl.advance(1, ticks, (0, 300), false).unwrap(), 300);
    }

    #[test]
    fn statistics_follow_the_cursor_both_ways() {
        let t = trace();
        let tl = Timeline::new(&t);
        let s = tl.stats(160);
        // records ≤ 160: starts 0, 50, 100; send 100; receive 150
        assert_eq!(s.events, 5);
        assert_eq!((s.messages_sent, s.bytes_sent), (1, 64));
        assert_eq!((s.messages_received, s.bytes_received), (1, 64));
        // run: p0 0..100 and p1 50..160 → 210; wait: p0 100..160 → 60
        assert_eq!(s.state_time, vec![210, 60]);
        let end = tl.stats(300);
        assert_eq!(end.state_time, vec![300, 200]);
        assert_eq!((end.messages_sent, end.bytes_received), (2, 96));
        // moving back, every count goes down to where it was
        assert_eq!(tl.stats(160), s);
        assert_eq!(tl.stats(0).state_time, vec![0, 0]);
        // forward and back by one frame returns the same statistics
        let step = Step {
            events: 2,
            ticks: 1000,
            backward: false,
        };
        let a = tl.advance(60, step, (0, 300), false).unwrap();
        let b = tl
            .advance(
                a,
                Step {
                    backward: true,
                    ..step
                },
                (0, 300),
                false,
            )
            .unwrap();
        assert!(b <= 60 && tl.stats(b).events <= tl.stats(60).events);
    }

    #[test]
    fn frames_advance_by_whichever_comes_first() {
        let tl = Timeline::new(&trace());
        let ev = |n, ticks, back| Step {
            events: n,
            ticks,
            backward: back,
        };
        // record times: 0, 50, 100, 100, 150, 200, 260
        assert_eq!(tl.advance(0, ev(1, 0, false), (0, 300), false).unwrap(), 50);
        assert_eq!(
            tl.advance(0, ev(3, 0, false), (0, 300), false).unwrap(),
            100
        );
        assert_eq!(
            tl.advance(0, ev(3, 20, false), (0, 300), false).unwrap(),
            20
        );
        assert_eq!(
            tl.advance(150, ev(2, 0, true), (0, 300), false).unwrap(),
            100
        );
        assert_eq!(
            tl.advance(150, ev(0, 40, true), (0, 300), false).unwrap(),
            110
        );
        // past the last record: the end of the range
        assert_eq!(
            tl.advance(260, ev(1, 0, false), (0, 300), false).unwrap(),
            300
        );
        // looping a range
        assert_eq!(
            tl.advance(200, ev(0, 10, false), (100, 200), true).unwrap(),
            100
        );
        assert_eq!(
            tl.advance(100, ev(0, 10, true), (100, 200), true).unwrap(),
            200
        );
        assert!(tl.advance(0, ev(0, 0, false), (0, 300), false).is_err());
    }
}
