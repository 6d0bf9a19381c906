//! The code taken out of the process's resident memory
//! (`memory::unmap_code`, which every read calls): the executable's pages
//! leave, and come back as they run. A process of its own: no other test
//! runs code beside it.

use tapestry::readers::{self, ReadOptions};
use tapestry::synth::{self, MachineModel, OutputFormat, SynthConfig, Workload};

/// The resident KiB of the file's pages in the mappings of this test's
/// executable that cannot be written (its code and read-only data).
fn resident_own_code_kib() -> u64 {
    let exe = std::fs::read_link("/proc/self/exe").expect("exe");
    let exe = exe.to_string_lossy().into_owned();
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let (mut ours, mut kib) = (false, 0);
    for line in smaps.lines() {
        let mut f = line.split_whitespace();
        let first = f.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            let perms = f.next().unwrap_or("");
            ours = line.trim_end().ends_with(exe.as_str()) && !perms.contains('w');
        } else if (first == "Rss:" || first == "Anonymous:") && ours {
            let v = f.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            // (the pages the process wrote are its own, not the file's)
            if first == "Rss:" {
                kib += v;
            } else {
                kib -= v.min(kib);
            }
        }
    }
    kib
}

#[test]
fn code_leaves_and_comes_back() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.prv");
    let cfg = SynthConfig {
        workload: Workload::Broadcast {
            bytes: 4096,
            reps: 20,
            work: 1e-4,
        },
        procs: 64,
        procs_per_node: 4,
        model: MachineModel::default(),
        seed: 7,
        counters: 0,
    };
    synth::write(&cfg, OutputFormat::Paraver, &path, None).unwrap();
    // a read takes the code out as it starts and as its model is built
    let first = readers::read(&path, &ReadOptions::default()).unwrap();
    let before = resident_own_code_kib();
    tapestry::memory::unmap_code();
    let after = resident_own_code_kib();
    eprintln!("own code resident: {before} KiB, then {after} KiB");
    assert!(
        after < before / 2,
        "the executable's code and read-only data resident: {after} KiB after, {before} KiB before"
    );
    // and runs as before, its pages back
    let again = readers::read(&path, &ReadOptions::default()).unwrap();
    assert_eq!(again.intervals.len(), first.intervals.len());
    assert_eq!(again.messages.len(), first.messages.len());
    assert!(!first.intervals.is_empty());
    assert!(resident_own_code_kib() > after);
}
