//! Helpers shared by the benches: peak memory of the bench process,
//! synthetic inputs.
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

/// Writes a synthetic trace with `tapestry synth ARGS -o out`, once (an
/// existing file is kept).
pub fn synth(out: &std::path::Path, args: &[&str]) {
    if out.exists() {
        return;
    }
    std::fs::create_dir_all(out.parent().expect("a directory")).expect("bench-data");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_tapestry"))
        .arg("synth")
        .args(args)
        .arg("-o")
        .arg(out)
        .status()
        .expect("tapestry synth runs");
    assert!(st.success(), "tapestry synth {args:?}");
}
