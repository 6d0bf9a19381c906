//! OTF2 archives through the official library: the Score-P ping-pong traces
//! against what `otf2-print` prints, archives written by the official Python
//! writer with exact expectations, and damaged archives.
#![cfg(feature = "otf2")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{shared_trace, tapestry};
use tapestry::model::StateClass;
use tapestry::readers::{self, ReadOptions};

/// `otf2-print` output (events, or definitions with `-G`).
fn otf2_print(anchor: &Path, defs: bool) -> String {
    let mut c = Command::new("otf2-print");
    if defs {
        c.arg("-G");
    }
    let out = c
        .arg(anchor)
        .output()
        .expect("otf2-print (Debian package otf2-tools) must be installed");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn count_lines(text: &str, first_word: &str) -> usize {
    text.lines()
        .filter(|l| l.split_whitespace().next() == Some(first_word))
        .count()
}

#[test]
fn ping_pong_archives_match_otf2_print() {
    for (dir, metrics) in [("ping-pong-otf2", false), ("ping-pong-otf2-papi", true)] {
        let anchor = shared_trace(&format!("{dir}/traces.otf2"));
        let ev = otf2_print(&anchor, false);
        let defs = otf2_print(&anchor, true);
        let sends = count_lines(&ev, "MPI_SEND");
        let recvs = count_lines(&ev, "MPI_RECV");
        let bytes: u64 = ev
            .lines()
            .filter(|l| l.starts_with("MPI_SEND"))
            .map(|l| {
                l.rsplit("Length: ")
                    .next()
                    .unwrap()
                    .trim()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        // each METRIC line carries "N Value(s)"
        let metric_values: usize = ev
            .lines()
            .filter(|l| l.starts_with("METRIC"))
            .map(|l| {
                let after = l.split("Metric: ").nth(1).unwrap();
                after
                    .split(',')
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        let locations = count_lines(&defs, "LOCATION");
        let regions = count_lines(&defs, "REGION");
        assert_eq!(
            (sends, recvs, locations),
            (16, 16, 2),
            "{dir}: otf2-print counts"
        );

        let t = readers::read(&anchor, &ReadOptions::default()).unwrap();
        assert!(
            t.meta.diagnostics.warnings.is_empty(),
            "{dir}: {:?}",
            t.meta.diagnostics.warnings
        );
        assert_eq!(t.num_locations(), locations);
        assert_eq!(t.states.len(), regions, "{dir}: one state per region");
        assert_eq!(t.messages.len(), sends);
        assert_eq!(t.messages.total_bytes(), bytes);
        assert_eq!(t.counters.len(), metric_values, "{dir}: counter samples");
        assert_eq!(!t.counters.is_empty(), metrics);
        // MPI regions are overhead, main is busy
        let class = |n: &str| t.states.get(t.states.by_name(n).unwrap()).unwrap().class;
        assert_eq!(class("MPI_Send"), StateClass::Overhead);
        assert_eq!(class("int main(int, char**)"), StateClass::Busy);
        // every message goes between the two ranks, after it was sent
        for i in 0..t.messages.len() {
            assert_ne!(t.messages.sender[i], t.messages.receiver[i]);
            assert!(t.messages.recv_time[i] >= t.messages.send_time[i]);
        }
        let (code, out, err) = tapestry(&["info", anchor.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("OTF2") && out.contains("16 ("), "{out}");
    }
}

/// Writes an archive with the official Python writer.
fn python_archive(dir: &Path, ranks: u32, resolution: u64, offset: u64) -> PathBuf {
    python_writer(
        "write_otf2.py",
        dir,
        &[
            &ranks.to_string(),
            &resolution.to_string(),
            &offset.to_string(),
        ],
    )
}

#[test]
fn python_written_archives_read_exactly() {
    // (ranks, timer resolution in ticks per second, global offset in ticks)
    for (ranks, res, offset) in [
        (3u32, 1_000_000u64, 5_000u64),
        (4, 250_000_000, 123_456_789),
        (2, 3, 7),
    ] {
        let d = tempfile::tempdir().unwrap();
        let anchor = python_archive(&d.path().join("a"), ranks, res, offset);
        let t = readers::read(&anchor, &ReadOptions::default()).unwrap();
        assert!(
            t.meta.diagnostics.warnings.is_empty(),
            "{:?}",
            t.meta.diagnostics.warnings
        );
        let ns = |ticks: u64| (ticks as u128 * 1_000_000_000 / res as u128) as u64;
        assert_eq!(
            t.meta.origin_ns,
            (offset as u128 * 1_000_000_000 / res as u128) as i64
        );
        assert_eq!(t.meta.span, ns(400));
        assert_eq!(t.num_locations(), ranks as usize);
        let p = ranks as u64;
        for r in 0..p {
            let name = |s: u32| t.states.get(s).unwrap().name.clone();
            let got: Vec<(u64, u64, String)> = t
                .intervals
                .of(r as u32)
                .iter()
                .map(|(a, b, s)| (a, b, name(s)))
                .collect();
            let mut want = vec![
                (ns(0), ns(10 + r), "main".to_string()),
                (ns(10 + r), ns(100), "compute".into()),
                (ns(100), ns(110), "MPI_Send".into()),
                (ns(110), ns(151 + r), "MPI_Recv".into()),
                (ns(151 + r), ns(200), "main".into()),
                (ns(200), ns(251 + r), "MPI_Allreduce".into()),
                (ns(251 + r), ns(400), "main".into()),
            ];
            want.retain(|w| w.1 > w.0);
            assert_eq!(got, want, "rank {r} at resolution {res}");
        }
        // messages around the ring
        let mut m: Vec<_> = (0..t.messages.len())
            .map(|i| {
                (
                    t.messages.sender[i] as u64,
                    t.messages.receiver[i] as u64,
                    t.messages.send_time[i],
                    t.messages.recv_time[i],
                    t.messages.bytes[i],
                    t.messages.tag[i],
                )
            })
            .collect();
        m.sort();
        let want: Vec<_> = (0..p)
            .map(|r| {
                (
                    r,
                    (r + 1) % p,
                    ns(101),
                    ns(150 + (r + 1) % p),
                    1000 * (r + 1),
                    r as i64,
                )
            })
            .collect();
        assert_eq!(m, want, "messages at resolution {res}");
        // collectives, counters, program markers
        assert_eq!(t.collectives.len(), ranks as usize);
        assert_eq!(t.collectives.ops[t.collectives.op[0] as usize], "allreduce");
        assert_eq!(t.counters.defs[0].name, "cycles");
        assert_eq!(t.counters.len(), 2 * ranks as usize);
        for r in 0..p {
            let range = t.counters.range_of(r as u32);
            assert_eq!(
                t.counters.value[range.clone()],
                [0.0, 1000.0 * (r + 1) as f64]
            );
            assert_eq!(t.counters.time[range.end - 1], ns(300));
        }
        assert_eq!(t.events.len(), 2 * ranks as usize);
        let groups: Vec<_> = t.locations.groups.iter().map(|g| g.name.clone()).collect();
        assert!(
            groups.starts_with(&["machine".into(), "node0".into()]),
            "{groups:?}"
        );
    }
}

#[test]
fn damaged_archives_fail_clearly() {
    let d = tempfile::tempdir().unwrap();
    let fresh = |name: &str| {
        let dir = d.path().join(name);
        python_archive(&dir, 2, 1_000_000, 0)
    };
    let fails = |anchor: &Path, want: &str| {
        let e = match readers::read(anchor, &ReadOptions::default()) {
            Ok(_) => panic!("reading {} must fail", anchor.display()),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{e}");
        assert!(e.contains(&anchor.display().to_string()), "{e}");
        let (code, _, err) = tapestry(&["info", anchor.to_str().unwrap()]);
        assert_eq!(code, 1, "{err}");
        assert!(!err.contains("panicked"));
    };
    // missing event file
    let a = fresh("no-evt");
    std::fs::remove_file(a.with_extension("").join("1.evt")).unwrap();
    fails(&a, "expected the event file");
    // truncated global definitions
    let a = fresh("short-def");
    let def = a.with_extension("def");
    let len = std::fs::metadata(&def).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&def)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    fails(&a, "definitions");
    // missing global definitions
    let a = fresh("no-def");
    std::fs::remove_file(a.with_extension("def")).unwrap();
    fails(&a, "global definitions");
    // truncated event file
    let a = fresh("short-evt");
    let evt = a.with_extension("").join("0.evt");
    let len = std::fs::metadata(&evt).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&evt)
        .unwrap()
        .set_len(len - 7)
        .unwrap();
    // the failing location file is named, with where it fails
    fails(&a, &format!("{} fails at byte", evt.display()));
    // read by the library (in its helper process), with the library's error
    let (code, _, err) = common::tapestry_env(
        &["info", a.to_str().unwrap()],
        &[("TAPESTRY_OTF2_LIBRARY", "1")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("OTF2 library"), "{err}");
    assert!(
        err.contains(&format!("{} fails after", evt.display())),
        "{err}"
    );
    // a damaged local definition file (its mapping table cut short)
    let a = fresh("short-local-def");
    let def = a.with_extension("").join("1.def");
    let bytes = std::fs::read(&def).unwrap();
    std::fs::write(&def, &bytes[..bytes.len() - 3]).unwrap();
    fails(
        &a,
        &format!(
            "reading the local definitions failed: {} fails at byte",
            def.display()
        ),
    );
    // the event directory resolves outside the archive's directory
    let a = fresh("elsewhere-src");
    let outside = d.path().join("outside");
    std::fs::rename(a.with_extension(""), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, a.with_extension("")).unwrap();
    fails(&a, "outside the archive's directory");
    // garbage in an anchor-named file
    let g = d.path().join("garbage.otf2");
    std::fs::write(&g, b"\x00\x01\x02\x03\x04\x05\x06\x07").unwrap();
    fails(&g, "unrecognised trace format");
}

/// A location file of the archive that is a link out of the archive's
/// directory is refused before the library opens it.
#[cfg(unix)]
#[test]
fn location_files_linked_outside_are_refused() {
    let src = shared_trace("ping-pong-otf2");
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let arch = d.path().join("a");
    std::fs::create_dir_all(arch.join("traces")).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), arch.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("traces")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, arch.join("traces").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::remove_file(arch.join("traces/0.evt")).unwrap();
    let evt = outside.path().join("0.evt");
    std::fs::copy(src.join("traces/0.evt"), &evt).unwrap();
    std::os::unix::fs::symlink(&evt, arch.join("traces/0.evt")).unwrap();
    let e = readers::read(&arch.join("traces.otf2"), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the archive"), "{e}");
    // the same file inside the archive reads
    std::fs::remove_file(arch.join("traces/0.evt")).unwrap();
    std::fs::copy(&evt, arch.join("traces/0.evt")).unwrap();
    readers::read(&arch.join("traces.otf2"), &ReadOptions::default()).unwrap();
}

#[test]
fn an_anchor_declaring_2_pow_31_properties_is_refused_before_the_library() {
    // OTF2 3.0 computes 2 × count slots in 32 bits and overruns the heap
    // on such an anchor (found by the fuzz harness); tapestry refuses it
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz/otf2-anchor-2pow31-properties/traces.otf2");
    let (code, _, err) = common::tapestry(&["info", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("damaged OTF2 anchor") && err.contains("properties"),
        "{err}"
    );
}

/// Locations are read in parallel, each thread with a reader of its own
/// over a run of locations: the result does not depend on how many threads
/// read (1, 2, 3, 7 on a 16-rank ring with messages, metrics and nesting),
/// decoded natively or by the library, in the helper process and in this
/// one.
#[test]
fn reading_in_parallel_gives_the_same_trace_as_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/write_otf2_large.py"))
        .arg(dir.path().join("ring"))
        .args(["16", "50"])
        .output()
        .expect("/usr/bin/python3 with the otf2 module (Debian package python3-otf2)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let anchor = dir.path().join("ring/traces.otf2");
    let a = anchor.to_str().unwrap();
    let runs = [
        vec!["info", a, "--json"],
        vec!["analyze", a, "comm-matrix", "--metric", "bytes"],
        vec!["analyze", a, "moments"],
        vec!["analyze", a, "signal-w", "--metric", "counter:flops"],
    ];
    for args in &runs {
        let (c, one, e) = common::tapestry_env(args, &[("RAYON_NUM_THREADS", "1")]);
        assert_eq!(c, 0, "{e}");
        for threads in ["2", "3", "7"] {
            // decoded natively; by the library in its helper; in process
            for (library, in_process) in [(false, false), (true, false), (true, true)] {
                // (runs of any size: the archive is small)
                let mut env = vec![
                    ("RAYON_NUM_THREADS", threads),
                    ("TAPESTRY_OTF2_GROUP_BYTES", "1"),
                ];
                if library {
                    env.push(("TAPESTRY_OTF2_LIBRARY", "1"));
                }
                if in_process {
                    env.push(("TAPESTRY_OTF2_IN_PROCESS", "1"));
                }
                let (c, many, e) = common::tapestry_env(args, &env);
                assert_eq!(c, 0, "{e}");
                assert_eq!(one, many, "{args:?} with {threads} threads");
            }
        }
    }
    let (_, info, _) = tapestry(&["info", a]);
    assert!(info.contains("locations  16"), "{info}");
}

/// Runs `f` in pools of one thread and of three (given the count), the
/// three reading runs of any size (the archives are small).
fn on_one_and_three_threads(f: impl Fn(usize) + Sync) {
    tapestry::readers::otf2::set_min_group_bytes(1);
    for threads in [1, 3] {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| f(threads));
    }
}

/// Runs an archive writer from `tests/data` with the official Python
/// writer; the anchor of the archive it wrote in `dir`.
fn python_writer(script: &str, dir: &Path, args: &[&str]) -> PathBuf {
    let out = Command::new("/usr/bin/python3")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(script),
        )
        .arg(dir)
        .args(args)
        .output()
        .expect("/usr/bin/python3 with the otf2 module (Debian package python3-otf2)");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("traces.otf2")
}

/// The trace as JSON: every column, table and diagnostic.
fn as_json(t: &tapestry::model::Trace) -> serde_json::Value {
    serde_json::to_value(t).unwrap()
}

/// The in-order read (each location's regions flattened as they come,
/// sends and receives keyed as they come) gives the very trace the
/// general reader gives (every region kept, then sorted and nested), on
/// one thread and on three, on untidy archives (ties of several ticks on
/// one nanosecond, zero-length regions, wrong leaves, regions left open,
/// unmatched messages and collectives) and on the Score-P ones; archives
/// whose times it cannot take (time going back on a location, events
/// before the clock's offset, a region entered after the declared end and
/// never left) it hands to the general reader, which `read` then uses.
#[test]
fn reading_in_order_gives_the_general_readers_trace() {
    use tapestry::readers::otf2;
    let dir = tempfile::tempdir().unwrap();
    let mut archives = Vec::new();
    for (name, args) in [
        ("m1", ["3", "40", "1000000000", "0", "1"]),
        ("m2", ["4", "60", "2400000000", "123456", "2"]),
        ("m3", ["2", "30", "1000000", "77", "3"]),
        ("m4", ["5", "25", "3", "5", "4"]),
    ] {
        archives.push(python_writer(
            "write_otf2_messy.py",
            &dir.path().join(name),
            &args,
        ));
    }
    archives.push(python_writer(
        "write_otf2_large.py",
        &dir.path().join("ring"),
        &["16", "20"],
    ));
    archives.push(shared_trace("ping-pong-otf2/traces.otf2"));
    archives.push(shared_trace("ping-pong-otf2-papi/traces.otf2"));
    let opts = ReadOptions::default();
    on_one_and_three_threads(|threads| {
        for a in &archives {
            let fast = otf2::read_in_order(a, &opts)
                .unwrap()
                .unwrap_or_else(|| panic!("{} is in time order", a.display()));
            let general = otf2::read_general(a, &opts).unwrap();
            assert!(!general.intervals.is_empty(), "{}", a.display());
            assert_eq!(
                as_json(&fast),
                as_json(&general),
                "{} on {threads} thread(s)",
                a.display()
            );
        }
        for mode in ["backwards", "early", "late-open"] {
            let a = python_writer(
                "write_otf2_untimely.py",
                &dir.path().join(format!("{mode}-{threads}")),
                &[mode],
            );
            assert!(otf2::read_in_order(&a, &opts).unwrap().is_none(), "{mode}");
            let t = otf2::read(&a, &opts).unwrap();
            assert_eq!(
                as_json(&t),
                as_json(&otf2::read_general(&a, &opts).unwrap())
            );
            assert_eq!(t.messages.len(), 3, "{mode}");
        }
    });
}

/// The native decoder gives the very trace the OTF2 library gives: on the
/// Score-P archives, on untidy ones (ties, wrong leaves, open regions,
/// unmatched messages), on archives read by the general reader (time going
/// back, events before the offset, late open regions), and on archives
/// whose events use local ids through mapping tables (dense and sparse)
/// and whose clocks are corrected by clock offsets, corrected times before
/// the clock's offset or not; on one thread and on three. Each of them is
/// one the native decoder reads (not left to the library).
#[test]
fn the_native_decoder_gives_the_librarys_trace() {
    use tapestry::readers::otf2;
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let mut archives = vec![
        shared_trace("ping-pong-otf2/traces.otf2"),
        shared_trace("ping-pong-otf2-papi/traces.otf2"),
        python_writer(
            "write_otf2_messy.py",
            &d("m1"),
            &["3", "40", "1000000000", "0", "1"],
        ),
        python_writer(
            "write_otf2_messy.py",
            &d("m2"),
            &["4", "60", "2400000000", "123456", "2"],
        ),
        python_writer("write_otf2_large.py", &d("ring"), &["16", "20"]),
        python_writer("write_otf2_local.py", &d("local"), &["5", "40", "1"]),
        python_writer(
            "write_otf2_local.py",
            &d("local-ahead"),
            &["6", "40", "2", "ahead"],
        ),
    ];
    for mode in ["backwards", "early", "late-open"] {
        archives.push(python_writer("write_otf2_untimely.py", &d(mode), &[mode]));
    }
    let opts = ReadOptions::default();
    for a in &archives {
        assert_eq!(otf2::native_support(a).unwrap(), Ok(()), "{}", a.display());
    }
    // the mapped archive in time order takes the in-order read
    assert!(otf2::read_in_order(&archives[6], &opts).unwrap().is_some());
    on_one_and_three_threads(|threads| {
        for a in &archives {
            let native = otf2::read(a, &opts).unwrap();
            let library = otf2::read_library(a, &opts).unwrap();
            assert!(!native.intervals.is_empty(), "{}", a.display());
            assert_eq!(
                as_json(&native),
                as_json(&library),
                "{} on {threads} thread(s)",
                a.display()
            );
        }
    });
    // the mapping tables are applied: every location (its regions numbered
    // by a permutation of its own) begins in "main", its first region
    let t = otf2::read(&archives[5], &opts).unwrap();
    for l in 0..t.num_locations() as u32 {
        let first = t.intervals.of(l).state[0];
        assert_eq!(t.states.get(first).unwrap().name, "main", "location {l}");
    }
}

/// An in-memory read of an archive of 64 locations (4.6 M events, 512,000
/// messages) peaks near the model it builds (20 bytes an interval and a
/// counter sample, 40 a message, as the readers bench counts): within 1.3×
/// and the process's own few MiB on one thread, and a little more on two
/// (an arena each). The previous reader held each send and receive in 32
/// bytes and copied them into one list: 1.7× on one thread, 1.8× on two.
#[test]
fn an_in_memory_read_peaks_near_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = python_writer(
        "write_otf2_large.py",
        &dir.path().join("a"),
        &["64", "8000"],
    );
    let a = anchor.to_str().unwrap();
    let field = |text: &str, name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        line[line.find(name).unwrap() + name.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    for (threads, slack) in [("1", 10.0), ("2", 14.0)] {
        let (c, out, err) =
            common::tapestry_env(&["info", a, "--stats"], &[("RAYON_NUM_THREADS", threads)]);
        assert_eq!(c, 0, "{err}");
        let text = format!("{out}{err}");
        let model = (field(&text, "state intervals") * 20.0
            + field(&text, "messages") * 40.0
            + field(&text, "counter samples") * 20.0)
            / f64::from(1 << 20);
        assert!(model > 50.0, "{text}");
        let peak: f64 = text
            .split("peak memory ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no peak memory in {text}"));
        assert!(
            peak <= 1.3 * model + slack,
            "{threads} thread(s): peak {peak} MiB, model {model:.1} MiB"
        );
    }
}
