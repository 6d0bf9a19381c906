//! OTF2 read throughput against `otf2-print > /dev/null` on the same archive.
//!
//! The archive (64 ranks exchanging messages in a ring, about 4.6 M events)
//! is written once into `target/bench-data/otf2-ring/` by the official OTF2
//! Python writer (`tests/data/write_otf2_large.py`, Debian `python3-otf2`).
//! Criterion times the reader in this process, all cores: tapestry's own
//! decoder (the in-order read every Score-P archive gets, and the general
//! reader an archive out of time order gets) and the OTF2 library's. A
//! table then times `tapestry info` (the binary: decoded natively, in
//! process; through the library in a helper process with
//! `TAPESTRY_OTF2_LIBRARY=1`, and in process with
//! `TAPESTRY_OTF2_IN_PROCESS=1` too) at 1, 2 and all cores against
//! `otf2-print > /dev/null` on one core, best of 3, and `tapestry info
//! --stream` (reduced while read, no model kept) with its peak memory.
//! Run: `cargo bench --features otf2 --bench otf2`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use tapestry::readers::{self, ReadOptions};

const RANKS: u32 = 64;
const ITERATIONS: u32 = 8000;

fn archive() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/bench-data/otf2-ring");
    let anchor = dir.join("traces.otf2");
    if !anchor.is_file() {
        // written beside, then renamed: an interrupted run leaves no half archive
        let tmp = root.join("target/bench-data/otf2-ring.tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(dir.parent().expect("parent")).expect("bench data directory");
        let ok = Command::new("/usr/bin/python3")
            .arg(root.join("tests/data/write_otf2_large.py"))
            .arg(&tmp)
            .args([RANKS.to_string(), ITERATIONS.to_string()])
            .status()
            .expect("/usr/bin/python3 with the otf2 module (python3-otf2)");
        assert!(ok.success(), "writing the bench archive failed");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir).expect("moving the bench archive into place");
    }
    anchor
}

fn otf2_print_seconds(anchor: &Path) -> f64 {
    let t0 = Instant::now();
    let ok = Command::new("otf2-print")
        .arg(anchor)
        .stdout(Stdio::null())
        .status()
        .expect("otf2-print (otf2-tools)");
    assert!(ok.success());
    t0.elapsed().as_secs_f64()
}

fn main() {
    let anchor = archive();
    let bytes = readers::input_size(&anchor);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("otf2");
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("tapestry read", |b| {
            b.iter(|| black_box(readers::read(&anchor, &ReadOptions::default()).expect("read")))
        });
        // what an archive not in time order costs: every region kept,
        // sorted and nested (the in-order read above is the default)
        g.bench_function("tapestry read, general reader", |b| {
            b.iter(|| {
                black_box(
                    readers::otf2::read_general(&anchor, &ReadOptions::default()).expect("read"),
                )
            })
        });
        // the same archive decoded by the OTF2 library
        g.bench_function("tapestry read, OTF2 library", |b| {
            b.iter(|| {
                black_box(
                    readers::otf2::read_library(&anchor, &ReadOptions::default()).expect("read"),
                )
            })
        });
        g.finish();
    }
    c.final_summary();

    let events = (RANKS as u64) * (ITERATIONS as u64) * 9;
    let best = |f: &dyn Fn() -> f64| (0..3).map(|_| f()).fold(f64::INFINITY, f64::min);
    let print = best(&|| otf2_print_seconds(&anchor));
    println!();
    println!(
        "archive: {:.1} MB, {} events ({} ranks)",
        bytes as f64 / 1e6,
        events,
        RANKS
    );
    println!("reader                            cores  seconds   M events/s   MB/s   × otf2-print");
    let row = |name: &str, cores: usize, s: f64| {
        println!(
            "{name:<33} {cores:>5} {s:>8.3} {:>12.2} {:>6.1} {:>13.2}",
            events as f64 / 1e6 / s,
            bytes as f64 / 1e6 / s,
            print / s
        )
    };
    row("otf2-print > /dev/null", 1, print);
    let all = rayon::current_num_threads();
    let mut cores = vec![1, 2, all];
    cores.retain(|&k| k <= all);
    cores.dedup();
    for &k in &cores {
        for (name, library, in_process, stream) in [
            ("tapestry info (native)", false, false, false),
            ("tapestry info (library, helper)", true, false, false),
            ("tapestry info (library, in proc.)", true, true, false),
            ("tapestry info --stream", false, false, true),
        ] {
            let peak = std::cell::Cell::new(String::new());
            let s = best(&|| {
                let mut c = Command::new(env!("CARGO_BIN_EXE_tapestry"));
                c.args(["info", anchor.to_str().expect("utf-8 path")])
                    .env("RAYON_NUM_THREADS", k.to_string())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                if library {
                    c.env("TAPESTRY_OTF2_LIBRARY", "1");
                }
                if in_process {
                    c.env("TAPESTRY_OTF2_IN_PROCESS", "1");
                }
                if stream {
                    c.arg("--stream");
                }
                let t0 = Instant::now();
                let out = c.output().expect("tapestry runs");
                let s = t0.elapsed().as_secs_f64();
                assert!(out.status.success());
                let err = String::from_utf8_lossy(&out.stderr);
                if let Some(p) = err.split("peak memory ").nth(1) {
                    peak.set(p.split(" MiB").next().unwrap_or("").to_string());
                }
                s
            });
            row(name, k, s);
            let p = peak.take();
            if !p.is_empty() {
                println!("{:<33} {k:>5} peak memory {p} MiB", "");
            }
        }
    }
}
