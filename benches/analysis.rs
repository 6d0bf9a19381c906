//! Analysis benchmarks: moments, busy-fraction binning and the function ×
//! location profile on 10^8 intervals over 65,536 locations,
//! autocorrelation of a 10^7-sample signal, performance images for P =
//! 1,048,576, the communication matrix of 10^7 messages among 4,096 tasks
//! (16 sliding windows) and marching-squares contours of a 1,024² matrix.
//!
//! Run: `cargo bench --bench analysis` (`TAPESTRY_BENCH_INTERVALS` scales
//! the interval count, default 100000000). A table at the end gives the
//! throughput on one core and on all cores, and the peak memory.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
use common::peak_mib;
use tapestry::analysis::{comm, fields, image, matrices, moments, signal};
use tapestry::model::{BuildOptions, Format, LocationKind, TimeUnit, TraceBuilder};
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

    // 10^7 messages among 4,096 tasks: a 2D halo exchange plus random pairs
    let t0 = Instant::now();
    let tasks = 4096u32;
    let mut b = TraceBuilder::new(Format::Synthetic, "msgs", TimeUnit::nanoseconds(), false);
    for l in 0..tasks {
        b.locations
            .add(format!("p{l}"), LocationKind::Thread, None, l as i64);
    }
    let msgs = 10_000_000u64;
    let mut seed = 0x9e37_79b9u64;
    for i in 0..msgs {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let src = (i % tasks as u64) as u32;
        let dst = match i % 5 {
            0 => (src + 1) % tasks,
            1 => (src + tasks - 1) % tasks,
            2 => (src + 64) % tasks,
            3 => (src + tasks - 64) % tasks,
            _ => (seed % tasks as u64) as u32,
        };
        b.message(src, dst, i * 10, i * 10 + 5, 1024 + (seed % 4096), 0);
    }
    let mtrace = b.finish(BuildOptions::default()).expect("messages");
    eprintln!(
        "generated {msgs} messages among {tasks} tasks in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mspan = mtrace.meta.span + 1;
    let grid: Vec<f64> = (0..1024 * 1024)
        .map(|i| {
            let (r, c) = ((i / 1024) as f64, (i % 1024) as f64);
            (r / 37.0).sin() * (c / 53.0).cos() * 100.0
        })
        .collect();
    let levels = [-60.0, -20.0, 0.0, 20.0, 60.0];

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
        g.bench_function("trace profile (function x location)", |b| {
            b.iter(|| matrices::trace_profile(&trace))
        });
        g.throughput(Throughput::Elements(msgs));
        g.bench_function("comm matrix (1e7 messages, 4096 tasks, 16 windows)", |b| {
            b.iter(|| {
                comm::comm_matrices(&mtrace, 0, mspan, comm::Level::Thread, 16).expect("matrix")
            })
        });
        g.throughput(Throughput::Elements(1 << 20));
        g.bench_function("contours (1024^2 cells, 5 levels)", |b| {
            b.iter(|| comm::contours(&grid, 1024, 1024, &levels))
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
            "trace profile",
            n as f64,
            one.install(|| time(|| matrices::trace_profile(&trace))),
            time(|| matrices::trace_profile(&trace)),
        ),
        (
            "comm matrix",
            msgs as f64,
            one.install(|| {
                time(|| comm::comm_matrices(&mtrace, 0, mspan, comm::Level::Thread, 16))
            }),
            time(|| comm::comm_matrices(&mtrace, 0, mspan, comm::Level::Thread, 16)),
        ),
        (
            "contours 1024^2",
            (1u64 << 20) as f64,
            time(|| comm::contours(&grid, 1024, 1024, &levels)),
            time(|| comm::contours(&grid, 1024, 1024, &levels)),
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
