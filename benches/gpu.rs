//! GPU kernels against the CPU path: moments and the busy-fraction field at
//! P = 65,536 and P = 1,048,576 locations (about 16.8 M intervals each),
//! end to end (upload, kernels, read-back) and the kernels alone (GPU
//! timestamps, where the adapter offers them).
//! On lavapipe (no GPU) the "GPU" runs on the CPU cores through LLVM.
//! Last, a sweep over input sizes (2^14 to 2^24 intervals, 16 per
//! location) times both paths end to end and prints the crossover: the
//! smallest size from which the GPU is faster, the value to give
//! `TAPESTRY_GPU_CROSSOVER` for `--gpu auto` on this machine.
//!
//! Run: `cargo bench --bench gpu`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tapestry::analysis::{fields, moments};
use tapestry::gpu::{GpuContext, kernels};
use tapestry::synth;

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    (0..runs)
        .map(|_| {
            let t0 = Instant::now();
            black_box(f());
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU adapter, nothing to compare: {e}");
            return;
        }
    };
    eprintln!("adapter: {}", ctx.describe());
    let cases = [(65_536u32, 256u32), (1_048_576, 16)];
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let mut rows = Vec::new();
    for (p, per) in cases {
        let t = synth::random_intervals(p, per, 5);
        let n = t.intervals.len() as u64;
        let mask = t.states.select(&["busy".into()]).expect("busy");
        let span = t.meta.span;
        {
            let mut g = c.benchmark_group(format!("P={p}"));
            g.throughput(Throughput::Elements(n));
            g.bench_function("moments gpu", |b| {
                b.iter(|| kernels::moments::moments(&ctx, &t, &mask, 0, span, None).expect("gpu"))
            });
            g.bench_function("moments cpu", |b| {
                b.iter(|| moments::moments(&t, &mask, 0, span))
            });
            g.bench_function("busy field gpu (16 bins)", |b| {
                b.iter(|| {
                    kernels::busy_bins::busy_fraction(&ctx, &t, &mask, 0, span, 16, None)
                        .expect("gpu")
                })
            });
            g.bench_function("busy field cpu (16 bins)", |b| {
                b.iter(|| fields::busy_fraction(&t, &mask, 0, span, 16).expect("cpu"))
            });
            g.finish();
        }
        // the kernels' own time (GPU timestamps, best of 3), apart from
        // uploads and read-back
        let kernel = |f: &dyn Fn() -> Option<f64>| {
            (0..3)
                .filter_map(|_| f())
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
        };
        let mk = kernel(&|| {
            kernels::moments::moments_timed(&ctx, &t, &mask, 0, span, None)
                .ok()
                .and_then(|x| x.1)
        });
        let bk = kernel(&|| {
            kernels::busy_bins::busy_fraction_timed(&ctx, &t, &mask, 0, span, 16, None)
                .ok()
                .and_then(|x| x.1)
        });
        rows.push((
            p,
            n,
            best(3, || {
                kernels::moments::moments(&ctx, &t, &mask, 0, span, None)
            }),
            best(3, || moments::moments(&t, &mask, 0, span)),
            best(3, || {
                kernels::busy_bins::busy_fraction(&ctx, &t, &mask, 0, span, 16, None)
            }),
            best(3, || fields::busy_fraction(&t, &mask, 0, span, 16)),
            mk,
            bk,
        ));
    }
    c.final_summary();
    println!();
    println!("adapter: {}", ctx.describe());
    println!(
        "P          intervals   moments GPU / CPU (M intervals/s)   busy field GPU / CPU (M intervals/s)   kernels only: moments / busy field (M intervals/s)"
    );
    for (p, n, mg, mc, bg, bc, mk, bk) in rows {
        let r = |s: f64| n as f64 / 1e6 / s;
        let k = |ns: Option<f64>| ns.map_or("-".to_string(), |ns| format!("{:.1}", r(ns * 1e-9)));
        println!(
            "{p:<10} {n:>10} {:>14.1} / {:<14.1} {:>16.1} / {:<14.1} {:>18} / {}",
            r(mg),
            r(mc),
            r(bg),
            r(bc),
            k(mk),
            k(bk)
        );
    }
    // the crossover: end to end (upload, kernels, read-back) against the
    // CPU path, growing the input until the GPU wins
    println!();
    println!("crossover sweep (end to end, best of 3; 16 intervals per location)");
    println!("intervals     moments GPU / CPU (ms)     busy field GPU / CPU (ms)");
    let (mut cross_m, mut cross_b) = (None, None);
    for e in (14..=24).step_by(2) {
        let n = 1u32 << e;
        let t = synth::random_intervals(n / 16, 16, 7);
        let mask = t.states.select(&["busy".into()]).expect("busy");
        let span = t.meta.span;
        let mg = best(3, || {
            kernels::moments::moments(&ctx, &t, &mask, 0, span, None)
        });
        let mc = best(3, || moments::moments(&t, &mask, 0, span));
        let bg = best(3, || {
            kernels::busy_bins::busy_fraction(&ctx, &t, &mask, 0, span, 16, None)
        });
        let bc = best(3, || fields::busy_fraction(&t, &mask, 0, span, 16));
        println!(
            "2^{e:<10} {:>10.2} / {:<10.2} {:>14.2} / {:<10.2}",
            mg * 1e3,
            mc * 1e3,
            bg * 1e3,
            bc * 1e3
        );
        if mg < mc {
            cross_m.get_or_insert(n);
        }
        if bg < bc {
            cross_b.get_or_insert(n);
        }
    }
    let say =
        |c: Option<u32>| c.map_or("none up to 2^24".to_string(), |n| format!("{n} intervals"));
    println!(
        "crossover on {}: moments {}, busy field {} (TAPESTRY_GPU_CROSSOVER sets --gpu auto's)",
        ctx.info.name,
        say(cross_m),
        say(cross_b)
    );
}
