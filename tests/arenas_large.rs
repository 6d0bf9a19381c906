//! `memory::share_arenas` of a large input: gives each reading thread a
//! malloc arena of its own (its own process: arenas are made once and
//! never go).

mod common;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_large_input_gets_an_arena_a_thread() {
    if common::arena_limit_set_by_user() {
        return;
    }
    // SAFETY: the only test of this process; no other thread reads the
    // environment meanwhile
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "16") };
    assert_eq!(tapestry::memory::pool_threads(), 16);
    let dir = tempfile::tempdir().unwrap();
    // a sparse file: its size without its bytes
    let trace = dir.path().join("large.prv");
    std::fs::File::create(&trace)
        .unwrap()
        .set_len(tapestry::memory::LARGE_INPUT)
        .unwrap();
    tapestry::memory::share_arenas(Some(&trace));
    let (heaps, xml) = common::arenas_after_16_threads();
    assert!(
        heaps > tapestry::memory::ARENAS as usize && heaps <= 17,
        "{heaps} arenas: {xml}"
    );
}
