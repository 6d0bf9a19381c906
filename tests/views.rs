//! The views through the command line: the registry in `--help`, view-state
//! files that reproduce a PNG exactly, glTF read back, colours that equal
//! the legend, outputs that never overwrite an input, fallbacks and clear
//! errors. Tests that draw need an adapter (lavapipe in CI).

mod common;

use std::path::{Path, PathBuf};

use common::tapestry;
use tapestry::gpu::GpuContext;

fn gpu() -> bool {
    match GpuContext::new() {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
                "TAPESTRY_REQUIRE_GPU is set but no adapter opened: {e}"
            );
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn ok(args: &[&str]) -> String {
    let (code, _, err) = tapestry(args);
    assert_eq!(code, 0, "tapestry {}: {err}", args.join(" "));
    err
}

fn fails(args: &[&str]) -> String {
    let (code, _, err) = tapestry(args);
    assert_ne!(code, 0, "tapestry {} should fail", args.join(" "));
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn gauss(d: &Path) -> PathBuf {
    let p = d.join("g.prv");
    ok(&[
        "synth",
        "gauss",
        "-p",
        "8",
        "--n",
        "96",
        "-o",
        p.to_str().unwrap(),
    ]);
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn help_lists_every_view_of_the_registry() {
    let (code, out, _) = tapestry(&["render", "--help"]);
    assert_eq!(code, 0);
    for v in tapestry::views::REGISTRY {
        assert!(out.contains(&format!("- {}:", v.name())), "{out}");
    }
    let (_, out, _) = tapestry(&["render", "x", "--view", "kiviat", "--list-params"]);
    assert!(out.contains("--param width="), "{out}");
    let (_, out, _) = tapestry(&["view", "--help"]);
    assert!(out.contains("--param") && out.contains("--quantity") && out.contains("--kinds"));
}

#[test]
fn view_state_reproduces_the_png_exactly() {
    if !gpu() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let t = gauss(d.path());
    let (a, b, v) = (
        d.path().join("a.png"),
        d.path().join("b.png"),
        d.path().join("v.json"),
    );
    let k = d.path().join("k.prv");
    let tensor = d.path().join("acc.npy");
    ok(&[
        "synth",
        "kernel",
        "-p",
        "4",
        "--width",
        "8",
        "--height",
        "8",
        "--steps",
        "6",
        "--tensor",
        s(&tensor),
        "-o",
        s(&k),
    ]);
    let q = format!("tensor:{}", s(&tensor));
    let torus = common::shared_trace("boxfish-bgpc/bgpc_meta.yaml");
    for view in tapestry::views::names() {
        // the input and options each view needs
        let (input, extra): (&Path, Vec<&str>) = match view {
            "displacement" | "scatter" => (&k, vec!["--quantity", &q]),
            "isosurface" => (&t, vec!["--param", "cube=2x2x2", "--bins", "20"]),
            "topology" => (&torus, vec!["--start", "2"]),
            _ => (&t, vec![]),
        };
        let mut args = vec![
            "render",
            s(input),
            "--view",
            view,
            "--size",
            "480x300",
            "--colormap",
            "magma",
            "--window",
            "0:2ms",
            "--save-view-state",
            s(&v),
            "-o",
            s(&a),
        ];
        args.extend(extra);
        ok(&args);
        // the file names everything: no other option is needed
        ok(&["render", s(input), "--view-state", s(&v), "-o", s(&b)]);
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{view}: the view state did not reproduce the image"
        );
        let st: serde_json::Value = serde_json::from_slice(&std::fs::read(&v).unwrap()).unwrap();
        assert_eq!(st["view"], view);
        assert_eq!(st["size"], serde_json::json!([480, 300]));
        assert_eq!(st["data"]["colormap"], "magma");
        assert!(st["camera"].is_object());
    }
    // a damaged file is refused with its name and line
    std::fs::write(&v, "{\"view\": \"kiviat\",\n \"bogus\": 1}").unwrap();
    let err = fails(&["render", s(&t), "--view-state", s(&v), "-o", s(&b)]);
    assert!(err.contains("v.json") && err.contains("line 2"), "{err}");
    std::fs::write(&v, "{\"view\": \"nope\"}").unwrap();
    let err = fails(&["render", s(&t), "--view-state", s(&v), "-o", s(&b)]);
    assert!(err.contains("unknown view 'nope'"), "{err}");
}

#[test]
fn gltf_export_reads_back() {
    let d = tempfile::tempdir().unwrap();
    let t = gauss(d.path());
    for (view, ext) in [
        ("kiviat", "glb"),
        ("moments", "gltf"),
        ("moments-3d", "glb"),
    ] {
        let out = d.path().join(format!("{view}.{ext}"));
        let err = ok(&["render", s(&t), "--view", view, "-o", s(&out)]);
        // "wrote PATH (N triangles, M line segments)"
        let nums: Vec<usize> = err
            .split(['(', ' ', ','])
            .filter_map(|w| w.parse().ok())
            .collect();
        let (tris, segs) = (nums[0], nums[1]);
        let g = gltf::Gltf::from_slice(&std::fs::read(&out).unwrap())
            .unwrap_or_else(|e| panic!("{view}: {e}"));
        let (mut got_tris, mut got_segs) = (0, 0);
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        for m in g.meshes() {
            for p in m.primitives() {
                let pos = p.get(&gltf::Semantic::Positions).unwrap();
                assert!(p.get(&gltf::Semantic::Colors(0)).is_some());
                let b = p.bounding_box();
                for c in 0..3 {
                    lo[c] = lo[c].min(b.min[c]);
                    hi[c] = hi[c].max(b.max[c]);
                }
                match p.mode() {
                    gltf::mesh::Mode::Triangles => {
                        assert!(p.get(&gltf::Semantic::Normals).is_some());
                        got_tris += p.indices().unwrap().count() / 3;
                    }
                    gltf::mesh::Mode::Lines => got_segs += pos.count() / 2,
                    other => panic!("{view}: unexpected mode {other:?}"),
                }
            }
        }
        assert_eq!((got_tris, got_segs), (tris, segs), "{view}");
        assert!(lo.iter().chain(&hi).all(|v| v.is_finite()));
        assert!(hi[0] > lo[0]);
        assert!(
            g.nodes().any(|n| n
                .name()
                .is_some_and(|x| x.starts_with("x") && x.contains("time"))
                || n.name().is_some_and(|x| x.starts_with("z: time"))),
            "{view}: no axis node"
        );
        let root = g.nodes().next().unwrap();
        assert!(root.name().unwrap_or("").contains("processors") || view == "kiviat");
        if view == "kiviat" {
            // the ring has radius at most 1; the time axis hangs below at y = -1.2
            assert!(lo[0] >= -1.01 && hi[0] <= 1.01, "{lo:?} {hi:?}");
        }
    }
}

#[test]
fn outputs_never_overwrite_inputs() {
    let d = tempfile::tempdir().unwrap();
    let t = gauss(d.path());
    let pcf = t.with_extension("pcf");
    let row = t.with_extension("row");
    let before: Vec<Vec<u8>> = [&t, &pcf, &row]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    // the trace and its siblings, through every output flag
    let as_png = d.path().join("g.png");
    std::fs::copy(&t, &as_png).unwrap();
    let err = fails(&["render", s(&as_png), "--view", "moments", "-o", s(&as_png)]);
    assert!(err.contains("refusing to overwrite"), "{err}");
    for sib in [&t, &pcf, &row] {
        let err = fails(&[
            "render",
            s(&t),
            "--view",
            "moments",
            "-o",
            "/dev/null/x.glb",
            "--save-view-state",
            s(sib),
        ]);
        assert!(err.contains("refusing to overwrite"), "{err}");
    }
    // a trace whose name looks like an output of analyze
    let as_csv = d.path().join("g2.csv");
    std::fs::copy(&t, &as_csv).unwrap();
    let err = fails(&["analyze", s(&as_csv), "moments", "-o", s(&as_csv)]);
    assert!(err.contains("refusing to overwrite"), "{err}");
    // a tensor named by --quantity
    let k = d.path().join("k.prv");
    let tensor = d.path().join("acc.npy");
    ok(&[
        "synth",
        "kernel",
        "-p",
        "4",
        "--width",
        "8",
        "--height",
        "8",
        "--steps",
        "6",
        "--tensor",
        s(&tensor),
        "-o",
        s(&k),
    ]);
    let tensor_bytes = std::fs::read(&tensor).unwrap();
    let err = fails(&[
        "analyze",
        s(&k),
        "field",
        "--quantity",
        &format!("tensor:{}", s(&tensor)),
        "-o",
        s(&tensor),
    ]);
    assert!(err.contains("refusing to overwrite"), "{err}");
    let err = fails(&[
        "render",
        s(&k),
        "--view",
        "kiviat",
        "--quantity",
        &format!("tensor:{}", s(&tensor)),
        "-o",
        s(&d.path().join("x.glb")),
        "--save-view-state",
        s(&tensor),
    ]);
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(&tensor).unwrap(), tensor_bytes);
    let after: Vec<Vec<u8>> = [&t, &pcf, &row]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(before, after);
    // an unwritable place names the target, not a temporary file
    let err = fails(&[
        "render",
        s(&t),
        "--view",
        "moments",
        "-o",
        "/no/such/dir/x.glb",
    ]);
    assert!(
        err.contains("/no/such/dir/x.glb") && !err.contains("tmp"),
        "{err}"
    );
}

#[test]
fn otf2_archive_files_are_inputs_too() {
    let src = common::shared_trace("ping-pong-otf2");
    if !src.exists() {
        return;
    }
    let files = tapestry::readers::input_files(&src.join("traces.otf2"));
    assert!(files.iter().any(|f| f.ends_with("traces.def")), "{files:?}");
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "evt")),
        "{files:?}"
    );
}

#[test]
fn bad_requests_are_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let t = gauss(d.path());
    let err = fails(&["render", s(&t), "-o", "x.bmp"]);
    assert!(
        err.contains(".png, .jpg, .svg, .glb, .gltf, .mp4 or .webm"),
        "{err}"
    );
    let err = fails(&[
        "render",
        s(&t),
        "--view",
        "kiviat",
        "--param",
        "nope=1",
        "-o",
        "x.glb",
    ]);
    assert!(
        err.contains("no parameter 'nope'") && err.contains("width"),
        "{err}"
    );
    let err = fails(&[
        "render",
        s(&t),
        "--view",
        "kiviat",
        "--param",
        "width=abc",
        "-o",
        "x.glb",
    ]);
    assert!(
        err.contains("width") || err.contains("invalid type"),
        "{err}"
    );
    let err = fails(&["render", s(&t), "--view", "nope"]);
    assert!(err.contains("kiviat"), "{err}");
    let err = fails(&["render", "/no/such/file.prv"]);
    assert!(err.contains("/no/such/file.prv"), "{err}");
    let err = fails(&["view", "/no/such/file.prv"]);
    assert!(err.contains("/no/such/file.prv"), "{err}");
    let err = fails(&["render", s(&t), "--window", "5s:9s", "-o", "x.glb"]);
    assert!(err.contains("after the end"), "{err}");
    let err = fails(&[
        "analyze",
        s(&t),
        "indicator",
        "--marker",
        "Iteration",
        "--period",
        "0",
    ]);
    assert!(err.contains("--period"), "{err}");
    // past the end: clamped with a warning
    let g = d.path().join("clamped.glb");
    let err = ok(&[
        "render",
        s(&t),
        "--view",
        "moments",
        "--window",
        "0:999s",
        "-o",
        s(&g),
    ]);
    assert!(err.contains("warning") && err.contains("clamped"), "{err}");
}

#[test]
fn drawing_errors_are_clear() {
    if !gpu() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let t = gauss(d.path());
    let out = d.path().join("x.png");
    let err = fails(&["render", s(&t), "--size", "16384x16384", "-o", s(&out)]);
    assert!(err.contains("16384x16384") && err.contains("MiB"), "{err}");
    let (code, _, err) = {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_tapestry"))
            .args(["render", s(&t), "-o", s(&out)])
            .env("WGPU_ADAPTER_NAME", "no-such-gpu")
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::new(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_ne!(code, 0);
    assert!(
        err.contains("no-such-gpu") && !err.contains("panicked"),
        "{err}"
    );
    // no noise from probing window systems in headless runs, and JPEG works
    let jpg = d.path().join("x.jpg");
    let err = ok(&[
        "render",
        s(&t),
        "--view",
        "moments",
        "--size",
        "320x200",
        "-o",
        s(&jpg),
    ]);
    assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
    assert_eq!(&std::fs::read(&jpg).unwrap()[..2], &[0xff, 0xd8]);
}

#[test]
fn default_view_falls_back_and_default_output_is_named() {
    let src = common::shared_trace("ping-pong-otf2/traces.otf2");
    if !src.exists() || !gpu() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tapestry"))
        .current_dir(d.path())
        .args(["render", s(&src), "--size", "320x200"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // 2 ranks cannot make a Kiviat tube: the moment display, with a note
    #[cfg(feature = "otf2")]
    {
        assert!(o.status.success(), "{err}");
        assert!(err.contains("note:") && err.contains("moments"), "{err}");
        assert!(d.path().join("traces-moments.png").exists());
    }
    let _ = err;
}

#[test]
fn colours_on_screen_equal_the_legend() {
    use tapestry::render::Renderer;
    use tapestry::scene::colormap::Colormap;
    use tapestry::scene::{Camera, Legend, Mesh, Projection, Scene, axes::Unit};
    let Ok(ctx) = GpuContext::new() else {
        assert!(std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none());
        return;
    };
    let r = Renderer::new(&ctx);
    for name in ["viridis", "magma", "heat"] {
        let cmap = Colormap::named(name).unwrap();
        for v in [0.0f32, 0.3, 0.75] {
            let c = cmap.at(v);
            let mut s = Scene::new("patch", Projection::Orthographic);
            let mut m = Mesh::default();
            m.rect(0.0, 0.0, 1.0, 1.0, 0.0, [c[0], c[1], c[2], 1.0]);
            s.meshes.push(m);
            s.legend = Some(Legend {
                title: "value".into(),
                colormap: name.into(),
                min: 0.0,
                max: 1.0,
                unit: Unit::Fraction,
                note: None,
            });
            let (w, h) = (640, 400);
            let f = r.render(&s, &Camera::fit(&s, w, h), w, h).unwrap();
            if let Some(d) = std::env::var_os("TAPESTRY_DUMP") {
                std::fs::write(
                    std::path::Path::new(&d).join(format!("{name}-{v}.png")),
                    f.png().unwrap(),
                )
                .unwrap();
            }
            let px = |x: u32, y: u32| {
                let i = ((y * w + x) * 4) as usize;
                [f.rgba[i], f.rgba[i + 1], f.rgba[i + 2]]
            };
            let want = c.map(|x| (x * 255.0).round() as i32);
            // the patch's centre (the chart area lies left of the legend)
            let patch = px(200, 200);
            // the legend bar: x = w - 130 .. w - 114, from y = 72 down h
            let bh = (h as f32 * 0.45).clamp(50.0, 360.0);
            // (away from the bar's antialiased ends)
            let vl = v.clamp(0.05, 0.95);
            let y = (72.0 + bh - vl * bh) as u32;
            let legend = px(w - 122, y);
            let want_legend = cmap.at(vl).map(|x| (x * 255.0).round() as i32);
            for k in 0..3 {
                assert!(
                    (patch[k] as i32 - want[k]).abs() <= 2,
                    "{name} {v}: patch {patch:?}, colour map {want:?}"
                );
                assert!(
                    (legend[k] as i32 - want_legend[k]).abs() <= 2,
                    "{name} {vl}: legend {legend:?}, colour map {want_legend:?}"
                );
            }
        }
    }
}

#[test]
fn nested_transparent_shells_look_the_same_from_both_sides() {
    use tapestry::analysis::isosurface::extract;
    use tapestry::render::Renderer;
    use tapestry::scene::{Camera, Mesh, Projection, Scene, Vertex};
    let Ok(ctx) = GpuContext::new() else {
        assert!(std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none());
        return;
    };
    // an outer shell around the origin and an inner one moved toward +x:
    // sorting whole meshes by their centres draws them in the wrong order
    // from one of the two sides
    let n = 48;
    let shell = |cx: f64, r: f64, color: [f32; 4]| {
        let c = (n as f64 - 1.0) / 2.0;
        let v: Vec<f64> = (0..n * n * n)
            .map(|i| {
                let (x, y, z) = ((i % n) as f64, ((i / n) % n) as f64, (i / (n * n)) as f64);
                r - ((x - c - cx).powi(2) + (y - c).powi(2) + (z - c).powi(2)).sqrt()
            })
            .collect();
        let m = extract(&v, [n, n, n], 0.0);
        let s = 2.0 / (n as f32 - 1.0);
        Mesh {
            vertices: m
                .positions
                .iter()
                .zip(&m.normals)
                .map(|(p, nn)| Vertex {
                    position: p.map(|x| (x - c as f32) * s),
                    normal: *nn,
                    color,
                })
                .collect(),
            indices: m.indices,
            lit: false,
        }
    };
    let mut s = Scene::new("", Projection::Perspective);
    s.meshes.push(shell(0.0, 20.0, [0.2, 0.4, 0.9, 0.4]));
    s.meshes.push(shell(6.0, 9.0, [0.9, 0.3, 0.1, 0.4]));
    let r = Renderer::new(&ctx);
    let (w, h) = (240, 240);
    let cam = |x: f32| Camera {
        eye: [x, 0.0, 0.0],
        target: [0.0; 3],
        up: [0.0, 1.0, 0.0],
        fov_y: 2.6,
        ortho: None,
        shift: 0.0,
    };
    let a = r.render(&s, &cam(60.0), w, h).unwrap();
    let b = r.render(&s, &cam(-60.0), w, h).unwrap();
    // seen from the other side the image is mirrored left to right
    let mut differ = 0;
    for y in 0..h {
        for x in 0..w {
            let i = ((y * w + x) * 4) as usize;
            let j = ((y * w + (w - 1 - x)) * 4) as usize;
            if (0..3).any(|k| (a.rgba[i + k] as i32 - b.rgba[j + k] as i32).abs() > 6) {
                differ += 1;
            }
        }
    }
    assert!(
        differ < (w * h / 100) as usize,
        "{differ} pixels differ between the two sides"
    );
    // and the inner shell shows through the outer one at the centre
    let c = ((h / 2 * w + w / 2) * 4) as usize;
    assert!(a.rgba[c] > a.rgba[c + 2] / 2, "{:?}", &a.rgba[c..c + 4]);
    // the playback renderer (one sample per pixel) draws the same picture
    // but for the antialiased edges
    let one = Renderer::with_samples(&ctx, tapestry::render::FRAME_FORMAT, 1);
    let a1 = one.render(&s, &cam(60.0), w, h).unwrap();
    let far = a
        .rgba
        .chunks_exact(4)
        .zip(a1.rgba.chunks_exact(4))
        .filter(|(p, q)| (0..3).any(|k| (p[k] as i32 - q[k] as i32).abs() > 24))
        .count();
    assert!(
        far < (w * h / 50) as usize,
        "{far} pixels differ with one sample"
    );
}
