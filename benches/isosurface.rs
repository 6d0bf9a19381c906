//! Marching cubes, CPU path, on the 256³ volume
//! sin(2x)cos(2y) + sin(2y)cos(2z) + sin(2z)cos(2x) over [−π, π]³ at
//! isovalue 0.3 (the volume of issue #9, for comparison with VTK's Flying
//! Edges): voxels/s on one core and on all cores, triangles, peak memory.
//!
//! The GPU path (`gpu::kernels::isosurface`) on whatever adapter opens
//! (lavapipe here): wall time per extraction including the read-back, and
//! the kernels' own time from GPU timestamps where offered.
//!
//! Run: `cargo bench --bench isosurface`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tapestry::analysis::isosurface::extract;

fn main() {
    let n = 256usize;
    let values = tapestry::synth::volume::gyroid([n, n, n], 1, 0.0);
    let dims = [n, n, n];
    let voxels = (n * n * n) as u64;
    let threads = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("marching cubes 256^3");
        g.throughput(Throughput::Elements(voxels));
        g.bench_function("1 core", |b| {
            b.iter(|| one.install(|| black_box(extract(&values, dims, 0.3))))
        });
        g.bench_function(format!("{threads} cores"), |b| {
            b.iter(|| black_box(extract(&values, dims, 0.3)))
        });
        g.finish();
    }
    c.final_summary();
    let best = |f: &dyn Fn() -> usize| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                let k = f();
                (t.elapsed().as_secs_f64(), k)
            })
            .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (t1, tris) = best(&|| one.install(|| extract(&values, dims, 0.3).triangles()));
    let (tn, _) = best(&|| extract(&values, dims, 0.3).triangles());
    println!();
    println!("marching cubes, 256^3 volume, isovalue 0.3: {tris} triangles");
    println!(
        "1 core: {:.1} ms, {:.0} M voxels/s; {threads} cores: {:.1} ms, {:.0} M voxels/s",
        t1 * 1e3,
        voxels as f64 / t1 / 1e6,
        tn * 1e3,
        voxels as f64 / tn / 1e6
    );
    match tapestry::gpu::GpuContext::new() {
        Ok(ctx) => {
            let mut x = tapestry::gpu::kernels::isosurface::Extractor::new(&ctx, dims)
                .expect("the GPU extractor");
            x.set_field(&values).expect("the field");
            let mut kernel = f64::INFINITY;
            let mut wall = f64::INFINITY;
            let mut tris = 0;
            for _ in 0..3 {
                let t = Instant::now();
                let m = x.extract(0.3).expect("GPU extraction");
                wall = wall.min(t.elapsed().as_secs_f64());
                tris = m.triangles();
                if let Some(ns) = x.last_kernel_ns() {
                    kernel = kernel.min(ns * 1e-9);
                }
            }
            println!(
                "GPU ({}): {tris} triangles; {:.1} ms, {:.0} M voxels/s including the read-back{}",
                ctx.describe(),
                wall * 1e3,
                voxels as f64 / wall / 1e6,
                if kernel.is_finite() {
                    format!(
                        "; kernels {:.1} ms, {:.0} M voxels/s (GPU timestamps)",
                        kernel * 1e3,
                        voxels as f64 / kernel / 1e6
                    )
                } else {
                    String::new()
                }
            );
        }
        Err(e) => println!("GPU path not measured: {e}"),
    }
    println!(
        "peak memory of the process: {:.0} MiB (the volume: {} MiB)",
        common::peak_mib(),
        (voxels * 8) >> 20
    );
}
