//! A Paraver trace as Extrae writes one (shared by `tests/peaks.rs` and
//! `benches/readers.rs`, which includes this file by its path).

use std::io::Write;
use std::path::Path;

/// Writes `tasks` tasks × `iterations` iterations whose records are mostly
/// events: at each state change a record of 2 to 6 hardware-counter pairs
/// and one of a user event (the events out of location order in the file,
/// as in a real trace); about 180 bytes a task an iteration.
pub fn write_counter_events(path: &Path, tasks: u64, iterations: u64) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let apps = vec!["1:1"; tasks as usize].join(",");
    let end = iterations * 1000 + 1000;
    writeln!(
        w,
        "#Paraver (01/01/70 at 00:00):{end}_ns:1({tasks}):1:{tasks}({apps})"
    )?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |below: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % below
    };
    for it in 0..iterations {
        let t0 = it * 1000;
        for p in 1..=tasks {
            let d = 100 + next(800);
            writeln!(w, "1:{p}:1:{p}:1:{t0}:{}:1", t0 + d)?;
            write!(w, "2:{p}:1:{p}:1:{t0}")?;
            for k in 0..2 + next(5) {
                write!(w, ":{}:{}", 42_000_050 + k, next(1_000_000_000))?;
            }
            writeln!(w, "\n2:{p}:1:{p}:1:{}:50000001:{}", t0 + d, next(31))?;
            writeln!(w, "1:{p}:1:{p}:1:{}:{}:3", t0 + d, t0 + 1000)?;
        }
    }
    w.flush()
}
