//! Analysis benchmarks: moments and busy-fraction binning on 10^8 intervals
//! over 65,536 locations, autocorrelation of a 10^7-sample signal, and
//! performance images for P = 1,048,576.
//!
//! Run: `cargo bench --bench analysis` (`TAPESTRY_BENCH_INTERVALS` scales
//! the interval count, default 100000000). A table at the end gives the
//! throughput on one core and on all cores, and the peak memory.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
use common::peak_mib;
use tapestry::analysis::{fields, image, moments, signal};
use tapestry::synth;

const LOCATIONS: u32 = 65_536;

fn time<T>(f: impl FnOnce() -> T) -> f64 {
    let t0 = Instant::now();
    black_box(f());
    t0.elapsed().as_secs_f64()
}

fn main() {
    let total: u64 = std::env::var("TAPESTRY_BENCH_INTERVALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    let per = (total / LOCATIONS as u64).max(1) as u32;
    let t0 = Instant::now();
    let trace = synth::random_intervals(LOCATIONS, per, 7);
    let n = trace.intervals.len() as u64;
    eprintln!(
        "generated {n} intervals over {LOCATIONS} locations in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mask = trace.states.select(&["busy".into()]).expect("busy states");
    let span = trace.meta.span;
    let signal_len = 10_000_000usize;
    let x: Vec<f64> = (0..signal_len)
        .map(|i| ((i * 7919) % 101) as f64 + (i as f64 * 1e-3).sin())
        .collect();
    let p_img = 1usize << 20;
    let values: Vec<f64> = (0..p_img).map(|i| (i % 977) as f64 / 977.0).collect();

    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("analysis");
        g.throughput(Throughput::Elements(n));
        g.bench_function("moments (all locations)", |b| {
            b.iter(|| moments::moments(&trace, &mask, 0, span))
        });
        g.bench_function("busy-fraction field (100 bins)", |b| {
            b.iter(|| fields::busy_fraction(&trace, &mask, 0, span, 100).expect("field"))
        });
        g.throughput(Throughput::Elements(signal_len as u64));
        g.bench_function("autocorrelation (1e7 samples)", |b| {
            b.iter(|| signal::autocorrelation(&x, 1000, true))
        });
        g.throughput(Throughput::Elements(p_img as u64));
        g.bench_function("image (P = 2^20, near-square, colour index)", |b| {
            b.iter(|| {
                let img = image::render(&values, &image::Layout::NearSquare).expect("image");
                image::color_index(&img, (0.0, 255.0), None)
            })
        });
        g.finish();
    }
    c.final_summary();

    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let all = rayon::current_num_threads();
    let rows: Vec<(&str, f64, f64, f64)> = vec![
        (
            "moments",
            n as f64,
            one.install(|| time(|| moments::moments(&trace, &mask, 0, span))),
            time(|| moments::moments(&trace, &mask, 0, span)),
        ),
        (
            "busy-fraction field",
            n as f64,
            one.install(|| time(|| fields::busy_fraction(&trace, &mask, 0, span, 100))),
            time(|| fields::busy_fraction(&trace, &mask, 0, span, 100)),
        ),
        (
            "autocorrelation",
            signal_len as f64,
            time(|| signal::autocorrelation(&x, 1000, true)),
            time(|| signal::autocorrelation(&x, 1000, true)),
        ),
        (
            "image P=2^20",
            p_img as f64,
            time(|| image::render(&values, &image::Layout::NearSquare)),
            time(|| image::render(&values, &image::Layout::NearSquare)),
        ),
    ];
    println!();
    println!("analysis              items        1 core M items/s   {all} cores M items/s");
    for (name, items, t1, tn) in rows {
        println!(
            "{:<20} {:>12.0} {:>19.1} {:>19.1}",
            name,
            items,
            items / 1e6 / t1,
            items / 1e6 / tn
        );
    }
    println!(
        "peak memory {:.0} MiB (trace of {n} intervals: {:.0} MiB)",
        peak_mib(),
        trace.intervals.heap_bytes() as f64 / (1 << 20) as f64
    );
}
