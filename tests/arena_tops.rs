//! `memory::share_arenas` for a pool of more than `TOPS_FROM_THREADS`
//! threads: once memory was given back, the free top of a thread's arena
//! goes back to the system as its blocks are freed (its own process:
//! glibc's thresholds are the process's, and are set once).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_threads_free_top_goes_back_once_memory_was_given_back() {
    use tapestry::memory;
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some()
        || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
        || tunables.contains("threshold")
    {
        return;
    }
    // SAFETY: no other thread of this process reads the environment yet
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "16") };
    memory::share_arenas(None);
    // glibc's thresholds raised as a read raises them: a large block of
    // its own mapping freed (mapping threshold 16 MiB, trim 32 MiB)
    let big = std::hint::black_box(vec![1u8; 16 << 20]);
    drop(big);
    let rss = || memory::resident_kib().map_or(0, |m| m.0);
    // a thread fills 8 MiB of its arena in blocks of 128 KiB and frees
    // them: all but the first (they join the arena's top), then the first
    // after memory was given back (or not)
    let churn = |give_back: bool| {
        std::thread::spawn(move || {
            let mut blocks: Vec<Vec<u8>> = (0..64).map(|k| vec![k as u8 | 1; 128 << 10]).collect();
            let first = blocks.remove(0);
            drop(std::hint::black_box(blocks));
            if give_back {
                memory::return_freed_memory();
            }
            drop(std::hint::black_box(first));
        })
        .join()
        .unwrap();
    };
    let base = rss();
    churn(false);
    let kept = rss();
    churn(true);
    let after = rss();
    // glibc alone keeps the top (malloc_trim does not shrink a thread's
    // arena's top, and the trim threshold had risen to 32 MiB)
    assert!(kept >= base + (6 << 10), "{base} {kept} {after} KiB");
    assert!(after + (6 << 10) <= kept, "{base} {kept} {after} KiB");
}
