//! Helpers shared by the benches: peak memory of the bench process.
#![allow(dead_code)] // each bench uses what it needs

/// Resets the peak resident set size of this process (Linux).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident set size of this process in MiB (0 where unknown).
pub fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
