//! The process-wide memory guard: an allocation sized by the input (a
//! header's claim, bins × locations, a P × P matrix) is checked against
//! what the machine can hold before it is made, so that a huge request is a
//! clear error ("this needs ~N GiB; the limit is M GiB") instead of an
//! abort.
//!
//! The limit is `TAPESTRY_MEMORY_LIMIT` when set (bytes, or with a suffix
//! K, M, G, T: `TAPESTRY_MEMORY_LIMIT=8G`), otherwise the smaller of the
//! machine's memory (`MemTotal` in `/proc/meminfo`) and the control group's
//! limit (`/sys/fs/cgroup/memory.max`); where neither can be read, 1 TiB.

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The limit when nothing says otherwise (no `/proc`).
const FALLBACK: u64 = 1 << 40;

/// Parses `8G`, `512M`, `1024` (bytes); `None` when malformed.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then(|| (v * mul as f64).min(u64::MAX as f64) as u64)
}

fn machine_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    match (total, cgroup) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => FALLBACK,
    }
}

/// The memory limit in bytes (read once per process).
pub fn limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("TAPESTRY_MEMORY_LIMIT")
            .ok()
            .and_then(|s| parse_size(&s))
            .unwrap_or_else(machine_limit)
    })
}

/// `bytes` as "1.5 GiB", "320 MiB", "12 KiB" or "100 bytes".
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.0} KiB", b / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

/// Refuses an allocation of `bytes` larger than [`limit`]; `what` names it
/// for the message ("a field of 100 bins × 16,777,216 locations").
pub fn guard(bytes: u64, what: impl FnOnce() -> String) -> Result<()> {
    check(bytes, limit(), what)
}

/// [`guard`] against an explicit limit.
pub fn check(bytes: u64, limit: u64, what: impl FnOnce() -> String) -> Result<()> {
    if bytes <= limit {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{} needs ~{} of memory; the limit is {} (the machine's memory, or \
         TAPESTRY_MEMORY_LIMIT): choose fewer bins, a shorter --window or fewer locations",
        what(),
        human(bytes),
        human(limit)
    )))
}

/// The bytes of `n` elements of `size` bytes each (saturating: a product
/// that overflows is refused by any limit).
pub fn bytes_of(n: u64, size: u64) -> u64 {
    n.saturating_mul(size)
}

/// This process's resident memory and the kernel's high-water mark of it
/// (the peak since the start or since [`reset_peak`]), in KiB; `None`
/// where unknown (elsewhere than Linux).
pub fn resident_kib() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resets the kernel's high-water mark of this process's resident memory
/// to what is resident now (`/proc/self/clear_refs`, Linux 4.0 on; a no-op
/// where refused).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Asks the processor to bring the cache line at `p` into its caches
/// ahead of a use: a hint, which never faults whatever the address (a
/// no-op elsewhere than x86-64).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE, which the instruction needs, is part of x86-64; a
    // prefetch reads nothing and never faults
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Returns the memory freed so far to the system. Readers free many
/// blocks of a few MiB from several threads (file blocks, parsed records);
/// glibc keeps such memory in per-thread arenas, where it still counts in
/// the resident set. Called before a reader's largest allocation (the
/// model's columns) and after each batch of raw records copied into them,
/// so that the peak does not carry it. The first also lowers glibc's trim
/// threshold where the pool is large ([`TOP_TRIM_BYTES`]). A no-op
/// elsewhere than glibc.
pub fn return_freed_memory() {
    let _p = crate::phases::span("memory given back (malloc_trim, one thread)");
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        if TRIM_TOPS.swap(false, std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: mallopt only sets when free memory is given back
            // (glibc takes the main arena's lock to set it)
            unsafe {
                libc::mallopt(libc::M_TRIM_THRESHOLD, TOP_TRIM_BYTES);
            }
        }
        // SAFETY: glibc's malloc_trim only releases free memory; it is
        // thread-safe (it locks each arena).
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Takes the code out of the process's resident memory: the pages of the
/// program's and the C library's files that are mapped now (their code and
/// read-only data) are unmapped, and each comes back from the page cache
/// (where the pages stay) when it is next run or read. Every page of code
/// once run stays mapped, and the kernel maps code in windows of 16 pages
/// around each page first run, so that by the end of a read the process
/// holds the code of all it ran before (the command line, the format's
/// detection, the parse, glibc's start) beside the model, though what
/// follows runs little of it. Called as a read starts, after the ranges of
/// a Chrome trace were read side by side, and as the model's build starts
/// (dev, paired medians against the build before, 2026-12-06: a 241 MB
/// Chrome trace read by 16 ranges on 16 threads peaked at 57.1 against
/// 58.3 MiB, 1.27× its model instead of 1.30×, at most 58.1 in 9 runs; on
/// one thread at 53.3 against 55.0; the other readers up to 2 MiB lower;
/// in the same time).
///
/// Only the executable's and the C library's mappings, which stay where
/// they are for the whole run: another library may be loaded meanwhile on
/// another thread (the viewer loads its Vulkan driver while the trace is
/// read), which maps its file whole and then maps and relocates its parts
/// in place, so that a range seen clean may no longer be by the time it is
/// unmapped (unmapping every library's clean mappings crashed the viewer
/// in one start of three). Of those, only the private mappings that cannot
/// be written and hold no page of the process's own, resident or swapped
/// out: the relocated read-only data, which the loader wrote, stays, and so
/// does a page a debugger wrote a breakpoint to. Reading
/// `/proc/self/smaps` walks the process's page tables (some milliseconds at
/// a few GiB resident): for a few calls a read, not for every give-back. A
/// no-op elsewhere than Linux, or where `/proc` cannot be read.
pub fn unmap_code() {
    let _p = crate::phases::span("code unmapped (one thread)");
    #[cfg(target_os = "linux")]
    {
        let (Ok(smaps), Ok(exe)) = (
            std::fs::read_to_string("/proc/self/smaps"),
            std::fs::read_link("/proc/self/exe"),
        ) else {
            return;
        };
        let maps = mappings(&smaps);
        let exe = exe.to_string_lossy();
        // the C library: the file mapped where its `free` is
        let free: unsafe extern "C" fn(*mut libc::c_void) = libc::free;
        let at = free as usize;
        let c_library = maps
            .iter()
            .find(|m| m.from <= at && at < m.to)
            .map_or("", |m| m.path);
        for m in &maps {
            if (m.path == exe || m.path == c_library) && m.clean() {
                // SAFETY: a private, read-only mapping of the executable's
                // or the C library's file (neither is unmapped while the
                // process runs) with no page of the process's own: its
                // pages are the file's, and come back from it as touched
                unsafe {
                    libc::madvise(
                        m.from as *mut libc::c_void,
                        m.to - m.from,
                        libc::MADV_DONTNEED,
                    );
                }
            }
        }
    }
}

/// A mapping as `/proc/PID/smaps` describes it ([`unmap_code`]).
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Mapping<'a> {
    from: usize,
    to: usize,
    perms: &'a str,
    /// The file's path ("" for none, `[heap]` and the like).
    path: &'a str,
    /// KiB of the process's own pages in it: resident, swapped out (None:
    /// not said).
    anonymous: Option<u64>,
    swapped: Option<u64>,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Mapping<'_> {
    /// A private mapping of a file that can be read and not written, with
    /// no page of the process's own (resident or swapped out).
    fn clean(&self) -> bool {
        self.path.starts_with('/')
            && self.perms.len() == 4
            && self.perms.starts_with('r')
            && !self.perms.contains('w')
            && self.perms.ends_with('p')
            && self.anonymous == Some(0)
            && self.swapped == Some(0)
            && self.to > self.from
    }
}

/// The mappings in `smaps` (the text of `/proc/PID/smaps`), in order.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn mappings(smaps: &str) -> Vec<Mapping<'_>> {
    let mut out: Vec<Mapping<'_>> = Vec::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else {
            continue;
        };
        if first == "Anonymous:" || first == "Swap:" {
            let kib = fields.next().and_then(|kb| kb.parse().ok());
            if let Some(m) = out.last_mut() {
                if first == "Swap:" {
                    m.swapped = kib;
                } else {
                    m.anonymous = kib;
                }
            }
            continue;
        }
        // a mapping's line: "from-to perms offset dev inode path"
        let Some((from, to)) = first.split_once('-') else {
            continue;
        };
        let (Ok(from), Ok(to)) = (
            usize::from_str_radix(from, 16),
            usize::from_str_radix(to, 16),
        ) else {
            continue;
        };
        let perms = fields.next().unwrap_or("");
        // the path: what follows the first five fields (it may hold blanks)
        let mut rest = line;
        for _ in 0..5 {
            rest = rest.trim_start();
            rest = &rest[rest.find(char::is_whitespace).unwrap_or(rest.len())..];
        }
        out.push(Mapping {
            from,
            to,
            perms,
            path: rest.trim(),
            anonymous: None,
            swapped: None,
        });
    }
    out
}

/// [`return_freed_memory`] once enough has been freed since the last time:
/// a fixed step ([`GiveBack::every`]), or one that grows with what was
/// freed before ([`GiveBack::growing`]), so that a long run of frees
/// gives back a bounded number of times (a trim walks every arena and, on
/// many cores, flushes every core's TLB).
#[derive(Debug, Clone)]
pub struct GiveBack {
    min: usize,
    /// The step is at least what was freed before over this (0: fixed).
    grow: usize,
    freed: usize,
    before: usize,
}

impl GiveBack {
    /// Gives back each time `step` more were freed.
    pub fn every(step: usize) -> Self {
        GiveBack {
            min: step,
            grow: 0,
            freed: 0,
            before: 0,
        }
    }

    /// Gives back each time `min`, or a `grow`th of what was freed before
    /// if more, were freed.
    pub fn growing(min: usize, grow: usize) -> Self {
        GiveBack {
            grow,
            ..Self::every(min)
        }
    }

    /// Counts `amount` more freed, and gives back when the step is reached.
    pub fn freed(&mut self, amount: usize) {
        if self.due(amount) {
            return_freed_memory();
        }
    }

    /// Counts `amount` more freed: whether the step is reached (the count
    /// then starts again).
    pub fn due(&mut self, amount: usize) -> bool {
        self.freed += amount;
        let step = match self.grow {
            0 => self.min,
            g => self.min.max(self.before / g),
        };
        let due = self.freed >= step;
        if due {
            self.before += self.freed;
            self.freed = 0;
        }
        due
    }
}

/// The most malloc arenas (glibc's per-thread heaps) [`share_arenas`]
/// allows for a small input, the main one included.
pub const ARENAS: i32 = 4;

/// Inputs of this many bytes or more are read with a malloc arena a
/// thread ([`arenas_for`]).
pub const LARGE_INPUT: u64 = 256 << 20;

/// With more threads in the pool than this, the arenas' free tops are
/// given back too ([`share_arenas`], [`TOP_TRIM_BYTES`]).
pub const TOPS_FROM_THREADS: usize = ARENAS as usize;

/// The trim threshold set at the first [`return_freed_memory`] of a
/// process whose pool has more than [`TOPS_FROM_THREADS`] threads. The
/// free memory at the top of a thread's arena is not given back by
/// `malloc_trim` (which walks only the free chunks inside an arena, and
/// shrinks only the main arena's top); glibc shrinks it when a block of it
/// is freed and the top holds more than the trim threshold, which rises,
/// as a read frees large mapped blocks, to twice the largest (up to 64
/// MiB). So a read on 16 threads left each thread's arena 1-2 MiB of
/// untouched, free top resident: a 528 MB Chrome trace read by 16 ranges
/// peaked at 1.36-1.40× its model, 1.21-1.22× with this (2-core machine,
/// 16 threads). Set at the first give-back, not at the start: setting it
/// freezes glibc's mmap threshold where it stands, which at the start is
/// 128 KiB (each block from 128 KiB up then a mapping of its own: a PICL
/// read took 1.25× as long). On 1 or 2 threads it bought nothing and made
/// PICL's worker refault its freed tops (1.06-1.07× the time), so it is
/// left to glibc there.
pub const TOP_TRIM_BYTES: i32 = 1 << 20;

/// Whether the next [`return_freed_memory`] sets the trim threshold to
/// [`TOP_TRIM_BYTES`] ([`share_arenas`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static TRIM_TOPS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Limits the process's malloc arenas to what reading `input` (a file: its
/// size) wants ([`arenas_for`]): [`ARENAS`] shared ones, or one a thread
/// of the pool for a large input; [`ARENAS`] with no input or one that
/// cannot be read (the reader then says why). Unless the user set glibc's
/// own limit (`MALLOC_ARENA_MAX`, or `arena_max` in `GLIBC_TUNABLES`).
/// glibc gives each new thread an arena of its own, up to 8 a core, and
/// an arena keeps what its thread freed: reading on 16 threads, the peak
/// was 1.43× the model for a 528 MB Chrome trace, 1.45× for a PICL trace
/// of 65,536 processors and 1.76× for a 150 MB OTF2 archive, and 1.33×,
/// 1.35× and 1.43× with 4 arenas (on 2 cores, in the same time: paired
/// medians 0.99–1.01). Also has the first [`return_freed_memory`] lower
/// the trim threshold where the pool has more than [`TOPS_FROM_THREADS`]
/// threads ([`TOP_TRIM_BYTES`]; unless the user set it). Call it before
/// the thread pool starts (arenas are given to threads at their first
/// allocation). A no-op elsewhere than glibc.
pub fn share_arenas(input: Option<&std::path::Path>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if pool_threads() > TOPS_FROM_THREADS && !trim_threshold_set_by_user() {
            TRIM_TOPS.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if arena_limit_set_by_user() {
            return;
        }
        let bytes = input
            .and_then(|p| std::fs::metadata(p).ok())
            .filter(|m| m.is_file())
            .map_or(0, |m| m.len());
        // SAFETY: mallopt only sets a limit on arenas made later
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas_for(bytes, pool_threads()));
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = input;
}

/// The arenas for reading an input of `bytes` bytes on `threads` threads:
/// [`ARENAS`], or one a thread for an input of [`LARGE_INPUT`] or more.
/// Threads that share an arena wait on its lock, and `malloc_trim` holds
/// each arena's lock while it walks it. On 16 cores (an H200 machine,
/// 2026-12-04) 4 shared arenas made reading a 3.06 GB Paraver trace 1.2–1.4×
/// slower (4.1–4.8 s against 3.35 s) and a 426 MB PICL trace 1.15–1.27×,
/// while an arena a thread added 0.5–1 % to the Paraver read's peak (7–16
/// of 1,710 MiB) and 2 % to PICL's (4 of 249 MiB); for a 60 MB OTF2
/// archive it would have added 25 % (22 of 87 MiB) for no gain in time,
/// so small inputs keep sharing. Just above the line, a 294 MB PICL trace
/// read 1.05–1.2× faster for 4–6 MiB more (1.29 → 1.31× its model).
pub fn arenas_for(bytes: u64, threads: usize) -> i32 {
    if bytes >= LARGE_INPUT {
        (threads.min(i32::MAX as usize) as i32).max(ARENAS)
    } else {
        ARENAS
    }
}

/// The threads rayon's global pool will have: `RAYON_NUM_THREADS` when set
/// to a positive number, else the cores this process may use.
pub fn pool_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether the user set glibc's trim threshold (`MALLOC_TRIM_THRESHOLD_`,
/// or `trim_threshold` in `GLIBC_TUNABLES`): it then stays the user's.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_threshold_set_by_user() -> bool {
    std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("trim_threshold"))
}

/// Whether the user set glibc's limit on arenas (`MALLOC_ARENA_MAX`, or
/// `arena_max` in `GLIBC_TUNABLES`): it then stays the user's.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn arena_limit_set_by_user() -> bool {
    std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"))
}

/// Bytes from which glibc's malloc always gives a block a mapping of its
/// own: the most its dynamic mmap threshold rises to on 64-bit systems
/// (`DEFAULT_MMAP_THRESHOLD_MAX`, 32 MiB).
const OWN_MAPPING_BYTES: usize = 32 << 20;

/// An empty vector with room for at least `len` elements, and for 32 MiB
/// at least: a block of that size is a mapping of its own (glibc), whose
/// room takes no memory until written. Freed, truncated and shrunk
/// (`shrink_to_fit`) or grown past its room (`mremap`, no copy), it gives
/// its pages back to the system at once; a vector grown by doubling from
/// empty is carved out of an arena, where the memory it frees stays
/// resident beside what the arena still holds. For the few vectors a
/// reading thread fills and the model copies out of: an OTF2 read on 16
/// threads held its 16 threads' metric samples after they were copied
/// into one list (`readers::otf2`). Where the room is refused (a limit on
/// address space) it has room for `len`, or none.
pub fn own_mapping<T>(len: usize) -> Vec<T> {
    let room = len.max(OWN_MAPPING_BYTES / std::mem::size_of::<T>().max(1));
    let mut v = Vec::new();
    if v.try_reserve_exact(room).is_err() {
        let _ = v.try_reserve_exact(len);
    }
    v
}

/// A page, and a transparent huge page, of x86-64 and AArch64 Linux.
const PAGE: usize = 4096;
const HUGE_PAGE: usize = 2 << 20;

/// A list of this many bytes or more is large enough for huge pages
/// ([`prefer_huge_pages`]) and for its pages to be faulted in ahead
/// ([`FilledAhead`]); a smaller one costs few faults.
const LARGE_LIST_BYTES: usize = 8 * HUGE_PAGE;

/// Asks the kernel to back `v`'s buffer with huge pages (2 MiB) where it
/// spans whole ones, when it is large (16 MiB or more). For the few large
/// arrays filled from the front to the end (the readers' list of
/// messages, a cache's columns read back): each
/// of their 4 KiB pages
/// otherwise costs a page fault when first written, and page faults took
/// about a quarter of a one-core read's time (Paraver, 253 MB: 67,000
/// faults, 0.37 s of system time of 1.2 s); a huge page is one fault for
/// 512 of them and fewer TLB misses after. Not for arrays written
/// scattered or that may stay partly empty (the model's interval columns,
/// filled a location's run at a time while the raw records are freed): a
/// huge page is resident whole from its first byte, which raised that
/// read's peak from 165 to 206 MiB. Not for a vector that will grow
/// either: glibc grows a large block with `mremap`, which fails on a
/// mapping that `madvise` has split, and then copies it whole. Advice
/// only: where transparent huge pages are off (or `always` already)
/// nothing changes; a no-op elsewhere than Linux.
pub fn prefer_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        if bytes < LARGE_LIST_BYTES {
            return;
        }
        let start = v.as_ptr() as usize;
        let (from, to) = (
            start.next_multiple_of(HUGE_PAGE),
            (start + bytes) / HUGE_PAGE * HUGE_PAGE,
        );
        if to > from {
            // SAFETY: advice on whole pages inside the Vec's own buffer;
            // MADV_HUGEPAGE changes how the kernel backs them, never their
            // contents. Refused (an old kernel, THP compiled out), it
            // changes nothing.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// The room of a list that one thread fills from the front (a Paraver
/// read's list of messages, reserved whole and backed by huge pages:
/// [`prefer_huge_pages`]), made resident ahead of that thread by the
/// others. Each thread that parses what the filler will append says how
/// many elements it will append ([`Self::grow`]); the pages up to the end
/// of the huge page in which all that was said ends are faulted in there
/// and then, on that thread, with `MADV_POPULATE_WRITE`, so that the
/// filler's copy finds them resident. A huge page's fault zeroes 2 MiB:
/// in the copy of a Paraver read's messages, on the thread every other
/// waits on at the end of each batch, that was nine tenths of the copy's
/// time (dev, 750 MB, 2 threads: 7 % of all the read's samples).
///
/// The sum said never passes what the filler will append in all (each
/// part is said once and appended once), so no page is made resident that
/// the filler would not have written, but for the rest of the huge page
/// the sum ends in (which the filler's first write there faults in whole
/// too, where it is backed by huge pages). Rounded down instead, the
/// filler faulted that page itself at the end of nearly every batch (the
/// said sum is a batch ahead only once the next batch is parsed): the
/// hand-over took 0.06-0.16 s, not 0.03-0.05. Populating changes no byte
/// (a page already resident is left as it is), so the filler may write
/// the same pages meanwhile. Should the list outgrow its room and be
/// moved, the old room is given back by glibc and the populating of what
/// is left of it fails (ENOMEM) or makes resident pages that another
/// allocation would have faulted in itself; nothing is written. It does
/// nothing on a pool of one thread, on a kernel without
/// `MADV_POPULATE_WRITE` (before 5.14) and elsewhere than Linux.
#[derive(Debug)]
pub struct FilledAhead {
    /// The address of the room's first unwritten byte, and of its end;
    /// the bytes of an element.
    from: usize,
    end: usize,
    size: usize,
    /// The bytes said so far, and the address up to which the pages were
    /// made resident (or are being, by the thread that moved it).
    said: std::sync::atomic::AtomicUsize,
    done: std::sync::atomic::AtomicUsize,
    refused: std::sync::atomic::AtomicBool,
}

impl FilledAhead {
    /// For `v`'s room beyond its elements, when it has at least
    /// [`LARGE_LIST_BYTES`] of it and the pool more than one thread (on
    /// one, the faults would only move away from the copy).
    pub fn of<T>(v: &Vec<T>) -> Option<Self> {
        let size = std::mem::size_of::<T>();
        let room = (v.capacity() - v.len()).saturating_mul(size);
        if !cfg!(target_os = "linux") || room < LARGE_LIST_BYTES || rayon::current_num_threads() < 2
        {
            return None;
        }
        let from = v.as_ptr() as usize + v.len() * size;
        Some(Self {
            from,
            end: from + room,
            size,
            said: 0.into(),
            done: (from / PAGE * PAGE).into(),
            refused: false.into(),
        })
    }

    /// `n` more elements will be appended (in some order with the
    /// others'): the pages up to the end of the huge page in which all
    /// that was said ends are made resident.
    pub fn grow(&self, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if n == 0 || self.refused.load(Relaxed) {
            return;
        }
        let bytes = n.saturating_mul(self.size);
        let said = self.said.fetch_add(bytes, Relaxed).saturating_add(bytes);
        let upto = self
            .from
            .saturating_add(said)
            .checked_next_multiple_of(HUGE_PAGE)
            .unwrap_or(usize::MAX)
            .min(self.end.next_multiple_of(PAGE));
        let old = self.done.fetch_max(upto, Relaxed);
        if upto > old && !populate_write(old, upto - old) {
            self.refused.store(true, Relaxed);
        }
    }
}

/// Faults in the pages of `[from, from + len)` (page-aligned) writable,
/// changing no byte; false where the kernel refuses the advice itself.
#[cfg(target_os = "linux")]
fn populate_write(from: usize, len: usize) -> bool {
    // SAFETY: MADV_POPULATE_WRITE only faults pages in (as a write would,
    // without writing): the contents of every page, resident or not, stay
    // what they were; on a range that is not mapped it fails (ENOMEM)
    // and does nothing
    let r = unsafe { libc::madvise(from as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
}

#[cfg(not(target_os = "linux"))]
fn populate_write(_from: usize, _len: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of the mappings, only the private, read-only file mappings with no
    /// page of their own are clean: not the relocated data (resident or
    /// swapped out), not a writable, shared or anonymous one; a path is
    /// read whole.
    #[test]
    fn clean_mappings_are_private_read_only_and_unwritten() {
        let exe = "/opt/my tools/tapestry";
        let map = |range: &str, perms: &str, offset: &str, inode: &str, path: &str, anon: u64| {
            // (a mapping's pages of its own: resident, or else swapped out)
            let (anon, swap) = if anon == 9 { (0, 8) } else { (anon, 0) };
            format!(
                "{range} {perms} {offset} fe:00 {inode}                   {path}\n\
                 Size:                100 kB\nRss:                  40 kB\n\
                 Anonymous:        {anon} kB\nSwap:        {swap} kB\n\
                 SwapPss:        {swap} kB\nVmFlags: rd mr mw me\n"
            )
        };
        let smaps = [
            map("1000-3000", "r--p", "00000000", "77", exe, 0),
            map("3000-9000", "r-xp", "00002000", "77", exe, 0),
            // the relocated read-only data: written by the loader
            map("9000-a000", "r--p", "00008000", "77", exe, 4),
            map("a000-b000", "rw-p", "00009000", "77", exe, 0),
            // a debugger's breakpoint in the code
            map("b000-c000", "r-xp", "0000a000", "77", exe, 4),
            map(
                "c000-d000",
                "r-xp",
                "00000000",
                "78",
                "/usr/lib/libc.so.6",
                0,
            ),
            // an offset whose digits are the inode's
            map("e000-f000", "r--p", "00000077", "77", exe, 0),
            map("f000-10000", "rw-p", "00000000", "0", "", 0),
            map("10000-11000", "r--s", "00000000", "77", exe, 0),
            map("11000-12000", "r--p", "00000000", "0", "[vvar]", 0),
            map("12000-13000", "---p", "00000000", "77", exe, 0),
            // relocated data swapped out
            map("13000-14000", "r--p", "00012000", "77", exe, 9),
        ]
        .concat();
        let maps = mappings(&smaps);
        assert_eq!(maps.len(), 12);
        assert_eq!(maps[5].path, "/usr/lib/libc.so.6");
        assert_eq!(
            (maps[0].from, maps[0].to, maps[0].path),
            (0x1000, 0x3000, exe)
        );
        let clean: Vec<(usize, usize)> = maps
            .iter()
            .filter(|m| m.clean())
            .map(|m| (m.from, m.to))
            .collect();
        assert_eq!(
            clean,
            [
                (0x1000, 0x3000),
                (0x3000, 0x9000),
                (0xc000, 0xd000),
                (0xe000, 0xf000)
            ]
        );
        // a mapping whose own pages are not said is not clean
        for said in ["Anonymous:        0 kB\n", "Swap:        0 kB\n"] {
            let cut = smaps.replace(said, "");
            assert!(!mappings(&cut).iter().any(Mapping::clean));
        }
        assert!(mappings("").is_empty());
        assert!(mappings("garbage\n-\nzz-yy r--p\nAnonymous: 0 kB\n").is_empty());
    }

    #[test]
    fn give_back_steps_fixed_or_growing() {
        let mut every = GiveBack::every(10);
        let due: Vec<bool> = [4, 5, 1, 9, 30, 0].iter().map(|&a| every.due(a)).collect();
        assert_eq!(due, [false, false, true, false, true, false]);
        // steps of 10 until 90 were given back, then of an 8th of what was
        let mut growing = GiveBack::growing(10, 8);
        let due: Vec<usize> = (1..=40).filter(|_| growing.due(5)).collect();
        let given: Vec<usize> = due.iter().map(|i| i * 5).collect();
        assert_eq!(
            given,
            [
                10, 20, 30, 40, 50, 60, 70, 80, 90, 105, 120, 135, 155, 175, 200
            ]
        );
    }

    #[test]
    fn large_inputs_get_an_arena_a_thread() {
        // small inputs share, whatever the threads
        assert_eq!(arenas_for(0, 16), ARENAS);
        assert_eq!(arenas_for(LARGE_INPUT - 1, 16), ARENAS);
        // large ones: one a thread, never fewer than the shared ones
        assert_eq!(arenas_for(LARGE_INPUT, 16), 16);
        assert_eq!(arenas_for(3 << 30, 64), 64);
        assert_eq!(arenas_for(3 << 30, 2), ARENAS);
        assert_eq!(arenas_for(u64::MAX, usize::MAX), i32::MAX);
    }

    #[test]
    fn an_own_mapping_has_room_for_32_mib_or_more() {
        let v: Vec<u64> = own_mapping(0);
        assert!(v.is_empty() && v.capacity() >= (32 << 20) / 8);
        let v: Vec<[u8; 24]> = own_mapping(3 << 20);
        assert!(v.capacity() >= 3 << 20);
        let v: Vec<()> = own_mapping(5);
        assert!(v.capacity() >= 5);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("1.5k"), Some(1536));
        assert_eq!(parse_size("512 M"), Some(512 << 20));
        assert_eq!(parse_size("-1G"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn the_guard_names_need_and_limit() {
        assert!(check(100, 100, || "x".into()).is_ok());
        let e = check(3 << 30, 1 << 30, || "a field of 3 bins".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a field of 3 bins needs ~3.0 GiB"), "{e}");
        assert!(e.contains("the limit is 1.0 GiB"), "{e}");
        assert!(check(u64::MAX, limit(), || "x".into()).is_err());
        assert!(limit() > 1 << 20);
    }

    /// Resident or not, each 4 KiB page of `[from, to)` (page-aligned).
    #[cfg(target_os = "linux")]
    fn resident(from: usize, to: usize) -> Vec<bool> {
        let mut out = vec![0u8; (to - from).div_ceil(PAGE)];
        // SAFETY: mincore reads the page tables of a range of this
        // process's own memory into `out`, one byte a page
        let r = unsafe { libc::mincore(from as *mut libc::c_void, to - from, out.as_mut_ptr()) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        out.iter().map(|b| b & 1 == 1).collect()
    }

    /// What the parsing threads say is faulted in, up to the end of the
    /// huge page the sum of it ends in, and no further; the filler, writing
    /// meanwhile (half as much, so that the rest is resident only if
    /// populated), finds its bytes as it wrote them.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_room_said_is_faulted_in_ahead_of_the_filler() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        pool.install(|| {
            // one thread: no populating (the faults would only move)
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let v: Vec<u64> = Vec::with_capacity(8 << 20);
            assert!(one.install(|| FilledAhead::of(&v)).is_none());
            // too small a room
            assert!(FilledAhead::of(&Vec::<u64>::with_capacity(1 << 20)).is_none());

            let mut v: Vec<u64> = Vec::with_capacity(8 << 20); // 64 MiB
            v.extend(0..1000u64);
            let a = FilledAhead::of(&v).unwrap();
            let base = v.as_ptr() as usize;
            let page0 = base / PAGE * PAGE;
            // said in parts, on the pool's threads: 1,000,000 elements
            rayon::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|_| {
                        for _ in 0..250 {
                            a.grow(1000);
                        }
                    });
                }
                // the filler writes meanwhile, half of what is said (the
                // other half's pages are resident only if populated)
                for i in 1000..501_000u64 {
                    v.push(i);
                }
            });
            assert!(v.iter().copied().eq(0..501_000u64), "a byte changed");
            if a.refused.load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("this kernel has no MADV_POPULATE_WRITE: nothing to check");
                return;
            }
            let said_end = base + 1_001_000 * 8;
            let upto = said_end.next_multiple_of(HUGE_PAGE);
            let end = base + v.capacity() * 8;
            assert!(resident(page0, upto).iter().all(|&r| r));
            // the pages after the last huge page said stay as they were:
            // never written, not resident
            let after = resident(upto, end / PAGE * PAGE);
            assert!(
                after.iter().all(|&r| !r),
                "{} pages beyond",
                after.iter().filter(|&&r| r).count()
            );
            // nothing more is said past the room's end
            a.grow(usize::MAX / 8);
            assert!(resident(page0, end / PAGE * PAGE).iter().all(|&r| r));
        });
    }
}
