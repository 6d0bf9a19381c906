//! `memory::share_arenas`: the threads of a process share a few malloc
//! arenas (its own process: arenas are made once and never go).

mod common;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn threads_share_a_few_arenas() {
    if common::arena_limit_set_by_user() {
        return;
    }
    tapestry::memory::share_arenas(None);
    let (heaps, xml) = common::arenas_after_16_threads();
    assert!(heaps >= 1, "{xml}");
    assert!(
        heaps <= tapestry::memory::ARENAS as usize,
        "{heaps} arenas: {xml}"
    );
}
