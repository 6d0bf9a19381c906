//! `mpirun -n N tapestry reduce`: each process reads a share of the trace
//! (Paraver, PICL, OTF2, Chrome JSON), rank 0 merges; the result is the single-process
//! stream's (the field bit for bit, moments to rounding), for N = 1, 2 and 4.
#![cfg(feature = "mpi")]

mod common;

use std::process::Command;

use common::{shared_trace, tapestry};

/// `mpirun` with the flags a container needs, or `None` (skipped) where
/// Open MPI is not installed outside CI.
fn mpirun() -> Option<Command> {
    let found = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").is_err(),
            "mpirun is required in CI (scripts/setup.sh installs openmpi-bin)"
        );
        eprintln!("skipping: no mpirun");
        return None;
    }
    let mut c = Command::new("timeout");
    c.args([
        "120",
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "--mca",
        "btl",
        "self,vader,tcp",
    ]);
    Some(c)
}

fn reduce(n: usize, args: &[&str]) -> (i32, String, String) {
    let mut c = mpirun().expect("mpirun");
    c.args([
        "-n",
        &n.to_string(),
        env!("CARGO_BIN_EXE_tapestry"),
        "reduce",
    ]);
    c.args(args);
    c.env("RAYON_NUM_THREADS", "1");
    let o = c.output().expect("mpirun runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// What `analyze TRACE ARGS --stream` writes.
fn streamed(t: &str, args: &[&str]) -> String {
    let mut one = vec!["analyze", t];
    one.extend_from_slice(args);
    one.push("--stream");
    let (c, out, e) = tapestry(&one);
    assert_eq!(c, 0, "{e}");
    out
}

/// What `reduce TRACE ARGS` writes with `n` processes.
fn reduced(n: usize, t: &str, args: &[&str]) -> String {
    let mut all = vec![t];
    all.extend_from_slice(args);
    let (c, out, e) = reduce(n, &all);
    assert_eq!(c, 0, "{n} processes: {e}");
    out
}

fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Moments CSVs agree: location, name and m0 exactly, m1 and m2 to 1e-9
/// of m2 (merged in another order, they differ by rounding).
fn assert_moments_close(one: &str, other: &str, what: &str) {
    let (x, y) = (rows(one), rows(other));
    assert_eq!(x.len(), y.len(), "{what}");
    for (p, q) in x.iter().zip(&y).skip(1) {
        assert_eq!(p[..3], q[..3], "{what}: location, name and m0");
        let scale: f64 = p[4].parse::<f64>().unwrap_or(1.0).abs().max(1.0);
        for k in [3, 4] {
            // empty where m0 = 0
            if p[k].is_empty() || q[k].is_empty() {
                assert_eq!(p[k], q[k], "{what}: column {k}");
                continue;
            }
            let (a, b): (f64, f64) = (p[k].parse().unwrap(), q[k].parse().unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * scale,
                "{what}: column {k}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn reduce_equals_the_single_process_stream() {
    if mpirun().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("b.prv");
    let (c, _, e) = tapestry(&[
        "synth",
        "bcast",
        "-p",
        "64",
        "--reps",
        "60",
        "-o",
        b.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    // PICL: stripes dealt in turn, each record cut by its processor's owner
    let g = dir.path().join("g.picl");
    let (c, _, e) = tapestry(&[
        "synth",
        "gauss",
        "-p",
        "16",
        "--n",
        "120",
        "-o",
        g.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let messy = common::write(
        dir.path(),
        "messy.picl",
        common::messy_picl(7, 24, 400).as_bytes(),
    );
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    for t in [
        q.to_str().unwrap(),
        b.to_str().unwrap(),
        g.to_str().unwrap(),
        messy.to_str().unwrap(),
    ] {
        let (c, field1, e) = tapestry(&["analyze", t, "field", "--bins", "16", "--stream"]);
        assert_eq!(c, 0, "{e}");
        let (c, mom1, e) = tapestry(&["analyze", t, "moments", "--stream"]);
        assert_eq!(c, 0, "{e}");
        for n in [1, 2, 4] {
            let (c, f, e) = reduce(n, &[t, "field", "--bins", "16"]);
            assert_eq!(c, 0, "{n} processes: {e}");
            assert_eq!(rows(&f), rows(&field1), "{t}: field with {n} processes");
            if n > 1 {
                assert!(e.contains(&format!("in {n} processes")), "{e}");
            }
            // PICL's locations are its processors, with no process level
            let level = if t.ends_with(".picl") {
                "thread"
            } else {
                "process"
            };
            for args in [
                vec!["comm-matrix", "--level", level, "--metric", "bytes"],
                vec!["comm-matrix"],
                vec!["summary"],
            ] {
                let want = streamed(t, &args);
                let got = reduced(n, t, &args);
                assert_eq!(got, want, "{t}: {args:?} with {n} processes");
            }
            let (c, m, e) = reduce(n, &[t, "moments"]);
            assert_eq!(c, 0, "{n} processes: {e}");
            assert_moments_close(&mom1, &m, &format!("{t} with {n} processes"));
        }
    }
}

/// A gzip trace of each format that is cut in lines or events (Paraver,
/// PICL, Chrome JSON, written by `synth` as gzip), and the LAMMPS run
/// gzip wrote: the processes build the file's index together and each
/// reads its share of the decompressed bytes; the result is the
/// single-process stream's.
#[test]
fn reduce_shares_gzip_traces_through_their_index() {
    if mpirun().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut traces = Vec::new();
    for (name, p, reps) in [
        ("b.prv.gz", "1024", "40"),
        ("b.picl.gz", "1024", "40"),
        ("b.json.gz", "128", "300"),
    ] {
        let t = dir.path().join(name);
        let (c, _, e) = tapestry(&[
            "synth",
            "bcast",
            "-p",
            p,
            "--reps",
            reps,
            "-o",
            t.to_str().unwrap(),
        ]);
        assert_eq!(c, 0, "{e}");
        // large enough to be cut in several parts
        assert!(std::fs::metadata(&t).unwrap().len() > 1 << 20, "{name}");
        traces.push(t);
    }
    traces.push(shared_trace("lammps-melt-16/lammps-melt-16.json.gz"));
    for t in &traces {
        let t = t.to_str().unwrap();
        let (c, field1, e) = tapestry(&["analyze", t, "field", "--bins", "16", "--stream"]);
        assert_eq!(c, 0, "{e}");
        let summary = streamed(t, &["summary"]);
        // (Chrome through the index from 4 processes)
        for n in [2, 4] {
            let (c, f, e) = reduce(n, &[t, "field", "--bins", "16"]);
            assert_eq!(c, 0, "{t}, {n} processes: {e}");
            assert_eq!(rows(&f), rows(&field1), "{t}: field with {n} processes");
            assert_eq!(reduced(n, t, &["summary"]), summary, "{t}: summary, {n}");
        }
    }
    // a trailer's CRC-32 that the bytes the processes decoded disagree
    // with (synth's files, changed where they are): said once, by name
    for t in &traces[..3] {
        let mut bytes = std::fs::read(t).unwrap();
        let n = bytes.len();
        bytes[n - 7] ^= 0x20;
        std::fs::write(t, &bytes).unwrap();
        let t = t.to_str().unwrap();
        let (c, _, e) = reduce(4, &[t, "summary"]);
        assert_ne!(c, 0, "{t}");
        assert!(e.contains("the gzip data is damaged"), "{t}: {e}");
        assert!(e.contains("(member "), "{t}: {e}");
        assert_eq!(e.matches("error:").count(), 1, "said once: {e}");
    }
}

#[test]
fn a_failing_share_stops_every_process_with_the_files_line() {
    if mpirun().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("#Paraver (01/01/2024 at 00:00):100000_ns:0:1:1(2:0)\n");
    for i in 0..2000u64 {
        text.push_str(&format!(
            "1:1:1:1:{}:{}:{}:1\n",
            1 + i % 2,
            i * 10,
            i * 10 + 5
        ));
    }
    // a malformed record three quarters into the file (line 1502)
    let bad_at = text.match_indices('\n').nth(1500).unwrap().0 + 1;
    text.insert_str(bad_at, "1:1:1:1:1:oops:7:1\n");
    let p = common::write(dir.path(), "bad.prv", text.as_bytes());
    for n in [1, 2, 4] {
        let (c, _, e) = reduce(n, &[p.to_str().unwrap(), "moments"]);
        assert_ne!(c, 0, "{n} processes");
        assert!(e.contains("bad.prv:line 1502"), "{n} processes: {e}");
    }
    // a gzip trace cannot be split
    let gz = common::write(dir.path(), "t.prv.gz", &common::gzip(text.as_bytes()));
    let (c, _, e) = reduce(2, &[gz.to_str().unwrap(), "moments"]);
    assert_ne!(c, 0);
    assert!(e.contains("cannot be split"), "{e}");
    // a PICL trace: the process that meets a malformed record names the
    // file's line, whichever stripe it read
    let mut picl = common::messy_picl(5, 8, 600);
    let bad_at = picl.match_indices('\n').nth(3000).unwrap().0 + 1;
    picl.insert_str(bad_at, "-3 -21 oops 1 1 0\n");
    let p = common::write(dir.path(), "bad.picl", picl.as_bytes());
    for n in [1, 2, 4] {
        let (c, _, e) = reduce(n, &[p.to_str().unwrap(), "summary"]);
        assert_ne!(c, 0, "{n} processes");
        assert!(e.contains("bad.picl:line 3002"), "{n} processes: {e}");
        assert_eq!(e.matches("error:").count(), 1, "said once: {e}");
    }
}

/// An OTF2 archive: each process reads a run of the locations (two per
/// process of the traced program, messages between them unmatched until
/// rank 0 merges the counted sides); the result is the single-process
/// stream's with 1, 2 and 3 processes, and the in-memory reader's.
#[cfg(feature = "otf2")]
#[test]
fn reduce_reads_otf2_locations_in_shares() {
    if mpirun().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/write_otf2_messy.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(dir.path().join("m"))
        .args(["5", "80", "2400000000", "1000", "3"])
        .output()
        .expect("/usr/bin/python3 with the otf2 module (Debian package python3-otf2)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = dir.path().join("m/traces.otf2");
    let t = a.to_str().unwrap();
    let (c, mom1, e) = tapestry(&["analyze", t, "moments", "--stream"]);
    assert_eq!(c, 0, "{e}");
    for n in [1, 2, 3] {
        for args in [
            vec!["comm-matrix", "--level", "process", "--metric", "bytes"],
            vec!["comm-matrix"],
            vec!["summary"],
            vec!["field", "--bins", "16"],
        ] {
            let mut one = vec!["analyze", t];
            one.extend_from_slice(&args);
            let (c, mem, e) = tapestry(&one);
            assert_eq!(c, 0, "{e}");
            let mut all = vec![t];
            all.extend_from_slice(&args);
            let (c, got, e) = reduce(n, &all);
            assert_eq!(c, 0, "{n} processes: {e}");
            assert_eq!(rows(&got), rows(&mem), "{args:?} with {n} processes");
        }
        let (c, m, e) = reduce(n, &[t, "moments"]);
        assert_eq!(c, 0, "{n} processes: {e}");
        assert_moments_close(&mom1, &m, &format!("OTF2 with {n} processes"));
    }
}

/// A Chrome trace: every process parses the stripes of events dealt to it
/// and flattens the threads it owns; the result is the single-process
/// stream's exactly (moments too: each location is reduced by one process),
/// on the LAMMPS run (gzip), a synthetic broadcast and the shared flow
/// trace, for 1, 2 and 3 processes; a malformed event is said once, at its
/// line.
#[test]
fn reduce_shares_a_chrome_trace_among_processes() {
    if mpirun().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("b.json");
    let (c, _, e) = tapestry(&[
        "synth",
        "bcast",
        "-p",
        "32",
        "--reps",
        "100",
        "-o",
        b.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let lammps = shared_trace("lammps-melt-16/lammps-melt-16.json.gz");
    let flows = shared_trace("chrome/flow_simple.json");
    for t in [
        lammps.to_str().unwrap(),
        b.to_str().unwrap(),
        flows.to_str().unwrap(),
    ] {
        for args in [
            vec!["field", "--bins", "12"],
            vec!["moments"],
            vec!["comm-matrix", "--level", "process", "--metric", "bytes"],
            vec!["summary"],
        ] {
            let want = streamed(t, &args);
            for n in [1, 2, 3] {
                let got = reduced(n, t, &args);
                assert_eq!(rows(&got), rows(&want), "{t}: {args:?} with {n} processes");
            }
        }
    }
    // an event broken in the middle of the file
    let text = std::fs::read_to_string(&b).unwrap();
    let at = text.match_indices("\"ts\":").nth(2000).unwrap().0;
    let bad = common::write(
        dir.path(),
        "bad.json",
        format!("{}\"ts\":-5,\"x\":{}", &text[..at], &text[at + 5..]).as_bytes(),
    );
    let (c, _, want) = tapestry(&["analyze", bad.to_str().unwrap(), "moments", "--stream"]);
    assert_ne!(c, 0);
    let (c, _, e) = reduce(3, &[bad.to_str().unwrap(), "moments"]);
    assert_ne!(c, 0);
    assert_eq!(e.matches("error:").count(), 1, "said once: {e}");
    let line = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("error:"))
            .map(str::to_string)
    };
    assert_eq!(line(&e), line(&want), "{e}");
}
