//! `analyze --stream`: reductions made while reading agree with the
//! in-memory path (the busy field bit for bit, moments to rounding), in a
//! fraction of the memory; what a stream cannot do is refused clearly.

mod common;

use common::{messy_picl, shared_trace, tapestry};

/// The data rows of a CSV output (the `#` metadata line dropped).
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn synth(dir: &std::path::Path, name: &str, args: &[&str]) -> String {
    let p = dir.join(name);
    let mut a = vec!["synth"];
    a.extend_from_slice(args);
    a.extend(["-o", p.to_str().unwrap()]);
    let (c, _, e) = tapestry(&a);
    assert_eq!(c, 0, "{e}");
    p.to_str().unwrap().to_string()
}

fn assert_moments_agree(trace: &str, extra: &[&str]) {
    let mut a = vec!["analyze", trace, "moments"];
    a.extend_from_slice(extra);
    let (c1, mem, e1) = tapestry(&a);
    a.push("--stream");
    let (c2, st, e2) = tapestry(&a);
    assert_eq!((c1, c2), (0, 0), "{e1} {e2}");
    assert!(e2.contains("streamed"), "{e2}");
    let (m, s) = (rows(&mem), rows(&st));
    assert_eq!(m.len(), s.len());
    assert_eq!(m[0], s[0], "header");
    for (x, y) in m.iter().zip(&s).skip(1) {
        // location, name and m0 (a sum of integers) are identical
        assert_eq!(x[..3], y[..3], "{trace}");
        let scale: f64 = x[4].parse::<f64>().unwrap_or(0.0).abs().max(1.0);
        for k in 3..6 {
            if x[k].is_empty() || y[k].is_empty() {
                assert_eq!(x[k], y[k]);
                continue;
            }
            let (p, q): (f64, f64) = (x[k].parse().unwrap(), y[k].parse().unwrap());
            if k == 5 {
                // m3 = 3 cbrt(μ3): near-symmetric busy time makes μ3 a
                // difference of large terms, so compare μ3 against m2³
                let (a, b) = ((p / 3.0).powi(3), (q / 3.0).powi(3));
                let tol = 1e-9 * scale.powi(3);
                assert!((a - b).abs() <= tol, "{trace} μ3: {a} vs {b}");
            } else {
                let tol = 1e-9 * scale.max(p.abs());
                assert!((p - q).abs() <= tol, "{trace} column {k}: {p} vs {q}");
            }
        }
    }
}

fn assert_field_identical(trace: &str, extra: &[&str]) {
    let mut a = vec!["analyze", trace, "field"];
    a.extend_from_slice(extra);
    let (c1, mem, e1) = tapestry(&a);
    a.push("--stream");
    let (c2, st, e2) = tapestry(&a);
    assert_eq!((c1, c2), (0, 0), "{e1} {e2}");
    assert_eq!(rows(&mem), rows(&st), "{trace} {extra:?}");
}

/// The communication matrix and the summary (`info` and `analyze
/// summary`) of a stream equal the in-memory ones exactly.
fn assert_comm_and_summary_identical(trace: &str, window: &str) {
    assert_comm_and_summary_identical_at(trace, window, ["process", "node"]);
}

/// [`assert_comm_and_summary_identical`] with the matrix at two levels of
/// the trace's hierarchy.
fn assert_comm_and_summary_identical_at(trace: &str, window: &str, levels: [&str; 2]) {
    for extra in [
        vec![],
        vec!["--level", levels[0], "--metric", "bytes"],
        vec!["--level", levels[1], "--window", window],
    ] {
        let mut a = vec!["analyze", trace, "comm-matrix"];
        a.extend_from_slice(&extra);
        let (c1, mem, e1) = tapestry(&a);
        a.push("--stream");
        let (c2, st, e2) = tapestry(&a);
        assert_eq!((c1, c2), (0, 0), "{e1} {e2}");
        assert_eq!(mem, st, "{trace} comm-matrix {extra:?}");
    }
    for json in [true, false] {
        let mut a = vec!["info", trace];
        if json {
            a.push("--json");
        }
        let (c1, mem, e1) = tapestry(&a);
        a.push("--stream");
        let (c2, st, e2) = tapestry(&a);
        assert_eq!((c1, c2), (0, 0), "{e1} {e2}");
        assert_eq!(mem, st, "{trace} info (json {json})");
        assert!(e2.contains("streamed"), "{e2}");
    }
    let (c1, mem, _) = tapestry(&["analyze", trace, "summary"]);
    let (c2, st, e2) = tapestry(&["analyze", trace, "summary", "--stream"]);
    assert_eq!((c1, c2), (0, 0), "{e2}");
    assert_eq!(mem, st);
    let (_, info, _) = tapestry(&["info", trace]);
    assert_eq!(mem, info, "analyze summary prints what info prints");
}

/// Moments (whole and over a window, with `states` there), the field
/// (whole and over a window), the matrix at two `levels` and the summary
/// of `trace`: streamed as in memory.
fn assert_every_reduction_agrees(trace: &str, states: &[&str], levels: [&str; 2]) {
    let (c, info, e) = tapestry(&["info", trace, "--json"]);
    assert_eq!(c, 0, "{e}");
    let span = serde_json::from_str::<serde_json::Value>(&info).unwrap()["span_ns"]
        .as_u64()
        .unwrap();
    let w1 = format!("{}:{}", span / 10, span * 6 / 10);
    assert_moments_agree(trace, &[]);
    let mut windowed = vec!["--window", w1.as_str()];
    windowed.extend_from_slice(states);
    assert_moments_agree(trace, &windowed);
    assert_field_identical(trace, &["--bins", "16"]);
    assert_field_identical(trace, &["--bins", "33", "--window", &w1]);
    assert_comm_and_summary_identical_at(trace, &w1, levels);
}

#[test]
fn stream_equals_memory_on_real_and_synthetic_traces() {
    let dir = tempfile::tempdir().unwrap();
    let qsort = shared_trace("paraver-qsort/qsort_beo3.prv");
    let qsort = qsort.to_str().unwrap();
    let bcast = synth(dir.path(), "b.prv", &["bcast", "-p", "64", "--reps", "40"]);
    let gauss = synth(dir.path(), "g.prv", &["gauss", "--n", "48", "-p", "16"]);
    for t in [qsort, bcast.as_str(), gauss.as_str()] {
        let (_, info, _) = tapestry(&["info", t, "--json"]);
        let span = serde_json::from_str::<serde_json::Value>(&info).unwrap()["span_ns"]
            .as_u64()
            .unwrap();
        let w1 = format!("{}:{}", span / 10, span * 6 / 10);
        let w2 = format!("{}:{}", span / 20, span * 19 / 20);
        assert_moments_agree(t, &[]);
        assert_moments_agree(t, &["--window", &w1]);
        assert_moments_agree(t, &["--states", "busy,overhead"]);
        assert_field_identical(t, &["--bins", "16"]);
        assert_field_identical(t, &["--bins", "33", "--window", &w2]);
        assert_comm_and_summary_identical(t, &w1);
    }
    assert_moments_agree(qsort, &["--busy", "Running,Waiting*"]);
    assert_field_identical(qsort, &["--bins", "9", "--states", "Running,Idle"]);
}

/// An OTF2 archive with what real traces hold (two locations per process,
/// nesting, leaves of the wrong region, regions left open, messages of
/// changing sizes, unmatched sends and receives, collectives without a
/// begin, metrics), written by the official Python writer with a timer
/// finer than a nanosecond and with a coarse one: the stream gives the
/// in-memory summary, matrix and field exactly and the moments to
/// rounding, with any number of reading threads.
#[cfg(feature = "otf2")]
#[test]
fn otf2_stream_equals_memory() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/write_otf2_messy.py");
    let mut archives = Vec::new();
    for (name, ranks, steps, res, offset, seed) in [
        ("fine", "6", "120", "2400000000", "1000000", "7"),
        ("coarse", "5", "90", "1000000", "50", "11"),
    ] {
        let out = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(dir.path().join(name))
            .args([ranks, steps, res, offset, seed])
            .output()
            .expect("/usr/bin/python3 with the otf2 module (Debian package python3-otf2)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        archives.push(dir.path().join(name).join("traces.otf2"));
    }
    archives.push(shared_trace("ping-pong-otf2/traces.otf2"));
    archives.push(shared_trace("ping-pong-otf2-papi/traces.otf2"));
    for a in &archives {
        let t = a.to_str().unwrap();
        let (_, info, _) = tapestry(&["info", t, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&info).unwrap();
        let span = v["span_ns"].as_u64().unwrap();
        let w1 = format!("{}:{}", span / 10, span * 6 / 10);
        assert_moments_agree(t, &[]);
        assert_moments_agree(t, &["--window", &w1]);
        assert_moments_agree(t, &["--states", "busy,overhead"]);
        assert_field_identical(t, &["--bins", "16"]);
        assert_field_identical(t, &["--bins", "33", "--window", &w1]);
        assert_comm_and_summary_identical(t, &w1);
        // the reading threads do not change the result
        let (c, one, e) = common::tapestry_env(
            &["info", t, "--json", "--stream"],
            &[("RAYON_NUM_THREADS", "1")],
        );
        assert_eq!(c, 0, "{e}");
        for threads in ["2", "5"] {
            let (c, many, e) = common::tapestry_env(
                &["info", t, "--json", "--stream"],
                &[("RAYON_NUM_THREADS", threads)],
            );
            assert_eq!(c, 0, "{e}");
            assert_eq!(one, many, "{t} with {threads} threads");
        }
    }
    // the messy archives hold every repair a stream must count
    let (_, info, _) = tapestry(&["info", archives[0].to_str().unwrap(), "--stream"]);
    for kind in [
        "unmatched-leave",
        "unclosed-enter",
        "unmatched-message",
        "unmatched-collective",
    ] {
        assert!(info.contains(kind), "{kind}: {info}");
    }
}

/// PICL streams equal the in-memory reader (two passes: the processors
/// and the end first), on synthetic runs and on untidy files; what a
/// stream cannot do is refused with the line.
#[test]
fn picl_stream_equals_memory() {
    let dir = tempfile::tempdir().unwrap();
    let gauss = synth(dir.path(), "g.picl", &["gauss", "--n", "48", "-p", "16"]);
    let mut traces = vec![gauss];
    // records after the last stop: outside busy, nested among themselves
    let after = common::write(
        dir.path(),
        "after-stop.picl",
        b"-3 -901 0.000000000 0 0 0\n-3 -901 0.000000000 1 1 0\n\
          -3 -52 0.000001000 1 1 0\n\
          -4 -901 0.000010000 0 0 0\n\
          -3 -21 0.000011000 0 0 4 2 64 1 1 1\n-4 -21 0.000012000 0 0 0\n\
          -3 -21 0.000013000 0 0 4 2 64 1 1 1\n-3 -10 0.000013500 0 0 0\n\
          -4 -21 0.000014000 0 0 0\n\
          -4 -52 0.000015000 1 1 4 2 64 1 0 0\n-4 -901 0.000016000 1 1 0\n",
    );
    traces.push(after.to_str().unwrap().to_string());
    for seed in [3u64, 17, 99] {
        let p = common::write(
            dir.path(),
            &format!("messy{seed}.picl"),
            messy_picl(seed, 6, 300).as_bytes(),
        );
        traces.push(p.to_str().unwrap().to_string());
    }
    for t in &traces {
        assert_every_reduction_agrees(t, &[], ["thread", "thread"]);
    }
    // the untidy files hold the repairs a stream must count
    let (_, info, _) = tapestry(&["info", &traces[2], "--stream"]);
    for kind in ["unmatched-end", "unclosed-begin", "unmatched-message"] {
        assert!(info.contains(kind), "{kind}: {info}");
    }
    for (name, text, line, want) in [
        (
            "late-start.picl",
            "-3 -10 0.000001 0 0 0\n-3 -901 0.000002 0 0 0\n-4 -901 0.000003 0 0 0\n",
            "line 2",
            "trace start comes after",
        ),
        (
            "unsorted.picl",
            "-3 -901 0.000005 0 0 0\n-3 -10 0.000002 0 0 0\n-4 -901 0.000009 0 0 0\n",
            "line 2",
            "time order",
        ),
        (
            // a send from the first record past the last stop: in memory
            // busy nests inside it
            "outside.picl",
            "-3 -21 0.000000 0 0 4 2 8 0 0 0\n-4 -901 0.000005 0 0 0\n-4 -21 0.000009 0 0 0\n",
            "line 3",
            "past its last trace stop",
        ),
    ] {
        let p = common::write(dir.path(), name, text.as_bytes());
        let p = p.to_str().unwrap();
        let (c, _, e) = tapestry(&["info", p, "--stream"]);
        assert_ne!(c, 0, "{name}");
        assert!(
            e.contains(name) && e.contains(line) && e.contains(want),
            "{name}: {e}"
        );
        // the in-memory reader takes them
        let (c, _, e) = tapestry(&["info", p]);
        assert_eq!(c, 0, "{name}: {e}");
    }
}

/// Chrome JSON (real traces, the LAMMPS run written by pmpitrace, and
/// synthetic ones): the stream gives the in-memory summary, matrix and
/// field exactly and the moments to rounding; what it cannot match in file
/// order is refused at its line.
#[test]
fn chrome_stream_equals_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces: Vec<String> = ["simple_trace.json", "tall_trace.json", "flow_simple.json"]
        .iter()
        .map(|f| {
            shared_trace(&format!("chrome/{f}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    traces.push(
        shared_trace("lammps-melt-16/lammps-melt-16.json.gz")
            .to_str()
            .unwrap()
            .to_string(),
    );
    traces.push(synth(
        dir.path(),
        "b.json",
        &["bcast", "-p", "32", "--reps", "30"],
    ));
    traces.push(synth(
        dir.path(),
        "g.json.gz",
        &["gauss", "--n", "32", "-p", "8"],
    ));
    for t in &traces {
        assert_every_reduction_agrees(t, &["--states", "busy,overhead"], ["thread", "process"]);
    }
    // Chrome's categories select states as in memory
    assert_moments_agree(&traces[3], &["--busy", "cat:compute"]);
    // a flow whose finish comes before its start in the file (as a trace
    // written process by process has them): matched as in memory
    let back = common::write(
        dir.path(),
        "back.json",
        br#"[
{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"a"},
{"ph":"f","pid":1,"tid":2,"ts":9,"id":7,"cat":"m","bp":"e","args":{"bytes":64}},
{"ph":"s","pid":1,"tid":1,"ts":2,"id":7,"cat":"m","args":{"bytes":64}}
]"#,
    );
    let b = back.to_str().unwrap();
    let (c, mem, e) = tapestry(&["info", b]);
    assert_eq!(c, 0, "{e}");
    assert!(mem.contains("1 (64 bytes sent)"), "{mem}");
    let (c, st, e) = tapestry(&["info", b, "--stream"]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(mem, st);
}

/// A `.pcf` that names a state value twice: the value is the first state
/// of that value in the stream as in memory (found by the fuzz harness).
#[test]
fn a_state_value_named_twice_is_its_first_state() {
    let dir = tempfile::tempdir().unwrap();
    let prv = common::write(
        dir.path(),
        "d.prv",
        b"#Paraver (01/01/2024 at 00:00):1000_ns:0:1:1(2:0)\n\
          1:1:1:1:1:0:400:1\n\
          1:1:1:1:1:400:1000:0\n\
          1:1:1:1:2:0:700:1\n",
    );
    common::write(
        dir.path(),
        "d.pcf",
        b"STATES\n1    Grad. 1/MPI Events\n0    Idle\n1    Running\n",
    );
    let p = prv.to_str().unwrap();
    assert_field_identical(p, &["--bins", "10"]);
    assert_moments_agree(p, &["--states", "Grad. 1/MPI Events"]);
    let (_, mem, _) = tapestry(&["info", p, "--json"]);
    let (_, st, _) = tapestry(&["info", p, "--json", "--stream"]);
    assert_eq!(mem, st);
    assert!(mem.contains("Grad. 1/MPI Events"), "{mem}");
}

/// A trace that would take more than half the memory limit in memory is
/// streamed without `--stream` (saying so), for the analyses a stream
/// gives; `--no-stream` and the other analyses read it in memory.
#[test]
fn a_trace_too_large_for_memory_is_streamed_automatically() {
    let lammps = shared_trace("lammps-melt-16/lammps-melt-16.json.gz");
    let l = lammps.to_str().unwrap();
    // 45 MB of JSON once decompressed (2.4 MB of gzip): ~26 MiB in memory
    let small = [("TAPESTRY_MEMORY_LIMIT", "16M")];
    for args in [
        vec!["analyze", l, "field", "--bins", "12"],
        vec!["analyze", l, "comm-matrix", "--level", "process"],
        vec!["info", l, "--json"],
    ] {
        let (c, auto, e) = common::tapestry_env(&args, &small);
        assert_eq!(c, 0, "{e}");
        assert!(
            e.contains("note:") && e.contains("26 MiB") && e.contains("streamed"),
            "{args:?}: {e}"
        );
        let (c, mem, e) = tapestry(&args);
        assert_eq!(c, 0, "{e}");
        assert!(!e.contains("streamed"), "{e}");
        assert_eq!(rows(&auto), rows(&mem), "{args:?}");
        // in memory, a Chrome trace too large for one pass is read in two:
        // the same model
        let mut forced = args.clone();
        forced.push("--no-stream");
        let (c, two, e) = common::tapestry_env(&forced, &small);
        assert_eq!(c, 0, "{e}");
        assert!(!e.contains("streamed"), "{forced:?}: {e}");
        assert_eq!(two, mem, "{forced:?}");
    }
    // an analysis a stream cannot give reads in memory
    let (c, _, e) = common::tapestry_env(&["analyze", l, "signal-w", "--period", "1ms"], &small);
    assert_eq!(c, 0, "{e}");
    assert!(!e.contains("streamed"), "{e}");
    // what the stream refuses says how to read in memory
    let dir = tempfile::tempdir().unwrap();
    let prv = common::write(
        dir.path(),
        "u.prv",
        b"#Paraver (01/01/2024 at 00:00):1000_ns:0:1:1(1:0)\n\
          1:1:1:1:1:500:600:1\n\
          1:1:1:1:1:0:100:1\n",
    );
    let p = prv.to_str().unwrap();
    let (c, _, e) = common::tapestry_env(
        &["analyze", p, "moments"],
        &[("TAPESTRY_MEMORY_LIMIT", "100")],
    );
    assert_ne!(c, 0);
    assert!(e.contains("--no-stream") && e.contains("time order"), "{e}");
    let (c, _, e) = common::tapestry_env(
        &["analyze", p, "moments", "--no-stream"],
        &[("TAPESTRY_MEMORY_LIMIT", "100")],
    );
    assert_eq!(c, 0, "{e}");
}

#[test]
fn overlapping_records_are_clipped_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let prv = common::write(
        dir.path(),
        "o.prv",
        b"#Paraver (01/01/2024 at 00:00):1000_ns:0:1:1(2:0)\n\
          1:1:1:1:1:0:100:1\n\
          1:1:1:1:1:50:300:1\n\
          1:1:1:1:1:300:300:1\n\
          1:1:1:1:1:300:500:0\n\
          1:1:1:1:2:0:400:1\n\
          1:1:1:1:2:400:900:1\n",
    );
    let p = prv.to_str().unwrap();
    assert_moments_agree(p, &[]);
    assert_field_identical(p, &["--bins", "10"]);
    let (_, mem, _) = tapestry(&["info", p, "--json"]);
    let (_, st, _) = tapestry(&["info", p, "--json", "--stream"]);
    assert_eq!(mem, st, "the summary after clipping");
    let (_, _, e) = tapestry(&["analyze", p, "moments", "--stream"]);
    assert!(e.contains("overlapping-states"), "{e}");
    let (c, _, e) = tapestry(&["analyze", p, "moments", "--stream", "--strict"]);
    assert_ne!(c, 0);
    assert!(e.contains("overlap"), "{e}");
}

#[test]
fn what_a_stream_cannot_do_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // records out of time order on one location
    let prv = common::write(
        dir.path(),
        "u.prv",
        b"#Paraver (01/01/2024 at 00:00):1000_ns:0:1:1(1:0)\n\
          1:1:1:1:1:500:600:1\n\
          1:1:1:1:1:0:100:1\n",
    );
    let p = prv.to_str().unwrap();
    let (c, _, e) = tapestry(&["analyze", p, "moments", "--stream"]);
    assert_ne!(c, 0);
    assert!(e.contains("u.prv") && e.contains("time order"), "{e}");
    // the in-memory path sorts them
    let (c, _, e) = tapestry(&["analyze", p, "moments"]);
    assert_eq!(c, 0, "{e}");
    // records past the declared end with the default window
    let late = common::write(
        dir.path(),
        "late.prv",
        b"#Paraver (01/01/2024 at 00:00):100_ns:0:1:1(1:0)\n1:1:1:1:1:0:500:1\n",
    );
    let (c, _, e) = tapestry(&["analyze", late.to_str().unwrap(), "field", "--stream"]);
    assert_ne!(c, 0);
    assert!(e.contains("--window 0:500"), "{e}");
    let (c, _, e) = tapestry(&[
        "analyze",
        late.to_str().unwrap(),
        "field",
        "--stream",
        "--window",
        "0:500",
        "--bins",
        "5",
    ]);
    assert_eq!(c, 0, "{e}");
    // other analyses, quantities and formats
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let q = q.to_str().unwrap();
    for (args, want) in [
        (vec!["analyze", q, "signal-w", "--stream"], "in memory"),
        (
            vec![
                "analyze",
                q,
                "comm-matrix",
                "--stream",
                "--metric",
                "busy-fraction",
            ],
            "messages or bytes",
        ),
        (
            vec!["analyze", q, "comm-matrix", "--stream", "--level", "rack"],
            "unknown level",
        ),
        (
            vec!["analyze", q, "summary", "--stream", "-o", "s.npy"],
            "JSON",
        ),
        (
            vec!["analyze", q, "field", "--quantity", "messages", "--stream"],
            "busy field only",
        ),
        (
            vec!["analyze", q, "moments", "--stream", "--window", "phase:1"],
            "phases",
        ),
    ] {
        let (c, _, e) = tapestry(&args);
        assert_ne!(c, 0, "{args:?}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
    // a profile has no records in time: refused as what it is
    let table = common::write(
        dir.path(),
        "lines.csv",
        b"line,processor,ticks\n10,0,15\n11,0,3\n",
    );
    let (c, _, e) = tapestry(&["analyze", table.to_str().unwrap(), "moments", "--stream"]);
    assert_ne!(c, 0);
    assert!(
        e.contains("lines.csv") && e.contains("line-profile table") && e.contains("Chrome"),
        "{e}"
    );
    // the summary needs no window: records past the declared end are summed
    let (c, mem, e) = tapestry(&["info", late.to_str().unwrap(), "--json"]);
    assert_eq!(c, 0, "{e}");
    let (c, st, e) = tapestry(&["info", late.to_str().unwrap(), "--json", "--stream"]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(mem, st);
}

#[test]
fn streaming_memory_does_not_grow_with_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let peak = |e: &str| -> f64 {
        let s = e.split("peak memory ").nth(1).expect("peak memory printed");
        s.split_whitespace().next().unwrap().parse().unwrap()
    };
    let small = synth(
        dir.path(),
        "s.prv",
        &["bcast", "-p", "256", "--reps", "400"],
    );
    let big = synth(
        dir.path(),
        "l.prv",
        &["bcast", "-p", "256", "--reps", "4000"],
    );
    let run = |p: &str| {
        let (c, _, e) = common::tapestry_env(
            &["analyze", p, "field", "--bins", "32", "--stream"],
            &[("RAYON_NUM_THREADS", "1")],
        );
        assert_eq!(c, 0, "{e}");
        peak(&e)
    };
    let (ps, pl) = (run(&small), run(&big));
    let (c, _, e) = tapestry(&["info", &big, "--stats"]);
    assert_eq!(c, 0);
    let mem = peak(&e);
    // and the model's own size beside, with the peak against it: the model
    // is resident, so the peak holds it
    let model: f64 = e
        .split("the model ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no model size in {e}"));
    let ratio: f64 = e
        .split("in memory (")
        .nth(1)
        .and_then(|s| s.split('x').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ratio in {e}"));
    assert!(
        model > 10.0 && model < mem,
        "model {model} MiB, peak {mem} MiB"
    );
    assert!(
        (ratio - mem / model).abs() < 0.01,
        "{ratio} vs {mem} / {model}"
    );
    // 10× the records: the stream's peak barely moves (it holds a few
    // blocks of the file and the accumulators), the model's grows. The
    // blocks in flight are at most a 16th of a small file, and 8 MiB from
    // 128 MB on: the small file's (16 MB) are 1 MiB, the large one's
    // (172 MB) the whole 8
    let blocks = 8.0;
    assert!(
        pl < ps * 1.5 + 8.0 + blocks,
        "stream peak {ps} MiB → {pl} MiB"
    );
    assert!(pl < mem / 3.0, "stream {pl} MiB vs in memory {mem} MiB");
}

#[test]
fn many_state_values_cannot_grow_the_accumulators_past_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("#Paraver (01/01/2024 at 00:00):1000000_ns:0:1:1(1:0)\n");
    for v in 0..300u64 {
        text.push_str(&format!(
            "1:1:1:1:1:{}:{}:{}\n",
            v * 10,
            v * 10 + 5,
            1000 + v
        ));
    }
    let p = common::write(dir.path(), "many.prv", text.as_bytes());
    let args = [
        "analyze",
        p.to_str().unwrap(),
        "field",
        "--bins",
        "1000",
        "--stream",
    ];
    let (c, _, e) = common::tapestry_env(&args, &[("TAPESTRY_MEMORY_LIMIT", "1M")]);
    assert_ne!(c, 0);
    assert!(
        e.contains("stream accumulators") && e.contains("states"),
        "{e}"
    );
    let (c, _, e) = common::tapestry_env(&args, &[("TAPESTRY_MEMORY_LIMIT", "64M")]);
    assert_eq!(c, 0, "{e}");
}

/// What a PICL stream reduced, as comparable text: the summary, the busy
/// field, the communication matrix and the moments.
fn picl_outputs(
    r: &tapestry::analysis::stream::StreamReducer,
    t: &tapestry::model::Trace,
    keys: &[(u32, tapestry::model::StateId)],
) -> [String; 4] {
    use tapestry::analysis::{comm::Level, summary::summarize_from};
    let per_loc = r.state_time_per_location(keys, t.states.len());
    let summary = summarize_from(t, &per_loc, r.totals());
    let mask = t.states.select(&["busy".to_string()]).unwrap();
    let field = r.busy_field(&mask, keys).unwrap();
    let comm = r.comm_matrix(t, Level::Thread).unwrap();
    [
        serde_json::to_string(&summary).unwrap(),
        format!("{:?} {:?}", field.values, field.edges),
        format!("{:?} {:?}", comm.edges, comm.windows),
        format!("{:?}", r.moments(&mask, keys)),
    ]
}

fn picl_reducer<'a>() -> tapestry::analysis::stream::StreamReducer<'a> {
    use tapestry::analysis::stream::{StreamReducer, StreamSpec};
    StreamReducer::new(
        StreamSpec {
            bins: Some(13),
            comm: true,
        },
        Box::new(|span| Ok((0, span.max(1)))),
    )
}

/// A PICL trace reduced by `n` processes (threads of this one) reading
/// stripes of `stripe` bytes, merged on rank 0 as `reduce` merges them: the
/// outputs, or the one error a process met (the others stop quietly).
fn picl_shared(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
    n: usize,
    stripe: u64,
) -> Result<[String; 4], String> {
    use tapestry::readers::exchange::ThreadExchange;
    use tapestry::readers::picl::share::{PiclShare, read_share};
    let ends = ThreadExchange::group(n);
    let done: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = ends
            .into_iter()
            .map(|mut ex| {
                s.spawn(move || {
                    let mut r = picl_reducer();
                    read_share(path, opts, &mut r, &mut ex, stripe).map(|sh| (sh, r))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let errors: Vec<String> = done
        .iter()
        .filter_map(|d| match d {
            Err(tapestry::Error::OtherProcess) | Ok(_) => None,
            Err(e) => Some(e.to_string()),
        })
        .collect();
    if !errors.is_empty() {
        assert_eq!(errors.len(), 1, "one process says why: {errors:?}");
        assert!(done.iter().all(|d| d.is_err()), "every process stops");
        return Err(errors[0].clone());
    }
    let mut done = done.into_iter().map(|d| d.unwrap());
    let (mut share, mut r) = done.next().unwrap();
    for (s, rk) in done {
        let bytes = s.to_bytes();
        let (s, used) = PiclShare::from_bytes(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        share.merge(s).unwrap();
        r.merge_bytes(&rk.to_bytes()).unwrap();
    }
    let (t, keys) = share.finish(&r, opts).map_err(|e| e.to_string())?;
    Ok(picl_outputs(&r, &t, &keys))
}

/// The same PICL trace read alone by `--stream`'s reader.
fn picl_alone(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
) -> Result<[String; 4], String> {
    let mut r = picl_reducer();
    let (t, keys) =
        tapestry::readers::picl::stream::stream(path, opts, &mut r).map_err(|e| e.to_string())?;
    Ok(picl_outputs(&r, &t, &keys))
}

/// `reduce` on a PICL trace: processes reading stripes dealt in turn, each
/// record sent to the process that cuts its processor, give the
/// single-process stream's summary, field, matrix and moments exactly, and
/// its errors at the same line; with 1 to 5 processes and stripes from a
/// few lines to the whole file.
#[test]
fn picl_shares_equal_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let gauss = synth(dir.path(), "g.picl", &["gauss", "--n", "40", "-p", "12"]);
    let mut traces = vec![std::path::PathBuf::from(gauss)];
    for (seed, procs) in [(3u64, 6u32), (17, 40), (99, 3)] {
        traces.push(common::write(
            dir.path(),
            &format!("messy{seed}.picl"),
            messy_picl(seed, procs, 200).as_bytes(),
        ));
    }
    // the last record broken off (repaired), a malformed record in the
    // middle, and what a stream refuses
    let messy = messy_picl(5, 4, 120);
    let cut = &messy[..messy.len() - 7];
    traces.push(common::write(dir.path(), "cut.picl", cut.as_bytes()));
    let mid = messy.match_indices('\n').nth(300).unwrap().0 + 1;
    let mut bad = messy.clone();
    bad.insert_str(mid, "-3 -21 oops 1 1 0\n");
    traces.push(common::write(dir.path(), "bad.picl", bad.as_bytes()));
    let mut late = messy.clone();
    late.push_str("-3 -901 0.000000001 2 2 0\n");
    traces.push(common::write(dir.path(), "late.picl", late.as_bytes()));
    let opts = tapestry::readers::ReadOptions::default();
    let strict = tapestry::readers::ReadOptions {
        strict: true,
        ..Default::default()
    };
    let mut failures = 0;
    for t in &traces {
        for o in [&opts, &strict] {
            let want = picl_alone(t, o);
            failures += usize::from(want.is_err());
            for (n, stripe) in [(1, 1 << 20), (2, 61), (3, 700), (5, 4096), (4, 1 << 20)] {
                let got = picl_shared(t, o, n, stripe);
                assert_eq!(
                    got,
                    want,
                    "{}: {n} processes, stripes of {stripe} bytes, strict {}",
                    t.display(),
                    o.strict
                );
            }
        }
    }
    // the cut, bad and late files fail (cut only when strict), and the
    // untidy ones when strict
    assert!(failures >= 6, "{failures}");
}
