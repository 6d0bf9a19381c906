//! Streaming reductions (`analyze --stream`) against the in-memory path.
//!
//! Criterion times `paraver::stream` with a moments + busy-field reducer,
//! and with a communication-matrix reducer, on a hypercube broadcast of
//! ~10^7 state intervals (P = 65,536). Then a table runs the binary on a
//! trace of `TAPESTRY_STREAM_INTERVALS` state intervals (default 10^8,
//! about 6.2 GB on disk, generated once into `target/bench-data/`) at 1, 2
//! and all cores, streamed (moments, the busy field, the node × node
//! communication matrix, the `info` summary), with each run's peak
//! resident memory, and the in-memory read of the 10^7 trace beside it for
//! comparison.
//!
//! Chrome JSON: criterion times `chrome::stream` (moments + busy field, two
//! passes over the file) on a broadcast of ~1.2·10^6 intervals (P = 1,024,
//! 210 MB) and `reduce`'s shares of it (`chrome::share::read_share`) with 2
//! and 4 processes as threads of this one, merged as rank 0 merges them,
//! and a table streams one of `TAPESTRY_STREAM_CHROME_INTERVALS`
//! (default 10^7, ~1.7 GB) at 1, 2 and all cores against the in-memory
//! read, with peak memory.
//!
//! Run: `cargo bench --bench stream` (`TAPESTRY_STREAM_TABLES=chrome` or
//! `=paraver` runs one table only).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
use tapestry::analysis::stream::{StreamReducer, StreamSpec};
use tapestry::readers::ReadOptions;

const P: u64 = 65_536;

/// A broadcast trace of about `intervals` state intervals at P = 65,536
/// (three intervals per processor and broadcast).
fn input(intervals: u64) -> PathBuf {
    let reps = (intervals / (3 * P)).max(1);
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("stream-bcast-{P}x{reps}.prv"));
    common::synth(
        &p,
        &["bcast", "-p", &P.to_string(), "--reps", &reps.to_string()],
    );
    p
}

/// A Chrome broadcast trace of about `intervals` state intervals at P =
/// 1,024 (three intervals per processor and broadcast).
fn chrome_input(intervals: u64) -> PathBuf {
    let p_chrome = 1024u64;
    let reps = (intervals / (3 * p_chrome)).max(1);
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("stream-bcast-{p_chrome}x{reps}.json"));
    common::synth(
        &p,
        &[
            "bcast",
            "-p",
            &p_chrome.to_string(),
            "--reps",
            &reps.to_string(),
        ],
    );
    p
}

/// A reducer over the whole trace with `bins` of busy field and, with
/// `comm`, the communication matrix.
fn reducer<'a>(bins: Option<usize>, comm: bool) -> StreamReducer<'a> {
    StreamReducer::new(
        StreamSpec { bins, comm },
        Box::new(|span| Ok((0, span.max(1)))),
    )
}

/// Runs the binary; (wall seconds, peak MiB from its stderr or `info --stats`).
fn run(args: &[&str], threads: usize) -> (f64, f64) {
    run_env(args, threads, &[])
}

/// [`run`] with more environment.
fn run_env(args: &[&str], threads: usize, env: &[(&str, String)]) -> (f64, f64) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_tapestry"))
        .args(args)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("tapestry runs");
    let secs = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let peak = err
        .split("peak memory ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    (secs, peak)
}

fn main() {
    let tables =
        std::env::var("TAPESTRY_STREAM_TABLES").unwrap_or_else(|_| "paraver,chrome".into());
    let small = input(10_000_000);
    let chrome_small = chrome_input(1_200_000);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("stream");
        let bytes = std::fs::metadata(&small).map(|m| m.len()).unwrap_or(0);
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("moments+field64", |b| {
            b.iter(|| {
                let mut r = reducer(Some(64), false);
                let out =
                    tapestry::readers::paraver::stream(&small, &ReadOptions::default(), &mut r)
                        .expect("stream");
                black_box((out, r.records()))
            })
        });
        g.bench_function("comm-matrix+summary", |b| {
            b.iter(|| {
                let mut r = reducer(None, true);
                let (t, _) =
                    tapestry::readers::paraver::stream(&small, &ReadOptions::default(), &mut r)
                        .expect("stream");
                let m = r
                    .comm_matrix(&t, tapestry::analysis::comm::Level::Node)
                    .expect("matrix");
                black_box((m.total.len(), r.totals()))
            })
        });
        g.finish();
        let mut g = c.benchmark_group("stream-chrome");
        let bytes = std::fs::metadata(&chrome_small)
            .map(|m| m.len())
            .unwrap_or(0);
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("moments+field64", |b| {
            b.iter(|| {
                let mut r = reducer(Some(64), false);
                let out = tapestry::readers::chrome::stream::stream(
                    &chrome_small,
                    &ReadOptions::default(),
                    &mut r,
                )
                .expect("stream");
                black_box((out, r.records()))
            })
        });
        for n in [2, 4] {
            g.bench_function(format!("reduce shares x{n} moments+field64"), |b| {
                b.iter(|| black_box(chrome_shared(&chrome_small, n)))
            });
        }
        g.finish();
    }
    c.final_summary();
    let all = rayon::current_num_threads();
    let mut cores = vec![1, 2, all];
    cores.retain(|&k| k <= all);
    cores.dedup();
    if tables.contains("chrome") {
        chrome_table(&cores);
    }
    if tables.contains("paraver") {
        paraver_table(&small, &cores);
    }
}

/// `reduce`'s read of a Chrome trace by `n` processes (threads of this one,
/// in the stripes `reduce` takes), merged as rank 0 merges them: the
/// records reduced.
fn chrome_shared(p: &Path, n: usize) -> (u64, u64, u64) {
    use tapestry::readers::chrome::share::{read_share, stripe_for};
    use tapestry::readers::exchange::ThreadExchange;
    let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let stripe = stripe_for(len, n);
    let done: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = ThreadExchange::group(n)
            .into_iter()
            .map(|mut ex| {
                s.spawn(move || {
                    let mut r = reducer(Some(64), false);
                    let sh = read_share(p, &ReadOptions::default(), &mut r, &mut ex, stripe)
                        .expect("share");
                    (sh, r)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("share")).collect()
    });
    let mut done = done.into_iter();
    let (share, mut r) = done.next().expect("rank 0");
    for (_, rk) in done {
        r.merge_bytes(&rk.to_bytes()).expect("merge");
    }
    share
        .finish(&mut r, &ReadOptions::default())
        .expect("finish");
    r.records()
}

/// The Chrome table: streamed and in memory, at each core count.
fn chrome_table(cores: &[usize]) {
    let n: u64 = std::env::var("TAPESTRY_STREAM_CHROME_INTERVALS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(10_000_000, |v| v as u64);
    let big = chrome_input(n);
    let mb = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    println!();
    println!(
        "input: {} ({mb:.0} MB, ~{n} state intervals, P = 1024)",
        big.display()
    );
    println!("mode              cores   seconds     MB/s   M intervals/s   peak RSS MiB");
    let b = big.to_str().expect("utf-8 path");
    // a memory limit under twice the one-pass read's estimate (0.6 × the
    // file): the two-pass read
    let tight = vec![(
        "TAPESTRY_MEMORY_LIMIT",
        format!("{}", (mb * 1e6 * 0.6) as u64),
    )];
    for &k in cores {
        for (name, args, env) in [
            (
                "stream field 64",
                vec!["analyze", b, "field", "--bins", "64", "--stream"],
                vec![],
            ),
            ("in memory (info)", vec!["info", b, "--stats"], vec![]),
            (
                "in memory, 2 passes",
                vec!["info", b, "--stats", "--no-stream"],
                tight.clone(),
            ),
        ] {
            let (s, peak) = run_env(&args, k, &env);
            println!(
                "{name:<17} {k:>5} {s:>9.2} {:>8.0} {:>15.2} {peak:>14.0}",
                mb / s,
                n as f64 / 1e6 / s
            );
        }
    }
}

/// The Paraver table: 10^8 intervals streamed at each core count, and the
/// 10^7 trace in memory and streamed.
fn paraver_table(small: &Path, cores: &[usize]) {
    let n: u64 = std::env::var("TAPESTRY_STREAM_INTERVALS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(100_000_000, |v| v as u64);
    let big = input(n);
    let mb = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let all = rayon::current_num_threads();
    println!();
    println!(
        "input: {} ({mb:.0} MB, ~{n} state intervals, P = {P})",
        big.display()
    );
    println!("mode              cores   seconds     MB/s   M intervals/s   peak RSS MiB");
    let b = big.to_str().expect("utf-8 path");
    let npy = big.with_extension("comm-node.npy");
    let npy = npy.to_str().expect("utf-8 path");
    for &k in cores {
        for (name, args) in [
            ("stream moments", vec!["analyze", b, "moments", "--stream"]),
            (
                "stream field 64",
                vec!["analyze", b, "field", "--bins", "64", "--stream"],
            ),
            (
                "stream comm node",
                vec![
                    "analyze",
                    b,
                    "comm-matrix",
                    "--level",
                    "node",
                    "--stream",
                    "-o",
                    npy,
                ],
            ),
            ("stream info", vec!["info", b, "--stream"]),
        ] {
            let (s, peak) = run(&args, k);
            println!(
                "{name:<17} {k:>5} {s:>9.2} {:>8.0} {:>15.2} {peak:>14.0}",
                mb / s,
                n as f64 / 1e6 / s
            );
        }
    }
    let s = small.to_str().expect("utf-8 path");
    let smb = std::fs::metadata(small).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    for (name, args) in [
        ("10^7 in memory", vec!["info", s, "--stats"]),
        ("10^7 stream", vec!["analyze", s, "moments", "--stream"]),
    ] {
        let (secs, peak) = run(&args, all);
        println!(
            "{name:<17} {all:>5} {secs:>9.2} {:>8.0} {:>15.2} {peak:>14.0}",
            smb / secs,
            10.0 / secs
        );
    }
}
