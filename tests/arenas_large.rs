//! `memory::arenas_for_input`: a large input gives each reading thread a
//! malloc arena of its own (its own process: arenas are made once and
//! never go).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_large_input_gets_an_arena_a_thread() {
    // a limit set by the user stays the user's
    if std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"))
    {
        return;
    }
    // SAFETY: the only test of this process; no other thread reads the
    // environment meanwhile
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "16") };
    assert_eq!(tapestry::memory::pool_threads(), 16);
    tapestry::memory::share_arenas();
    let dir = tempfile::tempdir().unwrap();
    // a sparse file: its size without its bytes
    let trace = dir.path().join("large.prv");
    std::fs::File::create(&trace)
        .unwrap()
        .set_len(tapestry::memory::LARGE_INPUT)
        .unwrap();
    tapestry::memory::arenas_for_input(&trace);
    // 16 threads allocating at once, each holding its blocks until all
    // have allocated: each gets an arena of its own
    let barrier = std::sync::Barrier::new(16);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                let held: Vec<Vec<u8>> = (0..64).map(|k| vec![k as u8; 4096]).collect();
                barrier.wait();
                std::hint::black_box(&held);
                barrier.wait();
            });
        }
    });
    let path = dir.path().join("malloc_info.xml");
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a file opened for writing, written by glibc, closed
    unsafe {
        let f = libc::fopen(c_path.as_ptr(), c"w".as_ptr());
        assert!(!f.is_null());
        assert_eq!(libc::malloc_info(0, f), 0);
        libc::fclose(f);
    }
    let xml = std::fs::read_to_string(&path).unwrap();
    let heaps = xml.matches("<heap nr=").count();
    assert!(
        heaps > tapestry::memory::ARENAS as usize && heaps <= 17,
        "{heaps} arenas: {xml}"
    );
}
