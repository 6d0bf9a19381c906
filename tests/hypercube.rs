//! The hypercube view (paper 001 HyperView): messages in flight routed
//! over the links by the e-cube rule add up to the hops of every message,
//! queues count the messages not yet received, subcubes merge beyond the
//! node budget, the four layouts build, and bad requests are clear.

mod common;

use common::tapestry;
use tapestry::readers::{self, ReadOptions};
use tapestry::views::{BuildCtx, DataSpec, Prepared, ViewState};

fn synth(d: &std::path::Path, args: &[&str]) -> std::path::PathBuf {
    let out = d.join(format!("{}.prv", args.join("-")));
    let mut a = vec!["synth"];
    a.extend(args);
    a.extend(["-o", out.to_str().unwrap()]);
    let (code, _, err) = tapestry(&a);
    assert_eq!(code, 0, "{err}");
    out
}

const CTX: BuildCtx = BuildCtx {
    step: 0,
    width: 1280,
    height: 720,
    triangle_budget: None,
    cursor: None,
    selected: None,
};

#[test]
fn flights_queues_merging_and_layouts() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "16", "--reps", "4"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    let trace = readers::read(&t, &ReadOptions::default()).unwrap();
    let m = &trace.messages;
    assert!(!m.is_empty());
    // one time bin over the whole trace: every hop of every message
    let hops: u64 = (0..m.len())
        .map(|i| (m.sender[i] ^ m.receiver[i]).count_ones() as u64)
        .sum();
    let state = |params: serde_json::Value, bins: usize| ViewState {
        params,
        data: DataSpec {
            bins,
            ..DataSpec::default()
        },
        ..ViewState::new("hypercube")
    };
    let p = Prepared::new(&input, &state(serde_json::json!({}), 1)).unwrap();
    let data = p
        .data
        .downcast_ref::<tapestry::views::hypercube::HypercubeData>()
        .unwrap();
    assert_eq!(data.dim, 4);
    assert_eq!(data.flight.iter().map(|&c| c as u64).sum::<u64>(), hops);
    // nothing is still on its way at the end of the trace
    assert!(data.queue.iter().all(|&q| q == 0));
    // many bins: at each bin's end, the messages sent and not received
    let p = Prepared::new(&input, &state(serde_json::json!({}), 50)).unwrap();
    let data = p
        .data
        .downcast_ref::<tapestry::views::hypercube::HypercubeData>()
        .unwrap();
    for k in [10usize, 25, 40] {
        let end = data.edges[k + 1];
        let waiting = (0..m.len())
            .filter(|&i| m.send_time[i] < end && m.recv_time[i] >= end)
            .count() as u32;
        assert_eq!(
            data.queue[k * 16..(k + 1) * 16].iter().sum::<u32>(),
            waiting,
            "bin {k}"
        );
    }
    for layout in ["cube", "gray", "pascal", "fft"] {
        let p = Prepared::new(&input, &state(serde_json::json!({ "layout": layout }), 50)).unwrap();
        let s = p.build(BuildCtx { step: 20, ..CTX }).unwrap();
        assert!(s.title.contains(&layout.to_uppercase()), "{}", s.title);
        assert!(s.legend.is_some());
    }
    // subcubes of 4 merge into the nodes of a 2-cube
    let p = Prepared::new(&input, &state(serde_json::json!({"max_nodes": 4}), 10)).unwrap();
    let s = p.build(CTX).unwrap();
    assert!(s.title.contains("4 locations per node"), "{}", s.title);
    assert!(s.title.contains("d = 2"), "{}", s.title);
}

#[test]
fn bad_requests_are_clear() {
    let d = tempfile::tempdir().unwrap();
    let t12 = synth(d.path(), &["gauss", "-p", "12", "--n", "48"]);
    let t16 = synth(d.path(), &["gsum", "-p", "16", "--reps", "2"]);
    for (input, params, want) in [
        (&t12, "layout=cube", "power-of-two"),
        (&t16, "layout=spiral", "unknown layout"),
        (&t16, "max_nodes=6", "power of two"),
    ] {
        let (code, _, err) = tapestry(&[
            "render",
            input.to_str().unwrap(),
            "--view",
            "hypercube",
            "--param",
            params,
            "-o",
            d.path().join("h.png").to_str().unwrap(),
        ]);
        assert_ne!(code, 0);
        assert!(err.contains(want), "{params}: {err}");
    }
}
