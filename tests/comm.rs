//! The communication matrix (paper 001 Figs. 12–16): task levels of the
//! location hierarchy, sliding windows, the three views on real traces,
//! and clear errors for bad requests.

mod common;

use common::{shared_trace, tapestry};
use tapestry::analysis::comm::{self, Level, Quantity};
use tapestry::readers::{self, ReadOptions};
use tapestry::views::{BuildCtx, Prepared, ViewState};

fn qsort() -> tapestry::Trace {
    readers::read(
        &shared_trace("paraver-qsort/qsort_beo3.prv"),
        &ReadOptions::default(),
    )
    .unwrap()
}

fn lammps() -> tapestry::Trace {
    readers::read(
        &shared_trace("lammps-melt-16/lammps-melt-16.json.gz"),
        &ReadOptions::default(),
    )
    .unwrap()
}

#[test]
fn every_message_lands_in_one_cell_of_one_window() {
    for t in [qsort(), lammps()] {
        let span = t.meta.span;
        let m = comm::comm_matrices(&t, 0, span + 1, Level::Thread, 7).unwrap();
        let n = t.messages.len() as u64;
        let bytes = t.messages.total_bytes();
        let sum = |c: &[comm::Cell]| c.iter().map(|c| c.count).sum::<u64>();
        assert_eq!(sum(&m.total), n);
        assert_eq!(m.windows.iter().map(|w| sum(w)).sum::<u64>(), n);
        assert_eq!(m.total.iter().map(|c| c.bytes).sum::<u64>(), bytes);
        // every cell against a direct count
        for c in &m.total {
            let direct = (0..t.messages.len())
                .filter(|&i| t.messages.sender[i] == c.from && t.messages.receiver[i] == c.to)
                .count() as u64;
            assert_eq!(c.count, direct);
        }
        // windows partition time: each message's window holds its send time
        assert_eq!(m.edges.len(), 8);
        assert!(m.edges.windows(2).all(|e| e[0] < e[1]));
    }
}

#[cfg(feature = "otf2")]
#[test]
fn the_otf2_ping_pong_sends_both_ways() {
    let t = readers::read(
        &shared_trace("ping-pong-otf2/traces.otf2"),
        &ReadOptions::default(),
    )
    .unwrap();
    let m = comm::comm_matrices(&t, 0, t.meta.span + 1, Level::Process, 4).unwrap();
    let d = m.dense(&m.total, Quantity::Messages, 1 << 20).unwrap();
    assert_eq!(m.size(), 2);
    // ping and pong: rank 0 → 1 and 1 → 0, nothing to itself
    assert_eq!(d[0] + d[3], 0);
    assert!(d[1] > 0 && d[2] > 0);
    assert_eq!(d[1] + d[2], t.messages.len() as u64);
}

#[test]
fn levels_follow_the_location_hierarchy() {
    let t = qsort();
    // 4 threads, each in its own task and node
    let (map, names) = comm::tasks(&t, Level::Node).unwrap();
    assert_eq!(map, vec![0, 1, 2, 3]);
    assert_eq!(names[0], "node 1");
    let by_node = comm::comm_matrices(&t, 0, t.meta.span + 1, Level::Node, 1).unwrap();
    let by_thread = comm::comm_matrices(&t, 0, t.meta.span + 1, Level::Thread, 1).unwrap();
    assert_eq!(
        by_node
            .dense(&by_node.total, Quantity::Bytes, 1 << 20)
            .unwrap(),
        by_thread
            .dense(&by_thread.total, Quantity::Bytes, 1 << 20)
            .unwrap()
    );
    // LAMMPS (Chrome JSON): processes, no nodes
    let l = lammps();
    let (_, names) = comm::tasks(&l, Level::Process).unwrap();
    assert_eq!(names.len(), 16);
    let e = comm::tasks(&l, Level::Node).unwrap_err().to_string();
    assert!(e.contains("no node level"), "{e}");
    // blocks of 4 processes add up
    let m = comm::comm_matrices(&l, 0, l.meta.span + 1, Level::Process, 1).unwrap();
    let (side, v) = m.blocks(&m.total, Quantity::Messages, 4);
    assert_eq!(side, 4);
    assert_eq!(v.iter().sum::<f64>(), l.messages.len() as f64);
}

#[test]
fn analyze_comm_matrix_by_level() {
    let d = tempfile::tempdir().unwrap();
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let out = d.path().join("m.json");
    let (code, _, err) = tapestry(&[
        "analyze",
        q.to_str().unwrap(),
        "comm-matrix",
        "--level",
        "node",
        "--metric",
        "bytes",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(j["meta"]["level"], "node");
    assert_eq!(j["meta"]["tasks"][3], "node 4");
    let l = shared_trace("lammps-melt-16/lammps-melt-16.json.gz");
    for (args, want) in [
        (vec!["--level", "node"], "no node level"),
        (vec!["--level", "socket"], "unknown level"),
        (vec!["--metric", "busy-fraction"], "messages or bytes"),
        (vec!["--window", "5ms:5ms"], "window"),
    ] {
        let mut a = vec!["analyze", l.to_str().unwrap(), "comm-matrix"];
        a.extend(args);
        let (code, _, err) = tapestry(&a);
        assert_ne!(code, 0, "{a:?}");
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn prepared(view: &str, params: serde_json::Value) -> tapestry::Result<Prepared> {
    let input = readers::load(
        &shared_trace("lammps-melt-16/lammps-melt-16.json.gz"),
        &ReadOptions::default(),
    )?;
    Prepared::new(
        &input,
        &ViewState {
            params,
            ..ViewState::new(view)
        },
    )
}

#[test]
fn the_three_views_on_a_real_trace() {
    let ctx = |step| BuildCtx {
        step,
        width: 1280,
        height: 720,
        triangle_budget: None,
        cursor: None,
        selected: None,
    };
    for view in ["comm-density", "comm-perspective", "comm-contour"] {
        let p = prepared(view, serde_json::json!({"windows": 8, "level": "process"})).unwrap();
        assert_eq!(p.animation().unwrap().steps, 8);
        let s = p.build(ctx(3)).unwrap();
        assert!(s.title.contains("window 4 of 8"), "{}", s.title);
        assert!(s.title.contains("16 processes"), "{}", s.title);
        assert!(s.legend.is_some());
        assert!(s.labels.iter().any(|l| l.text.contains("sender process")));
        assert!(s.labels.iter().any(|l| l.text.contains("receiver process")));
    }
    // clipping hides cells outside the range
    let all = prepared("comm-density", serde_json::json!({})).unwrap();
    let clip = prepared("comm-density", serde_json::json!({"clip": [600, 2000]})).unwrap();
    let cells = |p: &Prepared| p.build(ctx(0)).unwrap().meshes[0].triangles() / 2 - 1;
    assert!(
        cells(&clip) < cells(&all),
        "{} {}",
        cells(&clip),
        cells(&all)
    );
    assert!(cells(&clip) > 0);
    // blocks of tasks beyond max_side
    let s = prepared("comm-density", serde_json::json!({"max_side": 5}))
        .unwrap()
        .build(ctx(0))
        .unwrap();
    assert!(s.title.contains("blocks of 4 × 4"), "{}", s.title);
}

#[test]
fn bad_parameters_are_clear_errors() {
    for (params, want) in [
        (serde_json::json!({"windows": 0}), "windows"),
        (serde_json::json!({"clip": [5, 1]}), "clip"),
        (serde_json::json!({"quantity": "flops"}), "unknown quantity"),
        (serde_json::json!({"level": "node"}), "no node level"),
        (serde_json::json!({"max_side": 1}), "max_side"),
        (serde_json::json!({"colour": 1}), "unknown field"),
    ] {
        let e = match prepared("comm-density", params.clone()) {
            Ok(_) => panic!("{params} accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{params}: {e}");
    }
    let p = prepared("comm-contour", serde_json::json!({"levels": 0})).unwrap();
    let e = p
        .build(BuildCtx {
            step: 0,
            width: 640,
            height: 360,
            triangle_budget: None,
            cursor: None,
            selected: None,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("levels"), "{e}");
    // a trace without messages
    let (code, _, err) = tapestry(&[
        "render",
        shared_trace("chrome/simple_trace.json").to_str().unwrap(),
        "--view",
        "comm-density",
        "-o",
        "/dev/null/x.png",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("needs messages"), "{err}");
}
