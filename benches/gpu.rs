//! GPU kernels against the CPU path: moments and the busy-fraction field at
//! P = 65,536 and P = 1,048,576 locations (about 16.8 M intervals each),
//! end to end (upload, kernels, read-back), on a trace already resident
//! (`GpuTrace`: one analysis, results on the host) and the kernels alone
//! (GPU timestamps, where the adapter offers them), with the upload's rate.
//! On lavapipe (no GPU) the "GPU" runs on the CPU cores through LLVM.
//! Last, a sweep over input sizes (2^14 to 2^24 intervals, 16 per
//! location) times both paths end to end and prints the crossover: the
//! smallest size from which the GPU is faster, the value to give
//! `TAPESTRY_GPU_CROSSOVER` for `--gpu auto` on this machine.
//!
//! Then one frame of the Kiviat tube of the busy field (64 bins, or 16
//! at 2^20 locations) three ways: made on the GPU from the field left
//! there (`render --gpu`: nothing read back but 12 bytes a bin), the field
//! read back from the resident trace and the tube built on the host, and
//! all on the CPU.
//!
//! Each input also times variants of the moments kernel
//! (`gpu/variants.rs`) with the card kept busy.
//!
//! Run: `cargo bench --bench gpu` (`TAPESTRY_GPU_BENCH_CASES=65536x256,1048576x128`
//! chooses the inputs: locations x intervals per location;
//! `TAPESTRY_GPU_BENCH_VARIANTS=only` times the variants alone).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tapestry::analysis::{fields, moments};
use tapestry::gpu::{GpuContext, GpuTrace, Timing, kernels};
use tapestry::synth;

#[path = "gpu/variants.rs"]
mod variants;

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    (0..runs)
        .map(|_| {
            let t0 = Instant::now();
            black_box(f());
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Where one analysis of a resident trace spent its time, in seconds (each
/// the best of 3): the kernels (GPU timestamps), the host's preparation,
/// start to results mapped (preparation included), the host's share after.
struct Split {
    kernel: f64,
    prepare: f64,
    run: f64,
    finish: f64,
}

/// One input's figures: seconds (best of 3).
struct Row {
    p: u32,
    n: u64,
    bytes: u64,
    upload: f64,
    moments: Split,
    /// The moments kernel without subgroups (`None` where the adapter has
    /// none: then `moments` is this already).
    moments_tree: Option<Split>,
    moments_cpu: f64,
    busy: Split,
    busy_cpu: f64,
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
    // `TAPESTRY_GPU_BENCH_CASES=PxN,...` (locations x intervals per
    // location) replaces the two inputs, e.g. to fill a data-centre GPU
    let cases = std::env::var("TAPESTRY_GPU_BENCH_CASES")
        .ok()
        .map(|v| {
            v.split(',')
                .map(|c| {
                    let (p, n) = c.split_once('x').expect("cases as PxN,PxN");
                    (
                        p.trim().parse::<u32>().expect("P"),
                        n.trim().parse::<u32>().expect("N"),
                    )
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|| vec![(65_536u32, 256u32), (1_048_576, 16)]);
    // `TAPESTRY_GPU_BENCH_VARIANTS=only`: the moments kernel's variants
    // alone (benches/gpu/variants.rs), for a short run on a lent card
    if std::env::var("TAPESTRY_GPU_BENCH_VARIANTS").as_deref() == Ok("only") {
        for &(p, per) in &cases {
            let t = synth::random_intervals(p, per, 5);
            let mask = t.states.select(&["busy".into()]).expect("busy");
            let g = GpuTrace::upload(&ctx, &t, None).expect("upload");
            variants::run(&ctx, &g, &mask, t.meta.span, t.intervals.len() as u64);
        }
        return;
    }
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
            let resident = GpuTrace::upload(&ctx, &t, None).expect("upload");
            g.bench_function("moments gpu resident", |b| {
                b.iter(|| resident.moments(&mask, 0, span).expect("gpu"))
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
            g.bench_function("busy field gpu resident (16 bins)", |b| {
                b.iter(|| resident.busy_fraction(&mask, 0, span, 16).expect("gpu"))
            });
            g.bench_function("busy field cpu (16 bins)", |b| {
                b.iter(|| fields::busy_fraction(&t, &mask, 0, span, 16).expect("cpu"))
            });
            g.finish();
        }
        // where the time goes (best of 3 each): the upload, then per
        // analysis of the resident trace the kernels alone (timestamps),
        // submission to results on the host (kernels, copy back, mapping)
        // and the host's share
        let mut upload = f64::INFINITY;
        let mut g = None;
        for _ in 0..3 {
            let r = GpuTrace::upload(&ctx, &t, None).expect("upload");
            upload = upload.min(r.upload_time().as_secs_f64());
            g = Some(r);
        }
        let mut g = g.expect("uploaded");
        let split = |f: &dyn Fn() -> Timing| {
            let mut best = Split {
                kernel: f64::INFINITY,
                prepare: f64::INFINITY,
                run: f64::INFINITY,
                finish: f64::INFINITY,
            };
            for _ in 0..3 {
                let t = f();
                best.kernel = best
                    .kernel
                    .min(t.kernel.map_or(f64::NAN, |d| d.as_secs_f64()));
                best.prepare = best.prepare.min(t.prepare.as_secs_f64());
                best.run = best.run.min(t.run.as_secs_f64());
                best.finish = best.finish.min(t.finish.as_secs_f64());
            }
            best
        };
        let mg = split(&|| g.moments(&mask, 0, span).expect("gpu").1);
        let bg = split(&|| g.busy_fraction(&mask, 0, span, 16).expect("gpu").1);
        // the same kernel with workgroup memory alone, where subgroups are
        // the default
        let moments_tree = if ctx.features.contains(wgpu::Features::SUBGROUP) {
            g.use_subgroups(false);
            let t = split(&|| g.moments(&mask, 0, span).expect("gpu").1);
            g.use_subgroups(true);
            Some(t)
        } else {
            None
        };
        variants::run(&ctx, &g, &mask, span, n);
        rows.push(Row {
            p,
            n,
            bytes: g.bytes(),
            upload,
            moments: mg,
            moments_tree,
            moments_cpu: best(3, || moments::moments(&t, &mask, 0, span)),
            busy: bg,
            busy_cpu: best(3, || fields::busy_fraction(&t, &mask, 0, span, 16)),
        });
    }
    c.final_summary();
    let tubes = tube_frames(&ctx, &cases_tube(&rows));
    let displays = moment_frames(&ctx, &cases_tube(&rows));
    println!();
    println!("adapter: {}", ctx.describe());
    println!(
        "P          intervals  upload GB/s | moments (M intervals/s): CPU, GPU kernel, resident, end to end | busy field, 16 bins: CPU, GPU kernel, resident, end to end"
    );
    for r in &rows {
        let m = |s: f64| r.n as f64 / 1e6 / s;
        println!(
            "{:<10} {:>10} {:>11.2} | {:>9.1} {:>9.1} {:>9.1} {:>9.1} | {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            r.p,
            r.n,
            r.bytes as f64 / 1e9 / r.upload,
            m(r.moments_cpu),
            m(r.moments.kernel),
            m(r.moments.run + r.moments.finish),
            m(r.upload + r.moments.run + r.moments.finish),
            m(r.busy_cpu),
            m(r.busy.kernel),
            m(r.busy.run + r.busy.finish),
            m(r.upload + r.busy.run + r.busy.finish),
        );
    }
    println!();
    println!(
        "where the time goes (ms): upload | moments: kernel, preparation, start to results, host | busy field: the same"
    );
    for r in &rows {
        let ms = |s: f64| s * 1e3;
        println!(
            "P={:<10} {:>9.2} | {:>8.2} {:>8.2} {:>8.2} {:>8.2} | {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
            r.p,
            ms(r.upload),
            ms(r.moments.kernel),
            ms(r.moments.prepare),
            ms(r.moments.run),
            ms(r.moments.finish),
            ms(r.busy.kernel),
            ms(r.busy.prepare),
            ms(r.busy.run),
            ms(r.busy.finish),
        );
    }
    println!(
        "(kernel: GPU timestamps; resident: one analysis of an uploaded trace, results on the host; end to end: upload included)"
    );
    if rows.iter().any(|r| r.moments_tree.is_some()) {
        println!();
        println!(
            "moments kernel, M intervals/s (GPU timestamps): each tile's first levels in subgroups (the default) | workgroup memory alone"
        );
        for r in &rows {
            if let Some(tree) = &r.moments_tree {
                let m = |s: f64| r.n as f64 / 1e6 / s;
                println!(
                    "P={:<10} {:>9.1} | {:>9.1}",
                    r.p,
                    m(r.moments.kernel),
                    m(tree.kernel)
                );
            }
        }
    }
    println!();
    println!(
        "one Kiviat tube frame of the busy field, trace resident (ms, best of 3): \
         field left on the GPU + tube kernels = frame | field read back + tube on the host = frame | CPU field + host tube = frame"
    );
    for t in &tubes {
        let ms = |s: f64| s * 1e3;
        println!(
            "P={:<9} {:>3} bins {:>8.2} + {:>8.2} = {:>8.2} | {:>8.2} + {:>8.2} = {:>8.2} | {:>8.2} + {:>8.2} = {:>8.2}",
            t.p,
            t.bins,
            ms(t.gpu_field),
            ms(t.gpu_tube),
            ms(t.gpu_field + t.gpu_tube),
            ms(t.back_field),
            ms(t.host_tube),
            ms(t.back_field + t.host_tube),
            ms(t.cpu_field),
            ms(t.host_tube),
            ms(t.cpu_field + t.host_tube),
        );
    }
    println!();
    println!(
        "one moment display at 1920x1080, trace resident (ms, best of 3): \
         GPU: moments kernel + busy field left there, then the Gantt kernel and the rows = frame; a frame up to a time cursor | \
         CPU: the same"
    );
    for m in &displays {
        let ms = |s: f64| s * 1e3;
        println!(
            "P={:<9} {:>3} bins {:>8.2} + {:>8.2} = {:>8.2}; cursor {:>8.2} | {:>8.2} + {:>8.2} = {:>8.2}; cursor {:>8.2}",
            m.p,
            m.bins,
            ms(m.gpu.0),
            ms(m.gpu.1),
            ms(m.gpu.0 + m.gpu.1),
            ms(m.gpu.2),
            ms(m.cpu.0),
            ms(m.cpu.1),
            ms(m.cpu.0 + m.cpu.1),
            ms(m.cpu.2),
        );
    }
    // the crossover: end to end (upload, kernels, read-back) against the
    // CPU path, growing the input until the GPU wins
    println!();
    println!("crossover sweep (end to end, best of 3; 16 intervals per location)");
    println!(
        "intervals     moments GPU end to end / resident / CPU (ms)     busy field GPU end to end / resident / CPU (ms)"
    );
    let (mut cross_m, mut cross_b) = (None, None);
    let (mut resident_m, mut resident_b) = (None, None);
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
        let r = GpuTrace::upload(&ctx, &t, None).expect("upload");
        let mr = best(3, || r.moments(&mask, 0, span).expect("gpu"));
        let br = best(3, || r.busy_fraction(&mask, 0, span, 16).expect("gpu"));
        println!(
            "2^{e:<10} {:>10.2} / {:<8.2} / {:<10.2} {:>14.2} / {:<8.2} / {:<10.2}",
            mg * 1e3,
            mr * 1e3,
            mc * 1e3,
            bg * 1e3,
            br * 1e3,
            bc * 1e3
        );
        if mg < mc {
            cross_m.get_or_insert(n);
        }
        if bg < bc {
            cross_b.get_or_insert(n);
        }
        if mr < mc {
            resident_m.get_or_insert(n);
        }
        if br < bc {
            resident_b.get_or_insert(n);
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
    println!(
        "on a trace already resident: moments {}, busy field {}",
        say(resident_m),
        say(resident_b)
    );
}

/// One input's moment display, seconds (best of 3 each): the analyses,
/// a frame built from them, and a frame up to a time cursor, on the GPU
/// (trace resident) and on the CPU.
struct MomentFrame {
    p: u32,
    bins: usize,
    gpu: (f64, f64, f64),
    cpu: (f64, f64, f64),
}

fn moment_frames(ctx: &GpuContext, cases: &[(u32, u32)]) -> Vec<MomentFrame> {
    use std::sync::Arc;
    use tapestry::readers::Loaded;
    use tapestry::views::{BuildCtx, Prepared, ViewState, inputs::GpuInput};
    let wait = || {
        let _ = ctx.device.poll(wgpu::PollType::wait_indefinitely());
    };
    let mut out = Vec::new();
    for &(locs, per) in cases {
        let t = synth::random_intervals(locs, per, 5);
        let span = t.meta.span;
        let bins = if locs > 100_000 { 16 } else { 64 };
        let g = GpuInput(Arc::new(GpuTrace::upload(ctx, &t, None).expect("upload")));
        let input = Loaded::Trace(Box::new(t));
        let mut state = ViewState::new("moments");
        state.data.bins = bins;
        let still = BuildCtx::still(1920, 1080);
        // fresh analyses each time, so that no frame is one kept from the
        // last (the GPU display keeps its last rows and chart)
        let time = |gpu: Option<GpuInput>| {
            let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
            for i in 0..3u64 {
                let t0 = Instant::now();
                let p = Prepared::with_gpu(&input, &state, gpu.clone()).expect("compute");
                wait();
                best.0 = best.0.min(t0.elapsed().as_secs_f64());
                let t0 = Instant::now();
                black_box(p.build(still).expect("build"));
                wait();
                best.1 = best.1.min(t0.elapsed().as_secs_f64());
                let cursor = BuildCtx {
                    cursor: Some(span / 2 + i),
                    ..still
                };
                let t0 = Instant::now();
                black_box(p.build(cursor).expect("build"));
                wait();
                best.2 = best.2.min(t0.elapsed().as_secs_f64());
            }
            best
        };
        let gpu = time(Some(g));
        let cpu = time(None);
        out.push(MomentFrame {
            p: locs,
            bins,
            gpu,
            cpu,
        });
    }
    out
}

/// The inputs of the tube frames: the rows' shapes.
fn cases_tube(rows: &[Row]) -> Vec<(u32, u32)> {
    rows.iter()
        .map(|r| (r.p, (r.n / r.p.max(1) as u64) as u32))
        .collect()
}

/// One input's tube frame, seconds (best of 3 each; the GPU's work is
/// waited for).
struct TubeFrame {
    p: u32,
    bins: usize,
    /// On the GPU: the busy field left there; the bins' summaries and the
    /// tube's kernels.
    gpu_field: f64,
    gpu_tube: f64,
    /// The field computed on the GPU and read back; the tube on the host.
    back_field: f64,
    host_tube: f64,
    /// The field on the CPU.
    cpu_field: f64,
}

fn tube_frames(ctx: &GpuContext, cases: &[(u32, u32)]) -> Vec<TubeFrame> {
    use tapestry::views::kiviat::{self, KiviatParams};
    let p = KiviatParams::default();
    let wait = || {
        let _ = ctx.device.poll(wgpu::PollType::wait_indefinitely());
    };
    let mut out = Vec::new();
    for &(locs, per) in cases {
        let t = synth::random_intervals(locs, per, 5);
        let mask = t.states.select(&["busy".into()]).expect("busy");
        let span = t.meta.span;
        let bins = if locs > 100_000 { 16 } else { 64 };
        let g = GpuTrace::upload(ctx, &t, None).expect("upload");
        let eg = (locs as usize).div_ceil(p.max_sectors);
        let gpu_field = best(3, || {
            let f = g.busy_field(&mask, 0, span, bins).expect("field");
            wait();
            f
        });
        let f = g.busy_field(&mask, 0, span, bins).expect("field");
        let gpu_tube = best(3, || {
            let s = f.summaries(eg).expect("summaries");
            let meta = fields::busy_field(Vec::new(), f.edges.clone(), f.elements);
            let scene =
                kiviat::build_resident(&f, &meta, &s, "viridis", &p, 0, None, None).expect("tube");
            wait();
            scene
        });
        let back_field = best(3, || g.busy_fraction(&mask, 0, span, bins).expect("field"));
        let (host, _) = g.busy_fraction(&mask, 0, span, bins).expect("field");
        let host_tube = best(3, || {
            kiviat::build(&host, None, "viridis", &p, 0, None).expect("tube")
        });
        let cpu_field = best(3, || {
            fields::busy_fraction(&t, &mask, 0, span, bins).expect("field")
        });
        out.push(TubeFrame {
            p: locs,
            bins,
            gpu_field,
            gpu_tube,
            back_field,
            host_tube,
            cpu_field,
        });
    }
    out
}
