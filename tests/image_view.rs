//! The performance-image view (paper 002) on real traces: its cells carry
//! the colour indices `analyze image` computes on its own, the animation
//! steps over n0, the modes, and clear errors.

mod common;

use common::{shared_trace, tapestry};
use tapestry::readers::{self, ReadOptions};
use tapestry::scene::colormap::Colormap;
use tapestry::scene::rgba;
use tapestry::views::{BuildCtx, Prepared, ViewState};

fn ctx(step: usize) -> BuildCtx {
    BuildCtx {
        step,
        width: 1280,
        height: 720,
        triangle_budget: None,
        cursor: None,
        selected: None,
    }
}

fn prepared(trace: &str, params: serde_json::Value) -> tapestry::Result<Prepared> {
    let input = readers::load(&shared_trace(trace), &ReadOptions::default())?;
    Prepared::new(
        &input,
        &ViewState {
            params,
            ..ViewState::new("image")
        },
    )
}

#[test]
fn cells_carry_the_colour_indices_of_analyze_image() {
    let d = tempfile::tempdir().unwrap();
    let trace = "lammps-melt-16/lammps-melt-16.json.gz";
    // 11 steps over the whole trace: step 6 is at 6/10 of the span
    let p = prepared(
        trace,
        serde_json::json!({"metric": "busy-fraction", "steps": 11}),
    )
    .unwrap();
    assert_eq!(p.animation().unwrap().steps, 11);
    let span = readers::read(&shared_trace(trace), &ReadOptions::default())
        .unwrap()
        .meta
        .span;
    let n0 = span * 6 / 10;
    let out = d.path().join("g.json");
    let (code, _, err) = tapestry(&[
        "analyze",
        shared_trace(trace).to_str().unwrap(),
        "image",
        "--metric",
        "busy-fraction",
        "--n0",
        &n0.to_string(),
        "--m-range",
        "0:1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let g: Vec<f64> = j["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(g.len(), 16);
    let s = p.build(ctx(6)).unwrap();
    let cmap = Colormap::named("viridis").unwrap();
    let mesh = &s.meshes[0];
    for (i, gi) in g.iter().enumerate() {
        let want = rgba(cmap.at((*gi / 255.0) as f32), 1.0);
        let got = mesh.vertices[4 * i].color;
        for c in 0..3 {
            assert!(
                (got[c] - want[c]).abs() < 1e-5,
                "cell {i}: {got:?} {want:?}"
            );
        }
    }
    assert!(s.title.starts_with("G("), "{}", s.title);
    // the difference with the same image is g_min everywhere
    let z = prepared(trace, serde_json::json!({"mode": "diff", "lag": 1})).unwrap();
    let s = z.build(ctx(0)).unwrap();
    let first = s.meshes[0].vertices[0].color;
    assert!(s.meshes[0].vertices.iter().all(|v| v.color == first));
    // binary: two colours at most
    let b = prepared(
        trace,
        serde_json::json!({"mode": "binary", "th": 20, "metric": "busy-fraction"}),
    )
    .unwrap();
    let s = b.build(ctx(5)).unwrap();
    let mut colours: Vec<[u32; 4]> = s.meshes[0]
        .vertices
        .iter()
        .map(|v| v.color.map(f32::to_bits))
        .collect();
    colours.sort();
    colours.dedup();
    assert!(colours.len() <= 2, "{colours:?}");
}

#[test]
fn layouts_and_bad_parameters() {
    // qsort: 4 processors, a 2 × 2 hypercube and Gray code
    for layout in ["hypercube", "gray", "natural", "near-square"] {
        let p = prepared(
            "paraver-qsort/qsort_beo3.prv",
            serde_json::json!({"layout": layout}),
        )
        .unwrap();
        let s = p.build(ctx(50)).unwrap();
        assert!(s.title.contains(layout), "{}", s.title);
    }
    for (params, want) in [
        (serde_json::json!({"mode": "sepia"}), "unknown mode"),
        (serde_json::json!({"layout": "spiral"}), "unknown layout"),
        (serde_json::json!({"metric": "flops"}), "expected a metric"),
        (
            serde_json::json!({"metric": "counter:PAPI_X"}),
            "no counter",
        ),
        (serde_json::json!({"steps": 0}), "steps"),
        (serde_json::json!({"g_range": [255, 0]}), "g_range"),
        (serde_json::json!({"coords": "/nonexistent/c.csv"}), "c.csv"),
    ] {
        let e = match prepared("paraver-qsort/qsort_beo3.prv", params.clone()) {
            Ok(_) => panic!("{params} accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{params}: {e}");
    }
    // user coordinates: a 1 × 4 row, and two processors in one cell
    let d = tempfile::tempdir().unwrap();
    let row = common::write(
        d.path(),
        "row.csv",
        b"location,row,col\n0,0,3\n1,0,2\n2,0,1\n3,0,0\n",
    );
    let p = prepared(
        "paraver-qsort/qsort_beo3.prv",
        serde_json::json!({"coords": row.to_str().unwrap()}),
    )
    .unwrap();
    assert!(p.build(ctx(3)).unwrap().title.contains("coordinates 1×4"));
    let clash = common::write(d.path(), "clash.csv", b"0,0,0\n1,0,0\n2,0,1\n3,1,1\n");
    let e = match prepared(
        "paraver-qsort/qsort_beo3.prv",
        serde_json::json!({"coords": clash.to_str().unwrap()}),
    ) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("share the cell"), "{e}");
}

/// Mode `template` (#14): the difference G_A(n0) − G_B(n0) against another
/// run, with the mismatch energy in the title equal to `analyze image
/// --template`'s at the same n0 and metric range; (BLOCK,*) against
/// (CYCLIC,*) shows the top rows' processors below the template; runs of
/// another size and a missing template are refused.
#[test]
fn template_mode_compares_with_another_run() {
    let d = tempfile::tempdir().unwrap();
    let (bl, cy) = (d.path().join("block.prv"), d.path().join("cyclic.prv"));
    for (p, dist) in [(&bl, "block"), (&cy, "cyclic")] {
        let (code, _, err) = common::tapestry(&[
            "synth",
            "gauss",
            "--n",
            "128",
            "-p",
            "16",
            "--dist",
            dist,
            "-o",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let png = d.path().join("t.png");
    let tpl = format!("template={}", cy.display());
    let (code, out, err) = common::tapestry(&[
        "render",
        bl.to_str().unwrap(),
        "--view",
        "image",
        "--param",
        "metric=busy-fraction",
        "--param",
        "mode=template",
        "--param",
        &tpl,
        "--cursor",
        "300us",
        "--size",
        "640x360",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let said = format!("{out}{err}");
    let sigma: f64 = said
        .split("σ² = ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no σ² in: {said}"));
    let (code, out, err) = common::tapestry(&[
        "analyze",
        bl.to_str().unwrap(),
        "image",
        "--template",
        cy.to_str().unwrap(),
        "--metric",
        "busy-fraction",
        "--n0",
        "300us",
        "--m-range",
        "0:1",
    ]);
    assert_eq!(code, 0, "{err}");
    let meta: serde_json::Value = serde_json::from_str(&out.lines().next().unwrap()[2..]).unwrap();
    let e = meta["mismatch_energy"].as_f64().unwrap();
    assert!((sigma - e).abs() <= 0.5, "view σ² {sigma} vs analyze {e}");
    assert!(e > 0.0);
    // refused: no template, a template of another size
    let four = d.path().join("four.prv");
    let (code, _, err) = common::tapestry(&[
        "synth",
        "gauss",
        "--n",
        "16",
        "-p",
        "4",
        "-o",
        four.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for (param, want) in [
        ("mode=template".to_string(), "needs template=TRACE"),
        (
            format!("template={}", four.display()),
            "same number of processors",
        ),
    ] {
        let (code, _, err) = common::tapestry(&[
            "render",
            bl.to_str().unwrap(),
            "--view",
            "image",
            "--param",
            "mode=template",
            "--param",
            &param,
            "-o",
            png.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{param}");
        assert!(err.contains(want), "{param}: {err}");
    }
}
