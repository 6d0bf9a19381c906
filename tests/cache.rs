//! The columnar trace cache (`tapestry convert`): exact round trips of the
//! real traces, reading by pyarrow, and damaged or hostile caches refused
//! with the file and the row, never a panic.

mod common;

use std::path::{Path, PathBuf};

use common::{shared_trace, tapestry};
use tapestry::readers::{Loaded, ReadOptions, load};

fn trace_of(p: &Path) -> tapestry::Trace {
    match load(p, &ReadOptions::default()) {
        Ok(Loaded::Trace(t)) => *t,
        Ok(_) => panic!("{} is not a trace", p.display()),
        Err(e) => panic!("{e}"),
    }
}

/// The model as JSON, without its source path (the cache's differs).
fn model_json(t: &tapestry::Trace) -> serde_json::Value {
    let mut v = serde_json::to_value(t).unwrap();
    v["meta"]["source"] = serde_json::Value::Null;
    v
}

fn real_traces() -> Vec<PathBuf> {
    let mut v = vec![
        shared_trace("paraver-qsort/qsort_beo3.prv"),
        shared_trace("lammps-melt-16/lammps-melt-16.json.gz"),
        shared_trace("chrome/simple_trace.json"),
        shared_trace("chrome/flow_simple.json"),
        shared_trace("chrome/tall_trace.json"),
    ];
    if cfg!(feature = "otf2") {
        v.push(shared_trace("ping-pong-otf2/traces.otf2"));
        v.push(shared_trace("ping-pong-otf2-papi/traces.otf2"));
    }
    v
}

#[test]
fn real_traces_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    for p in real_traces() {
        let t = trace_of(&p);
        let out = dir.path().join(format!(
            "{}.tapestry",
            p.file_name().unwrap().to_string_lossy()
        ));
        tapestry::cache::write(&t, &out, &[&p]).unwrap();
        let back = trace_of(&out);
        assert_eq!(
            model_json(&t),
            model_json(&back),
            "{} differs after the cache",
            p.display()
        );
        assert_eq!(back.meta.source, out);
        // written again over itself: the older cache is replaced
        tapestry::cache::write(&back, &out, &[&p]).unwrap();
        assert_eq!(model_json(&t), model_json(&trace_of(&out)));
    }
}

#[test]
fn the_cli_converts_and_every_command_opens_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let prv = shared_trace("paraver-qsort/qsort_beo3.prv");
    let out = dir.path().join("qsort.tapestry");
    let (code, _, err) = tapestry(&[
        "convert",
        prv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("wrote"), "{err}");
    for args in [
        vec!["info", "--json"],
        vec!["analyze", "moments"],
        vec!["analyze", "field", "--bins", "16"],
        vec!["analyze", "comm-matrix"],
        vec!["analyze", "signal-w"],
    ] {
        let run = |p: &Path| {
            let mut a = vec![args[0], p.to_str().unwrap()];
            a.extend(&args[1..]);
            tapestry(&a)
        };
        let (c1, o1, e1) = run(&prv);
        let (c2, o2, e2) = run(&out);
        assert_eq!((c1, c2), (0, 0), "{args:?}: {e1} {e2}");
        if args[0] == "info" {
            let strip = |s: &str| {
                let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
                strip_paths(&mut v);
                v
            };
            assert_eq!(strip(&o1), strip(&o2), "{args:?}");
        } else {
            assert_eq!(o1, o2, "{args:?}");
        }
    }
    // class overrides apply to a cache as to the trace
    let (c, o, e) = tapestry(&[
        "info",
        out.to_str().unwrap(),
        "--json",
        "--busy",
        "Running,Waiting*",
    ]);
    assert_eq!(c, 0, "{e}");
    let (_, o2, _) = tapestry(&[
        "info",
        prv.to_str().unwrap(),
        "--json",
        "--busy",
        "Running,Waiting*",
    ]);
    let (mut a, mut b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&o).unwrap(),
        serde_json::from_str(&o2).unwrap(),
    );
    strip_paths(&mut a);
    strip_paths(&mut b);
    assert_eq!(a, b);
}

/// Removes the values that name the input file (they differ by design).
fn strip_paths(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in ["source", "trace", "path", "input"] {
                m.remove(k);
            }
            for x in m.values_mut() {
                strip_paths(x);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_paths),
        _ => {}
    }
}

#[test]
fn convert_refuses_to_replace_what_is_not_a_cache_or_write_into_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let prv = shared_trace("paraver-qsort/qsort_beo3.prv");
    // an existing directory of the user's
    let mine = dir.path().join("results");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep").unwrap();
    let (code, _, err) = tapestry(&[
        "convert",
        prv.to_str().unwrap(),
        "-o",
        mine.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("not a tapestry cache"), "{err}");
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep"
    );
    // an existing file
    let f = dir.path().join("x.tapestry");
    std::fs::write(&f, "data").unwrap();
    let (code, _, err) = tapestry(&["convert", prv.to_str().unwrap(), "-o", f.to_str().unwrap()]);
    assert_ne!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "data");
    // the trace itself
    let copy = dir.path().join("q.prv");
    std::fs::copy(&prv, &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let (code, _, err) = tapestry(&[
        "convert",
        copy.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("refusing"), "{err}");
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    // a profile has no cache
    let prof = dir.path().join("p.csv");
    std::fs::write(&prof, "line,processor,ticks\n1,0,5\n2,1,7\n").unwrap();
    let (code, _, err) = tapestry(&[
        "convert",
        prof.to_str().unwrap(),
        "-o",
        dir.path().join("p.tapestry").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("not a trace"), "{err}");
    // nothing was left behind by the refused or failed conversions
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn small_cache(dir: &Path) -> PathBuf {
    let p = shared_trace("paraver-qsort/qsort_beo3.prv");
    let out = dir.join("q.tapestry");
    tapestry::cache::write(&trace_of(&p), &out, &[&p]).unwrap();
    out
}

#[test]
fn damaged_caches_are_refused_with_the_file_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_cache(dir.path());
    let files: Vec<PathBuf> = std::fs::read_dir(&good)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 14);
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut refused = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let orig = std::fs::read(f).unwrap();
        let mut variants: Vec<Vec<u8>> = Vec::new();
        for k in [0, 1, 7, 9, 16] {
            variants.push(orig[..orig.len() * k / 17].to_vec());
        }
        for _ in 0..40 {
            let mut v = orig.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() % v.len() as u64) as usize;
                v[i] ^= 1 << (next() % 8);
            }
            variants.push(v);
        }
        for v in variants {
            let d = dir.path().join("bad.tapestry");
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir(&d).unwrap();
            for g in &files {
                std::fs::copy(g, d.join(g.file_name().unwrap())).unwrap();
            }
            std::fs::write(d.join(&name), &v).unwrap();
            let r = std::panic::catch_unwind(|| load(&d, &ReadOptions::default()));
            match r {
                Err(_) => panic!("reading a damaged {name} panicked"),
                Ok(Err(e)) => {
                    refused += 1;
                    let msg = e.to_string();
                    assert!(
                        msg.contains("bad.tapestry"),
                        "the error does not name the cache: {msg}"
                    );
                }
                Ok(Ok(_)) => {} // a flip in a value that is still valid
            }
        }
    }
    assert!(
        refused > 14 * 5,
        "only {refused} damaged caches were refused"
    );
}

#[test]
fn hostile_values_are_refused_with_the_row() {
    use arrow_array::{RecordBatch, UInt32Array, UInt64Array};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let good = small_cache(dir.path());
    let iv = good.join("intervals.arrow");
    let f = std::fs::File::open(&iv).unwrap();
    let batches: Vec<RecordBatch> = arrow_ipc::reader::FileReader::try_new(f, None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let schema = batches[0].schema();
    let b = arrow_select_concat(&batches);
    let write = |loc: Vec<u32>, start: Vec<u64>, end: Vec<u64>, state: Vec<u32>| {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(UInt32Array::from(loc)),
                Arc::new(UInt64Array::from(start)),
                Arc::new(UInt64Array::from(end)),
                Arc::new(UInt32Array::from(state)),
            ],
        )
        .unwrap();
        let mut w =
            arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&iv).unwrap(), &schema)
                .unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    };
    let (loc, start, end, state) = b;
    let n = loc.len();
    type Columns = (Vec<u32>, Vec<u64>, Vec<u64>, Vec<u32>);
    type Case<'a> = (&'a str, Box<dyn Fn() -> Columns + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "unknown state",
            Box::new(|| {
                let mut s = state.clone();
                s[5] = 999;
                (loc.clone(), start.clone(), end.clone(), s)
            }),
        ),
        (
            "location out of range",
            Box::new(|| {
                let mut l = loc.clone();
                l[n - 1] = 1_000_000;
                (l, start.clone(), end.clone(), state.clone())
            }),
        ),
        (
            "overlap",
            Box::new(|| {
                let mut s = start.clone();
                s[3] = start[2];
                (loc.clone(), s, end.clone(), state.clone())
            }),
        ),
        (
            "after the span",
            Box::new(|| {
                let mut e = end.clone();
                e[n - 1] = u64::MAX;
                (loc.clone(), start.clone(), e, state.clone())
            }),
        ),
    ];
    for (what, make) in cases {
        let (l, s, e, st) = make();
        write(l, s, e, st);
        let err = load(&good, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("intervals.arrow") && err.contains("row "),
            "{what}: {err}"
        );
    }
    // a row count that disagrees with tapestry.json
    write(
        loc[..10].to_vec(),
        start[..10].to_vec(),
        end[..10].to_vec(),
        state[..10].to_vec(),
    );
    let err = load(&good, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("10 rows"), "{err}");
    // another layout version
    let meta = good.join("tapestry.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace("\"tapestry_cache\": 1", "\"tapestry_cache\": 99"),
    )
    .unwrap();
    let err = load(&good, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("version 99"), "{err}");
}

/// The four interval columns of all batches, concatenated.
fn arrow_select_concat(
    batches: &[arrow_array::RecordBatch],
) -> (Vec<u32>, Vec<u64>, Vec<u64>, Vec<u32>) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{UInt32Type, UInt64Type};
    let mut out = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in batches {
        out.0
            .extend(b.column(0).as_primitive::<UInt32Type>().values().iter());
        out.1
            .extend(b.column(1).as_primitive::<UInt64Type>().values().iter());
        out.2
            .extend(b.column(2).as_primitive::<UInt64Type>().values().iter());
        out.3
            .extend(b.column(3).as_primitive::<UInt32Type>().values().iter());
    }
    out
}

/// The Python interpreter for the pyarrow check: `TAPESTRY_PYTHON` or
/// `python3`. In CI (`CI=true`) pyarrow must be there (scripts/setup.sh
/// installs it); elsewhere its absence skips the check with a message.
fn python_with_pyarrow() -> Option<String> {
    let py = std::env::var("TAPESTRY_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import pyarrow"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    assert!(
        std::env::var("CI").is_err(),
        "pyarrow is required in CI (scripts/setup.sh installs it)"
    );
    eprintln!("skipping the pyarrow check: {py} has no pyarrow");
    None
}

#[test]
fn pyarrow_reads_the_cache_and_agrees_with_the_model() {
    let Some(py) = python_with_pyarrow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cache_check.py");
    for p in real_traces() {
        let t = trace_of(&p);
        let out = dir.path().join("c.tapestry");
        tapestry::cache::write(&t, &out, &[&p]).unwrap();
        let o = std::process::Command::new(&py)
            .arg(&script)
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["rows"], v["declared_rows"], "{}", p.display());
        assert_eq!(v["rows"]["intervals"], t.intervals.len() as u64);
        assert_eq!(v["rows"]["locations"], t.locations.len() as u64);
        assert_eq!(v["rows"]["messages"], t.messages.len() as u64);
        assert_eq!(v["rows"]["events"], t.events.len() as u64);
        assert_eq!(v["rows"]["counters"], t.counters.len() as u64);
        assert_eq!(v["message_bytes"], t.messages.total_bytes());
        assert_eq!(v["global_events"], t.events.global_range().len() as u64);
        assert_eq!(v["span_ns"], t.meta.span);
        let mut per_state = std::collections::BTreeMap::<String, u64>::new();
        for l in 0..t.locations.len() as u32 {
            for (s, e, st) in t.intervals.of(l).iter() {
                *per_state
                    .entry(t.states.get(st).unwrap().name.clone())
                    .or_default() += e - s;
            }
        }
        let py_states: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(v["time_per_state_ns"].clone()).unwrap();
        assert_eq!(py_states, per_state, "{}", p.display());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn the_cache_flag_writes_reuses_and_refreshes_a_cache_beside_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let prv = dir.path().join("q.prv");
    std::fs::copy(shared_trace("paraver-qsort/qsort_beo3.prv"), &prv).unwrap();
    std::fs::copy(
        shared_trace("paraver-qsort/qsort_beo3.pcf"),
        dir.path().join("q.pcf"),
    )
    .unwrap();
    let cache = dir.path().join("q.prv.tapestry");
    assert_eq!(tapestry::cache::cache_path_of(&prv), cache);
    let p = prv.to_str().unwrap();
    let (c0, plain, e0) = tapestry(&["analyze", p, "moments"]);
    assert_eq!(c0, 0, "{e0}");
    assert!(!cache.exists());
    let (c1, first, e1) = tapestry(&["analyze", p, "moments", "--cache"]);
    assert_eq!(c1, 0, "{e1}");
    assert!(tapestry::cache::is_cache(&cache));
    assert!(tapestry::cache::is_fresh(&cache, &prv));
    // the second run reads the cache: make the trace unreadable in a way
    // its stamp does not see (same size, same mtime), and it still works
    let stamp = std::fs::metadata(&prv).unwrap().modified().unwrap();
    let bytes = std::fs::read(&prv).unwrap();
    let mut garbled = bytes.clone();
    garbled[0] = b'X';
    std::fs::write(&prv, &garbled).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&prv)
        .unwrap()
        .set_modified(stamp)
        .unwrap();
    let (c2, second, e2) = tapestry(&["analyze", p, "moments", "--cache"]);
    assert_eq!(c2, 0, "{e2}");
    assert_eq!(plain, first);
    assert_eq!(first, second);
    // a changed trace (new size) is read again and its cache rewritten
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"\n");
    std::fs::write(&prv, &longer).unwrap();
    assert!(!tapestry::cache::is_fresh(&cache, &prv));
    let (c3, third, e3) = tapestry(&["analyze", p, "moments", "--cache"]);
    assert_eq!(c3, 0, "{e3}");
    assert_eq!(third, plain);
    assert!(tapestry::cache::is_fresh(&cache, &prv));
    // class overrides are not baked into the cache
    let (_, busy_plain, _) = tapestry(&["analyze", p, "moments", "--busy", "Running,Waiting*"]);
    let (_, busy_cached, _) = tapestry(&[
        "analyze",
        p,
        "moments",
        "--busy",
        "Running,Waiting*",
        "--cache",
    ]);
    assert_eq!(busy_plain, busy_cached);
    assert_ne!(busy_plain, plain);
}

#[test]
fn strict_refuses_a_cache_of_a_repaired_trace() {
    let dir = tempfile::tempdir().unwrap();
    // a Paraver trace whose last record is cut: repaired with a warning
    let text = std::fs::read_to_string(shared_trace("paraver-qsort/qsort_beo3.prv")).unwrap();
    let cut = &text[..text.len() - 7];
    let prv = common::write(dir.path(), "cut.prv", cut.as_bytes());
    let out = dir.path().join("cut.tapestry");
    let (c, _, e) = tapestry(&[
        "convert",
        prv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = tapestry(&["info", out.to_str().unwrap()]);
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = tapestry(&["info", out.to_str().unwrap(), "--strict"]);
    assert_ne!(c, 0);
    assert!(
        e.contains("cut.prv") && e.contains("without --strict"),
        "{e}"
    );
}
