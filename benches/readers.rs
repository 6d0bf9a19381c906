//! Reader throughput on synthetic traces of at least 200 MB.
//!
//! Inputs are generated once with the synthetic workload generator into
//! `target/bench-data/`. Criterion measures each reader with all cores;
//! afterwards a table compares MB/s and records/s on one core and on all
//! cores, with the peak resident memory of each read.
//!
//! Run: `cargo bench --bench readers` (set `TAPESTRY_BENCH_MB` to change the
//! input size, default 220).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
use common::{peak_mib, reset_peak};
use tapestry::readers::{self, ReadOptions};
use tapestry::synth::{self, Distribution, MachineModel, OutputFormat, SynthConfig, Workload};

fn data_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&d).expect("bench data directory");
    d
}

fn target_bytes() -> u64 {
    std::env::var("TAPESTRY_BENCH_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(220)
        << 20
}

/// Generates (once) a synthetic trace of at least the target size.
fn input(format: OutputFormat, name: &str) -> PathBuf {
    let path = data_dir().join(name);
    let want = target_bytes();
    if std::fs::metadata(&path)
        .map(|m| m.len() >= want)
        .unwrap_or(false)
    {
        return path;
    }
    // Gaussian elimination on 512 processors: grow n until the file is big enough
    let mut n = 256u64;
    loop {
        let cfg = SynthConfig {
            workload: Workload::Gauss {
                n,
                dist: Distribution::Cyclic,
            },
            procs: 512,
            procs_per_node: 16,
            model: MachineModel::default(),
            seed: 1,
        };
        synth::write(&cfg, format, &path, None).expect("synthesize bench input");
        let len = std::fs::metadata(&path).expect("bench input").len();
        if len >= want {
            return path;
        }
        n = (n as f64 * (want as f64 / len as f64).sqrt() * 1.05).ceil() as u64 + 1;
    }
}

struct Row {
    name: &'static str,
    mb: f64,
    records: usize,
    all_s: f64,
    one_s: f64,
    peak: f64,
}

fn measure(name: &'static str, path: &Path) -> Row {
    let opts = ReadOptions::default();
    let mb = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let t0 = Instant::now();
    let t = one.install(|| readers::read(path, &opts)).expect("read");
    let one_s = t0.elapsed().as_secs_f64();
    drop(t);
    reset_peak();
    let t0 = Instant::now();
    let t = readers::read(path, &opts).expect("read");
    let all_s = t0.elapsed().as_secs_f64();
    let peak = peak_mib();
    let records = t.intervals.len()
        + t.events.len()
        + t.messages.len()
        + t.counters.len()
        + t.collectives.len();
    Row {
        name,
        mb,
        records,
        all_s,
        one_s,
        peak,
    }
}

fn main() {
    let inputs = [
        ("paraver", input(OutputFormat::Paraver, "gauss.prv")),
        ("chrome-json", input(OutputFormat::ChromeJson, "gauss.json")),
        ("picl", input(OutputFormat::Picl, "gauss.trf")),
    ];
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("read");
        for (name, path) in &inputs {
            let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            g.throughput(Throughput::Bytes(bytes));
            g.bench_function(*name, |b| {
                b.iter(|| black_box(readers::read(path, &ReadOptions::default()).expect("read")))
            });
        }
        g.finish();
    }
    c.final_summary();

    let rows: Vec<Row> = inputs.iter().map(|(n, p)| measure(n, p)).collect();
    println!();
    println!(
        "reader        input MB   MB/s 1 core   MB/s {} cores   M records/s   records      peak RSS MiB",
        rayon::current_num_threads()
    );
    for r in rows {
        println!(
            "{:<12} {:>9.1} {:>13.1} {:>15.1} {:>13.2} {:>10} {:>15.0}",
            r.name,
            r.mb,
            r.mb / r.one_s,
            r.mb / r.all_s,
            r.records as f64 / 1e6 / r.all_s,
            r.records,
            r.peak
        );
    }
}
