//! Where a read spends its time, phase by phase (`info --stats` prints
//! it): what a reader does on one thread while the others wait (the
//! serial part that stops a read from scaling) beside what runs on all.
//!
//! Off unless [`enable`]d: a [`span`] then reads the clock twice and adds
//! its wall time to its phase, summed under the phase's name; off, it
//! costs a relaxed load. Phases are process-wide (one read at a time is
//! what `info` measures) and listed in order of first appearance.

use crate::static_names::StaticNames;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static TIMES: Mutex<Vec<(&'static str, Duration, u64)>> = Mutex::new(Vec::new());
/// Whether each span's end also reads the process's memory
/// (`TAPESTRY_PHASE_MEMORY=1`): where a read's peak lies.
static MEMORY: AtomicBool = AtomicBool::new(false);
/// Whether each span's end is also written to standard error as it comes
/// (`TAPESTRY_PHASE_MEMORY=2`): the memory's course through a read.
static TIMELINE: AtomicBool = AtomicBool::new(false);
/// Per phase: the resident memory at the end of its last span and the
/// peak within its spans, in KiB (with [`MEMORY`]).
static MEMORIES: Mutex<Vec<(&'static str, u64, u64)>> = Mutex::new(Vec::new());
/// The process's peak resident memory in KiB over every reset of the
/// kernel's high-water mark (with [`MEMORY`]).
static PEAK_KIB: AtomicU64 = AtomicU64::new(0);
/// Whether each span also reads the process's CPU time at its start and
/// end (`TAPESTRY_PHASE_CPU=1`): how many cores a phase kept busy.
static CPU: AtomicBool = AtomicBool::new(false);
/// Per phase: the process's CPU time over its spans (with [`CPU`]).
static CPUS: Mutex<Vec<(&'static str, Duration)>> = Mutex::new(Vec::new());

/// Starts (or stops) recording phases, clearing what was recorded. With
/// `TAPESTRY_PHASE_MEMORY=1` in the environment each span's end also
/// reads the resident memory (Linux; some tens of microseconds a span);
/// with `=2` it also writes it to standard error, span by span. With
/// `TAPESTRY_PHASE_CPU=1` each span also reads the process's CPU time
/// (Linux), so that a phase says how many cores it kept busy.
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
    let cpu = std::env::var_os("TAPESTRY_PHASE_CPU").is_some_and(|v| v == "1");
    CPU.store(on && cpu && process_cpu().is_some(), Ordering::Relaxed);
    if let Ok(mut c) = CPUS.lock() {
        c.clear();
    }
    let mode = std::env::var_os("TAPESTRY_PHASE_MEMORY");
    let mode = mode.as_ref().and_then(|v| v.to_str());
    MEMORY.store(on && matches!(mode, Some("1" | "2")), Ordering::Relaxed);
    TIMELINE.store(on && mode == Some("2"), Ordering::Relaxed);
    if let Ok(mut t) = TIMES.lock() {
        t.clear();
    }
    if let Ok(mut m) = MEMORIES.lock() {
        m.clear();
    }
    PEAK_KIB.store(0, Ordering::Relaxed);
}

/// Notes the memory at the end of a span of phase `name`: the resident
/// memory now and the peak since the previous span's end, after which the
/// kernel's high-water mark is reset (`/proc/self/clear_refs`, Linux 4.0
/// on) so that the next span's peak is its own.
fn note_memory(name: &'static str) {
    let Some((rss, hwm)) = crate::memory::resident_kib() else {
        return;
    };
    PEAK_KIB.fetch_max(hwm, Ordering::Relaxed);
    if TIMELINE.load(Ordering::Relaxed) {
        eprintln!(
            "phase memory: {name}: {:.1} MiB after, peak within {:.1}",
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
    }
    if let Ok(mut m) = MEMORIES.lock() {
        match m.iter_mut().find(|p| p.0 == name) {
            Some(p) => {
                p.1 = rss;
                p.2 = p.2.max(hwm);
            }
            None => m.push((name, rss, hwm)),
        }
    }
    crate::memory::reset_peak();
}

/// The process's peak resident memory in KiB where [`MEMORY`] reset the
/// kernel's high-water mark (which then no longer holds the whole run's
/// peak), or `None`: `TAPESTRY_PHASE_MEMORY` was not set.
pub fn peak_kib() -> Option<u64> {
    if !MEMORY.load(Ordering::Relaxed) {
        return None;
    }
    let now = crate::memory::resident_kib().map_or(0, |m| m.1);
    Some(PEAK_KIB.load(Ordering::Relaxed).max(now))
}

/// Per phase (with `TAPESTRY_PHASE_MEMORY=1`): the resident memory at the
/// end of its last span and the highest peak within any of its spans
/// (since the previous span's end), in KiB.
pub fn memories() -> Vec<(&'static str, u64, u64)> {
    MEMORIES.lock().map(|m| m.clone()).unwrap_or_default()
}

/// The CPU time of the whole process so far, every thread's user and
/// system time (`CLOCK_PROCESS_CPUTIME_ID`), or `None` where it cannot be
/// read (outside Linux).
fn process_cpu() -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Adds `d`, CPU time of the process over a span, to phase `name`.
fn add_cpu(name: &'static str, d: Duration) {
    if let Ok(mut c) = CPUS.lock() {
        match c.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.1 += d,
            None => c.push((name, d)),
        }
    }
}

/// Per phase (with `TAPESTRY_PHASE_CPU=1`): the process's CPU time over
/// its spans, every thread's, those of phases that ran beside it
/// included.
pub fn cpu_times() -> Vec<(&'static str, Duration)> {
    CPUS.lock().map(|c| c.clone()).unwrap_or_default()
}

/// Whether phases are being recorded.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Adds `d` to phase `name`.
pub fn add(name: &'static str, d: Duration) {
    add_spans(name, d, 1);
}

/// Adds `d`, the time of `spans` spans, to phase `name`.
fn add_spans(name: &'static str, d: Duration, spans: u64) {
    if !enabled() {
        return;
    }
    if let Ok(mut t) = TIMES.lock() {
        match t.iter_mut().find(|p| p.0 == name) {
            Some(p) => {
                p.1 += d;
                p.2 += spans;
            }
            None => t.push((name, d, spans)),
        }
    }
}

/// The phases recorded, written to `path` for another process to add to
/// its own ([`add_from_file`]): a line a phase, `nanoseconds`, `spans`
/// and its name, split by tabs. The OTF2 reader's helper process writes
/// its phases so.
pub fn write_to_file(path: &std::path::Path) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, d, spans) in recorded() {
        text.push_str(&format!("{}\t{spans}\t{name}\n", d.as_nanos()));
    }
    std::fs::write(path, text)
}

/// Adds the phases another process wrote ([`write_to_file`]) to this
/// one's, in their order (nothing when off; lines that are not such a
/// phase, and a file that cannot be read, are passed over: these are
/// figures for `info --stats`, not data).
pub fn add_from_file(path: &std::path::Path) {
    if !enabled() {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines() {
        let mut f = line.splitn(3, '\t');
        let (Some(Ok(nanos)), Some(Ok(spans)), Some(name)) = (
            f.next().map(str::parse::<u64>),
            f.next().map(str::parse::<u64>),
            f.next(),
        ) else {
            continue;
        };
        add_spans(intern(name), Duration::from_nanos(nanos), spans);
    }
}

/// A phase's name read from another process as a `&'static str` (names
/// of more than 200 bytes, and beyond 256 names, summed as one).
fn intern(name: &str) -> &'static str {
    static NAMES: StaticNames = StaticNames::new(200, "(other phases)");
    NAMES.get(name)
}

/// A phase's span: its wall time goes to the phase when it is dropped.
#[must_use = "a span measures until it is dropped"]
pub struct Span {
    name: &'static str,
    start: Option<Instant>,
    cpu: Option<Duration>,
}

/// Measures phase `name` from now until the span is dropped.
pub fn span(name: &'static str) -> Span {
    let on = enabled();
    Span {
        name,
        cpu: (on && CPU.load(Ordering::Relaxed))
            .then(process_cpu)
            .flatten(),
        start: on.then(Instant::now),
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(s) = self.start {
            add(self.name, s.elapsed());
            if let (Some(c0), Some(c1)) = (self.cpu, process_cpu()) {
                add_cpu(self.name, c1.saturating_sub(c0));
            }
            if MEMORY.load(Ordering::Relaxed) {
                note_memory(self.name);
            }
        }
    }
}

/// The phases recorded since [`enable`]: name, summed wall time, and how
/// many spans made it, in order of first appearance.
pub fn recorded() -> Vec<(&'static str, Duration, u64)> {
    TIMES.lock().map(|t| t.clone()).unwrap_or_default()
}

/// The phases as one line: `name 0.123 s` each, with the count of spans
/// where there were many, where [`cpu_times`] has it the cores the phase
/// kept busy on average (the process's CPU time over its wall time: near
/// 1 for a phase that runs on one thread), and where [`memories`] has it
/// the resident memory after the phase and the peak within it.
pub fn line() -> String {
    let mem = memories();
    let cpus = cpu_times();
    let mib = |kib: u64| kib as f64 / 1024.0;
    recorded()
        .iter()
        .map(|(n, d, k)| {
            let mut s = if *k > 1 {
                format!("{n} {:.3} s ({k}×)", d.as_secs_f64())
            } else {
                format!("{n} {:.3} s", d.as_secs_f64())
            };
            if let Some(&(_, c)) = cpus.iter().find(|c| c.0 == *n)
                && !d.is_zero()
            {
                s.push_str(&format!(
                    " on {:.2} cores",
                    c.as_secs_f64() / d.as_secs_f64()
                ));
            }
            if let Some(&(_, rss, hwm)) = mem.iter().find(|m| m.0 == *n) {
                s.push_str(&format!(
                    " [{:.1} MiB after, peak within {:.1}]",
                    mib(rss),
                    mib(hwm)
                ));
            }
            s
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
        // are looked at)
        let mine = || -> Vec<_> {
            recorded()
                .into_iter()
                .filter(|p| p.0.starts_with("test: "))
                .collect()
        };
        let r = mine();
        assert_eq!(
            r.iter().map(|p| p.0).collect::<Vec<_>>(),
            ["test: parse", "test: build"]
        );
        assert!(r[0].1 >= Duration::from_millis(2));
        assert_eq!(r[0].2, 2);
        assert_eq!(r[1], ("test: build", Duration::from_millis(5), 1));
        assert!(line().contains("test: parse 0.0"), "{}", line());
        assert!(line().contains("(2×)"));
        // written by one process, added by another (here: after a clear),
        // in order; lines that are no phase passed over
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("phases.tsv");
        write_to_file(&file).unwrap();
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("not a phase\n12\tx\tbad spans\n");
        std::fs::write(&file, text).unwrap();
        enable(true);
        drop(span("test: before"));
        add_from_file(&file);
        add_from_file(&file);
        let again = mine();
        assert_eq!(
            again.iter().map(|p| p.0).collect::<Vec<_>>(),
            ["test: before", "test: parse", "test: build"]
        );
        assert_eq!(again[1].1, r[0].1 * 2);
        assert_eq!(again[1].2, 4);
        assert_eq!(again[2], ("test: build", Duration::from_millis(10), 2));
        add_from_file(&d.path().join("absent"));
        assert_eq!(mine(), again);
        // the memory after a span, where asked for
        MEMORY.store(true, Ordering::Relaxed);
        drop(span("test: memory"));
        let whole = peak_kib();
        MEMORY.store(false, Ordering::Relaxed);
        if cfg!(target_os = "linux") {
            let m = memories();
            let &(_, rss, hwm) = m.iter().find(|m| m.0 == "test: memory").unwrap();
            assert!(rss > 0 && hwm >= rss, "{rss} {hwm}");
            assert!(whole.is_some_and(|w| w >= hwm), "{whole:?} {hwm}");
            assert!(line().contains("test: memory 0.0"), "{}", line());
            assert!(line().contains(" MiB after, peak within "), "{}", line());
            assert!(peak_kib().is_none());
        }
        // the process's CPU time over a span, where asked for: a span
        // that keeps this thread busy until the process's clock has moved
        // on 5 ms from a reading after its start has at least that
        if process_cpu().is_some() {
            CPU.store(true, Ordering::Relaxed);
            {
                let _busy = span("test: busy");
                let c0 = process_cpu().unwrap_or_default();
                let t0 = Instant::now();
                while process_cpu().is_some_and(|c| c < c0 + Duration::from_millis(5))
                    && t0.elapsed() < Duration::from_secs(5)
                {
                    std::hint::black_box(0u64);
                }
            }
            CPU.store(false, Ordering::Relaxed);
            let c = cpu_times();
            let &(_, busy) = c.iter().find(|c| c.0 == "test: busy").unwrap();
            assert!(busy >= Duration::from_millis(5), "{busy:?}");
            assert!(line().contains("test: busy "), "{}", line());
            assert!(line().contains(" cores"), "{}", line());
        }
        enable(false);
        assert!(recorded().is_empty());
        assert!(cpu_times().is_empty());
        add_from_file(&file);
        assert!(recorded().is_empty());
    }
}
