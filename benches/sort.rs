//! The message sort of the model's build: rayon's parallel quicksort
//! against [`par_sort_nearly_sorted_by_key`] on 4 M records of 40 bytes
//! (a message: send and receive time, sender, receiver, bytes, tag), on
//! one thread and on all, for three orders a reader hands over:
//!
//! * `jitter`: by send time with each record off by up to 64 places (a
//!   Paraver file, sorted by its records' own times);
//! * `by-receive`: sorted by receive time, the latency of a message
//!   random up to 2,000 records' worth of time (PICL and OTF2 match a
//!   message at its receive);
//! * `shuffled`: no order (the windows do not apply: one sort of the
//!   whole after one pass over the keys).
//!
//! Run: `cargo bench --bench sort`. A table at the end gives M records/s.

use std::hint::black_box;
use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput};
use rayon::prelude::*;
use tapestry::model::nearly_sorted::par_sort_nearly_sorted_by_key;

const N: usize = 4 << 20;

#[derive(Clone, Copy)]
#[allow(dead_code)] // read through the key only
struct Msg {
    send: u64,
    recv: u64,
    src: u32,
    dst: u32,
    bytes: u64,
    tag: i64,
}

fn key(m: &Msg) -> (u64, u64, u32, u32, u64, i64) {
    (m.send, m.recv, m.src, m.dst, m.bytes, m.tag)
}

/// xorshift64*
fn rng(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn input(order: &str) -> Vec<Msg> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut v: Vec<Msg> = (0..N as u64)
        .map(|i| {
            let lat = rng(&mut s) % 2_000;
            Msg {
                send: i * 100,
                recv: i * 100 + lat * 100,
                src: (i % 4096) as u32,
                dst: ((i * 7) % 4096) as u32,
                bytes: 4096,
                tag: (i % 5) as i64,
            }
        })
        .collect();
    match order {
        "jitter" => {
            for i in 0..N {
                let j = (i + (rng(&mut s) % 64) as usize).min(N - 1);
                v.swap(i, j);
            }
        }
        "by-receive" => v.sort_unstable_by_key(|m| (m.recv, m.send)),
        _ => {
            for i in (1..N).rev() {
                v.swap(i, (rng(&mut s) % (i as u64 + 1)) as usize);
            }
        }
    }
    v
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
}

fn main() {
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let all = rayon::current_num_threads();
    let mut rows = Vec::new();
    for order in ["jitter", "by-receive", "shuffled"] {
        let v = input(order);
        let mut g = c.benchmark_group(format!("sort/{order}"));
        g.throughput(Throughput::Elements(N as u64));
        for threads in [1, all] {
            let p = pool(threads);
            g.bench_function(format!("quicksort/{threads}"), |b| {
                b.iter_batched_ref(
                    || v.clone(),
                    |w| p.install(|| w.par_sort_unstable_by_key(key)),
                    BatchSize::LargeInput,
                )
            });
            g.bench_function(format!("nearly-sorted/{threads}"), |b| {
                b.iter_batched_ref(
                    || v.clone(),
                    |w| p.install(|| par_sort_nearly_sorted_by_key(w, key)),
                    BatchSize::LargeInput,
                )
            });
            // the table's figures: best of 5
            let best = |f: &dyn Fn(&mut Vec<Msg>)| {
                (0..5)
                    .map(|_| {
                        let mut w = v.clone();
                        let t0 = Instant::now();
                        f(&mut w);
                        black_box(&w);
                        t0.elapsed().as_secs_f64()
                    })
                    .fold(f64::INFINITY, f64::min)
            };
            let q = best(&|w| p.install(|| w.par_sort_unstable_by_key(key)));
            let ns = best(&|w| p.install(|| par_sort_nearly_sorted_by_key(w, key)));
            rows.push((order, threads, q, ns));
        }
        g.finish();
    }
    println!("\nsort of {N} records of 40 bytes (M records/s, best of 5)");
    println!("| order | threads | quicksort | nearly sorted | ratio |");
    println!("|---|---|---|---|---|");
    for (order, threads, q, ns) in rows {
        let m = |t: f64| N as f64 / t / 1e6;
        println!(
            "| {order} | {threads} | {:.1} | {:.1} | {:.2}× |",
            m(q),
            m(ns),
            q / ns
        );
    }
}
