//! The mesh/torus view of a trace: every message's dimension-order route
//! is counted on its links (hops add up), tracking highlights exactly the
//! messages among the tracked nodes, locations merge beyond the node
//! budget, user coordinates place the nodes, and bad shapes are clear.

mod common;

use common::tapestry;
use tapestry::analysis::network;
use tapestry::readers::{self, ReadOptions};
use tapestry::views::mesh::MeshData;
use tapestry::views::{DataSpec, Prepared, ViewState};

fn synth(d: &std::path::Path, args: &[&str]) -> std::path::PathBuf {
    let out = d.join(format!("{}.prv", args.join("-")));
    let mut a = vec!["synth"];
    a.extend(args);
    a.extend(["-o", out.to_str().unwrap()]);
    let (code, _, err) = tapestry(&a);
    assert_eq!(code, 0, "{err}");
    out
}

fn state(params: serde_json::Value, bins: usize) -> ViewState {
    ViewState {
        params,
        data: DataSpec {
            bins,
            ..DataSpec::default()
        },
        ..ViewState::new("mesh")
    }
}

/// Hops of the dimension-order route on a mesh or torus.
fn hops(a: usize, b: usize, dims: &[usize], torus: bool) -> u64 {
    let (ca, cb) = (network::coords(a, dims), network::coords(b, dims));
    ca.iter()
        .zip(&cb)
        .zip(dims)
        .map(|((&x, &y), &d)| {
            let straight = x.abs_diff(y);
            (if torus {
                straight.min(d - straight)
            } else {
                straight
            }) as u64
        })
        .sum()
}

#[test]
fn routes_add_up_and_tracking_is_exact() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "16", "--reps", "4"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    let trace = readers::read(&t, &ReadOptions::default()).unwrap();
    let m = &trace.messages;
    for (shape, dims, torus) in [
        ("4x4", vec![4, 4], false),
        ("4x4", vec![4, 4], true),
        ("4x2x2", vec![4, 2, 2], true),
        ("16", vec![16], true),
    ] {
        let want: u64 = (0..m.len())
            .map(|i| hops(m.sender[i] as usize, m.receiver[i] as usize, &dims, torus))
            .sum();
        let p = Prepared::new(
            &input,
            &state(serde_json::json!({"shape": shape, "torus": torus}), 1),
        )
        .unwrap();
        let data = p.data.downcast_ref::<MeshData>().unwrap();
        let got: u64 = data.act.flight.iter().map(|&c| c as u64).sum();
        assert_eq!(got, want, "{shape} torus={torus}");
        assert!(
            data.act.queue.iter().all(|&q| q == 0),
            "nothing waits at the end"
        );
        assert!(data.act.tracked.is_empty());
        p.build(p.ctx(0, None, (640, 360), Some(3)).unwrap())
            .unwrap();
    }
    // tracking every node tracks every message; two nodes only theirs
    let all: Vec<usize> = (0..16).collect();
    let p = Prepared::new(&input, &state(serde_json::json!({"track": all}), 20)).unwrap();
    let data = p.data.downcast_ref::<MeshData>().unwrap();
    assert_eq!(data.act.tracked, data.act.flight);
    let p = Prepared::new(&input, &state(serde_json::json!({"track": [0, 1]}), 1)).unwrap();
    let data = p.data.downcast_ref::<MeshData>().unwrap();
    let dims = network::coords(0, &[4, 4]).len();
    assert_eq!(dims, 2);
    let want: u64 = (0..m.len())
        .filter(|&i| m.sender[i] < 2 && m.receiver[i] < 2)
        .map(|i| hops(m.sender[i] as usize, m.receiver[i] as usize, &[4, 4], false))
        .sum();
    assert_eq!(
        data.act.tracked.iter().map(|&c| c as u64).sum::<u64>(),
        want
    );
    let s = p.build(p.ctx(0, None, (640, 360), None).unwrap()).unwrap();
    assert!(s.key.iter().any(|k| k.text.starts_with("tracked")));
}

#[test]
fn merging_coordinates_and_bad_requests() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "16", "--reps", "2"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    let p = Prepared::new(&input, &state(serde_json::json!({"max_nodes": 4}), 10)).unwrap();
    let data = p.data.downcast_ref::<MeshData>().unwrap();
    assert_eq!((data.group, data.act.nodes), (4, 4));
    let s = p.build(p.ctx(0, None, (640, 360), None).unwrap()).unwrap();
    assert!(s.title.contains("4 locations per node"), "{}", s.title);
    // user coordinates: 16 locations on a ring of rows and columns
    let coords = d.path().join("c.csv");
    let mut text = String::from("location,row,col\n");
    for l in 0..16 {
        text.push_str(&format!("{l},{},{}\n", l / 4, (l * 3) % 4));
    }
    std::fs::write(&coords, text).unwrap();
    let p = Prepared::new(
        &input,
        &state(serde_json::json!({"coords": coords.to_str().unwrap()}), 10),
    )
    .unwrap();
    let data = p.data.downcast_ref::<MeshData>().unwrap();
    assert!(!data.pairs.is_empty());
    assert_eq!(data.places[5], [3.0, -1.0]);
    let s = p
        .build(p.ctx(3, None, (640, 360), Some(5)).unwrap())
        .unwrap();
    assert!(s.title.contains("user coordinates"), "{}", s.title);
    assert!(s.picks.iter().any(|k| k.processor == Some(5)));
    for (params, want) in [
        (serde_json::json!({"shape": "3x3"}), "holds 9 nodes"),
        (serde_json::json!({"shape": "4y4"}), "expected auto"),
        (serde_json::json!({"track": [99]}), "node 99"),
        (serde_json::json!({"max_nodes": 0}), "max_nodes"),
        (
            serde_json::json!({"coords": "/nonexistent.csv"}),
            "nonexistent",
        ),
    ] {
        let e = Prepared::new(&input, &state(params.clone(), 10))
            .err()
            .unwrap_or_else(|| panic!("{params} accepted"))
            .to_string();
        assert!(e.contains(want), "{params}: {e}");
    }
    // the command line
    let out = d.path().join("m.png");
    let (code, _, err) = tapestry(&[
        "render",
        t.to_str().unwrap(),
        "--view",
        "mesh",
        "--param",
        "shape=4x2x2",
        "--param",
        "torus=true",
        "--cursor",
        "1ms",
        "--size",
        "320x240",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Torus 4×2×2"), "{err}");
}
