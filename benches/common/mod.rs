//! Helpers shared by the benches: peak memory of the bench process,
//! synthetic inputs.
#![allow(dead_code)] // each bench uses what it needs

/// Resets the peak resident set size of this process (Linux).
pub fn reset_peak() {
    tapestry::memory::reset_peak();
}

/// The peak resident set size of this process in MiB (0 where unknown).
pub fn peak_mib() -> f64 {
    tapestry::memory::resident_kib().map_or(0.0, |m| m.1 as f64 / 1024.0)
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
