//! Every view of the registry at 1920×1080 on the available adapter
//! (lavapipe in CI), through the same path as `tapestry render`: the
//! view's analyses, its scene build and the frame are timed apart.
//! Inputs (synthetic, generated once into target/bench-data): a hypercube
//! global sum on 1,024 processors (Kiviat tube of the busy fraction over
//! 2,000 bins: 4 M triangles before level of detail), a hypercube
//! broadcast on 65,536 processors (moment displays), a 64 × 64 kernel on
//! 16 processors with its access tensor (displacement, scatter) and a
//! 128³ volume of 4 steps (isosurfaces; also timed as an animation at
//! 1280×720, extraction included); for the views of #10 a 2,000-line ×
//! 1,024-processor line profile (terrain, heat map), a broadcast on 4,096
//! processors (communication matrices), one on 2^20 processors
//! (performance image) and the spectrum of 10^7 samples of w (202 ms of
//! global sums on 16 processors sampled every 20 ns).
//!
//! Run: `cargo bench --bench render`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::synth;
use criterion::Criterion;
use tapestry::gpu::GpuContext;
use tapestry::readers::{self, Loaded, ReadOptions};
use tapestry::render::{Renderer, Targets};
use tapestry::scene::Camera;
use tapestry::views::{BuildCtx, Prepared, ViewState};

const W: u32 = 1920;
const H: u32 = 1080;

fn best_of(n: usize, f: &mut dyn FnMut()) -> f64 {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU adapter: {e}");
            return;
        }
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let gsum = dir.join("render-gsum-1024.prv");
    let bcast = dir.join("render-bcast-65536.prv");
    synth(&gsum, &["gsum", "-p", "1024", "--reps", "64"]);
    synth(&bcast, &["bcast", "-p", "65536", "--reps", "2"]);
    let kernel = dir.join("render-kernel-64.prv");
    let tensor = dir.join("render-kernel-64.npy");
    if !kernel.exists() || !tensor.exists() {
        synth(
            &kernel,
            &[
                "kernel",
                "-p",
                "16",
                "--width",
                "64",
                "--height",
                "64",
                "--steps",
                "40",
                "--tensor",
                tensor.to_str().expect("a path"),
            ],
        );
    }
    // a 128³ volume of 4 steps: a gyroid-like field that drifts
    let volume = dir.join("render-volume-128.npy");
    if !volume.exists() {
        let n = 128usize;
        let v = tapestry::synth::volume::gyroid([n, n, n], 4, 0.2);
        tapestry::export::npy::write_array(&volume, &[4, n as u64, n as u64, n as u64], &v)
            .expect("volume");
    }
    // #10's views: a 2,000-line × 1,024-processor line profile, a
    // broadcast on 4,096 processors (communication matrix) and on 2^20
    // processors (performance image)
    let profile = dir.join("render-profile-2000x1024.csv");
    synth(&profile, &["profile", "--lines", "2000", "-p", "1024"]);
    let bcast4k = dir.join("render-bcast-4096.prv");
    synth(&bcast4k, &["bcast", "-p", "4096", "--reps", "8"]);
    let bcast1m = dir.join("render-bcast-1048576.prv");
    synth(&bcast1m, &["bcast", "-p", "1048576", "--reps", "1"]);
    // 202 ms of global sums: 10^7 samples of w at 20 ns
    let gsum_long = dir.join("render-gsum-16-long.prv");
    synth(
        &gsum_long,
        &["gsum", "-p", "16", "--reps", "400", "--work", "500000"],
    );
    let load = |p: &Path| -> Loaded { readers::load(p, &ReadOptions::default()).expect("read") };
    let inputs = [
        (load(&gsum), "1,024 processors"),
        (load(&bcast), "65,536 processors"),
        (load(&kernel), "64×64 grid, 16 procs"),
        (load(&volume), "128³ volume"),
        (load(&profile), "2,000 × 1,024 profile"),
        (load(&bcast4k), "4,096 tasks"),
        (load(&bcast1m), "2^20 processors"),
        (load(&gsum_long), "10^7 samples of w"),
        (
            load(
                &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../shared/traces/boxfish-bgpc/bgpc_meta.yaml"),
            ),
            "BG/P torus, 512 nodes",
        ),
    ];
    // the spectrum of 10^7 samples of w
    let span = match &inputs[7].0 {
        Loaded::Trace(t) => t.meta.span,
        _ => 1,
    };
    let period = (span / 10_000_000).max(1);
    let cases: Vec<(&str, usize, ViewState)> = tapestry::views::names()
        .into_iter()
        .map(|v| {
            let mut st = ViewState::new(v);
            let which = match v {
                "kiviat" => {
                    st.data.bins = 2000;
                    st.params = serde_json::json!({"width": 0});
                    0
                }
                "displacement" | "scatter" => {
                    st.data.quantity = format!("tensor:{}", tensor.display());
                    st.step = 20;
                    2
                }
                "isosurface" => 3,
                "profile-terrain" | "profile-heatmap" => 4,
                "comm-density" | "comm-perspective" | "comm-contour" => 5,
                "image" => {
                    st.params = serde_json::json!({"steps": 10});
                    st.step = 5;
                    6
                }
                "spectrum" => {
                    st.params = serde_json::json!({"period": period});
                    7
                }
                "signal" | "correlation" | "histogram" | "markov" => 0,
                "topology" => {
                    st.step = 3;
                    8
                }
                // a 64 × 64 mesh of the 4,096 tasks, cursor at the middle
                "mesh" => {
                    st.step = 50;
                    5
                }
                _ => 1,
            };
            (v, which, st)
        })
        .collect();
    let r = Renderer::new(&ctx);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .configure_from_args();
    let mut rows = Vec::new();
    for (view, which, st) in &cases {
        let input = &inputs[*which].0;
        let t = Instant::now();
        let prep = Prepared::new(input, st).expect("analyses");
        let analyses = t.elapsed().as_secs_f64();
        let ctx_b = BuildCtx {
            step: st.step,
            width: W,
            height: H,
            triangle_budget: None,
            cursor: None,
            selected: None,
        };
        let mut scene = None;
        let build = best_of(3, &mut || scene = Some(prep.build(ctx_b).expect("scene")));
        let scene = scene.expect("built");
        let cam = Camera::fit(&scene, W, H);
        {
            let mut g = c.benchmark_group("frame 1920x1080");
            g.bench_function(*view, |b| {
                b.iter(|| black_box(r.render(&scene, &cam, W, H).expect("frame")))
            });
            g.finish();
        }
        let frame = best_of(3, &mut || {
            black_box(r.render(&scene, &cam, W, H).expect("frame"));
        });
        rows.push((
            *view,
            inputs[*which].1,
            scene.triangles(),
            analyses,
            build,
            frame,
        ));
    }
    c.final_summary();
    // the isosurface animation at 1280×720, per step: extraction of 5
    // surfaces of a 128³ step, scene and frame; at full detail (4× MSAA,
    // every triangle) and as the window plays it on this adapter (the
    // playback triangle budget; one sample per pixel on a software adapter),
    // drawing into targets kept between frames as the window does
    let iso = cases
        .iter()
        .find(|(v, _, _)| *v == "isosurface")
        .map(|(_, w, st)| Prepared::new(&inputs[*w].0, st).expect("analyses"));
    let play = |prep: &Prepared, budget: Option<usize>, samples: u32| {
        let (w, h) = (1280, 720);
        let r = Renderer::with_samples(&ctx, tapestry::render::FRAME_FORMAT, samples);
        let targets = Targets::with_samples(&ctx, r.format(), w, h, samples);
        let frame = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("frame"),
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: r.format(),
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        });
        let view = frame.create_view(&Default::default());
        let t = Instant::now();
        let mut tris = 0;
        for step in 0..4 {
            let scene = prep
                .build(BuildCtx {
                    step,
                    width: w,
                    height: h,
                    triangle_budget: budget,
                    cursor: None,
                    selected: None,
                })
                .expect("scene");
            tris = scene.triangles();
            let cam = Camera::fit(&scene, w, h);
            let prepared = r.prepare(&scene);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            r.encode(
                &mut enc,
                &targets,
                &view,
                &prepared,
                &cam,
                w as f32 / h as f32,
                scene.background,
                None,
            );
            ctx.queue.submit([enc.finish()]);
            ctx.device
                .poll(wgpu::PollType::wait_indefinitely())
                .expect("the frame");
        }
        (4.0 / t.elapsed().as_secs_f64(), tris)
    };
    let software = ctx.is_software();
    let fps = iso.map(|prep| {
        (
            play(&prep, None, 4),
            play(
                &prep,
                Some(tapestry::views::playback_budget(software)),
                if software { 1 } else { 4 },
            ),
        )
    });
    println!();
    println!("adapter: {}", ctx.describe());
    println!(
        "{:<12} {:<20} {:>10} {:>12} {:>12} {:>12}",
        "view", "input", "triangles", "analyses", "scene", "frame 1080p"
    );
    if let Some(((fps, tris), (pfps, ptris))) = fps {
        println!(
            "isosurface animation, 128³, 5 isovalues, 1280x720, extraction included: full detail {fps:.1} frames/s ({tris} triangles, 4x MSAA); playback {pfps:.1} frames/s ({ptris} triangles{})",
            if software { ", 1 sample" } else { ", 4x MSAA" }
        );
    }
    for (v, i, t, a, b, f) in rows {
        println!(
            "{v:<12} {i:<20} {t:>10} {:>9.1} ms {:>9.1} ms {:>9.1} ms",
            a * 1e3,
            b * 1e3,
            f * 1e3
        );
    }
}
