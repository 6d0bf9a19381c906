//! Headless frame time at 1920×1080 on the available adapter (lavapipe in
//! CI): a Kiviat tube of 1,024 elements × 10,000 bins (level of detail keeps
//! it within 2 M triangles) and a moment display of 65,536 processors with
//! its Gantt chart. Scene building and rendering are timed apart.
//!
//! Run: `cargo bench --bench render`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tapestry::analysis::fields::{Field, FieldLayout};
use tapestry::analysis::moments::MomentAcc;
use tapestry::gpu::GpuContext;
use tapestry::render::{Camera, Renderer};
use tapestry::scene::{kiviat, moments};

fn main() {
    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU adapter: {e}");
            return;
        }
    };
    let (bins, e) = (10_000usize, 1024usize);
    let field = Field {
        bins,
        elements: e,
        values: (0..bins * e)
            .map(|i| (((i / e) * 7 + (i % e) * 13) % 97) as f64)
            .collect(),
        edges: (0..=bins as u64).collect(),
        layout: FieldLayout::Ring,
        quantity: "accesses".into(),
        unit: "accesses".into(),
    };
    let p = 65_536usize;
    let accs: Vec<MomentAcc> = (0..p as u64)
        .map(|r| {
            MomentAcc::interval(r % 1000, 5000 + r % 3000)
                .merge(MomentAcc::interval(7000, 8000 + r % 500))
        })
        .collect();
    let gbins = 200usize;
    let gantt = Field {
        bins: gbins,
        elements: p,
        values: (0..gbins * p).map(|i| ((i % 101) as f64) / 100.0).collect(),
        edges: (0..=gbins as u64).map(|k| k * 50).collect(),
        layout: FieldLayout::Ring,
        quantity: "busy fraction".into(),
        unit: "fraction".into(),
    };
    let kp = kiviat::KiviatParams {
        width: None,
        trim_leading_empty: false,
        ..Default::default()
    };
    let mp = moments::MomentParams {
        t0: 0,
        t1: 10_000,
        ..Default::default()
    };
    let t0 = Instant::now();
    let ks = kiviat::build(&field, None, &kp).expect("kiviat");
    let kb = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let ms = moments::build(&accs, Some(&gantt), &mp).expect("moments");
    let mb = t0.elapsed().as_secs_f64();
    let r = Renderer::new(&ctx);
    let (kc, mc) = (Camera::fit(&ks), Camera::fit(&ms));
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("frame 1920x1080");
        g.bench_function("kiviat 1024 x 10000", |b| {
            b.iter(|| {
                black_box(
                    r.render(&ks, &kc, 1920, 1080, [0.0, 0.0, 0.0, 1.0])
                        .expect("frame"),
                )
            })
        });
        g.bench_function("moments 65536", |b| {
            b.iter(|| black_box(r.render(&ms, &mc, 1920, 1080, [1.0; 4]).expect("frame")))
        });
        g.finish();
    }
    c.final_summary();
    let time = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let kr = time(&|| {
        black_box(
            r.render(&ks, &kc, 1920, 1080, [0.0, 0.0, 0.0, 1.0])
                .expect("frame"),
        );
    });
    let mr = time(&|| {
        black_box(r.render(&ms, &mc, 1920, 1080, [1.0; 4]).expect("frame"));
    });
    println!();
    println!("adapter: {}", ctx.describe());
    println!("view                     triangles   scene build   frame 1920x1080");
    println!(
        "kiviat 1024 x 10000   {:>12}   {:>8.1} ms   {:>8.1} ms",
        ks.triangles(),
        kb * 1e3,
        kr * 1e3
    );
    println!(
        "moments 65536         {:>12}   {:>8.1} ms   {:>8.1} ms",
        ms.triangles(),
        mb * 1e3,
        mr * 1e3
    );
}
