//! A fuzz harness on stable Rust: mutates the real traces in
//! `../shared/traces` and synthetic inputs of every format (Paraver with
//! its `.pcf`, Chrome JSON, PICL, OTF2 definitions and event files, TAU
//! profiles, line-profile tables, `.npy` volumes and access tensors, access
//! tables, Boxfish tables) and runs every reader — then `moments`, the busy
//! field and the state selection on whatever reads — in-process, under a
//! memory cap, for a bounded time. A Chrome, Paraver or PICL trace that
//! reads is also streamed (`--stream`'s readers): when the stream takes it
//! too, its busy field and message count must equal the in-memory ones; a
//! Chrome trace's two-pass read must build the one-pass read's model, and
//! three processes sharing it as `reduce` does must give the stream's field.
//!
//! Mutations: byte flips, truncation at every 1/16, duplicated, removed and
//! swapped lines, huge, negative and non-finite numbers (`1e308`, `NaN`,
//! `18446744073709551616`), deep nesting, invalid UTF-8, CR and CRLF line
//! ends, a byte-order mark, gzip wrappers (whole and cut short), splices.
//!
//! What counts as a failure: a panic, an allocation past the cap (the
//! process aborts: the input is in `target/fuzz-current/` to keep), a run
//! of one input longer than [`HANG`] (the watchdog aborts, same), or more
//! than [`PEAK`] bytes allocated at once by one input. Failing inputs are
//! written to `tests/data/fuzz/` and replayed by every later run before any
//! mutation: keep them there, committed, as regression files.
//!
//! Time: `TAPESTRY_FUZZ_SECONDS` (default 60; CI runs the default). Seed:
//! `TAPESTRY_FUZZ_SEED` (default: the time; printed, so a run can be
//! repeated). `TAPESTRY_FUZZ_VERBOSE=1` prints every input before it runs.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tapestry::analysis::stream::{StreamReducer, StreamSpec};
use tapestry::analysis::{fields, moments};
use tapestry::model::{Format, Trace};
use tapestry::readers::{self, Loaded, ReadOptions};

/// The most bytes live at once in this process; past it allocation fails
/// (and the process aborts with the input saved).
const CAP: usize = 3 << 30;
/// The most bytes one input may have allocated at once.
const PEAK: usize = 1 << 30;
/// The largest mutated input (bytes).
const MAX_INPUT: usize = 16 << 20;
/// The longest one input may take.
const HANG: Duration = Duration::from_secs(30);

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static HIGH: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        if now > CAP {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        HIGH.fetch_max(now, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let grow = new - l.size();
            let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
            if now > CAP {
                LIVE.fetch_sub(grow, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
            HIGH.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        // SAFETY: forwarded.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// xorshift64*: deterministic for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// An input: its files (name, bytes) in one directory, and the one to open
/// (a file, or "." for the directory itself).
#[derive(Clone)]
struct Case {
    name: String,
    files: Vec<(String, Vec<u8>)>,
    open: String,
    /// The file the mutations change.
    target: String,
}

fn shared(rel: &str) -> Option<Vec<u8>> {
    std::fs::read(common::shared_trace(rel)).ok()
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(b).read_to_end(&mut out);
    out
}

fn one(name: &str, file: &str, bytes: Vec<u8>) -> Case {
    Case {
        name: name.into(),
        files: vec![(file.into(), bytes)],
        open: file.into(),
        target: file.into(),
    }
}

const T000: &str = "3 templated_functions_MULTI_TIME\n# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name><value>TIME</value></attribute></metadata>\n\"main\" 1 2 10 100 0 GROUP=\"TAU_DEFAULT\"\n\"compute\" 4 0 80 80 0 GROUP=\"TAU_USER\"\n\"main => compute\" 4 0 80 80 0 GROUP=\"TAU_CALLPATH\"\n0 aggregates\n0 userevents\n";

/// The seeds: real traces and synthetic inputs of every format.
fn seeds(dir: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    for f in [
        "flow_simple.json",
        "simple_trace.json",
        "tall_trace.json",
        "trivial_trace.json",
    ] {
        if let Some(b) = shared(&format!("chrome/{f}")) {
            out.push(one(&format!("chrome/{f}"), f, b));
        }
    }
    if let (Some(prv), Some(pcf)) = (
        shared("paraver-qsort/qsort_beo3.prv"),
        shared("paraver-qsort/qsort_beo3.pcf"),
    ) {
        let files = vec![("q.prv".to_string(), prv), ("q.pcf".to_string(), pcf)];
        out.push(Case {
            name: "paraver-qsort".into(),
            files: files.clone(),
            open: "q.prv".into(),
            target: "q.prv".into(),
        });
        out.push(Case {
            name: "paraver-qsort .pcf".into(),
            files,
            open: "q.prv".into(),
            target: "q.pcf".into(),
        });
    }
    if let Some(gz) = shared("lammps-melt-16/lammps-melt-16.json.gz") {
        // the first 200 kB of the decompressed trace (cut: repaired)
        let mut j = gunzip(&gz);
        j.truncate(200_000);
        out.push(one("lammps (first 200 kB)", "l.json", j));
    }
    for name in ["ping-pong-otf2", "ping-pong-otf2-papi"] {
        let base = common::shared_trace(name);
        let (Ok(anchor), Ok(def)) = (
            std::fs::read(base.join("traces.otf2")),
            std::fs::read(base.join("traces.def")),
        ) else {
            continue;
        };
        let mut files = vec![
            ("traces.otf2".to_string(), anchor),
            ("traces.def".to_string(), def),
        ];
        for e in std::fs::read_dir(base.join("traces"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(b) = std::fs::read(e.path()) {
                files.push((format!("traces/{}", e.file_name().to_string_lossy()), b));
            }
        }
        // the local definitions too: their mapping tables and clock
        // offsets are decoded natively
        for target in [
            "traces.def",
            "traces/0.evt",
            "traces/1.evt",
            "traces/0.def",
            "traces.otf2",
        ] {
            out.push(Case {
                name: format!("{name} {target}"),
                files: files.clone(),
                open: "traces.otf2".into(),
                target: target.into(),
            });
        }
    }
    if let (Some(meta), Some(nodes)) = (
        shared("boxfish-bgpc/bgpc_meta.yaml"),
        shared("boxfish-bgpc/bgpc_nodes.yaml"),
    ) {
        let meta_text = String::from_utf8_lossy(&meta).into_owned();
        let mut files = vec![
            ("bgpc_meta.yaml".to_string(), meta),
            ("bgpc_nodes.yaml".to_string(), nodes),
        ];
        // the other tables it names, when small
        for t in ["bgpc_map.yaml"] {
            if meta_text.contains(t)
                && let Some(b) = shared(&format!("boxfish-bgpc/{t}"))
            {
                files.push((t.to_string(), b));
            }
        }
        for target in ["bgpc_meta.yaml", "bgpc_nodes.yaml"] {
            out.push(Case {
                name: format!("boxfish {target}"),
                files: files.clone(),
                open: "bgpc_meta.yaml".into(),
                target: target.into(),
            });
        }
    }
    // synthetic traces of every format, small
    let synth = |args: &[&str], file: &str| -> Option<Vec<u8>> {
        let p = dir.join(file);
        let mut a: Vec<&str> = args.to_vec();
        let ps = p.to_str()?.to_string();
        a.extend(["-o", &ps]);
        let (code, _, err) = common::tapestry(&a);
        assert_eq!(code, 0, "synth {args:?}: {err}");
        std::fs::read(&p).ok()
    };
    for (file, fmt) in [("g.prv", "prv"), ("g.json", "json"), ("g.trf", "picl")] {
        if let Some(b) = synth(
            &["synth", "gauss", "--n", "12", "-p", "4", "--format", fmt],
            file,
        ) {
            out.push(one(&format!("synth gauss .{fmt}"), file, b));
        }
    }
    if let Some(b) = synth(&["synth", "bcast", "-p", "8", "--format", "prv"], "b.prv") {
        out.push(one("synth bcast .prv", "b.prv", b));
    }
    if let Some(b) = synth(&["synth", "profile", "--lines", "60", "-p", "4"], "lp.csv") {
        out.push(one("synth line profile", "lp.csv", b));
    }
    if let Some(b) = synth(
        &["synth", "volume", "--dims", "6x5x4", "--steps", "2"],
        "v.npy",
    ) {
        out.push(one("synth volume .npy", "v.npy", b));
    }
    let tensor = dir.join("acc.npy");
    if let Some(t) = tensor.to_str()
        && synth(
            &[
                "synth", "kernel", "-p", "2", "--width", "3", "--height", "3", "--steps", "2",
                "--tensor", t,
            ],
            "k.prv",
        )
        .is_some()
        && let Ok(b) = std::fs::read(&tensor)
    {
        out.push(one("synth access tensor .npy", "acc.npy", b));
    }
    out.push(one(
        "access table",
        "acc.csv",
        b"# shape: 2 3 2\ninterval,element,processor,kind,count\n0,0,0,lr,3\n1,2,1,remote-write,1.5\n0,1,1,2,4\n"
            .to_vec(),
    ));
    out.push(Case {
        name: "TAU profiles".into(),
        files: vec![
            ("profile.0.0.0".into(), T000.as_bytes().to_vec()),
            (
                "profile.1.0.0".into(),
                T000.replace("compute", "solve").into_bytes(),
            ),
        ],
        open: ".".into(),
        target: "profile.0.0.0".into(),
    });
    out
}

/// A digit run in `b` at or after `at`: (start, end).
fn number_at(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let s = at + b.get(at..)?.iter().position(u8::is_ascii_digit)?;
    let e = s + b[s..].iter().take_while(|c| c.is_ascii_digit()).count();
    Some((s, e))
}

fn line_bounds(b: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut s = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            v.push((s, i + 1));
            s = i + 1;
        }
    }
    if s < b.len() {
        v.push((s, b.len()));
    }
    v
}

/// One random mutation of `b`; returns its name.
fn mutate(rng: &mut Rng, b: &mut Vec<u8>) -> &'static str {
    let n = b.len();
    match rng.below(16) {
        0 | 1 => {
            for _ in 0..1 + rng.below(8) {
                if n > 0 {
                    let i = rng.below(n);
                    b[i] ^= 1 << rng.below(8);
                }
            }
            "byte flips"
        }
        2 => {
            b.truncate(n * rng.below(16) / 16);
            "truncated at k/16"
        }
        3 => {
            let l = line_bounds(b);
            if !l.is_empty() {
                let (s, e) = l[rng.below(l.len())];
                // up to 1000 copies, at most 4 MiB added (one splice)
                let copies = if rng.below(4) == 0 { 1000 } else { 1 };
                let copies = copies.min((4usize << 20) / (e - s).max(1)).max(1);
                let more = b[s..e].repeat(copies);
                b.splice(e..e, more);
            }
            "duplicated line"
        }
        4 => {
            let l = line_bounds(b);
            if !l.is_empty() {
                let (s, e) = l[rng.below(l.len())];
                b.drain(s..e);
            }
            "removed line"
        }
        5 => {
            let l = line_bounds(b);
            if l.len() > 1 {
                let (i, j) = (rng.below(l.len()), rng.below(l.len()));
                let (a, c) = (l[i.min(j)], l[i.max(j)]);
                if a.1 <= c.0 {
                    let mut out = b[..a.0].to_vec();
                    out.extend_from_slice(&b[c.0..c.1]);
                    out.extend_from_slice(&b[a.1..c.0]);
                    out.extend_from_slice(&b[a.0..a.1]);
                    out.extend_from_slice(&b[c.1..]);
                    *b = out;
                }
            }
            "swapped lines"
        }
        6..=8 => {
            const NUMS: [&str; 10] = [
                "18446744073709551616",
                "99999999999999999999999999",
                "-1",
                "-9223372036854775808",
                "1e308",
                "-1e308",
                "NaN",
                "4294967296",
                "16777215",
                "0",
            ];
            if let Some((s, e)) = number_at(b, rng.below(n.max(1))) {
                let v = NUMS[rng.below(NUMS.len())];
                b.splice(s..e, v.bytes());
            }
            "huge, negative or non-finite number"
        }
        9 => {
            let at = rng.below(n + 1);
            let (open, close) = if rng.below(2) == 0 {
                (b"[", b"]")
            } else {
                (b"{", b"}")
            };
            let depth = 1 + rng.below(200_000);
            let mut ins = open.repeat(depth);
            if rng.below(2) == 0 {
                ins.extend(close.repeat(depth));
            }
            b.splice(at..at, ins);
            "deep nesting"
        }
        10 => {
            let at = rng.below(n + 1);
            let bad: &[u8] =
                [b"\xff\xfe".as_slice(), b"\xc3", b"\xed\xa0\x80", b"\x00"][rng.below(4)];
            b.splice(at..at, bad.iter().copied());
            "invalid UTF-8"
        }
        11 => {
            let cr = rng.below(2) == 0;
            let mut out = Vec::with_capacity(n + n / 20);
            for &c in b.iter() {
                if c == b'\n' {
                    out.push(b'\r');
                    if !cr {
                        out.push(b'\n');
                    }
                } else {
                    out.push(c);
                }
            }
            *b = out;
            if cr {
                "bare CR line ends"
            } else {
                "CRLF line ends"
            }
        }
        12 => {
            b.splice(0..0, *b"\xEF\xBB\xBF");
            "byte-order mark"
        }
        13 => {
            let z = common::gzip(b);
            *b = if rng.below(2) == 0 {
                z[..z.len() * rng.below(16) / 16].to_vec()
            } else {
                z
            };
            "gzip wrapper"
        }
        14 => {
            if n > 2 {
                let (s, len) = (rng.below(n), 1 + rng.below(4096));
                let chunk = b[s..(s + len).min(n)].to_vec();
                let at = rng.below(n);
                b.splice(at..at, chunk);
            }
            "splice"
        }
        _ => {
            let at = rng.below(n + 1);
            let junk: Vec<u8> = (0..1 + rng.below(64)).map(|_| rng.next() as u8).collect();
            b.splice(at..at, junk);
            "random bytes"
        }
    }
}

/// Writes `case` into `dir` (emptied first).
fn materialise(case: &Case, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    for (name, bytes) in &case.files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
    }
    std::fs::write(
        dir.join("CASE"),
        format!(
            "{}\nopen: {}\ntarget: {}\n",
            case.name, case.open, case.target
        ),
    )
    .unwrap();
    dir.join(&case.open)
}

/// Reads `path` and runs the analyses on what reads. Returns a short
/// outcome ("ok", "error: ...") or the failure.
fn exercise(path: &Path, strict: bool) -> String {
    let opts = ReadOptions {
        strict,
        ..Default::default()
    };
    match readers::load(path, &opts) {
        Err(e) => {
            let m = e.to_string();
            format!("error: {}", m.chars().take(80).collect::<String>())
        }
        Ok(Loaded::Trace(t)) => {
            if let Ok(mask) = t.states.select(&["busy".into()]) {
                let span = t.meta.span;
                let m = moments::moments(&t, &mask, 0, span);
                assert_eq!(m.len(), t.num_locations());
                for x in &m {
                    assert!(x.m0.is_finite() && x.m0 >= 0.0, "m0 {x:?}");
                }
                if span >= 16 {
                    let _ = fields::busy_fraction(&t, &mask, 0, span, 16);
                }
            }
            stream_agrees(path, &opts, &t);
            "ok: trace".into()
        }
        Ok(Loaded::Tensor(tf)) => {
            let _ = tapestry::readers::tensor::read_access_counts(&tf.path, [true; 4], None);
            "ok: tensor".into()
        }
        Ok(Loaded::Profile(_)) => "ok: profile".into(),
        Ok(Loaded::Volumes(_)) => "ok: volumes".into(),
    }
}

/// Streams `path` as `--stream` does, over the in-memory trace's span:
/// when the stream takes the file, its busy field equals the in-memory
/// one bit for bit and it counts the same messages.
fn stream_agrees(path: &Path, opts: &ReadOptions, t: &Trace) {
    if t.meta.format == Format::ChromeJson {
        // the two-pass read (chosen when memory is short) builds the same model
        let two = readers::chrome::stream::read_two_pass(path, opts)
            .expect("the two-pass read takes what the one-pass read takes");
        assert!(
            serde_json::to_string(&two).ok() == serde_json::to_string(t).ok(),
            "the two-pass read builds another model"
        );
    }
    let span = t.meta.span;
    if span < 16 {
        return;
    }
    let mut r = StreamReducer::new(
        StreamSpec {
            bins: Some(16),
            comm: false,
        },
        Box::new(move |_| Ok((0, span))),
    );
    let streamed = match t.meta.format {
        Format::ChromeJson => readers::chrome::stream::stream(path, opts, &mut r),
        Format::Paraver => readers::paraver::stream(path, opts, &mut r),
        Format::Picl => readers::picl::stream::stream(path, opts, &mut r),
        _ => return,
    };
    let Ok((st, keys)) = streamed else { return };
    let (Ok(mask), Ok(smask)) = (
        t.states.select(&["busy".into()]),
        st.states.select(&["busy".into()]),
    ) else {
        return;
    };
    let (Ok(mem), Ok(streamed)) = (
        fields::busy_fraction(t, &mask, 0, span, 16),
        r.busy_field(&smask, &keys),
    ) else {
        return;
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&mem.values),
        bits(&streamed.values),
        "the streamed busy field differs from the in-memory one"
    );
    assert_eq!(
        r.totals().messages,
        t.messages.len(),
        "the stream counts other messages"
    );
    if t.meta.format == Format::ChromeJson {
        let shared = chrome_shared(path, opts, span, &smask, &keys);
        assert_eq!(
            shared.as_ref().map(|(v, _)| bits(v)).ok(),
            Some(bits(&streamed.values)),
            "three processes sharing the Chrome trace ({:?}) differ from the stream",
            shared.as_ref().err()
        );
        assert_eq!(
            shared.ok().map(|(_, m)| m),
            Some(t.messages.len()),
            "three processes sharing the Chrome trace count other messages"
        );
    }
}

/// `reduce`'s read of a Chrome trace by three processes (threads here) in
/// stripes of 7 events: the busy field and the message count, as merged on
/// rank 0.
fn chrome_shared(
    path: &Path,
    opts: &ReadOptions,
    span: u64,
    mask: &[bool],
    keys: &[(u32, tapestry::model::StateId)],
) -> Result<(Vec<f64>, usize), String> {
    use tapestry::readers::exchange::ThreadExchange;
    let reducer = move || {
        StreamReducer::new(
            StreamSpec {
                bins: Some(16),
                comm: false,
            },
            Box::new(move |_| Ok((0, span))),
        )
    };
    let done: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = ThreadExchange::group(3)
            .into_iter()
            .map(|mut ex| {
                s.spawn(move || {
                    let mut r = reducer();
                    readers::chrome::share::read_share(path, opts, &mut r, &mut ex, 7)
                        .map(|sh| (sh, r))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().map_err(|_| "a share panicked".to_string()))
            .collect()
    });
    let mut first = None;
    for d in done {
        let (share, r) = d?.map_err(|e| e.to_string())?;
        match &mut first {
            None => first = Some((share, r)),
            Some((_, r0)) => {
                r0.merge_bytes(&r.to_bytes()).map_err(|e| e.to_string())?;
            }
        }
    }
    let (share, mut r) = first.ok_or("no share")?;
    share.finish(&mut r, opts).map_err(|e| e.to_string())?;
    let field = r.busy_field(mask, keys).map_err(|e| e.to_string())?;
    Ok((field.values, r.totals().messages))
}

/// Runs one input under the watchdog and the peak check; `Err` describes
/// a failure.
fn run_one(
    path: &Path,
    strict: bool,
    started: &AtomicU64,
    epoch: Instant,
) -> Result<String, String> {
    let base = LIVE.load(Ordering::Relaxed);
    HIGH.store(base, Ordering::Relaxed);
    started.store(epoch.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
    let r = std::panic::catch_unwind(|| exercise(path, strict));
    started.store(0, Ordering::SeqCst);
    let peak = HIGH.load(Ordering::Relaxed).saturating_sub(base);
    match r {
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Err(format!("panic: {msg}"))
        }
        Ok(_) if peak > PEAK => Err(format!("allocated {peak} bytes at once (limit {PEAK})")),
        Ok(o) => Ok(o),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::create_dir_all(to);
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            let _ = std::fs::copy(&p, to.join(e.file_name()));
        }
    }
}

#[test]
fn fuzz_every_reader() {
    // the library's own guard below the harness's cap (set before any
    // reader asks for it)
    // SAFETY: the only test of this binary; no other thread reads the
    // environment yet.
    unsafe { std::env::set_var("TAPESTRY_MEMORY_LIMIT", "1G") };
    // OTF2 archives are read as the binary reads them: in a helper process,
    // so that damage that crashes the OTF2 C library is an error
    #[cfg(feature = "otf2")]
    let _ = tapestry::readers::OTF2_HELPER.set(env!("CARGO_BIN_EXE_tapestry").into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let regressions = root.join("tests/data/fuzz");
    let current = root.join("target/fuzz-current");
    let seconds: u64 = std::env::var("TAPESTRY_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("TAPESTRY_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
        | 1;
    eprintln!("fuzz: seed {seed} (TAPESTRY_FUZZ_SEED), {seconds} s (TAPESTRY_FUZZ_SECONDS)");

    // the watchdog: one input running longer than HANG aborts the process
    // (its files are in target/fuzz-current)
    let epoch = Instant::now();
    let started: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let s = started.load(Ordering::SeqCst);
            if s > 0 && epoch.elapsed().as_millis() as u64 > s + HANG.as_millis() as u64 {
                eprintln!(
                    "fuzz: an input ran longer than {HANG:?}; it is in target/fuzz-current: keep it in tests/data/fuzz/"
                );
                std::process::abort();
            }
        }
    });
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));

    let mut failures: Vec<String> = Vec::new();
    // 1. every input that ever failed
    let mut replayed = 0;
    for e in std::fs::read_dir(&regressions)
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = e.path();
        let Ok(case) = std::fs::read_to_string(dir.join("CASE")) else {
            continue;
        };
        let open = case
            .lines()
            .find_map(|l| l.strip_prefix("open: "))
            .unwrap_or(".")
            .to_string();
        for strict in [false, true] {
            if let Err(f) = run_one(&dir.join(&open), strict, started, epoch) {
                failures.push(format!("regression {}: {f}", dir.display()));
            }
        }
        replayed += 1;
    }

    // 2. mutations for the time given
    let work = tempfile::tempdir().unwrap();
    let seeds = seeds(work.path());
    assert!(seeds.len() >= 15, "seeds found: {}", seeds.len());
    let mut rng = Rng(seed);
    let verbose = std::env::var_os("TAPESTRY_FUZZ_VERBOSE").is_some();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut runs = 0u64;
    let mut outcomes: std::collections::BTreeMap<String, u64> = Default::default();
    let mut per_seed: std::collections::BTreeMap<String, u64> = Default::default();
    while Instant::now() < deadline {
        let case = &seeds[rng.below(seeds.len())];
        let mut c = case.clone();
        let mut applied = Vec::new();
        if let Some((_, bytes)) = c.files.iter_mut().find(|(n, _)| *n == c.target) {
            for _ in 0..1 + rng.below(3) {
                applied.push(mutate(&mut rng, bytes));
            }
            // inputs stay small enough to run thousands in a minute
            bytes.truncate(MAX_INPUT);
        }
        let open = materialise(&c, &current);
        let strict = rng.below(4) == 0;
        if verbose {
            eprintln!(
                "fuzz: run {runs}: {} ({}); {} MiB live before",
                case.name,
                applied.join(" + "),
                LIVE.load(Ordering::Relaxed) >> 20
            );
        }
        runs += 1;
        *per_seed.entry(case.name.clone()).or_default() += 1;
        match run_one(&open, strict, started, epoch) {
            Ok(o) => {
                let key = if o.starts_with("error") {
                    "error (clean)".to_string()
                } else {
                    o
                };
                *outcomes.entry(key).or_default() += 1;
            }
            Err(f) => {
                let keep = regressions.join(format!("{:016x}", rng.next()));
                copy_dir(&current, &keep);
                failures.push(format!(
                    "{} ({}, strict {strict}): {f}; kept in {}",
                    case.name,
                    applied.join(" + "),
                    keep.display()
                ));
            }
        }
    }
    std::panic::set_hook(quiet);
    eprintln!("fuzz: {replayed} regression input(s) replayed; {runs} mutated inputs run");
    for (k, v) in &outcomes {
        eprintln!("  {k}: {v}");
    }
    for (k, v) in &per_seed {
        eprintln!("  seed {k}: {v}");
    }
    assert!(
        failures.is_empty(),
        "fuzz failures:\n{}",
        failures.join("\n")
    );
    assert!(runs > 0);
}
