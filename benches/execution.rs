//! Execution control, cursor-following views and picking (issue #11), on
//! inputs big enough to matter: a broadcast on 65,536 processors and a
//! global sum on 1,024 processors (synthetic, generated once into
//! target/bench-data).
//!
//! - the timeline behind execution control: built once per trace
//!   (records/s), then one frame (advance by events or ticks and the
//!   statistics up to the cursor) per call;
//! - moments up to a cursor at 65,536 processors (what a frame of the
//!   moment display recomputes while the cursor plays);
//! - the mesh view of 4,096 nodes: its analyses (routes of every message)
//!   and its scene at a cursor;
//! - hover: `pick_at` over every pick of the 65,536-processor moment
//!   display at 1920×1080 (what one mouse move costs).
//!
//! Run: `cargo bench --bench execution` (RAYON_NUM_THREADS=1 for one core).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::synth;
use criterion::{Criterion, Throughput};
use tapestry::analysis::cursor::{Step, Timeline};
use tapestry::readers::{self, Loaded, ReadOptions};
use tapestry::scene::Camera;
use tapestry::scene::pick;
use tapestry::views::{Prepared, ViewState};

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let bcast = dir.join("render-bcast-65536.prv");
    synth(&bcast, &["bcast", "-p", "65536", "--reps", "2"]);
    let bcast4k = dir.join("render-bcast-4096.prv");
    synth(&bcast4k, &["bcast", "-p", "4096", "--reps", "8"]);
    let load = |p: &Path| readers::load(p, &ReadOptions::default()).expect("read");
    let big = load(&bcast);
    let mid = load(&bcast4k);
    let Loaded::Trace(t) = &big else {
        panic!("a trace")
    };
    let records = t.intervals.len() as u64 + 2 * t.messages.len() as u64 + t.events.len() as u64;
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("execution control, 65,536 processors");
        g.throughput(Throughput::Elements(records));
        g.bench_function("timeline build (records)", |b| {
            b.iter(|| black_box(Timeline::new(t)))
        });
        g.finish();
    }
    let tl = Timeline::new(t);
    let span = t.meta.span;
    {
        let mut g = c.benchmark_group("execution control, 65,536 processors");
        let step = Step {
            events: 1000,
            ticks: span / 100,
            backward: false,
        };
        let mut at = 0;
        g.bench_function("one frame: advance + statistics", |b| {
            b.iter(|| {
                at = tl.advance(at, step, (0, span), true).expect("a step");
                black_box(tl.stats(at))
            })
        });
        g.finish();
    }
    let moments = Prepared::new(&big, &ViewState::new("moments")).expect("analyses");
    let scene = moments
        .build(
            moments
                .ctx(0, Some(span / 3), (1920, 1080), Some(7))
                .expect("ctx"),
        )
        .expect("scene");
    {
        let mut g = c.benchmark_group("cursor views");
        g.throughput(Throughput::Elements(65_536));
        g.bench_function("moments up to the cursor, 65,536 processors (scene)", |b| {
            let mut k = 1u64;
            b.iter(|| {
                k = k % 9 + 1;
                let ctx = moments
                    .ctx(0, Some(span * k / 10), (1920, 1080), None)
                    .expect("ctx");
                black_box(moments.build(ctx).expect("scene"))
            })
        });
        g.finish();
    }
    let mut mesh_state = ViewState::new("mesh");
    mesh_state.data.bins = 100;
    let t0 = std::time::Instant::now();
    let mesh = Prepared::new(&mid, &mesh_state).expect("analyses");
    let mesh_analyses = t0.elapsed().as_secs_f64();
    {
        let mut g = c.benchmark_group("cursor views");
        g.bench_function("mesh 64x64 of 4,096 tasks (analyses)", |b| {
            b.iter(|| black_box(Prepared::new(&mid, &mesh_state).expect("analyses")))
        });
        let mspan = match &mid {
            Loaded::Trace(t) => t.meta.span,
            _ => 1,
        };
        g.bench_function("mesh 64x64 of 4,096 tasks (scene at a cursor)", |b| {
            let mut k = 0u64;
            b.iter(|| {
                k = (k + 7) % 100;
                let ctx = mesh
                    .ctx(0, Some(mspan * k / 100), (1920, 1080), Some(77))
                    .expect("ctx");
                black_box(mesh.build(ctx).expect("scene"))
            })
        });
        g.finish();
    }
    let cam = Camera::fit(&scene, 1920, 1080);
    {
        let mut g = c.benchmark_group("hover");
        g.throughput(Throughput::Elements(scene.picks.len() as u64));
        let mut y = 0.0f32;
        g.bench_function("pick_at, moment display of 65,536 processors", |b| {
            b.iter(|| {
                y = (y + 37.0) % 1000.0;
                black_box(
                    pick::pick_at(&scene, &cam, (1920.0, 1080.0), [900.0, 40.0 + y])
                        .map(|p| p.processor),
                )
            })
        });
        g.finish();
    }
    c.final_summary();
    println!(
        "records {records}; moment display picks {}; mesh analyses once {:.1} ms",
        scene.picks.len(),
        mesh_analyses * 1e3
    );
}
