//! Inputs at sizes where a quadratic path would take minutes (issue #12):
//! each reads in seconds and its model is checked exactly. Nothing is
//! timed; a regression shows as a test that does not finish.

use tapestry::readers::{self, ReadOptions};

fn write_json(
    dir: &std::path::Path,
    name: &str,
    events: impl Iterator<Item = String>,
) -> std::path::PathBuf {
    let mut s = String::from("[");
    for (i, e) in events.enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&e);
    }
    s.push(']');
    let p = dir.join(name);
    std::fs::write(&p, s).unwrap();
    p
}

/// 300,000 distinct counter names (interning by name was a linear scan).
#[test]
fn many_distinct_counters() {
    let d = tempfile::tempdir().unwrap();
    let n = 300_000;
    let p = write_json(
        d.path(),
        "c.json",
        (0..n).map(|i| {
            format!(r#"{{"ph":"C","name":"c{i}","pid":1,"tid":1,"ts":{i},"args":{{"value":{i}}}}}"#)
        }),
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.counters.defs.len(), n);
    assert_eq!(t.counters.time.len(), n);
    assert_eq!(t.counters.defs[12_345].name, "c12345");
}

/// 200,000 async slices of one name all overlapping: one lane each
/// (first-fit lane packing scanned every lane per slice).
#[test]
fn many_overlapping_async_slices() {
    let d = tempfile::tempdir().unwrap();
    let n = 200_000u64;
    let p = write_json(
        d.path(),
        "a.json",
        (0..n).flat_map(|i| {
            [
                format!(
                    r#"{{"ph":"b","name":"io","cat":"c","id":"{i}","pid":1,"tid":1,"ts":{i}}}"#
                ),
                format!(
                    r#"{{"ph":"e","name":"io","cat":"c","id":"{i}","pid":1,"tid":1,"ts":{}}}"#,
                    1_000_000 + i
                ),
            ]
        }),
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.intervals.len(), n as usize);
    let lanes = (0..t.num_locations() as u32)
        .filter(|&l| t.intervals.of(l).len() == 1)
        .count();
    assert_eq!(lanes, n as usize);
    // and slices one after another share one lane
    let p = write_json(
        d.path(),
        "b.json",
        (0..n).flat_map(|i| {
            [
                format!(
                    r#"{{"ph":"b","name":"io","cat":"c","id":"{i}","pid":1,"tid":1,"ts":{}}}"#,
                    10 * i
                ),
                format!(
                    r#"{{"ph":"e","name":"io","cat":"c","id":"{i}","pid":1,"tid":1,"ts":{}}}"#,
                    10 * i + 5
                ),
            ]
        }),
    );
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.intervals.len(), n as usize);
    assert_eq!(
        (0..t.num_locations() as u32)
            .map(|l| t.intervals.of(l).len())
            .max(),
        Some(n as usize)
    );
}

/// 100,000 nested async slices of distinct names on one id, closed oldest
/// first (matching an end searched the whole open stack).
#[test]
fn deep_async_stacks_closed_out_of_order() {
    let d = tempfile::tempdir().unwrap();
    let n = 100_000u64;
    let begins = (0..n).map(|i| {
        format!(r#"{{"ph":"b","name":"s{i}","cat":"c","id":"1","pid":1,"tid":1,"ts":{i}}}"#)
    });
    let ends = (0..n).map(|i| {
        format!(
            r#"{{"ph":"e","name":"s{i}","cat":"c","id":"1","pid":1,"tid":1,"ts":{}}}"#,
            n + i
        )
    });
    let p = write_json(d.path(), "s.json", begins.chain(ends));
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.intervals.len(), n as usize);
    assert!(
        t.meta
            .diagnostics
            .warnings
            .iter()
            .all(|w| !w.kind.contains("unmatched"))
    );
}

/// 200,000 distinct Paraver global-operation ids (interning the operation
/// names was a linear scan).
#[test]
fn many_distinct_global_operations() {
    let d = tempfile::tempdir().unwrap();
    let n = 200_000u64;
    let mut s = String::from("#Paraver (01/01/70 at 00:00):10000000_ns:1(1):1:1(1:1)\n");
    for i in 0..n {
        s.push_str(&format!("4:1:1:1:1:{}:0:8:8:{i}:0\n", 10 + i));
    }
    let p = d.path().join("g.prv");
    std::fs::write(&p, s).unwrap();
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert_eq!(t.collectives.ops.len(), n as usize);
}
