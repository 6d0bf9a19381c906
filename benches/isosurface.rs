//! Marching cubes, CPU path, on the 256³ volume
//! sin(2x)cos(2y) + sin(2y)cos(2z) + sin(2z)cos(2x) over [−π, π]³ at
//! isovalue 0.3 (the volume of issue #9, for comparison with VTK's Flying
//! Edges): voxels/s on one core and on all cores, triangles, peak memory.
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
    let h = 2.0 * std::f64::consts::PI / (n - 1) as f64;
    let c = |i: usize| -std::f64::consts::PI + i as f64 * h;
    let values: Vec<f64> = (0..n * n * n)
        .map(|i| {
            let (x, y, z) = (c(i % n), c((i / n) % n), c(i / (n * n)));
            (2.0 * x).sin() * (2.0 * y).cos()
                + (2.0 * y).sin() * (2.0 * z).cos()
                + (2.0 * z).sin() * (2.0 * x).cos()
        })
        .collect();
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
    println!(
        "peak memory of the process: {:.0} MiB (the volume: {} MiB)",
        common::peak_mib(),
        (voxels * 8) >> 20
    );
}
