//! Execution control and linked views (issue #11): every view over time
//! follows one time cursor, moments up to the cursor equal the moments of
//! the window ending there, `render --frames` by events or ticks per frame
//! moves forward and back with the statistics following, camera paths and
//! videos render, hover picks name processors, and the selection is drawn
//! in every view that shows processors.

mod common;

use common::tapestry;
use tapestry::analysis::moments;
use tapestry::readers::{self, ReadOptions};
use tapestry::scene::pick::PickShape;
use tapestry::views::{DataSpec, Prepared, ViewState, moments::SELECTED};

fn synth(d: &std::path::Path, args: &[&str]) -> std::path::PathBuf {
    let out = d.join(format!("{}.prv", args.join("-")));
    let mut a = vec!["synth"];
    a.extend(args);
    a.extend(["-o", out.to_str().unwrap()]);
    let (code, _, err) = tapestry(&a);
    assert_eq!(code, 0, "{err}");
    out
}

fn state(view: &str, params: serde_json::Value, bins: usize) -> ViewState {
    ViewState {
        params,
        data: DataSpec {
            bins,
            ..DataSpec::default()
        },
        ..ViewState::new(view)
    }
}

#[test]
fn views_over_time_follow_the_cursor() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "16", "--reps", "8"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    let trace = readers::read(&t, &ReadOptions::default()).unwrap();
    let span = trace.meta.span;
    let edges = tapestry::analysis::fields::bin_edges(0, span, 40);
    // the cursor in bin 25: views over bins show bin 25 (Kiviat: the slide
    // of width w ending with it)
    let at = (edges[25] + edges[26]) / 2;
    for (view, params, want) in [
        ("hypercube", serde_json::json!({}), 25),
        ("comm-density", serde_json::json!({"windows": 40}), 25),
        (
            "kiviat",
            serde_json::json!({"width": 5, "keep_empty": true}),
            21,
        ),
        ("isosurface", serde_json::json!({"cube": "4x2x2"}), 25),
    ] {
        let p = Prepared::new(&input, &state(view, params, 40)).unwrap();
        let ctx = p.ctx(0, Some(at), (640, 360), None).unwrap();
        assert_eq!(ctx.step, want, "{view}");
        assert_eq!(ctx.cursor, Some(at));
        p.build(ctx).unwrap();
        // before the window and after it: the first and last steps
        let steps = p.animation().unwrap().steps;
        assert_eq!(p.ctx(3, Some(0), (64, 64), None).unwrap().step, 0, "{view}");
        assert_eq!(
            p.ctx(0, Some(u64::MAX), (64, 64), None).unwrap().step,
            steps - 1,
            "{view}"
        );
    }
    // views whose steps are not times keep their step
    let p = Prepared::new(&input, &state("signal", serde_json::json!({}), 40)).unwrap();
    assert_eq!(p.ctx(0, Some(at), (64, 64), None).unwrap().step, 0);
}

#[test]
fn moments_up_to_the_cursor_are_the_moments_of_that_window() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gauss", "-p", "8", "--n", "64"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    let trace = readers::read(&t, &ReadOptions::default()).unwrap();
    let mask = trace.states.select(&["busy".to_string()]).unwrap();
    let cut = trace.meta.span * 3 / 7;
    let want = moments::moments(&trace, &mask, 0, cut);
    let p = Prepared::new(&input, &state("moments", serde_json::json!({}), 50)).unwrap();
    let data = p
        .data
        .downcast_ref::<tapestry::views::moments::MomentData>()
        .unwrap();
    let (accs, upto) =
        tapestry::views::moments::accs_at(&data.accs, &data.runs, (0, trace.meta.span), Some(cut));
    assert_eq!(upto, cut);
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    };
    for (l, (acc, w)) in accs.iter().zip(&want).enumerate() {
        let m = acc.moments();
        assert_eq!(m.m0, w.m0, "location {l}");
        assert!(
            close(m.m1, w.m1) && close(m.m2, w.m2) && close(m.m3, w.m3),
            "location {l}: {m:?} vs {w:?}"
        );
    }
    let s = p
        .build(p.ctx(0, Some(cut), (1280, 720), Some(3)).unwrap())
        .unwrap();
    assert!(s.title.contains("up to the cursor"), "{}", s.title);
    // the selection: an orange frame and a key entry
    assert!(s.lines.iter().any(|l| l.color == SELECTED));
    assert!(s.key.iter().any(|k| k.text.contains("processor 3")));
    // hover: one row pick per processor, naming it
    let rows: Vec<_> = s
        .picks
        .iter()
        .filter(|p| p.text.starts_with("processor ") && p.text.contains("m0"))
        .collect();
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().enumerate().all(|(i, p)| p.processor == Some(i)));
}

#[test]
fn picks_and_selection_in_every_processor_view() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "16", "--reps", "4"]);
    let input = readers::load(&t, &ReadOptions::default()).unwrap();
    for (view, params) in [
        ("kiviat", serde_json::json!({})),
        ("comm-density", serde_json::json!({})),
        ("image", serde_json::json!({})),
        ("hypercube", serde_json::json!({})),
        ("hypercube", serde_json::json!({"layout": "gray"})),
        ("moments", serde_json::json!({})),
    ] {
        let p = Prepared::new(&input, &state(view, params.clone(), 20)).unwrap();
        let s = p
            .build(p.ctx(2, None, (1280, 720), Some(5)).unwrap())
            .unwrap();
        assert!(
            s.picks.iter().any(|p| p.processor == Some(5)),
            "{view} {params}: no pick for processor 5"
        );
        assert!(
            s.lines.iter().any(|l| l.color == SELECTED),
            "{view} {params}: the selection is not drawn"
        );
        for pk in &s.picks {
            assert!(!pk.text.is_empty());
            if let PickShape::Rect { min, max, .. } = pk.shape {
                assert!(min[0] <= max[0] && min[1] <= max[1]);
            }
        }
    }
    // views that name what is under the mouse without drawing the selection
    for view in [
        "moments-3d",
        "comm-perspective",
        "comm-contour",
        "profile-terrain",
        "profile-heatmap",
    ] {
        let p = Prepared::new(&input, &state(view, serde_json::json!({}), 20)).unwrap();
        let s = p.build(p.ctx(0, None, (1280, 720), None).unwrap()).unwrap();
        assert!(!s.picks.is_empty(), "{view}: nothing to hover");
        assert!(s.picks.iter().all(|p| !p.text.is_empty()), "{view}");
    }
    // the Boxfish torus: nodes and links under the mouse
    let torus = common::shared_trace("boxfish-bgpc/bgpc_meta.yaml");
    if torus.exists() {
        let input = readers::load(&torus, &ReadOptions::default()).unwrap();
        let p = Prepared::new(&input, &ViewState::new("topology")).unwrap();
        let s = p
            .build(p.ctx(0, None, (1280, 720), Some(9)).unwrap())
            .unwrap();
        assert_eq!(
            s.picks.iter().filter(|p| p.processor.is_some()).count(),
            512
        );
        assert!(s.picks.iter().any(|p| p.text.starts_with("link")));
        assert!(s.lines.iter().any(|l| l.color == SELECTED));
    }
}

fn frames_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn render_frames_forward_and_back_with_statistics() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "8", "--reps", "6"]);
    let t_s = t.to_str().unwrap();
    let fwd = d.path().join("f.png");
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--view",
        "hypercube",
        "--size",
        "320x240",
        "--frames",
        "11",
        "--events-per-frame",
        "7",
        "--ticks-per-frame",
        "1s",
        "-o",
        fwd.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let f = frames_json(&d.path().join("f-frames.json"));
    let frames = f["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 11);
    for i in 0..11 {
        assert!(d.path().join(format!("f-{i:04}.png")).exists());
    }
    let ev = |fr: &serde_json::Value| fr["statistics"]["events"].as_u64().unwrap();
    assert!(frames.windows(2).all(|w| ev(&w[1]) >= ev(&w[0])));
    assert!(ev(&frames[10]) > ev(&frames[0]));
    // and back from where it ended: the same statistics in reverse
    let last = frames[10]["cursor_ns"].as_u64().unwrap().to_string();
    let back = d.path().join("b.png");
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--view",
        "hypercube",
        "--size",
        "320x240",
        "--frames",
        "11",
        "--events-per-frame",
        "7",
        "--ticks-per-frame",
        "1s",
        "--backward",
        "--cursor",
        &last,
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let b = frames_json(&d.path().join("b-frames.json"));
    let bf = b["frames"].as_array().unwrap();
    assert_eq!(
        bf[10]["statistics"], frames[0]["statistics"],
        "back to the start"
    );
    assert_eq!(bf[0]["statistics"], frames[10]["statistics"]);
    // flags checked before reading
    for (args, want) in [
        (vec!["--events-per-frame", "3"], "--frames"),
        (vec!["--backward"], "execution control"),
        (
            vec!["--frames", "2", "--events-per-frame", "0"],
            "advances nothing",
        ),
        (vec!["--cursor", "soon"], "--cursor"),
        (vec!["--frames", "2", "--fps", "0"], "--fps"),
        (vec!["--frames", "99999999999"], "at most"),
    ] {
        let mut a = vec!["render", t_s, "-o", "/nonexistent/x.png"];
        a.extend(args.iter());
        let (code, _, err) = tapestry(&a);
        assert_ne!(code, 0);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // execution control needs a trace
    let torus = common::shared_trace("boxfish-bgpc/bgpc_meta.yaml");
    if torus.exists() {
        let (code, _, err) = tapestry(&[
            "render",
            torus.to_str().unwrap(),
            "--frames",
            "2",
            "--events-per-frame",
            "3",
            "-o",
            d.path().join("x.png").to_str().unwrap(),
        ]);
        assert_ne!(code, 0);
        assert!(err.contains("needs a trace"), "{err}");
    }
}

#[test]
fn camera_paths_and_videos() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "8", "--reps", "2"]);
    let t_s = t.to_str().unwrap();
    let cam = |x: f32| serde_json::json!({"eye": [x, 3.0, 6.0], "target": [0.0, 0.0, 0.0], "up": [0.0, 1.0, 0.0], "fov_y": 40.0, "ortho": null});
    let path = d.path().join("fly.json");
    std::fs::write(
        &path,
        serde_json::to_vec(&serde_json::json!([
            {"at": 0.0, "camera": cam(-6.0)},
            {"at": 1.0, "camera": cam(0.0)},
            {"at": 2.0, "camera": cam(6.0)}
        ]))
        .unwrap(),
    )
    .unwrap();
    let out = d.path().join("p.png");
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--view",
        "hypercube",
        "--size",
        "160x120",
        "--path",
        path.to_str().unwrap(),
        "--frames",
        "5",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let a = std::fs::read(d.path().join("p-0000.png")).unwrap();
    let b = std::fs::read(d.path().join("p-0004.png")).unwrap();
    assert_ne!(a, b, "the camera moved");
    // bad paths: times not increasing, not keyframes
    std::fs::write(&path, br#"[{"at": 1.0, "camera": {"eye":[0,0,1],"target":[0,0,0],"up":[0,1,0],"fov_y":40,"ortho":null}}, {"at": 1.0, "camera": {"eye":[0,0,2],"target":[0,0,0],"up":[0,1,0],"fov_y":40,"ortho":null}}]"#).unwrap();
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--path",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("increase"), "{err}");
    std::fs::write(&path, b"[1, 2]").unwrap();
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--path",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("keyframes"), "{err}");
    // a video through ffmpeg when it is installed, else a clear message
    let video = d.path().join("v.mp4");
    let (code, _, err) = tapestry(&[
        "render",
        t_s,
        "--view",
        "hypercube",
        "--size",
        "161x121",
        "--frames",
        "12",
        "--ticks-per-frame",
        "1ms",
        "-o",
        video.to_str().unwrap(),
    ]);
    let have_ffmpeg = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok();
    if have_ffmpeg {
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(&video).unwrap();
        assert!(bytes.len() > 1000 && &bytes[4..8] == b"ftyp", "not an MP4");
        // nothing temporary left beside it
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains(".tmp-")), "{names:?}");
        if let Ok(o) = std::process::Command::new("ffprobe")
            .args([
                "-v",
                "error",
                "-count_frames",
                "-show_entries",
                "stream=nb_read_frames",
                "-of",
                "csv=p=0",
            ])
            .arg(&video)
            .output()
        {
            assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "12");
        }
    } else {
        assert!(
            std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
            "ffmpeg is required in CI"
        );
        assert_ne!(code, 0);
        assert!(err.contains("ffmpeg"), "{err}");
    }
}

#[test]
fn window_layouts_round_trip_in_view_state_files() {
    let d = tempfile::tempdir().unwrap();
    let mut st = ViewState::new("moments");
    st.cursor = Some(1234);
    st.selected = Some(2);
    st.panes.push(ViewState::new("kiviat"));
    st.layout = Some(serde_json::json!({"root": 0}));
    st.path.push(tapestry::scene::path::Keyframe {
        at: 0.0,
        camera: tapestry::scene::Camera {
            eye: [1.0, 2.0, 3.0],
            target: [0.0; 3],
            up: [0.0, 1.0, 0.0],
            fov_y: 40.0,
            ortho: None,
            shift: 0.0,
        },
    });
    let p = d.path().join("s.json");
    st.write(&p, &[]).unwrap();
    assert_eq!(ViewState::read(&p).unwrap(), st);
    // panes are checked like the first view
    let mut bad = st.clone();
    bad.panes[0].view = "nope".into();
    std::fs::write(&p, bad.to_json()).unwrap();
    let e = ViewState::read(&p).unwrap_err().to_string();
    assert!(e.contains("pane 1") && e.contains("unknown view"), "{e}");
}

/// A run killed while writing leaves `.NAME.tmp-PID`; the next write of
/// that output in that directory removes it (the process is gone).
#[test]
fn stale_temporaries_are_cleaned_by_the_next_run() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), &["gsum", "-p", "4", "--reps", "2"]);
    let stale = d.path().join(".f.npy.tmp-4294967");
    std::fs::write(&stale, vec![0u8; 4096]).unwrap();
    let out = d.path().join("f.npy");
    let (code, _, err) = tapestry(&[
        "analyze",
        t.to_str().unwrap(),
        "field",
        "--bins",
        "10",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
    if std::path::Path::new("/proc/self").exists() {
        assert!(!stale.exists(), "the stale temporary is still there");
    }
}
