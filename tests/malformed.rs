//! Malformed input: every reader reports the file, the position, what it
//! expected and what it found, exits non-zero and never panics; recoverable
//! damage is repaired with a warning, or refused with `--strict`.

mod common;

use std::io::Write;
use std::path::Path;

use common::{gzip, messy_picl, tapestry, write};
use tapestry::readers::{self, ReadOptions};

const PRV_HEAD: &str = "#Paraver (01/01/70 at 00:00):1000_ns:1(2):1:2(1:1,1:1)\n";

fn strict() -> ReadOptions {
    ReadOptions {
        strict: true,
        ..Default::default()
    }
}

/// Reading fails; the message names the file and contains every `want`.
fn fails(path: &Path, opts: &ReadOptions, want: &[&str]) {
    let e = match readers::read(path, opts) {
        Ok(_) => panic!("reading {} must fail", path.display()),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(&path.display().to_string()),
        "no file name in: {e}"
    );
    for w in want {
        assert!(e.contains(w), "'{w}' missing in: {e}");
    }
    // and the command line exits with 1 and an error message, not a panic
    let (code, _, err) = tapestry(&[
        "info",
        path.to_str().unwrap(),
        if opts.strict {
            "--strict"
        } else {
            "--locations=1"
        },
    ]);
    assert_eq!(code, 1, "exit code for {}: {err}", path.display());
    assert!(err.starts_with("error:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Reading succeeds with exactly one warning of `kind` affecting `count` records.
fn repairs(path: &Path, kind: &str, count: u64) -> tapestry::Trace {
    let t = readers::read(path, &ReadOptions::default()).unwrap();
    let w: Vec<_> = t
        .meta
        .diagnostics
        .warnings
        .iter()
        .map(|w| (w.kind, w.count))
        .collect();
    assert_eq!(w, vec![(kind, count)], "{}", path.display());
    fails(path, &strict(), &["strict"]);
    let (code, _, err) = tapestry(&["info", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(err.contains("warning:") && err.contains(kind), "{err}");
    t
}

#[test]
fn paraver_malformed_records() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str])] = &[
        (
            "1:1:1:1:1:abc:20:1\n",
            &["line 2", "field 6 (begin time)", "'abc'"],
        ),
        (
            "1:1:1:1:1:0:20:1\n9:1:2:3\n",
            &["line 3", "record type", "'9'"],
        ),
        ("1:1:1:1:1:20:10:1\n", &["line 2", "ends before it begins"]),
        (
            "1:1:1:1:1:-5:10:1\n",
            &["line 2", "unsigned integer", "'-5'"],
        ),
        (
            "1:1:1:1:1:0:99999999999999999999999:1\n",
            &["line 2", "overflows"],
        ),
        (
            "1:1:1:7:1:0:10:1\n",
            &["line 2", "1:7:1", "declared in the header"],
        ),
        (
            "1:1:1:1:1:0:10\n2:1:1:1:1:0:5:5\n",
            &["line 2", "state", "end of the line"],
        ),
        ("2:1:1:1:1:5:7\n", &["line 2", "value after event type 7"]),
        (
            "3:1:1:1:1:0:0:1:1:2:1:5\n",
            &["line 2", "physical receive time"],
        ),
        (
            "c:1:5:3:1:2\n",
            &["line 2", "declares 3 member(s), found 2"],
        ),
        ("hello\n", &["line 2", "'hello'"]),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        let p = write(
            d.path(),
            &format!("bad{i}.prv"),
            format!("{PRV_HEAD}{body}").as_bytes(),
        );
        fails(&p, &ReadOptions::default(), want);
    }
    // a time that fits in microseconds but not in nanoseconds
    let p = write(
        d.path(),
        "us.prv",
        b"#Paraver (x):10_us:0:1:1(1:1)\n1:1:1:1:1:0:18446744073709552:1\n",
    );
    fails(
        &p,
        &ReadOptions::default(),
        &["line 2", "overflows 64-bit nanoseconds"],
    );
    for (i, (head, want)) in [
        ("#Paraver (x):abc:0:1:1(1:1)\n", "end time"),
        ("#Paraver (x):10:0:1:20000000(1:1)\n", "absurd"),
        ("#Paraver (x):10:0:1:1(99999999:1)\n", "absurd"),
        ("#Paraver (x):10:0:3:1(1:1)\n", "application description"),
    ]
    .iter()
    .enumerate()
    {
        let p = write(d.path(), &format!("head{i}.prv"), head.as_bytes());
        fails(&p, &ReadOptions::default(), &["line 1", want]);
    }
}

#[test]
fn paraver_repairs() {
    let d = tempfile::tempdir().unwrap();
    // truncated last record
    let p = write(
        d.path(),
        "trunc.prv",
        format!("{PRV_HEAD}1:1:1:1:1:0:10:1\n1:1:1:1:1:10:2").as_bytes(),
    );
    let t = repairs(&p, "truncated-record", 1);
    assert_eq!(t.intervals.len(), 1);
    // unsorted records
    let p = write(
        d.path(),
        "unsorted.prv",
        format!("{PRV_HEAD}1:1:1:1:1:10:20:1\n1:1:1:1:1:0:10:3\n").as_bytes(),
    );
    let t = repairs(&p, "unsorted", 1);
    assert_eq!(t.intervals.of(0).iter().collect::<Vec<_>>()[0].0, 0);
    // overlapping state records
    let p = write(
        d.path(),
        "overlap.prv",
        format!("{PRV_HEAD}1:1:1:1:1:0:10:1\n1:1:1:1:1:5:20:3\n").as_bytes(),
    );
    let t = repairs(&p, "overlapping-states", 1);
    assert_eq!(
        t.intervals.of(0).iter().collect::<Vec<_>>(),
        vec![(0, 10, 0), (10, 20, 1)]
    );
}

#[test]
fn paraver_gzip_and_empty() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("z.prv.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&p).unwrap(),
        flate2::Compression::fast(),
    );
    e.write_all(format!("{PRV_HEAD}1:1:1:2:1:0:10:1\n").as_bytes())
        .unwrap();
    e.finish().unwrap();
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.intervals.of(1).len(), 1);
    let p = write(d.path(), "empty.prv", b"");
    fails(&p, &ReadOptions::default(), &["empty"]);
    let p = write(d.path(), "binary.bin", &[0u8, 159, 146, 150, 1, 2, 3]);
    fails(
        &p,
        &ReadOptions::default(),
        &[
            "unrecognised trace format",
            "(bytes 00 9f 92 96 01 02 03)",
            "tried Chrome JSON",
            "Paraver",
            "PICL",
            "NumPy",
        ],
    );
    let p = write(d.path(), "junk.gz", &common::gzip(b"GIF89a not a trace"));
    fails(
        &p,
        &ReadOptions::default(),
        &["the decompressed content starts with 'GIF89a not a trace' (bytes 47 49 46 38"],
    );
    let missing = d.path().join("nope.prv");
    fails(&missing, &ReadOptions::default(), &["No such file"]);
}

#[test]
fn chrome_malformed_events() {
    let d = tempfile::tempdir().unwrap();
    let ok = r#"{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"a"}"#;
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"ph":"X","pid":1,"tid":1,"ts":"abc","dur":2,"name":"a"}"#,
            &["line 3", "\"ts\"", "abc"],
        ),
        (
            r#"{"ph":"Z","pid":1,"tid":1,"ts":1,"name":"a"}"#,
            &["line 3", "phase", "\"Z\""],
        ),
        (
            r#"{"ph":"X","pid":1,"tid":1,"ts":5,"dur":-2,"name":"a"}"#,
            &["line 3", "non-negative \"dur\""],
        ),
        (
            r#"{"ph":"B","pid":1,"tid":1,"ts":-5,"name":"a"}"#,
            &["line 3", "non-negative \"ts\""],
        ),
        (
            r#"{"ph":"B","pid":1,"tid":1,"ts":NaN,"name":"a"}"#,
            &["line 3", "malformed event"],
        ),
        (
            r#"{"ph":"B","pid":1,"tid":1,"ts":1e30,"name":"a"}"#,
            &["line 3", "out of range"],
        ),
        (
            r#"{"ph":"B","pid":1e300,"tid":1,"ts":1,"name":"a"}"#,
            &["line 3", "\"pid\""],
        ),
        (
            r#"{"ph":"B","pid":[1],"tid":1,"ts":1,"name":"a"}"#,
            &["line 3", "\"pid\""],
        ),
        (
            r#"{"ph":"B","pid":1,"tid":1,"name":"a"}"#,
            &["line 3", "\"ts\" member"],
        ),
        (r#"{"pid":1,"tid":1,"ts":1}"#, &["line 3", "\"ph\""]),
        (
            r#"{"ph":"X","ph":"X","pid":1,"tid":1,"ts":1,"dur":1}"#,
            &["line 3", "duplicate field"],
        ),
        (
            r#"{"ph":"i","pid":1,"tid":1,"ts":1,"args":{"value":}}"#,
            &["line 3", "args"],
        ),
        ("17", &["line 3", "expected an event object"]),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        let text = format!("[\n{ok},\n{bad}\n]\n");
        let p = write(d.path(), &format!("bad{i}.json"), text.as_bytes());
        fails(&p, &ReadOptions::default(), want);
    }
    let p = write(d.path(), "trail.json", format!("[{ok}] garbage").as_bytes());
    fails(&p, &ReadOptions::default(), &["end of the file"]);
    let p = write(d.path(), "te.json", br#"{"traceEvents": 5}"#);
    fails(&p, &ReadOptions::default(), &["array"]);
}

#[test]
fn chrome_repairs() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "trunc.json",
        br#"[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"a"},{"ph":"X","pid":1,"ti"#,
    );
    let t = repairs(&p, "truncated-file", 1);
    assert_eq!(t.intervals.len(), 1);
    let p = write(
        d.path(),
        "unmatched.json",
        br#"[{"ph":"B","pid":1,"tid":1,"ts":1,"name":"a"},{"ph":"E","pid":1,"tid":1,"ts":3},{"ph":"E","pid":1,"tid":1,"ts":4}]"#,
    );
    repairs(&p, "unmatched-end", 1);
    let p = write(
        d.path(),
        "unclosed.json",
        br#"[{"ph":"B","pid":1,"tid":1,"ts":1,"name":"a"},{"ph":"X","pid":1,"tid":2,"ts":1,"dur":9,"name":"b"}]"#,
    );
    let t = repairs(&p, "unclosed-begin", 1);
    // closed at the end of the trace (10 µs after its 1 µs origin)
    assert_eq!(
        t.intervals.of(0).iter().collect::<Vec<_>>(),
        vec![(0, 9_000, 0)]
    );
    let p = write(
        d.path(),
        "flow.json",
        br#"[{"ph":"s","pid":1,"tid":1,"ts":1,"id":"7","name":"m"},{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"b"}]"#,
    );
    repairs(&p, "unterminated-flow", 1);
}

/// Flows: per (category, id) in time order, each step to the next: a
/// start through a step to a finish, an id used again, a finish before
/// any start and a start replaced by a later one (orphans), a start never
/// finished; the message order is the model's whatever order the keys are
/// taken in.
#[test]
fn chrome_flow_steps_and_orphans() {
    let d = tempfile::tempdir().unwrap();
    let ev = |ph: &str, tid: u32, ts: u32, id: u32| {
        format!(r#"{{"ph":"{ph}","pid":1,"tid":{tid},"ts":{ts},"id":"{id}","cat":"c","name":"m"}}"#)
    };
    let events = [
        ev("f", 1, 5, 2),
        ev("s", 1, 10, 1),
        ev("t", 2, 20, 1),
        ev("s", 2, 6, 2),
        ev("f", 3, 30, 1),
        ev("s", 3, 7, 2),
        ev("s", 1, 40, 1),
        ev("f", 1, 8, 2),
        ev("f", 2, 50, 1),
        ev("s", 1, 1, 3),
    ];
    let text = format!("[{}]", events.join(","));
    let p = write(d.path(), "flows.json", text.as_bytes());
    let t = repairs(&p, "unterminated-flow", 3);
    let m = &t.messages;
    let got: Vec<_> = (0..m.len())
        .map(|i| (m.sender[i], m.receiver[i], m.send_time[i], m.recv_time[i]))
        .collect();
    // threads 1, 2, 3 are locations 0, 1, 2; times from the 1 µs origin
    let us = |x: u64| (x - 1) * 1000;
    assert_eq!(
        got,
        vec![
            (2, 0, us(7), us(8)),
            (0, 1, us(10), us(20)),
            (1, 2, us(20), us(30)),
            (0, 1, us(40), us(50)),
        ]
    );
}

#[test]
fn chrome_exact_large_timestamps_and_escapes() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "epoch.json",
        br#"{"traceEvents":[
{"ph":"X","pid":1,"tid":1,"ts":1700000000123456.789,"dur":0.001,"name":"tick \"quoted\" \u00e9"},
{"ph":"X","pid":1,"tid":1,"ts":1700000000123456.790,"dur":0.002,"name":"b"}
],"displayTimeUnit":"ns"}"#,
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.meta.origin_ns, 1_700_000_000_123_456_789);
    assert_eq!(
        t.intervals.of(0).iter().collect::<Vec<_>>(),
        vec![(0, 1, 0), (1, 3, 1)]
    );
    assert_eq!(t.states.get(0).unwrap().name, "tick \"quoted\" é");
}

const PICL: &str = "\
-3 -901 0.000000 0 0 0
-3 -901 0.000000 1 0 0
-3 -21 0.000010 0 0 4 2 1024 7 1 0
-4 -21 0.000012 0 0 0
-3 -52 0.000005 1 0 3 2 7 0 0
-4 -52 0.000020 1 0 4 2 1024 7 0 0
-3 -11 0.000030 1 0 0
-4 -901 0.000040 0 0 0
-4 -901 0.000050 1 0 0
";

#[test]
fn picl_exact_model() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "run.trf", PICL.as_bytes());
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert!(t.meta.diagnostics.warnings.is_empty());
    assert_eq!(t.num_locations(), 2);
    let name = |s: u32| t.states.get(s).unwrap().name.clone();
    let l0: Vec<_> = t
        .intervals
        .of(0)
        .iter()
        .map(|(a, b, s)| (a, b, name(s)))
        .collect();
    assert_eq!(
        l0,
        vec![
            (0, 10_000, "busy".into()),
            (10_000, 12_000, "send".into()),
            (12_000, 40_000, "busy".into())
        ]
    );
    let l1: Vec<_> = t
        .intervals
        .of(1)
        .iter()
        .map(|(a, b, s)| (a, b, name(s)))
        .collect();
    assert_eq!(
        l1,
        vec![
            (0, 5_000, "busy".into()),
            (5_000, 20_000, "recv".into()),
            (20_000, 50_000, "busy".into())
        ]
    );
    assert_eq!(t.messages.len(), 1);
    assert_eq!(
        (
            t.messages.sender[0],
            t.messages.receiver[0],
            t.messages.send_time[0],
            t.messages.recv_time[0]
        ),
        (0, 1, 10_000, 20_000)
    );
    assert_eq!((t.messages.bytes[0], t.messages.tag[0]), (1024, 7));
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.meta.span, 50_000);
}

/// The in-memory PICL reader cuts each processor's records as they come,
/// in one pass, and gives exactly the model of the reader that holds every
/// record: on synthetic runs, on untidy files (several blocks, cut in
/// parallel shares), gzip; a file a cut cannot take is read again holding
/// the records, even when that shows only near its end; `--strict` refuses
/// the same repairs.
#[test]
fn picl_one_pass_equals_holding() {
    let d = tempfile::tempdir().unwrap();
    let model = |p: &Path, o: &ReadOptions| {
        let one = readers::picl::read(p, o).map(|t| format!("{t:?}"));
        let held = readers::picl::read_holding(p, o).map(|t| format!("{t:?}"));
        (
            one.map_err(|e| e.to_string()),
            held.map_err(|e| e.to_string()),
        )
    };
    let same = |p: &Path| {
        let (one, held) = model(p, &ReadOptions::default());
        let one = one.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(one == held.unwrap(), "{}", p.display());
        one
    };
    let gauss = d.path().join("g.picl");
    let (c, _, e) = tapestry(&[
        "synth",
        "gauss",
        "--n",
        "64",
        "-p",
        "16",
        "-o",
        gauss.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    same(&gauss);
    same(&write(d.path(), "exact.trf", PICL.as_bytes()));
    for (seed, procs, steps) in [(3u64, 6, 300), (17, 6, 300), (99, 40, 2500), (5, 300, 40)] {
        let text = messy_picl(seed, procs, steps);
        let p = write(d.path(), &format!("messy{seed}.picl"), text.as_bytes());
        let m = same(&p);
        for kind in ["unmatched-end", "unclosed-begin", "unmatched-message"] {
            assert!(m.contains(kind), "{seed} {kind}");
        }
        let z = write(
            d.path(),
            &format!("messy{seed}.picl.gz"),
            &gzip(text.as_bytes()),
        );
        let (one, held) = model(&z, &ReadOptions::default());
        assert!(one.unwrap() == held.unwrap(), "{seed} gzip");
        // strict: the same repair refused, at the same line
        let (one, held) = model(&p, &strict());
        assert_eq!(one.unwrap_err(), held.unwrap_err(), "{seed} strict");
    }
    // read again holding the records: an unsorted record (near the end of
    // a file of several blocks), a late trace start, a send from the first
    // record past the last stop
    let mut late = messy_picl(99, 40, 2500);
    late.push_str("-3 -10 0.000000001 7 7 0\n");
    for (name, text) in [
        ("unsorted-late.picl", late.as_str()),
        (
            "late-start.picl",
            "-3 -10 0.000001 0 0 0\n-3 -901 0.000002 0 0 0\n-4 -901 0.000003 0 0 0\n",
        ),
        (
            "outside.picl",
            "-3 -21 0.000000 0 0 4 2 8 0 0 0\n-4 -901 0.000005 0 0 0\n-4 -21 0.000009 0 0 0\n",
        ),
    ] {
        let p = write(d.path(), name, text.as_bytes());
        let m = same(&p);
        if name == "unsorted-late.picl" {
            assert_eq!(m.matches("unsorted-records").count(), 1, "{m}");
        }
    }
}

#[test]
fn picl_malformed_and_repairs() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("-3 -21 abc 0 0 0\n", &["line 2", "time", "'abc'"]),
        ("-3 -21 -0.5 0 0 0\n", &["line 2", "non-negative"]),
        ("-3 -21 0.5 99999999999 0 0\n", &["line 2", "processor"]),
        ("-3 -21 0.5 0 0 3 2 1\n", &["line 2", "3 data value"]),
        ("-3 x 0.5 0 0 0\n", &["line 2", "event", "'x'"]),
        ("-3 -21 0.5 0 0 99999999999\n", &["line 2", "data count"]),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        let p = write(
            d.path(),
            &format!("bad{i}.trf"),
            format!("-3 -901 0.0 0 0 0\n{bad}").as_bytes(),
        );
        fails(&p, &ReadOptions::default(), want);
    }
    let p = write(
        d.path(),
        "trunc.trf",
        format!("{PICL}-3 -21 0.00").as_bytes(),
    );
    repairs(&p, "truncated-record", 1);
    let p = write(
        d.path(),
        "unmatched.trf",
        b"-3 -901 0.0 0 0 0\n-4 -21 0.1 0 0 0\n-4 -901 0.2 0 0 0\n",
    );
    repairs(&p, "unmatched-end", 1);
    // records out of time order on a processor: re-sorted with a count,
    // refused with --strict at the first one's line
    let mut lines: Vec<&str> = PICL.lines().collect();
    lines.swap(4, 5); // processor 1's receive begin (5 µs) after its end (20 µs)
    let p = write(
        d.path(),
        "unsorted.trf",
        (lines.join("\n") + "\n").as_bytes(),
    );
    let t = repairs(&p, "unsorted-records", 1);
    let sorted = readers::read(
        &write(d.path(), "sorted.trf", PICL.as_bytes()),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(t.intervals.len(), sorted.intervals.len());
    assert_eq!(t.messages.len(), sorted.messages.len());
    fails(&p, &strict(), &["line 6", "re-sorted"]);
}

#[test]
fn busy_override_from_the_command_line() {
    let p = common::shared_trace("paraver-qsort/qsort_beo3.prv");
    let (code, out, _) = tapestry(&[
        "info",
        "--json",
        "--busy",
        "Running,Bloking*",
        p.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let busy = &v["time_per_class"][0];
    assert_eq!(busy["name"], "busy");
    assert_eq!(busy["time_ns"].as_u64().unwrap(), 304_498_000 + 296_575_000);
    let (code, _, err) = tapestry(&["info", "--busy", "NoSuchState", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("matches no state"), "{err}");
}

/// Line ends: LF, CRLF and bare CR (old Mac files) read the same records
/// (a bare-CR file used to be one header line and no record); PICL too.
#[test]
fn every_line_ending_reads_the_same() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("g.prv");
    let (code, _, err) = tapestry(&[
        "synth",
        "gauss",
        "-p",
        "4",
        "--n",
        "16",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let lf = std::fs::read(&t).unwrap();
    let want = readers::read(&t, &ReadOptions::default()).unwrap();
    assert!(want.intervals.len() > 100);
    for (name, bytes) in [
        (
            "crlf.prv",
            lf.iter()
                .flat_map(|&b| {
                    if b == b'\n' {
                        vec![b'\r', b'\n']
                    } else {
                        vec![b]
                    }
                })
                .collect::<Vec<u8>>(),
        ),
        (
            "cr.prv",
            lf.iter()
                .map(|&b| if b == b'\n' { b'\r' } else { b })
                .collect(),
        ),
    ] {
        let p = write(d.path(), name, &bytes);
        std::fs::copy(t.with_extension("pcf"), p.with_extension("pcf")).ok();
        let got = readers::read(&p, &ReadOptions::default()).unwrap();
        assert_eq!(got.intervals.len(), want.intervals.len(), "{name}");
        assert_eq!(got.messages.len(), want.messages.len(), "{name}");
        assert_eq!(got.meta.span, want.meta.span, "{name}");
    }
    let picl = d.path().join("g.trf");
    let (code, _, err) = tapestry(&[
        "synth",
        "gauss",
        "-p",
        "4",
        "--n",
        "16",
        "-o",
        picl.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let want = readers::read(&picl, &ReadOptions::default()).unwrap();
    let bytes: Vec<u8> = std::fs::read(&picl)
        .unwrap()
        .iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect();
    let p = write(d.path(), "cr.trf", &bytes);
    let got = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(got.intervals.len(), want.intervals.len());
}

/// A `.pcf` that is a link out of the trace's directory is refused (its
/// lines used to appear as state names); a real `.pcf` beside it reads.
#[cfg(unix)]
#[test]
fn paraver_siblings_are_confined_by_real_path() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = write(outside.path(), "secret.pcf", b"STATES\n1 Leaked\n");
    let prv = write(
        d.path(),
        "t.prv",
        format!("{PRV_HEAD}1:1:1:1:1:0:10:1\n").as_bytes(),
    );
    std::os::unix::fs::symlink(&secret, d.path().join("t.pcf")).unwrap();
    fails(
        &prv,
        &ReadOptions::default(),
        &["outside the trace's directory"],
    );
    std::fs::remove_file(d.path().join("t.pcf")).unwrap();
    write(d.path(), "t.pcf", b"STATES\n1 Computing\n");
    let t = readers::read(&prv, &ReadOptions::default()).unwrap();
    assert!(t.states.by_name("Computing").is_some());
}

/// A header declaring 16,777,215 threads with one thread's records keeps
/// one location (it used to take 2.8 GB for `info` and 24 GB for a field);
/// a header declaring a few threads without records keeps them all.
#[test]
fn paraver_declared_threads_are_made_lazily() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "huge.prv",
        b"#Paraver (01/01/70 at 00:00):1000_ns:1(16777215):1:1(16777215:1)\n1:1:1:1:7:0:10:1\n",
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.num_locations(), 1);
    assert_eq!(t.locations.get(0).unwrap().name, "THREAD 1.1.7");
    assert!(
        t.meta
            .diagnostics
            .warnings
            .iter()
            .any(|w| w.kind == "declared-threads")
    );
    // strict mode reads it too (nothing was damaged)
    assert_eq!(readers::read(&p, &strict()).unwrap().num_locations(), 1);
    let f = d.path().join("f.npy");
    let (code, _, err) = tapestry(&[
        "analyze",
        p.to_str().unwrap(),
        "field",
        "--bins",
        "100",
        "-o",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::metadata(&f).unwrap().len() < 10_000);
    // a small header: declared threads without records stay
    let p = write(
        d.path(),
        "few.prv",
        b"#Paraver (01/01/70 at 00:00):1000_ns:1(8):1:1(8:1)\n1:1:1:1:2:0:10:1\n",
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.num_locations(), 8);
    assert!(t.meta.diagnostics.warnings.is_empty());
}

/// The warnings of a trace as (kind, message).
fn warnings(t: &tapestry::Trace) -> Vec<(String, String)> {
    t.meta
        .diagnostics
        .warnings
        .iter()
        .map(|w| (w.kind.to_string(), w.message.clone()))
        .collect()
}

/// A gzip file cut short (or corrupted) is repaired like the same cut in
/// a plain file — the events decompressed before the damage are read —
/// with the decompressed byte offset in the warning; `--strict` refuses it
/// with that offset.
#[test]
fn damaged_gzip_is_repaired_like_a_truncated_file() {
    let d = tempfile::tempdir().unwrap();
    // Chrome JSON
    let mut json = String::from("[");
    for i in 0..20_000 {
        json.push_str(&format!(
            r#"{{"ph":"X","pid":1,"tid":{},"ts":{},"dur":3,"name":"f{}"}},"#,
            i % 4,
            i * 5,
            i % 97
        ));
    }
    json.push_str(r#"{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"z"}]"#);
    let gz = common::gzip(json.as_bytes());
    let cut = write(d.path(), "cut.json.gz", &gz[..gz.len() * 6 / 10]);
    let t = readers::read(&cut, &ReadOptions::default()).unwrap();
    let w = warnings(&t);
    let kinds: Vec<&str> = w.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(kinds, ["damaged-gzip", "truncated-file"], "{w:?}");
    assert!(w[0].1.contains("the file ends inside it"), "{w:?}");
    // the decompressed offset, read back from the warning, holds exactly
    // the events that were read: the plain file cut there gives the same
    let at: usize = w[0]
        .1
        .split("decompressed data ends at byte ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no offset in {w:?}"));
    assert!(at > 0 && at < json.len());
    let plain = write(d.path(), "cut.json", &json.as_bytes()[..at]);
    let p = readers::read(&plain, &ReadOptions::default()).unwrap();
    assert_eq!(p.intervals.len(), t.intervals.len());
    assert!(t.intervals.len() > 1000);
    fails(
        &cut,
        &strict(),
        &["gzip stream breaks off", &format!("byte {at}")],
    );
    // corrupted in the middle: the stream stops where it breaks
    let mut bad = gz.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let bad = write(d.path(), "corrupt.json.gz", &bad);
    // deflate may decode some garbage before it notices: either repaired
    // with the damage named, or a parse error at a position, never a panic
    match readers::read(&bad, &ReadOptions::default()) {
        Ok(t) => assert_eq!(warnings(&t)[0].0, "damaged-gzip"),
        Err(e) => assert!(e.to_string().contains("corrupt.json.gz"), "{e}"),
    }
    // the command line reads it with a warning, exit 0
    let (code, _, err) = tapestry(&["info", cut.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("damaged-gzip") && err.contains("decompressed data ends at byte"));

    // Paraver
    let mut prv = String::from(PRV_HEAD);
    for i in 0..30_000u64 {
        prv.push_str(&format!("1:1:1:1:1:{}:{}:1\n", i * 10, i * 10 + 5));
    }
    let gz = common::gzip(prv.as_bytes());
    let cut = write(d.path(), "cut.prv.gz", &gz[..gz.len() / 2]);
    let t = readers::read(&cut, &ReadOptions::default()).unwrap();
    let w = warnings(&t);
    assert!(w.iter().any(|x| x.0 == "damaged-gzip"), "{w:?}");
    assert!(t.intervals.len() > 1000 && t.intervals.len() < 30_000);
    fails(&cut, &strict(), &["gzip stream breaks off"]);
}

/// `.npy` arrays: gzip transparent; data that ends early is an error at its
/// byte offset; a header claiming more than a gzip file can hold is refused
/// before anything is allocated.
#[test]
fn npy_gzip_offsets_and_claims() {
    use tapestry::readers::npy::Npy;
    let d = tempfile::tempdir().unwrap();
    let values: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    let plain = d.path().join("a.npy");
    tapestry::export::npy::write_array(&plain, &[10, 100], &values).unwrap();
    let bytes = std::fs::read(&plain).unwrap();
    let gz = write(d.path(), "a.npy.gz", &common::gzip(&bytes));
    let mut a = Npy::open(&gz).unwrap();
    assert_eq!(a.header.shape, vec![10, 100]);
    assert_eq!(a.checked_len(1 << 20, "test").unwrap(), 1000);
    let mut out = vec![0.0; 1000];
    a.read_f64(&mut out).unwrap();
    assert_eq!(out, values);
    // data cut 3 bytes into element 500
    let header = bytes.len() - 8000;
    let cut = write(d.path(), "cut.npy", &bytes[..header + 4003]);
    let mut a = Npy::open(&cut).unwrap();
    let mut out = vec![0.0; 1000];
    let e = a.read_f64(&mut out).unwrap_err().to_string();
    assert!(e.contains(&format!("byte {}", header + 4003)), "{e}");
    // a 10^12-element claim in a small gzip file
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (10000, 100000000), }";
    let mut claim = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{dict:<117}\n");
    claim.extend_from_slice(&(padded.len() as u16).to_le_bytes());
    claim.extend_from_slice(padded.as_bytes());
    claim.extend_from_slice(&[0u8; 4096]);
    let gz = write(d.path(), "claim.npy.gz", &common::gzip(&claim));
    let a = Npy::open(&gz).unwrap();
    let e = a.checked_len(u64::MAX, "test").unwrap_err().to_string();
    assert!(e.contains("the file can hold at most"), "{e}");
}

/// Allocations sized by the input are checked against the memory limit:
/// a clear error naming what and how much, exit 1, never an abort.
#[test]
fn the_memory_guard_refuses_before_allocating() {
    let d = tempfile::tempdir().unwrap();
    let mut prv = String::from(PRV_HEAD);
    prv.push_str("1:1:1:1:1:0:1000000:1\n");
    let p = write(d.path(), "g.prv", prv.as_bytes());
    let args = ["analyze", p.to_str().unwrap(), "field", "--bins", "200000"];
    let (code, _, err) = common::tapestry_env(&args, &[("TAPESTRY_MEMORY_LIMIT", "1M")]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("a field of 200000 bins × 2 locations needs ~6 MiB")
            && err.contains("the limit is 1 MiB"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (code, _, err) = common::tapestry_env(&args, &[("TAPESTRY_MEMORY_LIMIT", "64M")]);
    assert_eq!(code, 0, "{err}");
}

/// Busy-class selectors by Chrome category and OTF2 paradigm and role
/// (SPEC §2), besides names and ids; a selector matching nothing lists
/// what the trace has.
#[test]
fn busy_selectors_by_category_paradigm_and_role() {
    use tapestry::model::StateClass;
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "cats.json",
        br#"[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"kernel","cat":"gpu"},
            {"ph":"X","pid":1,"tid":1,"ts":10,"dur":30,"name":"solve","cat":"cpu,compute"},
            {"ph":"X","pid":1,"tid":1,"ts":40,"dur":5,"name":"copy","cat":"GPU,memcpy"}]"#,
    );
    let read = |busy: &str, overhead: Option<&str>| {
        let opts = ReadOptions {
            classes: tapestry::model::ClassOverride {
                busy: Some(vec![busy.to_string()]),
                overhead: overhead.map(|o| vec![o.to_string()]),
                idle: None,
            },
            ..Default::default()
        };
        let t = readers::read(&p, &opts).unwrap();
        let class = |n: &str| t.states.get(t.states.by_name(n).unwrap()).unwrap().class;
        [class("kernel"), class("solve"), class("copy")]
    };
    use StateClass::{Busy, Overhead};
    // categories match case-insensitively, one tag per listed category
    assert_eq!(read("cat:gpu", None), [Busy, Overhead, Busy]);
    assert_eq!(read("cat:comp*", None), [Overhead, Busy, Overhead]);
    assert_eq!(read("cat:*", Some("cat:memcpy")), [Busy, Busy, Overhead]);
    let (code, out, err) = tapestry(&["info", "--json", "--busy", "cat:gpu", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["time_per_class"][0]["time_ns"].as_u64().unwrap(), 15_000);
    let (code, _, err) = tapestry(&["info", "--busy", "cat:io", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "selector 'cat:io' matches no state of this trace (cats: compute, cpu, gpu, memcpy)"
        ),
        "{err}"
    );
    // OTF2: MPI regions by paradigm; the selector works in --states too
    let otf2 = common::shared_trace("ping-pong-otf2/traces.otf2");
    let o = otf2.to_str().unwrap();
    let (code, out, err) = tapestry(&["info", "--json", "--overhead", "paradigm:mpi", o]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let states = v["time_per_state"].as_array().unwrap();
    for s in states {
        let name = s["name"].as_str().unwrap();
        if name.starts_with("MPI_") {
            assert_eq!(s["class"], "overhead", "{s}");
        }
    }
    let (code, _, err) = tapestry(&["info", "--busy", "role:task_untied", o]);
    assert_eq!(code, 1);
    assert!(err.contains("(roles: "), "{err}");
    let out_csv = d.path().join("m.csv");
    let (code, _, err) = tapestry(&[
        "analyze",
        o,
        "moments",
        "--states",
        "paradigm:mpi",
        "-o",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
}
