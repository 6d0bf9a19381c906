//! Random access into gzip (`readers::gzip_index`): building a file's
//! index on 1 and all threads, and reading its bytes through it, against
//! decompressing it from the start with zlib (`flate2`, the whole-file
//! path).
//!
//! The input is a Chrome JSON broadcast (P = 1,024, about 1.2·10^6 state
//! intervals, 210 MB) written by `synth` as gzip (level 2), generated once
//! into `target/bench-data/`. Criterion reports decompressed bytes per
//! second. `shares/N` is what each of N processes of `reduce` does before
//! it parses: the index built together (N processes as threads of this
//! one, through `ThreadExchange`), then its 1/N of the bytes read through
//! it; the time is the slowest process's, so on a machine with N free
//! cores it falls as 1/N, where every process decompressing the whole file
//! (the path before the index) stays at `zlib-whole`'s.
//!
//! Run: `cargo bench --bench gzip_index`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, Throughput};

mod common;
use tapestry::readers::exchange::ThreadExchange;
use tapestry::readers::gzip_index::{self, at::GzAt, at::ReadAt};

fn input() -> PathBuf {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/gzip-bcast-1024x400.json.gz");
    common::synth(&p, &["bcast", "-p", "1024", "--reps", "400"]);
    p
}

/// Reads `[from, to)` of `src` in 1 MiB reads: the bytes read.
fn read_range(src: &dyn ReadAt, from: u64, to: u64) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let k = buf.len().min((to - at) as usize);
        let n = src.read_at(&mut buf[..k], at).expect("a read");
        if n == 0 {
            break;
        }
        black_box(&buf[..n]);
        at += n as u64;
    }
    at - from
}

fn main() {
    let p = input();
    let index = gzip_index::build(&p).expect("reads").expect("an index");
    let len = index.len;
    let compressed = std::fs::metadata(&p).expect("the input").len();
    eprintln!(
        "{}: {:.1} MB compressed, {:.1} MB of JSON, {} checkpoints ({:.1} MiB of windows)",
        p.display(),
        compressed as f64 / 1e6,
        len as f64 / 1e6,
        index.checkpoints.len(),
        index.checkpoints.len() as f64 * 32.0 / 1024.0
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .measurement_time(std::time::Duration::from_secs(8));
    let mut g = c.benchmark_group("gzip-index");
    g.throughput(Throughput::Bytes(len));
    g.bench_function("zlib-whole", |b| {
        b.iter(|| {
            let f = std::fs::File::open(&p).expect("the input");
            let mut d = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f));
            std::io::copy(&mut d, &mut std::io::sink()).expect("decompresses")
        })
    });
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        g.bench_function(format!("build/{threads}-threads"), |b| {
            b.iter(|| pool.install(|| gzip_index::build(&p).expect("reads").expect("an index")))
        });
    }
    let at = GzAt::new(&p, Arc::new(index.clone()));
    g.bench_function("read-through-index", |b| b.iter(|| read_range(&at, 0, len)));
    for n in [1usize, 2, 4] {
        g.bench_function(format!("shares/{n}"), |b| {
            b.iter(|| {
                let ends = ThreadExchange::group(n);
                std::thread::scope(|s| {
                    let hs: Vec<_> = ends
                        .into_iter()
                        .map(|mut ex| {
                            let p = &p;
                            s.spawn(move || {
                                let k = tapestry::readers::exchange::Exchange::rank(&ex) as u64;
                                let index = gzip_index::build_shared(p, &mut ex, None)
                                    .expect("reads")
                                    .expect("an index");
                                let len = index.len;
                                let at = GzAt::new(p, Arc::new(index));
                                read_range(&at, len * k / n as u64, len * (k + 1) / n as u64)
                            })
                        })
                        .collect();
                    hs.into_iter()
                        .map(|h| h.join().expect("a share"))
                        .sum::<u64>()
                })
            })
        });
    }
    g.finish();
    c.final_summary();
}
