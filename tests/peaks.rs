//! Peak memory of in-memory reads whose records come out of the order the
//! model keeps them in: events and counter samples in time order across
//! locations (as Extrae's Paraver traces and Chrome traces with counters
//! write them). Each runs the binary in a process of its own and reads its
//! peak and its model from `info --stats`.

mod common;

use std::io::Write;

/// `info --stats` of `path` on `threads` threads: (peak, model) in MiB.
fn peak_and_model(path: &std::path::Path, threads: &str) -> (f64, f64) {
    let p = path.to_str().unwrap();
    let (c, out, err) =
        common::tapestry_env(&["info", p, "--stats"], &[("RAYON_NUM_THREADS", threads)]);
    assert_eq!(c, 0, "{err}");
    let text = format!("{out}{err}");
    let after = |marker: &str| -> f64 {
        text.split(marker)
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no '{marker}' in {text}"))
    };
    (after("peak memory "), after("the model "))
}

/// A Paraver trace of 64 tasks whose records are mostly events: at each
/// state change a record of 2 to 6 hardware-counter pairs and a user event.
/// Sorting its events with a buffer as large as them took the read to 2×
/// its model.
#[test]
fn a_paraver_trace_of_many_events_peaks_near_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.prv");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let (tasks, iterations) = (64u64, 7_000u64);
    let apps = vec!["1:1"; tasks as usize].join(",");
    writeln!(
        w,
        "#Paraver (01/01/70 at 00:00):{}_ns:1({tasks}):1:{tasks}({apps})",
        iterations * 1000 + 1000
    )
    .unwrap();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
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
            writeln!(w, "1:{p}:1:{p}:1:{t0}:{}:1", t0 + d).unwrap();
            write!(w, "2:{p}:1:{p}:1:{t0}").unwrap();
            for k in 0..2 + next(5) {
                write!(w, ":{}:{}", 42_000_050 + k, next(1_000_000_000)).unwrap();
            }
            writeln!(w, "\n2:{p}:1:{p}:1:{}:50000001:{}", t0 + d, next(31)).unwrap();
            writeln!(w, "1:{p}:1:{p}:1:{}:{}:3", t0 + d, t0 + 1000).unwrap();
        }
    }
    w.flush().unwrap();
    drop(w);
    for threads in ["1", "2"] {
        let (peak, model) = peak_and_model(&path, threads);
        assert!(model > 25.0, "model {model} MiB");
        // the model, a tenth more, and the process's own (code, libc)
        assert!(
            peak <= 1.3 * model + 12.0,
            "{threads} thread(s): peak {peak} MiB, model {model} MiB"
        );
    }
}

/// A Chrome trace of slices and counter samples (two series a process, in
/// time order across the processes): its samples were pushed one by one
/// into a list that grew, beside the reader's own, and the read took 2.35×
/// its model.
#[test]
fn a_chrome_trace_of_many_counter_samples_peaks_near_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counters.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(w, "{{\"traceEvents\":[").unwrap();
    let mut first = true;
    for i in 0..60_000u64 {
        for p in 0..8 {
            let (rss, heap) = ((i * 7919 + p * 104_729) % 1_000_000, (i * 31 + p) % 100_000);
            let sep = if first { "" } else { ",\n" };
            first = false;
            write!(
                w,
                "{sep}{{\"name\":\"compute\",\"cat\":\"cpu\",\"ph\":\"X\",\"pid\":{p},\"tid\":1,\
                 \"ts\":{},\"dur\":7}},\n{{\"name\":\"mem\",\"ph\":\"C\",\"pid\":{p},\"tid\":1,\
                 \"ts\":{},\"args\":{{\"rss\":{rss},\"heap\":{heap}}}}}",
                i * 10,
                i * 10
            )
            .unwrap();
        }
    }
    writeln!(w, "\n]}}").unwrap();
    w.flush().unwrap();
    drop(w);
    for threads in ["1", "2"] {
        let (peak, model) = peak_and_model(&path, threads);
        assert!(model > 25.0, "model {model} MiB");
        // the reader's own list of samples is larger than the model's
        // columns (24 bytes a sample against 20) until they are made
        assert!(
            peak <= 1.6 * model + 12.0,
            "{threads} thread(s): peak {peak} MiB, model {model} MiB"
        );
    }
}
