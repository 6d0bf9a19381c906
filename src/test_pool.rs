//! A pool of a given number of threads for the unit tests that check a
//! result does not depend on how many threads compute it.

/// A rayon pool of `threads` threads (run work in it with `install`).
pub(crate) fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a test's thread pool")
}
