//! Image snapshots of every view of the registry at two sizes (640×360
//! and 1920×1080), rendered through `tapestry render` itself on synthetic
//! traces (deterministic per seed) on whatever adapter is present
//! (references were rendered on lavapipe). A pixel fails when a channel
//! differs by more than 24 (of 255); a snapshot fails when more than 0.5 %
//! of its pixels fail, and then writes `NAME-actual.png` and a difference
//! image `NAME-diff.png` beside the reference. `TAPESTRY_UPDATE_SNAPSHOTS=1`
//! rewrites the references. Without an adapter the tests say so and pass,
//! unless `TAPESTRY_REQUIRE_GPU` is set (CI sets it).

mod common;

use std::path::{Path, PathBuf};

use tapestry::gpu::GpuContext;

const CHANNEL_TOLERANCE: i32 = 24;
const FAILING_FRACTION: f64 = 0.005;
const SIZES: [(u32, u32); 2] = [(640, 360), (1920, 1080)];

fn gpu() -> bool {
    match GpuContext::new() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var_os("TAPESTRY_REQUIRE_GPU").is_some() {
                panic!("TAPESTRY_REQUIRE_GPU is set but no adapter opened: {e}");
            }
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn run(args: &[&str]) {
    let (code, _, err) = common::tapestry(args);
    assert_eq!(code, 0, "tapestry {}: {err}", args.join(" "));
}

/// The synthetic inputs: Gaussian elimination (BLOCK,*) on 16 processors
/// and a data-parallel kernel with its access tensor.
fn inputs(d: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let gauss = d.join("gauss.prv");
    run(&[
        "synth",
        "gauss",
        "-p",
        "16",
        "--n",
        "256",
        "--dist",
        "block",
        "-o",
        gauss.to_str().unwrap(),
    ]);
    let kernel = d.join("kernel.prv");
    let tensor = d.join("access.npy");
    run(&[
        "synth",
        "kernel",
        "-p",
        "8",
        "--width",
        "24",
        "--height",
        "24",
        "--steps",
        "30",
        "--tensor",
        tensor.to_str().unwrap(),
        "-o",
        kernel.to_str().unwrap(),
    ]);
    (gauss, kernel, tensor)
}

fn failing(a: &image::RgbaImage, b: &image::RgbaImage) -> usize {
    a.as_raw()
        .chunks_exact(4)
        .zip(b.as_raw().chunks_exact(4))
        .filter(|(p, q)| {
            p.iter()
                .zip(q.iter())
                .any(|(x, y)| (*x as i32 - *y as i32).abs() > CHANNEL_TOLERANCE)
        })
        .count()
}

fn allowed(img: &image::RgbaImage) -> usize {
    (FAILING_FRACTION * (img.width() * img.height()) as f64) as usize
}

fn reference(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.png"))
}

/// Compares `png` with the reference `name`; on failure writes the actual
/// image and a difference image (failing pixels red, others dimmed).
fn check(name: &str, png: &Path) -> image::RgbaImage {
    let path = reference(name);
    let actual = image::open(png).unwrap().to_rgba8();
    if std::env::var_os("TAPESTRY_UPDATE_SNAPSHOTS").is_some() || !path.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "missing snapshot {} in CI",
            path.display()
        );
        actual.save(&path).unwrap();
    }
    let reference = image::open(&path).unwrap().to_rgba8();
    assert_eq!(actual.dimensions(), reference.dimensions(), "{name}");
    let bad = failing(&actual, &reference);
    if bad > allowed(&actual) {
        let mut diff = image::RgbaImage::new(actual.width(), actual.height());
        for (x, y, p) in diff.enumerate_pixels_mut() {
            let (a, b) = (actual.get_pixel(x, y), reference.get_pixel(x, y));
            let off =
                a.0.iter()
                    .zip(b.0.iter())
                    .any(|(u, v)| (*u as i32 - *v as i32).abs() > CHANNEL_TOLERANCE);
            *p = if off {
                image::Rgba([255, 0, 0, 255])
            } else {
                image::Rgba([a[0] / 3, a[1] / 3, a[2] / 3, 255])
            };
        }
        let dir = path.parent().unwrap();
        diff.save(dir.join(format!("{name}-diff.png"))).unwrap();
        actual.save(dir.join(format!("{name}-actual.png"))).unwrap();
        panic!(
            "{name}: {bad} pixels differ (at most {} allowed); see {name}-diff.png beside {}",
            allowed(&actual),
            path.display()
        );
    }
    reference
}

/// The view's arguments on the synthetic inputs.
fn view_args(view: &str, gauss: &Path, kernel: &Path, tensor: &Path) -> Vec<String> {
    match view {
        "displacement" | "scatter" => vec![
            kernel.display().to_string(),
            "--view".into(),
            view.into(),
            "--quantity".into(),
            format!("tensor:{}", tensor.display()),
            "--start".into(),
            "10".into(),
        ],
        "kiviat" => vec![
            kernel.display().to_string(),
            "--view".into(),
            "kiviat".into(),
            "--quantity".into(),
            format!("tensor:{}", tensor.display()),
            "--kinds".into(),
            "remote".into(),
            "--param".into(),
            "width=12".into(),
        ],
        "profile-terrain" | "profile-heatmap" => {
            let prof = gauss.with_file_name("profile.csv");
            run(&[
                "synth",
                "profile",
                "--lines",
                "600",
                "-p",
                "32",
                "-o",
                prof.to_str().unwrap(),
            ]);
            vec![
                prof.display().to_string(),
                "--view".into(),
                view.into(),
                "--param".into(),
                "cursor=[200,20]".into(),
            ]
        }
        "image" => vec![
            gauss.display().to_string(),
            "--view".into(),
            "image".into(),
            "--param".into(),
            "metric=busy-fraction".into(),
            "--start".into(),
            "50".into(),
        ],
        "topology" => vec![
            common::shared_trace("boxfish-bgpc/bgpc_meta.yaml")
                .display()
                .to_string(),
            "--view".into(),
            "topology".into(),
            "--start".into(),
            "3".into(),
        ],
        "mesh" => vec![
            gauss.display().to_string(),
            "--view".into(),
            "mesh".into(),
            "--param".into(),
            "torus=true".into(),
            "--param".into(),
            "track=[0,3]".into(),
            "--start".into(),
            "40".into(),
        ],
        "isosurface" => vec![
            common::shared_trace("boxfish-bgpc/bgpc_meta.yaml")
                .display()
                .to_string(),
            "--quantity".into(),
            "netWrites".into(),
            "--start".into(),
            "3".into(),
        ],
        other => vec![gauss.display().to_string(), "--view".into(), other.into()],
    }
}

#[test]
fn every_view_at_two_sizes() {
    if !gpu() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (gauss, kernel, tensor) = inputs(d.path());
    let views = tapestry::views::names();
    for view in &views {
        for (w, h) in SIZES {
            let name = format!("{view}-{w}x{h}");
            let out = d.path().join(format!("{name}.png"));
            let mut args = vec!["render".to_string()];
            args.extend(view_args(view, &gauss, &kernel, &tensor));
            args.extend([
                "--size".into(),
                format!("{w}x{h}"),
                "-o".into(),
                out.display().to_string(),
            ]);
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&a);
            check(&name, &out);
        }
    }
    // a changed scene must fail the comparison
    let reference = image::open(reference("kiviat-640x360")).unwrap().to_rgba8();
    let out = d.path().join("magma.png");
    let mut args = vec!["render".to_string()];
    args.extend(view_args("kiviat", &gauss, &kernel, &tensor));
    args.extend(["--colormap", "magma", "--size", "640x360", "-o"].map(String::from));
    args.push(out.display().to_string());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&a);
    let other = image::open(&out).unwrap().to_rgba8();
    assert!(failing(&other, &reference) > allowed(&reference));
}

/// `render --gpu`: the Kiviat tube of the busy field and the moment
/// display made on the GPU (the field never read back) draw the images the
/// CPU path draws, on a real trace at both sizes, on an animation frame and
/// up to a time cursor; what cannot stay on the GPU says so.
#[test]
fn views_on_the_gpu_draw_the_cpu_images() {
    if !gpu() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let qsort = common::shared_trace("paraver-qsort/qsort_beo3.prv");
    let qsort = qsort.to_str().unwrap();
    // the tube at two frames; the moment display whole and up to a cursor
    let cases: [(&str, [&str; 2]); 4] = [
        ("kiviat", ["--start", "0"]),
        ("kiviat", ["--start", "20"]),
        ("moments", ["--select", "2"]),
        ("moments", ["--cursor", "90ms"]),
    ];
    for (w, h) in SIZES {
        for (k, (view, extra)) in cases.iter().enumerate() {
            let mut img = Vec::new();
            for gpu in [false, true] {
                let out = d.path().join(format!("{view}-{w}-{k}-{gpu}.png"));
                let size = format!("{w}x{h}");
                let mut args = vec![
                    "render",
                    qsort,
                    "--view",
                    view,
                    "--bins",
                    "60",
                    extra[0],
                    extra[1],
                    "--size",
                    &size,
                    "-o",
                    out.to_str().unwrap(),
                ];
                if gpu {
                    args.push("--gpu");
                }
                let (code, _, err) = common::tapestry(&args);
                assert_eq!(code, 0, "{}: {err}", args.join(" "));
                assert_eq!(
                    gpu,
                    err.contains("uploaded"),
                    "the trace goes to the GPU only with --gpu: {err}"
                );
                assert!(!err.contains("computed on the CPU"), "{err}");
                img.push(image::open(&out).unwrap().to_rgba8());
            }
            let bad = failing(&img[1], &img[0]);
            assert!(
                bad <= allowed(&img[0]),
                "{view} at {w}x{h}, {extra:?}: {bad} pixels differ"
            );
        }
    }
    // another view is computed on the CPU, and says so
    let out = d.path().join("m.png");
    let (code, _, err) = common::tapestry(&[
        "render",
        qsort,
        "--view",
        "moments-3d",
        "--gpu",
        "--size",
        "640x360",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the moments-3d view was computed on the CPU"),
        "{err}"
    );
    // a tube that stays on the GPU is not exported to glTF
    let glb = d.path().join("k.glb");
    let (code, _, err) = common::tapestry(&[
        "render",
        qsort,
        "--view",
        "kiviat",
        "--gpu",
        "-o",
        glb.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("without --gpu"), "{err}");
    assert!(!glb.exists());
}
