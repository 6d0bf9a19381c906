//! Reader throughput on synthetic traces of at least 200 MB.
//!
//! Inputs are generated once with the synthetic workload generator into
//! `target/bench-data/` (Gaussian elimination on 512 processors in each
//! format, a broadcast on 65,536 processors in Paraver and PICL: many
//! locations of few intervals each, and a Paraver trace of 64 tasks whose
//! records are mostly hardware-counter events, as Extrae writes them, and
//! a Chrome trace of 64 processes mostly of counter samples), and
//! the Paraver input is converted
//! once into its columnar cache (`gauss.prv.tapestry/`, the `cache` row:
//! re-opening).
//! Criterion measures each reader with all cores; afterwards a table gives
//! MB/s at 1, 2 and all cores, records/s, and the peak resident memory of
//! each read beside the size of the model it builds. The Chrome trace of
//! 65,536 threads is read by one pipeline, whose splitter (the thread that
//! finds the events in the bytes) all its other threads wait on: the
//! `chrome-split` row times that splitter alone, at 1, 2 and all cores.
//!
//! Run: `cargo bench --bench readers` (set `TAPESTRY_BENCH_MB` to change the
//! input size, default 220).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

mod common;
#[path = "../tests/common/extrae.rs"]
mod extrae;
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

/// Generates (once) `name` as `format`, with `cfg(k)` for a growing `k`
/// until the file is at least the target size; `grow(k, want / len)` is
/// the next `k`.
fn sized_input(
    name: &str,
    format: OutputFormat,
    mut k: u64,
    cfg: impl Fn(u64) -> SynthConfig,
    grow: impl Fn(u64, f64) -> u64,
) -> PathBuf {
    let path = data_dir().join(name);
    let want = target_bytes();
    if std::fs::metadata(&path)
        .map(|m| m.len() >= want)
        .unwrap_or(false)
    {
        return path;
    }
    loop {
        synth::write(&cfg(k), format, &path, None).expect("synthesize bench input");
        let len = std::fs::metadata(&path).expect("bench input").len();
        if len >= want {
            return path;
        }
        k = grow(k, want as f64 / len as f64);
    }
}

/// Gaussian elimination on 512 processors of at least the target size.
fn input(format: OutputFormat, name: &str) -> PathBuf {
    let gauss = |n| SynthConfig {
        workload: Workload::Gauss {
            n,
            dist: Distribution::Cyclic,
        },
        procs: 512,
        procs_per_node: 16,
        model: MachineModel::default(),
        seed: 1,
        counters: 0,
    };
    // the file grows with n squared
    sized_input(name, format, 256, gauss, |n, r| {
        (n as f64 * r.sqrt() * 1.05).ceil() as u64 + 1
    })
}

/// A hypercube broadcast on `procs` processors sampling `counters`
/// hardware counters at each state change, of at least the target size
/// (from `reps` broadcasts up).
fn bcast_input(format: OutputFormat, name: &str, procs: u32, counters: u32, reps: u64) -> PathBuf {
    let bcast = |reps: u64| SynthConfig {
        workload: Workload::Broadcast {
            bytes: 4096,
            reps: u32::try_from(reps).unwrap_or(u32::MAX),
            work: 20_000.0,
        },
        procs,
        procs_per_node: 16,
        model: MachineModel::default(),
        seed: 1,
        counters,
    };
    sized_input(name, format, reps, bcast, |reps, r| {
        (reps as f64 * r * 1.05).ceil() as u64 + 1
    })
}

/// A broadcast on 65,536 processors: few intervals per location (about
/// 65 at 220 MB), where the model is built through slabs of locations
/// and a block's records are packed, not grouped.
fn wide_input(format: OutputFormat, name: &str) -> PathBuf {
    bcast_input(format, name, 65_536, 0, 16)
}

/// A broadcast on 64 processors sampling 8 hardware counters at each
/// state change (`synth --counters 8`): in Chrome JSON, mostly `C` events
/// of 8 members.
fn counters_input(format: OutputFormat, name: &str) -> PathBuf {
    bcast_input(format, name, 64, 8, 200)
}

/// A Paraver trace as Extrae writes one, of at least the target size
/// (`extrae::write_counter_events`: 64 tasks, mostly hardware-counter
/// events).
fn events_input(name: &str) -> PathBuf {
    let path = data_dir().join(name);
    let want = target_bytes();
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= want) {
        return path;
    }
    let tasks = 64;
    extrae::write_counter_events(&path, tasks, want / (tasks * 180) + 1).expect("bench input");
    path
}

struct Row {
    name: &'static str,
    mb: f64,
    records: usize,
    /// Seconds at each core count of [`core_counts`].
    secs: Vec<f64>,
    peak: f64,
    model_mib: f64,
    /// What the model holds on the heap (`Trace::heap_bytes`): its
    /// records' columns, and the locations, names and offsets beside.
    heap_mib: f64,
}

/// 1, 2 and all cores (without repeats on small machines).
fn core_counts() -> Vec<usize> {
    let all = rayon::current_num_threads();
    let mut v = vec![1, 2, all];
    v.retain(|&n| n <= all);
    v.dedup();
    v
}

/// Bytes the model's record columns take (what a read must allocate).
fn model_bytes(t: &tapestry::Trace) -> u64 {
    (t.intervals.len() * 20
        + t.events.len() * 20
        + t.messages.len() * 40
        + t.counters.len() * 20
        + t.collectives.len() * 60) as u64
}

/// The least seconds of `runs` runs of `f` on `n` threads (what it
/// returns dropped after the clock stops).
fn best_secs<T: Send>(n: usize, runs: usize, f: impl Fn() -> T + Sync + Send) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("pool");
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t0 = Instant::now();
        let out = pool.install(&f);
        best = best.min(t0.elapsed().as_secs_f64());
        drop(black_box(out));
    }
    best
}

fn measure(name: &'static str, path: &Path) -> Row {
    let opts = ReadOptions::default();
    let mb = readers::input_size(path) as f64 / 1e6;
    // best of two: the first run may meet a cold page cache
    let secs: Vec<f64> = core_counts()
        .into_iter()
        .map(|n| best_secs(n, 2, || readers::load(path, &opts).expect("read")))
        .collect();
    // the peak from what the process holds with the earlier reads' freed
    // memory given back (else it counts what they left in the arenas)
    tapestry::memory::return_freed_memory();
    reset_peak();
    let t = match readers::load(path, &opts).expect("read") {
        readers::Loaded::Trace(t) => t,
        _ => panic!("not a trace"),
    };
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
        secs,
        peak,
        model_mib: model_bytes(&t) as f64 / (1 << 20) as f64,
        heap_mib: t.heap_bytes() as f64 / (1 << 20) as f64,
    }
}

/// The cache of the Paraver input (`tapestry convert`), written once.
fn cache_of(prv: &Path) -> PathBuf {
    let dir = tapestry::cache::cache_path_of(prv);
    if !tapestry::cache::is_fresh(&dir, prv) {
        let t = readers::read(prv, &ReadOptions::default()).expect("read");
        tapestry::cache::write(&t, &dir, &[prv]).expect("write the cache");
    }
    dir
}

fn main() {
    let prv = input(OutputFormat::Paraver, "gauss.prv");
    let cache = cache_of(&prv);
    let inputs = [
        ("paraver", prv),
        (
            "paraver-65536",
            wide_input(OutputFormat::Paraver, "bcast-65536.prv"),
        ),
        ("paraver-events", events_input("events.prv")),
        ("chrome-json", input(OutputFormat::ChromeJson, "gauss.json")),
        (
            "chrome-counters",
            counters_input(OutputFormat::ChromeJson, "counters.json"),
        ),
        (
            "chrome-65536",
            wide_input(OutputFormat::ChromeJson, "bcast-65536.json"),
        ),
        ("picl", input(OutputFormat::Picl, "gauss.trf")),
        (
            "picl-65536",
            wide_input(OutputFormat::Picl, "bcast-65536.trf"),
        ),
        ("cache", cache),
    ];
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("read");
        for (name, path) in &inputs {
            g.throughput(Throughput::Bytes(readers::input_size(path)));
            g.bench_function(*name, |b| {
                b.iter(|| black_box(readers::load(path, &ReadOptions::default()).expect("read")))
            });
        }
        g.finish();
    }
    let wide_json = wide_input(OutputFormat::ChromeJson, "bcast-65536.json");
    {
        let mut g = c.benchmark_group("split");
        g.throughput(Throughput::Bytes(readers::input_size(&wide_json)));
        g.bench_function("chrome-65536", |b| {
            b.iter(|| black_box(readers::chrome::split_events(&wide_json).expect("split")))
        });
        g.finish();
    }
    c.final_summary();

    let rows: Vec<Row> = inputs.iter().map(|(n, p)| measure(n, p)).collect();
    println!();
    print!("{:<15} {:>9}", "reader", "input MB");
    for n in core_counts() {
        print!("   MB/s {n:>2} core{}", if n == 1 { " " } else { "s" });
    }
    println!(
        "   seconds (all)   M records/s   records    peak RSS MiB   model MiB   model heap MiB"
    );
    for r in rows {
        print!("{:<15} {:>9.1}", r.name, r.mb);
        for s in &r.secs {
            print!(" {:>16.1}", r.mb / s);
        }
        let all = r.secs.last().copied().unwrap_or(f64::NAN);
        println!(
            " {:>15.3} {:>13.2} {:>10} {:>15.0} {:>11.0} {:>16.0}",
            all,
            r.records as f64 / 1e6 / all,
            r.records,
            r.peak,
            r.model_mib,
            r.heap_mib
        );
    }
    print!(
        "{:<15} {:>9.1}",
        "chrome-split",
        readers::input_size(&wide_json) as f64 / 1e6
    );
    for n in core_counts() {
        let best = best_secs(n, 3, || {
            readers::chrome::split_events(&wide_json).expect("split")
        });
        print!(
            " {:>16.1}",
            readers::input_size(&wide_json) as f64 / 1e6 / best
        );
    }
    println!("   (the splitter alone: events found, none parsed)");
}
