//! Image snapshots of the views, rendered on whatever adapter is present
//! (references were rendered on lavapipe). A pixel fails when a channel
//! differs by more than 24 (of 255); a snapshot fails when more than 0.5 %
//! of its pixels fail. `TAPESTRY_UPDATE_SNAPSHOTS=1` rewrites the
//! references. Without an adapter the tests say so and pass, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it).

use std::path::PathBuf;

use tapestry::analysis::fields::{Field, FieldLayout};
use tapestry::analysis::moments::MomentAcc;
use tapestry::gpu::GpuContext;
use tapestry::render::{Camera, Frame, Renderer};
use tapestry::scene::{Scene, kiviat, moments};

const W: u32 = 320;
const H: u32 = 240;
const CHANNEL_TOLERANCE: i32 = 24;
const FAILING_FRACTION: f64 = 0.005;

fn context() -> Option<GpuContext> {
    match GpuContext::new() {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var_os("TAPESTRY_REQUIRE_GPU").is_some() {
                panic!("TAPESTRY_REQUIRE_GPU is set but no adapter opened: {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn ring_field() -> Field {
    let (bins, e) = (40, 24);
    Field {
        bins,
        elements: e,
        values: (0..bins * e)
            .map(|i| {
                let (t, k) = (i / e, i % e);
                if t < 4 {
                    0.0
                } else {
                    1.0 + ((t as f64 * 0.4).sin() + 1.0) * (1.0 + (k % 6) as f64)
                }
            })
            .collect(),
        edges: (0..=bins as u64).collect(),
        layout: FieldLayout::Ring,
        quantity: "accesses".into(),
        unit: "accesses".into(),
    }
}

fn kiviat_scene(colormap: &str) -> Scene {
    kiviat::build(
        &ring_field(),
        None,
        &kiviat::KiviatParams {
            width: Some(20),
            colormap: colormap.into(),
            ..Default::default()
        },
    )
    .unwrap()
}

fn moments_scene() -> Scene {
    let p = 48u64;
    let accs: Vec<MomentAcc> = (0..p)
        .map(|r| {
            MomentAcc::interval(0, 1000 - 15 * r).merge(MomentAcc::interval(1200 + 10 * r, 1500))
        })
        .collect();
    let bins = 30usize;
    let field = Field {
        bins,
        elements: p as usize,
        values: (0..bins * p as usize)
            .map(|i| {
                ((i / p as usize) as f64 / bins as f64 + (i % p as usize) as f64 / p as f64) / 2.0
            })
            .collect(),
        edges: (0..=bins as u64).map(|k| k * 50).collect(),
        layout: FieldLayout::Ring,
        quantity: "busy fraction".into(),
        unit: "fraction".into(),
    };
    moments::build(
        &accs,
        Some(&field),
        &moments::MomentParams {
            t0: 0,
            t1: 1500,
            ..Default::default()
        },
    )
    .unwrap()
}

fn render(r: &Renderer, s: &Scene, bg: [f64; 4]) -> Frame {
    r.render(s, &Camera::fit(s), W, H, bg).unwrap()
}

/// The number of pixels that differ by more than the tolerance.
fn failing(a: &Frame, b: &image::RgbaImage) -> usize {
    assert_eq!((a.width, a.height), b.dimensions());
    a.rgba
        .chunks_exact(4)
        .zip(b.as_raw().chunks_exact(4))
        .filter(|(p, q)| {
            p.iter()
                .zip(q.iter())
                .any(|(x, y)| (*x as i32 - *y as i32).abs() > CHANNEL_TOLERANCE)
        })
        .count()
}

fn check(name: &str, frame: &Frame) -> image::RgbaImage {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.png"));
    if std::env::var_os("TAPESTRY_UPDATE_SNAPSHOTS").is_some() || !path.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "missing snapshot {} in CI",
            path.display()
        );
        frame.save_png(&path).unwrap();
    }
    let reference = image::open(&path).unwrap().to_rgba8();
    let bad = failing(frame, &reference);
    let allowed = (FAILING_FRACTION * (W * H) as f64) as usize;
    assert!(
        bad <= allowed,
        "{name}: {bad} pixels differ (at most {allowed} allowed); see {}",
        path.display()
    );
    reference
}

#[test]
fn kiviat_tube_snapshot() {
    let Some(ctx) = context() else { return };
    let r = Renderer::new(&ctx);
    let frame = render(&r, &kiviat_scene("viridis"), [0.02, 0.02, 0.05, 1.0]);
    let reference = check("kiviat", &frame);
    // a changed scene must fail the comparison
    let other = render(&r, &kiviat_scene("magma"), [0.02, 0.02, 0.05, 1.0]);
    assert!(failing(&other, &reference) > (FAILING_FRACTION * (W * H) as f64) as usize);
}

#[test]
fn moment_display_3d_snapshot() {
    let Some(ctx) = context() else { return };
    let r = Renderer::new(&ctx);
    let accs: Vec<MomentAcc> = (0..24u64)
        .map(|p| MomentAcc::interval(20 * p, 500).merge(MomentAcc::interval(900, 1000 + 10 * p)))
        .collect();
    let s = moments::build_3d(
        &accs,
        &moments::MomentParams {
            t0: 0,
            t1: 1300,
            ..Default::default()
        },
    )
    .unwrap();
    let frame = render(&r, &s, [0.02, 0.02, 0.05, 1.0]);
    let reference = check("moments3d", &frame);
    let flat = moments_scene();
    let other = render(&r, &flat, [0.02, 0.02, 0.05, 1.0]);
    assert!(failing(&other, &reference) > (FAILING_FRACTION * (W * H) as f64) as usize);
}

#[test]
fn moment_display_snapshot() {
    let Some(ctx) = context() else { return };
    let r = Renderer::new(&ctx);
    let frame = render(&r, &moments_scene(), [1.0; 4]);
    let reference = check("moments", &frame);
    let mut changed = moments_scene();
    changed.meshes.truncate(1);
    let other = render(&r, &changed, [1.0; 4]);
    assert!(failing(&other, &reference) > (FAILING_FRACTION * (W * H) as f64) as usize);
}
