//! A parallel sort for records that come nearly in order.
//!
//! A reader hands its messages over almost sorted: by send time, with
//! local disorder (a PICL or OTF2 message is matched at its receive, a
//! Paraver file is sorted by its records' own times). rayon's parallel
//! quicksort partitions the whole slice on one thread before it splits the
//! work, so on such input it scaled 1.5× on 16 cores (Paraver's message
//! sort, 0.21 → 0.14 s). Here the slice is cut into chunks, one or more per
//! thread, each sorted on its own, and then only the places where two
//! sorted chunks disagree are sorted again: the suffix of a chunk above
//! the next chunk's first key with the prefix of the next chunk below the
//! chunk's last key. When the disorder is local these windows are small and
//! apart, and the slice is then sorted. When one is not local (a window
//! reaches a chunk's far end, or two windows meet) the whole slice is
//! sorted as before.

use rayon::prelude::*;

/// Below this many records one thread sorts the slice.
const MIN_PARALLEL: usize = 1 << 15;

/// Chunks per thread (a few each, so that the threads stay busy when
/// chunks differ in their disorder).
const CHUNKS_PER_THREAD: usize = 4;

/// Sorts `v` by `key` (unstable: equal keys in any order), in parallel, at
/// a cost near that of sorting each chunk alone when the disorder of `v`
/// is local.
pub fn par_sort_nearly_sorted_by_key<T, K, F>(v: &mut [T], key: F)
where
    T: Send + Sync,
    K: Ord + Send + Copy,
    F: Fn(&T) -> K + Sync,
{
    let threads = rayon::current_num_threads();
    let n = v.len();
    if threads < 2 || n < MIN_PARALLEL {
        // (rayon's quicksort on one thread: see below)
        v.par_sort_unstable_by_key(key);
        return;
    }
    let chunk = n
        .div_ceil(threads * CHUNKS_PER_THREAD)
        .max(MIN_PARALLEL / 4);
    sort_in_chunks(v, chunk, &key);
}

/// Sorts `v` in chunks of `chunk`, then the windows where they disagree;
/// or the whole, when the disorder is not local.
fn sort_in_chunks<T, K, F>(v: &mut [T], chunk: usize, key: &F)
where
    T: Send + Sync,
    K: Ord + Send + Copy,
    F: Fn(&T) -> K + Sync,
{
    if !maybe_local(v, chunk, key) {
        v.par_sort_unstable_by_key(key);
        return;
    }
    // (rayon's quicksort of a chunk: it takes a run with a few records out
    // of place in one pass, where the standard library's sorts it whole)
    v.par_chunks_mut(chunk)
        .for_each(|c| c.par_sort_unstable_by_key(key));
    match windows(v, chunk, key) {
        Some(w) => sort_windows(v, &w, key),
        None => v.par_sort_unstable_by_key(key),
    }
}

/// Whether the windows may be local: no chunk's largest key is above the
/// smallest of the chunk after the next (such a record belongs past the
/// next chunk's start, where the windows cannot take it). One pass over
/// the keys, before any chunk is sorted: records in no order at all go
/// to one sort of the whole at once.
fn maybe_local<T, K, F>(v: &[T], chunk: usize, key: &F) -> bool
where
    T: Send + Sync,
    K: Ord + Send + Copy,
    F: Fn(&T) -> K + Sync,
{
    let bounds: Vec<Option<(K, K)>> = v
        .par_chunks(chunk)
        .map(|c| {
            c.iter().map(key).fold(None, |b, k| match b {
                None => Some((k, k)),
                Some((lo, hi)) => Some((lo.min(k), hi.max(k))),
            })
        })
        .collect();
    bounds.windows(3).all(|w| match (&w[0], &w[2]) {
        (Some((_, hi)), Some((lo, _))) => hi <= lo,
        _ => true,
    })
}

/// The windows to sort again, one per boundary of chunks that disagree,
/// in order and apart: `None` when the disorder is not local (a window
/// reaching the far end of either chunk, or two windows meeting).
fn windows<T, K: Ord>(
    v: &[T],
    chunk: usize,
    key: &impl Fn(&T) -> K,
) -> Option<Vec<(usize, usize)>> {
    let n = v.len();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut at = chunk;
    while at < n {
        let (lo, hi) = (at - chunk, (at + chunk).min(n));
        let (last, first) = (key(&v[at - 1]), key(&v[at]));
        if last > first {
            // the suffix of the chunk before above the first key of the
            // chunk after, and the prefix of the chunk after below the
            // last key of the chunk before
            let left = lo + v[lo..at].partition_point(|x| key(x) <= first);
            let right = at + v[at..hi].partition_point(|x| key(x) < last);
            // a window from the chunk's start, or to its end, may hold
            // records that belong past it; and at least one record the
            // windows leave must lie between two windows (it bounds the
            // one before from above and the one after from below)
            let prev_end = out.last().map_or(0, |w| w.1);
            if left == lo || right == hi || left <= prev_end {
                return None;
            }
            out.push((left, right));
        }
        at += chunk;
    }
    Some(out)
}

/// Sorts each of `windows` (in order and apart) in parallel.
fn sort_windows<T: Send, K: Ord>(
    v: &mut [T],
    windows: &[(usize, usize)],
    key: &(impl Fn(&T) -> K + Sync),
) {
    let mut parts: Vec<&mut [T]> = Vec::with_capacity(windows.len());
    let mut rest = v;
    let mut base = 0;
    for &(a, b) in windows {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(a - base);
        let (w, tail) = tail.split_at_mut(b - a);
        parts.push(w);
        rest = tail;
        base = b;
    }
    parts
        .into_par_iter()
        .for_each(|w| w.par_sort_unstable_by_key(key));
}

/// Reverses `v` in place, on every thread: the first half's chunks
/// swapped with the second half's from its end.
pub fn par_reverse<T: Send>(v: &mut [T]) {
    const CHUNK: usize = 1 << 14;
    let n = v.len();
    let half = n / 2;
    let (front, back) = v.split_at_mut(half);
    // (the middle record of an odd count stays where it is)
    let back = &mut back[n - 2 * half..];
    front
        .par_chunks_mut(CHUNK)
        .zip(back.par_rchunks_mut(CHUNK))
        .for_each(|(a, b)| {
            for (x, y) in a.iter_mut().zip(b.iter_mut().rev()) {
                std::mem::swap(x, y);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    /// Any length, about the chunks' and odd, on 1 and 3 threads: the
    /// slice reversed as the standard library reverses it.
    #[test]
    fn reverses_in_parallel_as_in_one() {
        for &n in &[0usize, 1, 2, 3, 1000, (1 << 15) - 1, 1 << 15, 100_001] {
            let v: Vec<u32> = (0..n as u32).collect();
            let mut want = v.clone();
            want.reverse();
            for threads in [1, 3] {
                let mut got = v.clone();
                crate::test_pool::pool(threads).install(|| par_reverse(&mut got));
                assert!(got == want, "{n} records on {threads} threads");
            }
        }
    }

    fn check(mut v: Vec<(u64, u32)>, threads: usize) {
        let mut want = v.clone();
        want.sort_unstable();
        let pool = crate::test_pool::pool(threads);
        pool.install(|| par_sort_nearly_sorted_by_key(&mut v, |&x| x));
        assert_eq!(v, want);
    }

    /// Sorted, nearly sorted (local swaps, bursts out of order), far out
    /// of order (records moved across several chunks), reversed, random,
    /// equal keys, and sizes around the chunks', on 1 to 7 threads: the
    /// slice comes out sorted, as a plain sort gives it.
    #[test]
    fn sorts_whatever_the_disorder() {
        let mut rng = XorShift(0x005e_ed0f_5047);
        for &n in &[
            0usize,
            1,
            100,
            MIN_PARALLEL - 1,
            MIN_PARALLEL,
            100_003,
            300_000,
        ] {
            for kind in 0..7 {
                let mut v: Vec<(u64, u32)> =
                    (0..n as u64).map(|i| (i * 10, (i % 7) as u32)).collect();
                match kind {
                    0 => {}
                    1 => {
                        // local: neighbours within 40 swapped
                        for i in 0..n / 3 {
                            let a = (rng.next() as usize) % n.max(1);
                            let b = (a + (rng.next() as usize) % 40).min(n - 1);
                            v.swap(a, b);
                            let _ = i;
                        }
                    }
                    2 => {
                        // a few records thrown far away
                        for _ in 0..5.min(n) {
                            let a = (rng.next() as usize) % n;
                            let b = (rng.next() as usize) % n;
                            v.swap(a, b);
                        }
                    }
                    3 => v.reverse(),
                    4 => {
                        for x in &mut v {
                            x.0 = rng.next() % 1000;
                        }
                    }
                    5 => {
                        for x in &mut v {
                            x.0 = 7;
                        }
                    }
                    _ => {
                        // jitter: each key off by up to 2,000 (a message's
                        // latency against the order of receives)
                        for x in &mut v {
                            x.0 += rng.next() % 2_000;
                        }
                    }
                }
                for threads in [1, 2, 3, 7] {
                    check(v.clone(), threads);
                }
            }
        }
    }

    /// A record of one chunk that belongs past the start of the chunk
    /// after the next: the windows of the two boundaries would touch, and
    /// sorting them apart would leave it before a smaller record.
    #[test]
    fn a_record_past_the_next_chunk_is_not_left_behind() {
        let c = 10usize;
        // chunk 0: 0..8 and 150; chunk 1: 100..140 and 160..200 (nothing
        // between 145 and 150); chunk 2: 145, then 300..
        let mut v: Vec<u64> = (0..9).collect();
        v.push(150);
        v.extend([100, 110, 120, 130, 140, 160, 170, 180, 190, 200]);
        v.push(145);
        v.extend((0..9).map(|i| 300 + i));
        assert_eq!(v.len(), 3 * c);
        // the windows would be 9..15 and 15..21
        assert!(windows(&v, c, &|&x| x).is_none());
        let mut want = v.clone();
        want.sort_unstable();
        sort_in_chunks(&mut v, c, &|&x| x);
        assert_eq!(v, want);
    }

    /// Local disorder is repaired in windows, not by a sort of the whole.
    #[test]
    fn local_disorder_takes_windows() {
        let n = 400_000usize;
        let mut rng = XorShift(42);
        let mut v: Vec<u64> = (0..n as u64).map(|i| i * 10 + rng.next() % 200).collect();
        let chunk = n / 8;
        for c in v.chunks_mut(chunk) {
            c.sort_unstable();
        }
        let w = windows(&v, chunk, &|&x| x).expect("local disorder");
        assert_eq!(w.len(), 7);
        assert!(w.iter().all(|&(a, b)| b - a < 100), "{w:?}");
        // a record moved across a whole chunk: no windows
        v.swap(10, 3 * chunk);
        for c in v.chunks_mut(chunk) {
            c.sort_unstable();
        }
        assert!(windows(&v, chunk, &|&x| x).is_none());
    }
}
