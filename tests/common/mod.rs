//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod extrae;

/// `../shared/traces/<rel>` beside the project root.
pub fn shared_trace(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/traces")
        .join(rel)
}

/// Runs the `tapestry` binary; returns (exit code, stdout, stderr).
pub fn tapestry(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tapestry"))
        .args(args)
        .output()
        .expect("the tapestry binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes `content` to `name` in `dir` and returns the path.
pub fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// [`tapestry`] with extra environment variables.
pub fn tapestry_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tapestry"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the tapestry binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A PICL file with what hand-made and damaged traces hold, written in
/// time order like a merged PICL trace: processors with and without a
/// trace start, several trace stops, records after the last stop, sends
/// nested in receives that end out of order, ends without a begin, begins
/// never ended, equal times, other events, messages to processors that do
/// not exist.
pub fn messy_picl(seed: u64, procs: u32, steps: u32) -> String {
    let mut x = seed;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    // (time in ns, processor, order on the processor, line)
    let mut lines: Vec<(u64, u32, u32, String)> = Vec::new();
    for p in 0..procs {
        let mut t = rnd(3);
        let mut k = 0u32;
        let mut push = |t: u64, text: String| {
            lines.push((t, p, k, text));
            k += 1;
        };
        let sec = |t: u64| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000);
        if rnd(10) < 8 {
            push(t, format!("-3 -901 {} {p} {p} 0", sec(t)));
        }
        for _ in 0..steps {
            t += rnd(3) * 1000;
            let peer = rnd(procs as u64 + 1);
            let tag = rnd(3);
            let bytes = [8, 64, 4096][rnd(3) as usize];
            let line = match rnd(11) {
                0..=2 => format!("-3 -21 {} {p} {p} 4 2 {bytes} {tag} {peer} {peer}", sec(t)),
                3..=4 => format!("-4 -21 {} {p} {p} 0", sec(t)),
                5 => format!("-3 -52 {} {p} {p} 0", sec(t)),
                6..=7 => format!("-4 -52 {} {p} {p} 4 2 {bytes} {tag} {peer} {peer}", sec(t)),
                8 => format!("-3 -10 {} {p} {p} 0", sec(t)),
                9 => format!("7 3 {} {p} {p} 0", sec(t)),
                _ if rnd(4) == 0 => format!("-4 -901 {} {p} {p} 0", sec(t)),
                _ => format!("-4 -10 {} {p} {p} 0", sec(t)),
            };
            push(t, line);
        }
        if rnd(3) > 0 {
            t += 1000;
            push(t, format!("-4 -901 {} {p} {p} 0", sec(t)));
        }
    }
    lines.sort_by_key(|l| (l.0, l.1, l.2));
    lines.into_iter().map(|l| l.3 + "\n").collect()
}

/// How many malloc arenas (glibc's heaps) this process has once 16
/// threads have allocated at once, each holding its blocks until all have
/// (without a limit each would get an arena of its own), with glibc's
/// `malloc_info` XML for a failing test to show. Arenas are made once and
/// never go: a test that counts them has a process of its own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn arenas_after_16_threads() -> (usize, String) {
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
    let dir = tempfile::tempdir().unwrap();
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
    (xml.matches("<heap nr=").count(), xml)
}

/// Whether the user set glibc's limit on malloc arenas (it then stays the
/// user's, and the arena tests have nothing to check).
pub fn arena_limit_set_by_user() -> bool {
    std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"))
}
