//! Where a read spends its time, phase by phase (`info --stats` prints
//! it): what a reader does on one thread while the others wait (the
//! serial part that stops a read from scaling) beside what runs on all.
//!
//! Off unless [`enable`]d: a [`span`] then reads the clock twice and adds
//! its wall time to its phase, summed under the phase's name; off, it
//! costs a relaxed load. Phases are process-wide (one read at a time is
//! what `info` measures) and listed in order of first appearance.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static TIMES: Mutex<Vec<(&'static str, Duration, u64)>> = Mutex::new(Vec::new());

/// Starts (or stops) recording phases, clearing what was recorded.
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
    if let Ok(mut t) = TIMES.lock() {
        t.clear();
    }
}

/// Whether phases are being recorded.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Adds `d` to phase `name`.
pub fn add(name: &'static str, d: Duration) {
    if !enabled() {
        return;
    }
    if let Ok(mut t) = TIMES.lock() {
        match t.iter_mut().find(|p| p.0 == name) {
            Some(p) => {
                p.1 += d;
                p.2 += 1;
            }
            None => t.push((name, d, 1)),
        }
    }
}

/// A phase's span: its wall time goes to the phase when it is dropped.
#[must_use = "a span measures until it is dropped"]
pub struct Span {
    name: &'static str,
    start: Option<Instant>,
}

/// Measures phase `name` from now until the span is dropped.
pub fn span(name: &'static str) -> Span {
    Span {
        name,
        start: enabled().then(Instant::now),
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(s) = self.start {
            add(self.name, s.elapsed());
        }
    }
}

/// The phases recorded since [`enable`]: name, summed wall time, and how
/// many spans made it, in order of first appearance.
pub fn recorded() -> Vec<(&'static str, Duration, u64)> {
    TIMES.lock().map(|t| t.clone()).unwrap_or_default()
}

/// The phases as one line: `name 0.123 s` each, with the count of spans
/// where there were many.
pub fn line() -> String {
    recorded()
        .iter()
        .map(|(n, d, k)| {
            if *k > 1 {
                format!("{n} {:.3} s ({k}×)", d.as_secs_f64())
            } else {
                format!("{n} {:.3} s", d.as_secs_f64())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_add_up_by_name_in_order_and_cost_nothing_when_off() {
        enable(false);
        drop(span("off"));
        assert!(recorded().is_empty());
        enable(true);
        {
            let _a = span("test: parse");
            std::thread::sleep(Duration::from_millis(2));
        }
        add("test: build", Duration::from_millis(5));
        drop(span("test: parse"));
        // (other tests' reads may record phases meanwhile: only these
        // two are looked at)
        let r: Vec<_> = recorded()
            .into_iter()
            .filter(|p| p.0.starts_with("test: "))
            .collect();
        assert_eq!(
            r.iter().map(|p| p.0).collect::<Vec<_>>(),
            ["test: parse", "test: build"]
        );
        assert!(r[0].1 >= Duration::from_millis(2));
        assert_eq!(r[0].2, 2);
        assert_eq!(r[1], ("test: build", Duration::from_millis(5), 1));
        assert!(line().contains("test: parse 0.0"), "{}", line());
        assert!(line().contains("(2×)"));
        enable(false);
        assert!(recorded().is_empty());
    }
}
