//! Signal processing against scipy: every DSP analysis of
//! `analysis::signal` on a 10^7-sample signal (`TAPESTRY_BENCH_SAMPLES`),
//! timed here (criterion, plus a best-of-3 table), and the scipy.fft
//! equivalent timed in a Python subprocess on the same machine when
//! `python3` with numpy and scipy is installed (`TAPESTRY_PYTHON` names
//! another interpreter). Both are single-threaded transforms.
//!
//! Run: `cargo bench --bench dsp`.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tapestry::analysis::signal;

fn best<T>(mut f: impl FnMut() -> T) -> f64 {
    (0..3)
        .map(|_| {
            let t0 = Instant::now();
            black_box(f());
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The scipy equivalents, best of 3, as "name seconds" lines.
const SCIPY: &str = r#"
import sys, time
import numpy as np
import scipy.fft as F
n = int(sys.argv[1])
i = np.arange(n)
x = ((i * 7919) % 101).astype(np.float64) + np.sin(i * 1e-3)
y = np.roll(x, 12345)[::-1].copy()
def best(f):
    t = []
    for _ in range(3):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return min(t)
def acf():
    z = x - x.mean(); L = F.next_fast_len(n + 1000, real=True)
    X = F.rfft(z, L); r = F.irfft(X * np.conj(X), L)[:1001]
    return r / (n - np.arange(1001))
def xcf():
    a = x - x.mean(); b = y - y.mean(); L = F.next_fast_len(2 * n - 1, real=True)
    return F.irfft(F.rfft(a, L) * np.conj(F.rfft(b, L)), L)[:n]
def spec():
    X = F.rfft(x); return np.abs(X), np.abs(X) ** 2 / n
def low():
    X = F.rfft(x); X[n // 64 + 1:] = 0; return F.irfft(X, n)
def dec():
    X = F.rfft(x); X[n // 8 + 1:] = 0; return F.irfft(X, n)[::4]
for name, f in [("autocorrelation", acf), ("cross-correlation", xcf), ("spectrum", spec), ("lowpass", low), ("decimate", dec)]:
    print(name, best(f))
"#;

fn scipy(n: usize) -> Option<Vec<(String, f64)>> {
    let py = std::env::var("TAPESTRY_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(py)
        .args(["-c", SCIPY, &n.to_string()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "scipy not run: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (a, b) = l.rsplit_once(' ')?;
                Some((a.to_string(), b.parse().ok()?))
            })
            .collect(),
    )
}

fn main() {
    let n: usize = std::env::var("TAPESTRY_BENCH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let x: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 101) as f64 + (i as f64 * 1e-3).sin())
        .collect();
    let mut y = x.clone();
    y.rotate_right(12345 % n.max(1));
    y.reverse();
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    {
        let mut g = c.benchmark_group(format!("dsp {n} samples"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("autocorrelation (lags 0..1000)", |b| {
            b.iter(|| signal::autocorrelation(&x, 1000, true))
        });
        g.bench_function("cross-correlation (all lags)", |b| {
            b.iter(|| signal::cross_correlation(&x, &y, true))
        });
        g.bench_function("spectrum", |b| b.iter(|| signal::spectrum(&x, None)));
        g.bench_function("lowpass (N/64)", |b| b.iter(|| signal::lowpass(&x, n / 64)));
        g.bench_function("decimate (α = 4)", |b| b.iter(|| signal::decimate(&x, 4)));
        g.finish();
    }
    c.final_summary();
    let ours = [
        (
            "autocorrelation",
            best(|| signal::autocorrelation(&x, 1000, true)),
        ),
        (
            "cross-correlation",
            best(|| signal::cross_correlation(&x, &y, true)),
        ),
        ("spectrum", best(|| signal::spectrum(&x, None))),
        ("lowpass", best(|| signal::lowpass(&x, n / 64))),
        ("decimate", best(|| signal::decimate(&x, 4))),
    ];
    let py = scipy(n);
    println!();
    println!("{n} samples        tapestry (s)   scipy.fft (s)   tapestry / scipy");
    for (name, t) in ours {
        let s = py
            .as_ref()
            .and_then(|v| v.iter().find(|(k, _)| k == name).map(|x| x.1));
        match s {
            Some(s) => println!("{name:<18} {t:>12.3} {s:>15.3} {:>18.2}", t / s),
            None => println!("{name:<18} {t:>12.3} {:>15} {:>18}", "-", "-"),
        }
    }
}
