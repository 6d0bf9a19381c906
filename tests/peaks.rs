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

/// On 1 and 2 threads, the read of `path` builds a model of more than
/// 25 MiB and peaks within `factor` times it and 12 MiB (the process's
/// own: code, libc).
fn assert_peaks_within(path: &std::path::Path, factor: f64) {
    for threads in ["1", "2"] {
        let (peak, model) = peak_and_model(path, threads);
        assert!(model > 25.0, "model {model} MiB");
        assert!(
            peak <= factor * model + 12.0,
            "{threads} thread(s): peak {peak} MiB, model {model} MiB"
        );
    }
}

/// A Paraver trace of 64 tasks whose records are mostly events: at each
/// state change a record of 2 to 6 hardware-counter pairs and a user event.
/// Sorting its events with a buffer as large as them took the read to 2×
/// its model.
#[test]
fn a_paraver_trace_of_many_events_peaks_near_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.prv");
    common::extrae::write_counter_events(&path, 64, 7_000).unwrap();
    // the model, its events packed a block at a time while read (some 10
    // bytes an event, against 24 as raw records: 1.5x before), and the
    // process's own (code, libc)
    assert_peaks_within(&path, 1.2);
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
    // the reader's own list of samples is larger than the model's
    // columns (24 bytes a sample against 20) until they are made, before
    // the intervals' columns; sorted by location only, a location's
    // samples were copied twice over to be sorted by counter (1.49× at
    // one thread); a thread's flat list of intervals beside its block
    assert_peaks_within(&path, 1.3);
}
