//! PICL `--stream` against the in-memory read, on a Gaussian elimination
//! over 512 processors (`tapestry synth gauss -p 512 --n 600`, about 100 MB,
//! generated once into `target/bench-data/`).
//!
//! Criterion times `picl::stream::stream` (both passes) with a moments +
//! busy-field reducer, `reduce`'s shares (`picl::share::read_share`) with 2
//! and 4 processes as threads of this one, merged as rank 0 merges them,
//! and the in-memory read (`readers::read`). Then a
//! table runs the binary (`info --stream` and `info --stats`) at 1, 2 and
//! all cores with each run's peak resident memory.
//!
//! Run: `cargo bench --bench stream_picl`.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
use tapestry::analysis::stream::{StreamReducer, StreamSpec};
use tapestry::readers::{self, ReadOptions};

fn main() {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/stream-gauss-512x600.picl");
    common::synth(&p, &["gauss", "-p", "512", "--n", "600"]);
    let bytes = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("picl");
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("stream moments+field64", |b| {
            b.iter(|| {
                let mut r = reducer();
                let out =
                    tapestry::readers::picl::stream::stream(&p, &ReadOptions::default(), &mut r)
                        .expect("stream");
                black_box((out, r.records()))
            })
        });
        // `reduce`'s algorithm with its processes as threads of this one
        // (the exchange without MPI; the threads share one rayon pool)
        for n in [2usize, 4] {
            g.bench_function(format!("reduce shares, {n} processes as threads"), |b| {
                b.iter(|| black_box(shares(&p, n)))
            });
        }
        g.bench_function("read in memory", |b| {
            b.iter(|| black_box(readers::read(&p, &ReadOptions::default()).expect("read")))
        });
        g.finish();
    }
    c.final_summary();

    let mb = bytes as f64 / 1e6;
    let all = rayon::current_num_threads();
    let mut cores = vec![1, 2, all];
    cores.retain(|&k| k <= all);
    cores.dedup();
    println!();
    println!("input: {} ({mb:.0} MB)", p.display());
    println!("mode              cores   seconds     MB/s   peak RSS MiB");
    let path = p.to_str().expect("utf-8 path");
    for &k in &cores {
        for (name, args) in [
            ("info --stream", vec!["info", path, "--stream"]),
            ("info (memory)", vec!["info", path, "--stats"]),
        ] {
            let t0 = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_tapestry"))
                .args(&args)
                .env("RAYON_NUM_THREADS", k.to_string())
                .output()
                .expect("tapestry runs");
            let s = t0.elapsed().as_secs_f64();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {err}");
            // both print their peak: "peak memory X MiB"
            let peak = err
                .split("peak memory ")
                .nth(1)
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            println!("{name:<17} {k:>5} {s:>9.2} {:>8.0} {peak:>14.0}", mb / s);
        }
    }
}

fn reducer<'a>() -> StreamReducer<'a> {
    StreamReducer::new(
        StreamSpec {
            bins: Some(64),
            comm: true,
        },
        Box::new(|span| Ok((0, span.max(1)))),
    )
}

/// `reduce` of `p` by `n` processes as threads, merged: the intervals
/// reduced.
fn shares(p: &Path, n: usize) -> u64 {
    use tapestry::readers::exchange::ThreadExchange;
    use tapestry::readers::picl::share::{PiclShare, read_share, stripe_for};
    let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let stripe = stripe_for(len, n, rayon::current_num_threads());
    let done: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = ThreadExchange::group(n)
            .into_iter()
            .map(|mut ex| {
                s.spawn(move || {
                    let mut r = reducer();
                    let sh = read_share(p, &ReadOptions::default(), &mut r, &mut ex, stripe)
                        .expect("share");
                    (sh, r)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    let mut done = done.into_iter();
    let (mut share, mut r) = done.next().expect("rank 0");
    for (sh, rk) in done {
        let bytes = sh.to_bytes();
        share
            .merge(PiclShare::from_bytes(&bytes).expect("share bytes").0)
            .expect("merge");
        r.merge_bytes(&rk.to_bytes()).expect("merge");
    }
    share.finish(&r, &ReadOptions::default()).expect("finish");
    r.records().0
}
