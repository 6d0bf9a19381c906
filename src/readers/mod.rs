//! Trace readers. The format is detected from the content (first bytes), not
//! the file name; gzip-compressed files are read transparently.
//!
//! | format | module | detected by |
//! |---|---|---|
//! | Chrome Trace Event JSON | [`chrome`] | first non-blank byte `[` or `{` |
//! | Paraver `.prv` (+ `.pcf`, `.row`) | [`paraver`] | `#Paraver` |
//! | PICL new format | [`picl`] | a first record `-3`/`-4`/... followed by numbers |
//! | OTF2 archive (anchor `.otf2`) | `otf2` (feature `otf2`) | the anchor's `OTF2` signature |
//!
//! Every reader streams its input (memory is the size of the model, not of
//! the file), repairs recoverable damage with a warning (see
//! [`crate::Diagnostics`]) unless [`ReadOptions::strict`] is set, and reports
//! malformed input with the file, the line or byte offset, what was expected
//! and what was found.

pub mod boxfish;
pub mod chrome;
mod chunked;
mod colon_line;
pub mod decimal;
pub mod exchange;
pub mod gzip_index;
pub mod input;
mod json_split;
pub mod line_profile;
pub mod npy;
pub mod otf2;
pub mod paraver;
mod paraver_pcf;
pub mod picl;
pub mod tau;
pub mod tensor;
pub mod volume;

use std::path::Path;

use crate::error::{Error, Result};
use crate::memory;
use crate::model::{ClassOverride, Format, ProfileMatrix, Trace};

pub use paraver_pcf::{Pcf, parse_pcf, parse_row};

/// Options common to all readers.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Turn recoverable damage into errors instead of repairing it.
    pub strict: bool,
    /// Override of the per-format default busy/overhead/idle classes.
    pub classes: ClassOverride,
    /// Boxfish tables: the node-table column whose values are the steps of
    /// the animation (`None`: `code_region` where present; `"none"`: one
    /// step, the rows of a node summed).
    pub steps_by: Option<String>,
    /// Read a trace through its cache beside it (`TRACE.tapestry/`),
    /// written on first use and rewritten when the trace's files change
    /// size or modification time (see [`crate::cache::load_cached`]).
    pub cache: bool,
}

/// Detects the format of `path` from its first bytes.
pub fn detect(path: &Path) -> Result<Format> {
    let head = input::peek(path, 4096)?;
    detect_bytes(&head).ok_or_else(|| {
        let compressed = input::is_gzip(path).unwrap_or(false);
        Error::UnknownFormat {
            path: path.to_path_buf(),
            found: unknown_format(&head, compressed),
        }
    })
}

/// What an unrecognised file starts with (as text and in hex) and every
/// format that was tried.
fn unknown_format(head: &[u8], compressed: bool) -> String {
    let what = if compressed {
        "the decompressed content"
    } else {
        "the file"
    };
    if head.is_empty() {
        return format!("{what} is empty");
    }
    let shown: String = String::from_utf8_lossy(&head[..head.len().min(40)])
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    let hex: Vec<String> = head.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{what} starts with '{shown}' (bytes {}{}); tried Chrome JSON ('[' or '{{'), \
         Paraver ('#Paraver'), PICL records ('-3 TIME ...'), an OTF2 anchor (bytes 2-5 'OTF2'), \
         TAU profiles ('N templated_functions'), a line-profile table (a header naming line, \
         processor, ticks), an access table (interval, element, processor, kind, count), a Boxfish meta file (YAML with 'hardware') and NumPy ('\\x93NUMPY')",
        hex.join(" "),
        if head.len() > 16 { " ..." } else { "" }
    )
}

/// Detects a format from the first bytes of the (decompressed) content.
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    if is_otf2_anchor(head) {
        return Some(Format::Otf2);
    }
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if head.starts_with(b"#Paraver") {
        return Some(Format::Paraver);
    }
    let first = head.iter().position(|c| !c.is_ascii_whitespace())?;
    match head[first] {
        b'[' | b'{' => Some(Format::ChromeJson),
        b'-' | b'0'..=b'9' if picl::looks_like_picl(&head[first..]) => Some(Format::Picl),
        _ => None,
    }
}

/// Whether `head` (the first bytes of a file) is an OTF2 anchor file.
pub fn is_otf2_anchor(head: &[u8]) -> bool {
    head.len() >= 6 && &head[2..6] == b"OTF2"
}

/// Bytes read for `path`: the file, or for an OTF2 anchor the whole archive
/// (anchor, global definitions and the per-location files), or for a
/// directory every file in it.
pub fn input_size(path: &Path) -> u64 {
    fn tree(p: &Path) -> u64 {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(p)
                .map(|rd| rd.filter_map(|e| e.ok()).map(|e| tree(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    let own = tree(path);
    if path.extension().is_some_and(|e| e == "otf2") && path.is_file() {
        return own + tree(&path.with_extension("def")) + tree(&path.with_extension(""));
    }
    own
}

/// The trace without records a stream ends with (its locations, states,
/// span and repairs in `b`), its classes overridden as asked, with the
/// state of each key the stream handed over, for streams whose keys are
/// the state ids.
pub(crate) fn finish_stream_skeleton(
    b: crate::model::TraceBuilder,
    opts: &ReadOptions,
) -> Result<(Trace, Vec<(u32, crate::model::StateId)>)> {
    let mut t = b.finish(crate::model::BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    let keys = t.states.iter().map(|(id, _)| (id, id)).collect();
    Ok((t, keys))
}

/// Peak memory of an in-memory read per byte of (decompressed) input, by
/// format: measured peaks over file sizes, rounded up (Paraver 0.72–0.87
/// on broadcasts and Gaussian eliminations, PICL 0.88, Chrome JSON
/// 0.38–0.55, OTF2 about 7: its event files are compact binary).
fn peak_per_input_byte(format: Format) -> f64 {
    match format {
        Format::Paraver | Format::Picl => 1.0,
        Format::ChromeJson => 0.6,
        Format::Otf2 => 8.0,
        Format::Synthetic => 1.0,
    }
}

/// The bytes a gzip file decompresses to, estimated from its first
/// compressed mebibytes (the size field of the gzip trailer holds only
/// the low 32 bits); `None` when the file is not gzip.
fn gzip_content_estimate(path: &Path) -> Option<u64> {
    use std::io::Read;
    struct Counting<R> {
        inner: R,
        n: u64,
    }
    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let k = self.inner.read(buf)?;
            self.n += k as u64;
            Ok(k)
        }
    }
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut magic)
        .ok()?;
    if magic != [0x1f, 0x8b] {
        return None;
    }
    let mut dec = flate2::read::MultiGzDecoder::new(Counting {
        inner: std::io::BufReader::with_capacity(64 << 10, file),
        n: 0,
    });
    let mut buf = vec![0u8; 1 << 20];
    let mut out = 0u64;
    // up to 16 MiB out: enough to know the ratio, cheap to decompress
    while out < 16 << 20 {
        match dec.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => out += k as u64,
        }
    }
    let consumed = dec.get_ref().n.max(1);
    if consumed >= len {
        return Some(out);
    }
    Some((out as f64 / consumed as f64 * len as f64) as u64)
}

/// [`gzip_content_estimate`] once per file (size and modification time):
/// a command asks first whether to stream, then the reader asks again.
fn gzip_content_estimate_once(path: &Path) -> Option<u64> {
    type Seen = (
        std::path::PathBuf,
        u64,
        Option<std::time::SystemTime>,
        Option<u64>,
    );
    static LAST: std::sync::Mutex<Option<Seen>> = std::sync::Mutex::new(None);
    let meta = std::fs::metadata(path).ok()?;
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, len, m, est)) = last.as_ref()
        && (p, *len, *m) == (&key.0, key.1, key.2)
    {
        return *est;
    }
    let est = gzip_content_estimate(path);
    *last = Some((key.0, key.1, key.2, est));
    est
}

/// What reading the trace at `path` in memory would take at its peak,
/// estimated from its size and format (a gzip file from the ratio of its
/// first mebibytes): `None` when `path` is not a trace a stream reads (a
/// profile, volumes, a cache).
pub fn in_memory_estimate(path: &Path) -> Option<u64> {
    if crate::cache::is_cache(path) || non_trace_kind(path).is_some() {
        return None;
    }
    let format = detect(path).ok()?;
    let bytes = match format {
        Format::Otf2 => input_size(path),
        _ => gzip_content_estimate_once(path).unwrap_or_else(|| input_size(path)),
    };
    Some((bytes as f64 * peak_per_input_byte(format)) as u64)
}

/// A program that reads an OTF2 archive in a process of its own
/// (`PROGRAM __read-otf2 ANCHOR CACHE_DIR [--strict]`, writing the trace as
/// a cache), set by the `tapestry` binary (to itself) and by the tests. The
/// OTF2 C library can corrupt memory on damaged archives (the fuzz harness
/// found an anchor on which it overruns the heap); read in a child, such an
/// archive ends that child, and the reader reports it as an error instead
/// of the whole program aborting. Unset, archives are read in this process.
pub static OTF2_HELPER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Reserves the list of messages of `b` for the most that the rest of a
/// plain file can hold (`least` bytes a message at least) and asks for
/// huge pages for it ([`memory::prefer_huge_pages`]): the records' hand
/// over then writes each block's messages into place without growing the
/// list, a fresh 2 MiB page where it faulted 512 of 4 KiB. (Paraver's
/// hand-over was almost all this copy: 0.065 of 0.068 s for 1.48 million
/// messages, one page fault per 100 of them; of PICL's page faults a
/// fifth were the list's.) The pages never written (a trace with fewer
/// messages) take no memory; where the reservation is refused (a limit on
/// address space), the list grows as it fills.
pub(crate) fn reserve_messages(
    b: &mut crate::model::builder::TraceBuilder,
    blocks: &input::LineBlocks,
    least: u64,
) {
    let Some(left) = blocks.plain_bytes_left() else {
        return;
    };
    let most = usize::try_from(left / least.max(1) + 1).unwrap_or(usize::MAX);
    if b.messages.try_reserve_exact(most).is_ok() {
        memory::prefer_huge_pages(&b.messages);
    }
}

/// Reads an OTF2 archive: decoded here where the archive allows (safe
/// code, in this process), else by the OTF2 library (feature `otf2`), in a
/// helper process when [`OTF2_HELPER`] is set.
fn read_otf2(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    if let Some(t) = otf2::read_native(path, opts)? {
        return Ok(t);
    }
    #[cfg(feature = "otf2")]
    {
        match OTF2_HELPER.get() {
            Some(helper) => read_otf2_isolated(helper, path, opts),
            None => otf2::read(path, opts),
        }
    }
    #[cfg(not(feature = "otf2"))]
    {
        // says why the archive needs the library
        otf2::read(path, opts)
    }
}

/// [`read_otf2`] through the helper process: it writes the trace as a cache
/// in a private temporary directory ([`private_dir`] in [`helper_base`]),
/// which is read back here and removed.
#[cfg(feature = "otf2")]
fn read_otf2_isolated(helper: &Path, path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let base = helper_base(path);
    remove_stale_helper_dirs(&base);
    let tmp = private_dir(&base)?;
    struct Cleanup(std::path::PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Cleanup(tmp.clone());
    let out = tmp.join("trace.tapestry");
    let mut cmd = std::process::Command::new(helper);
    cmd.arg("__read-otf2").arg(path).arg(&out);
    // the helper reads what this process left to the library
    cmd.env("TAPESTRY_OTF2_LIBRARY", "1");
    if opts.strict {
        cmd.arg("--strict");
    }
    // `info --stats`: the helper's phases, written beside its cache
    let stats = crate::phases::enabled();
    if stats {
        cmd.arg("--phases");
    }
    let helper_phase = crate::phases::span("otf2: helper process (read, cache written)");
    let res = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::io(helper, e))?;
    drop(helper_phase);
    if stats {
        crate::phases::add_from_file(&tmp.join(HELPER_PHASES));
    }
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let msg = err
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .map(str::to_string);
        return Err(match (msg, res.status.code()) {
            (Some(m), Some(_)) => Error::Invalid(m),
            _ => Error::parse(
                path,
                crate::diagnostics::Position::none(),
                format!(
                    "the OTF2 library crashed reading this archive ({}); it is damaged",
                    describe_exit(&res.status)
                ),
            ),
        });
    }
    let no_classes = ReadOptions {
        classes: ClassOverride::default(),
        ..opts.clone()
    };
    let back = crate::phases::span("otf2: cache read back (one thread)");
    let mut t = crate::cache::read(&out, &no_classes)?;
    drop(back);
    t.meta.source = path.to_path_buf();
    t.reclassify(&opts.classes)?;
    Ok(t)
}

/// The helper's phases for `info --stats`, beside its cache.
#[cfg(feature = "otf2")]
const HELPER_PHASES: &str = "phases.tsv";

/// The name of a helper's directory, before `PID-N`.
#[cfg(feature = "otf2")]
const HELPER_DIR_PREFIX: &str = "tapestry-otf2-";

/// Memory-backed file system for the helper's hand-over where there is one.
#[cfg(feature = "otf2")]
const SHM: &str = "/dev/shm";

/// Where the helper writes the cache it hands over: `TMPDIR` when the user
/// set it; otherwise the memory-backed `/dev/shm` when it is a tmpfs with
/// room for it, the system's temporary directory where not. The cache is
/// read back at once and removed, so a disk's file system buys nothing
/// and may cost: its dirty-page limits throttle the writer, and past
/// `vm.dirty_background_ratio` (10 % of the available memory by default)
/// the kernel starts writing the cache out to the disk. Measured on one
/// core against an ext4 `/tmp` (`info --stats`, eight runs each): the
/// 167 MB cache of a 150 MB archive written in 0.08–0.11 s instead of
/// 0.16–0.36 and read back in 0.14–0.21 s instead of 0.23–0.30 (whole
/// command 0.85–0.87×, paired); the 67 MB cache of a 60 MB archive 0.015 s
/// slower each way (ext4's page cache in large folios is the cheaper copy
/// while nothing throttles it). Room means the cache (estimated at twice
/// the archive) takes at most half of the tmpfs's free space and a quarter
/// of the memory limit: tmpfs pages are memory that cannot be reclaimed
/// until the cache is removed.
#[cfg(feature = "otf2")]
fn helper_base(anchor: &Path) -> std::path::PathBuf {
    if std::env::var_os("TMPDIR").is_some() {
        return std::env::temp_dir();
    }
    let need = input_size(anchor)
        .saturating_mul(2)
        .saturating_add(64 << 20);
    match tmpfs_free(Path::new(SHM)) {
        Some(free) if need <= free / 2 && need <= memory::limit() / 4 => SHM.into(),
        _ => std::env::temp_dir(),
    }
}

/// The bytes free on `dir` when it is a writable tmpfs (Linux), else `None`.
#[cfg(feature = "otf2")]
fn tmpfs_free(dir: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: `statfs` fills the zeroed struct for the NUL-terminated
        // path; nothing else is read or written
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 || st.f_type as i64 != TMPFS_MAGIC {
            return None;
        }
        // SAFETY: `access` only reads the NUL-terminated path
        if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
            return None;
        }
        Some((st.f_bavail as u64).saturating_mul(st.f_bsize as u64))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// Removes the helper directories in `base` left by tapestry processes that
/// no longer run (killed before they could clean up: in `/dev/shm` they
/// would hold memory until the machine restarts). Directories of running
/// processes, and anything not named like a helper's, are left alone.
#[cfg(feature = "otf2")]
fn remove_stale_helper_dirs(base: &Path) {
    // once a process for each place: what dies later is swept by the next
    // process (the fuzz harness reads thousands of archives in one)
    static SWEPT: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
        if swept.iter().any(|b| b == base) {
            return;
        }
        swept.push(base.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: `geteuid` has no preconditions
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(HELPER_DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u64>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        let dir = e.path();
        // a directory of this user (not a link to one)
        let mine = std::fs::symlink_metadata(&dir).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == me
        });
        if mine && pid != std::process::id() && !process_runs(pid) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// A new directory in `base` for one helper's hand-over, readable by this
/// user alone (mode 0700), never one that exists already: in a directory
/// every user writes (`/dev/shm`, `/tmp`) another user could have made one
/// of that name beforehand to read the trace or change it.
#[cfg(feature = "otf2")]
fn private_dir(base: &Path) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::create_dir_all(base).map_err(|e| Error::io(base, e))?;
    let mut tries = 1;
    loop {
        let dir = base.join(format!(
            "{HELPER_DIR_PREFIX}{}-{}",
            std::process::id(),
            NEXT_HELPER_DIR.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 64 => tries += 1,
            Err(e) => return Err(Error::io(&dir, e)),
        }
    }
}

/// Whether a process `pid` exists (Linux: `/proc`; elsewhere assumed so).
#[cfg(feature = "otf2")]
fn process_runs(pid: u32) -> bool {
    if cfg!(target_os = "linux") && Path::new("/proc/self").exists() {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

#[cfg(feature = "otf2")]
static NEXT_HELPER_DIR: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(feature = "otf2")]
fn describe_exit(s: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(6)) => "it aborted: SIGABRT".into(),
        (None, Some(11)) => "it crashed: SIGSEGV".into(),
        (None, Some(n)) => format!("signal {n}"),
        _ => "unknown status".into(),
    }
}

/// The helper's side of [`OTF2_HELPER`]: reads `anchor` in this process
/// and writes it as a cache at `out`; with `phases`, where its time went
/// too, beside the cache (for the reading process's `info --stats`).
#[cfg(feature = "otf2")]
pub fn otf2_helper_main(anchor: &Path, out: &Path, strict: bool, phases: bool) -> Result<()> {
    let opts = ReadOptions {
        strict,
        ..Default::default()
    };
    crate::phases::enable(phases);
    let t = otf2::read(anchor, &opts)?;
    let written = crate::phases::span("otf2: cache written (one thread)");
    crate::cache::write_transient(&t, out, &[anchor])?;
    drop(written);
    if phases {
        let file = out.with_file_name(HELPER_PHASES);
        crate::phases::write_to_file(&file).map_err(|e| Error::io(&file, e))?;
    }
    Ok(())
}

/// What a file holds: a trace (timelines) or a profile (a matrix).
#[derive(Debug)]
pub enum Loaded {
    Trace(Box<Trace>),
    Profile(Box<ProfileMatrix>),
    /// Fields over a cube of elements (Boxfish tables, NumPy volumes).
    Volumes(Box<crate::model::VolumeSet>),
    /// An element access tensor `[interval, element, processor, 4]`
    /// (`.npy`), opened on its own: the views read it when they need it.
    Tensor(Box<tensor::TensorFile>),
}

/// Reads a trace or a profile, detecting the format: an OTF2 anchor, a
/// directory of TAU profiles (or one of its `profile.N.C.T` files), a
/// line-profile table, or any trace format of [`read`].
pub fn load(path: &Path, opts: &ReadOptions) -> Result<Loaded> {
    if crate::cache::is_cache(path) {
        return Ok(Loaded::Trace(Box::new(crate::cache::read(path, opts)?)));
    }
    if opts.cache {
        return crate::cache::load_cached(path, opts);
    }
    if path.is_dir() {
        let mut anchors = Vec::new();
        let mut tau = false;
        for e in std::fs::read_dir(path).map_err(|e| Error::io(path, e))? {
            let p = e.map_err(|e| Error::io(path, e))?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".otf2") && p.is_file() {
                anchors.push(p.clone());
            }
            tau |= name.starts_with("profile.") || name.starts_with("MULTI__");
        }
        if tau {
            return Ok(Loaded::Profile(Box::new(tau::read(path)?)));
        }
        return match anchors.as_slice() {
            [a] => Ok(Loaded::Trace(Box::new(read(a, opts)?))),
            [] => Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                found: "a directory without an OTF2 anchor (.otf2) or TAU profiles (profile.N.C.T)"
                    .into(),
            }),
            _ => Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                found: format!(
                    "a directory with {} OTF2 anchors; name the one to read",
                    anchors.len()
                ),
            }),
        };
    }
    let head = input::peek(path, 4096)?;
    if boxfish::looks_like_boxfish(&head) {
        return Ok(Loaded::Volumes(Box::new(boxfish::read_with(
            path,
            opts.steps_by.as_deref(),
        )?)));
    }
    if volume::looks_like_npy(&head) {
        // 4D with a last axis of 4: an access tensor; else a volume
        let shape = npy::Npy::open(path)?.header.shape;
        if shape.len() == 4 && shape[3] == 4 {
            return Ok(Loaded::Tensor(Box::new(tensor::TensorFile {
                path: path.to_path_buf(),
                shape: [shape[0], shape[1], shape[2]],
            })));
        }
        return Ok(Loaded::Volumes(Box::new(volume::read(path)?)));
    }
    if let Some(format) = detect_bytes(&head) {
        return Ok(Loaded::Trace(Box::new(read_as(path, format, opts)?)));
    }
    if tensor::looks_like_access_csv(&head) {
        let t = tensor::read_csv(path)?;
        return Ok(Loaded::Tensor(Box::new(tensor::TensorFile {
            path: path.to_path_buf(),
            shape: t.shape,
        })));
    }
    if tau::looks_like_tau(&head) {
        return Ok(Loaded::Profile(Box::new(tau::read(path)?)));
    }
    if line_profile::looks_like_line_profile(&head) {
        return Ok(Loaded::Profile(Box::new(line_profile::read(path)?)));
    }
    // not a known format: the error from detection names what was found
    Ok(Loaded::Trace(Box::new(read(path, opts)?)))
}

/// What `path` is when it is an input [`load`] reads but not a trace
/// (a profile, volumes, an access tensor), in words; `None` otherwise.
pub fn non_trace_kind(path: &Path) -> Option<&'static str> {
    if crate::cache::is_cache(path) {
        return None;
    }
    if path.is_dir() {
        let tau = std::fs::read_dir(path).ok()?.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("profile.") || n.starts_with("MULTI__")
        });
        return tau.then_some("a directory of TAU profiles");
    }
    // in the order load tries them
    let head = input::peek(path, 4096).ok()?;
    if boxfish::looks_like_boxfish(&head) {
        Some("a Boxfish table")
    } else if volume::looks_like_npy(&head) {
        Some("a NumPy array")
    } else if detect_bytes(&head).is_some() {
        None
    } else if tensor::looks_like_access_csv(&head) {
        Some("an access table")
    } else if tau::looks_like_tau(&head) {
        Some("a TAU profile")
    } else if line_profile::looks_like_line_profile(&head) {
        Some("a line-profile table")
    } else {
        None
    }
}

/// Reads a trace, detecting its format.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    read_as(path, detect(path)?, opts)
}

/// Reads a trace in a known format.
pub fn read_as(path: &Path, format: Format, opts: &ReadOptions) -> Result<Trace> {
    // the code run so far (the command line, the format's detection, the
    // libraries' start) leaves the resident memory before the read's comes
    memory::unmap_code();
    match format {
        Format::Paraver => paraver::read(path, opts),
        // a trace whose one-pass read would take more than half the
        // memory limit is read in two passes, in a third of the memory
        Format::ChromeJson if in_memory_estimate(path).is_some_and(|m| m > memory::limit() / 2) => {
            chrome::stream::read_two_pass(path, opts)
        }
        Format::ChromeJson => chrome::read(path, opts),
        Format::Picl => picl::read(path, opts),
        Format::Otf2 => read_otf2(path, opts),
        Format::Synthetic => Err(Error::Invalid(
            "synthetic traces are not read from files".into(),
        )),
    }
}

/// The files reading `path` may open: the trace itself, its sibling files
/// (Paraver `.pcf` and `.row`, the OTF2 definitions and location files),
/// or every file of a trace directory. Outputs must never overwrite them.
pub fn input_files(path: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![path.to_path_buf()];
    let walk = |dir: &Path, depth: usize, out: &mut Vec<std::path::PathBuf>| {
        let mut stack = vec![(dir.to_path_buf(), depth)];
        while let Some((d, left)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten().take(100_000) {
                let p = e.path();
                if p.is_dir() {
                    if left > 0 {
                        stack.push((p, left - 1));
                    }
                } else {
                    out.push(p);
                }
            }
        }
    };
    if path.is_dir() {
        walk(path, 2, &mut out);
        return out;
    }
    for ext in ["pcf", "row"] {
        out.push(path.with_extension(ext));
    }
    if path.extension().is_some_and(|e| e == "otf2") {
        out.push(path.with_extension("def"));
        walk(&path.with_extension(""), 1, &mut out);
    }
    out
}

#[cfg(all(test, feature = "otf2"))]
mod tests {
    use super::*;

    #[test]
    fn only_a_writable_tmpfs_takes_the_hand_over() {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let shm_is_tmpfs = mounts.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 2 && f[1] == SHM && f[2] == "tmpfs"
        });
        if shm_is_tmpfs {
            assert!(tmpfs_free(Path::new(SHM)).is_some_and(|b| b > 0));
        }
        assert_eq!(tmpfs_free(Path::new("/no/such/directory")), None);
        assert_eq!(tmpfs_free(Path::new("/proc")), None);
    }

    #[test]
    fn a_helpers_directory_is_new_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        // the names the next reads would take, made beforehand by someone
        let next = NEXT_HELPER_DIR.load(std::sync::atomic::Ordering::Relaxed);
        let taken: Vec<_> = (next..next + 3)
            .map(|n| {
                let d = base
                    .path()
                    .join(format!("{HELPER_DIR_PREFIX}{}-{n}", std::process::id()));
                std::fs::create_dir(&d).unwrap();
                std::fs::write(d.join("x"), b"someone else's").unwrap();
                d
            })
            .collect();
        let dir = private_dir(base.path()).unwrap();
        assert!(!taken.contains(&dir), "{}", dir.display());
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
        for d in &taken {
            assert_eq!(std::fs::read(d.join("x")).unwrap(), b"someone else's");
        }
        // a base that does not exist yet is made
        let deeper = base.path().join("a/b");
        assert!(private_dir(&deeper).unwrap().starts_with(&deeper));
    }
}
