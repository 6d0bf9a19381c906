//! OTF2 archives the OTF2 library reads (those the native decoder leaves
//! to it, or all with `TAPESTRY_OTF2_LIBRARY`) are read in a helper
//! process (`tapestry __read-otf2`): the model is the in-process one, and
//! a helper that crashes (as the OTF2 library does on some damaged
//! archives) is an error, not an abort. Archives the native decoder reads
//! need no helper.
#![cfg(feature = "otf2")]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::shared_trace;
use tapestry::readers::{self, ReadOptions};

#[test]
fn the_helper_gives_the_in_process_model_and_its_crash_is_an_error() {
    let anchor = shared_trace("ping-pong-otf2-papi/traces.otf2");
    // every archive through the library (this test binary's tests all want it)
    tapestry::readers::otf2::force_library(true);
    let direct = readers::read(&anchor, &ReadOptions::default()).unwrap();
    // a helper that crashes when asked to, else the real one
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("helper.sh");
    let flag = dir.path().join("crash");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ -e '{}' ]; then kill -ABRT $$; fi\nexec '{}' \"$@\"\n",
            flag.display(),
            env!("CARGO_BIN_EXE_tapestry")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    readers::OTF2_HELPER.set(script).unwrap();

    let isolated = readers::read(&anchor, &ReadOptions::default()).unwrap();
    let json = |t: &tapestry::Trace| serde_json::to_value(t).unwrap();
    assert_eq!(json(&direct), json(&isolated));

    // class overrides apply as in process
    let opts = ReadOptions {
        classes: tapestry::model::ClassOverride {
            busy: Some(vec!["MPI_*".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    let a = readers::read(&anchor, &opts).unwrap();
    std::fs::write(&flag, "").unwrap();
    let err = readers::read(&anchor, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("crashed") && err.contains("SIGABRT"), "{err}");
    std::fs::remove_file(&flag).unwrap();
    assert_eq!(a.states.classes(), {
        let mut d = direct.clone();
        d.reclassify(&opts.classes).unwrap();
        d.states.classes()
    });
    // the helper's own errors come back as they were
    let bad = dir.path().join("x.otf2");
    std::fs::write(&bad, b"\x03\x42OTF2\x00\x03").unwrap();
    let err = readers::read(&bad, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("x.otf2"), "{err}");
    assert!(!err.contains("crashed"), "{err}");
}

/// `info --stats` on an archive read through the helper names the
/// helper's own phases (written beside its cache and added to the
/// reading process's), not only the time it took as a whole.
#[test]
fn the_helpers_phases_reach_info_stats() {
    let anchor = shared_trace("ping-pong-otf2-papi/traces.otf2");
    let (code, out, err) = common::tapestry_env(
        &["info", "--stats", anchor.to_str().unwrap()],
        &[("TAPESTRY_OTF2_LIBRARY", "1")],
    );
    assert_eq!(code, 0, "{err}");
    let text = out + &err;
    for phase in [
        "otf2: helper process (read, cache written)",
        "otf2: events read, regions flattened (all threads)",
        "otf2: cache written (one thread)",
        "otf2: cache read back (one thread)",
    ] {
        assert!(text.contains(phase), "{phase} missing from: {text}");
    }
    // decoded natively: in this process, no helper
    let (code, out, err) = common::tapestry(&["info", "--stats", anchor.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = out + &err;
    assert!(
        text.contains("otf2: events read, regions flattened (all threads)"),
        "{text}"
    );
    assert!(!text.contains("helper"), "{text}");
}

/// The helper hands its cache over in a directory of its own under
/// `TMPDIR` when that is set (else `/dev/shm` or the temporary directory),
/// removed once read back; directories left there by tapestry processes
/// that no longer run (killed before they cleaned up) are removed by the
/// next read, and nothing else is touched.
#[test]
fn the_hand_over_leaves_nothing_and_sweeps_dead_processes_dirs() {
    let anchor = shared_trace("ping-pong-otf2-papi/traces.otf2");
    let base = tempfile::tempdir().unwrap();
    // a process that has ended: its id names no running process
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = base.path().join(format!("tapestry-otf2-{dead}-0"));
    std::fs::create_dir_all(stale.join("trace.tapestry")).unwrap();
    std::fs::write(stale.join("trace.tapestry/intervals.arrow"), b"x").unwrap();
    // a running process's (this test's), other names, a plain file
    let running = base
        .path()
        .join(format!("tapestry-otf2-{}-3", std::process::id()));
    let kept = [
        running.clone(),
        base.path().join("tapestry-otf2-x-0"),
        base.path().join("tapestry-otf2-"),
        base.path().join("unrelated"),
    ];
    for d in &kept {
        std::fs::create_dir_all(d).unwrap();
    }
    let file = base.path().join(format!("tapestry-otf2-{dead}-1"));
    std::fs::write(&file, b"not a directory").unwrap();

    let tmp = base.path().to_str().unwrap();
    let (code, out, err) = common::tapestry_env(
        &["info", anchor.to_str().unwrap()],
        &[("TMPDIR", tmp), ("TAPESTRY_OTF2_LIBRARY", "1")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("OTF2"), "{out}");
    assert!(!stale.exists(), "the dead process's directory is removed");
    for d in &kept {
        assert!(d.is_dir(), "{} is kept", d.display());
    }
    assert!(file.is_file(), "a plain file is kept");
    let mut left: Vec<String> = std::fs::read_dir(base.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected: Vec<String> = kept
        .iter()
        .chain([&file])
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    assert_eq!(left, expected, "the helper's own directory is removed");
}
