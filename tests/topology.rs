//! The topology view on the real Boxfish tables of a 512-node Blue Gene/P
//! torus: every directed link of the link table read and drawn (wrap-around
//! links as stubs), packets per region summing to the table, the node
//! counter, and clear errors for inputs without links.

mod common;

use common::{shared_trace, tapestry};
use tapestry::readers::{self, Loaded, ReadOptions};
use tapestry::views::{BuildCtx, Prepared, ViewState};

fn meta() -> std::path::PathBuf {
    shared_trace("boxfish-bgpc/bgpc_meta.yaml")
}

#[test]
fn the_bgpc_torus_links() {
    let input = readers::load(&meta(), &ReadOptions::default()).unwrap();
    let Loaded::Volumes(set) = &input else {
        panic!("volumes")
    };
    let l = set.links.as_ref().expect("a link table");
    // six directed links per node of an 8x8x8 torus
    assert_eq!((l.len(), l.dims, l.torus), (3072, [8, 8, 8], true));
    assert_eq!(l.steps.len(), 10);
    // the table's packets of region -2, summed independently of the reader
    let text = std::fs::read_to_string(shared_trace("boxfish-bgpc/bgpc_links.yaml")).unwrap();
    let body = text.split("\n...").nth(1).unwrap();
    let want: f64 = body
        .lines()
        .filter_map(|r| {
            let f: Vec<f64> = r
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (f.len() == 9 && f[7] == -2.0).then(|| f[8])
        })
        .sum();
    assert!(want > 0.0);
    assert_eq!(l.step(0).iter().sum::<f64>(), want);
    let p = Prepared::new(
        &input,
        &ViewState {
            params: serde_json::json!({"node": "stores"}),
            ..ViewState::new("topology")
        },
    )
    .unwrap();
    assert_eq!(p.animation().unwrap().steps, 10);
    let s = p
        .build(BuildCtx {
            step: 3,
            width: 1280,
            height: 720,
            triangle_budget: None,
            cursor: None,
            selected: None,
        })
        .unwrap();
    // 512 node spheres; 3072 links as boxes (all neighbours on the torus)
    assert_eq!(s.glyphs[0].instances.len(), 512);
    assert_eq!(s.glyphs[1].instances.len(), 3072);
    assert!(s.title.contains("384 wrap-around links"), "{}", s.title);
    assert!(s.key.iter().any(|k| k.text.starts_with("node stores")));
    assert_eq!(s.legend.as_ref().unwrap().title, "packets per link");
    // without idle links, only busy links are drawn
    let busy = l.step(3).iter().filter(|v| **v > 0.0).count();
    let p = Prepared::new(
        &input,
        &ViewState {
            params: serde_json::json!({"idle_links": false}),
            ..ViewState::new("topology")
        },
    )
    .unwrap();
    let s = p
        .build(BuildCtx {
            step: 3,
            width: 640,
            height: 360,
            triangle_budget: None,
            cursor: None,
            selected: None,
        })
        .unwrap();
    assert_eq!(s.glyphs[1].instances.len(), busy);
    // info names the links
    let (code, out, err) = tapestry(&["info", meta().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3072 directed links (torus 8x8x8)"), "{out}");
}

#[test]
fn inputs_without_links_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let v = d.path().join("v.npy");
    let (code, _, err) = tapestry(&[
        "synth",
        "volume",
        "--dims",
        "4x4x4",
        "-o",
        v.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for (input, want) in [
        (v.clone(), "no link table"),
        (
            shared_trace("paraver-qsort/qsort_beo3.prv"),
            "needs network tables",
        ),
    ] {
        let (code, _, err) = tapestry(&[
            "render",
            input.to_str().unwrap(),
            "--view",
            "topology",
            "-o",
            d.path().join("t.png").to_str().unwrap(),
        ]);
        assert_ne!(code, 0);
        assert!(err.contains(want), "{err}");
    }
    let (code, _, err) = tapestry(&[
        "render",
        meta().to_str().unwrap(),
        "--view",
        "topology",
        "--param",
        "node=flops",
        "-o",
        d.path().join("t.png").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("no quantity 'flops'"), "{err}");
}
