//! A trace's state intervals resident on the GPU: uploaded once, then
//! reduced by any number of analyses (moments, busy fields, any window,
//! any state selection) without another transfer.
//!
//! The interval columns go up as they are in the model (`u64` starts and
//! ends, read by the shaders as `(low, high)` pairs, and `u32` states): no
//! host-side packing, only copies, through two reused staging buffers that
//! every core fills in turn while the GPU copies the other out
//! ([`upload_columns`]). They are cut into chunks, each within one storage binding (a location may span
//! several); each chunk carries its own `u32` CSR offsets and its
//! locations' origins. A kernel runs one dispatch
//! per chunk over all of its intervals, in tiles (see
//! [`super::kernels::moments`] and [`super::kernels::busy_bins`]), and all
//! dispatches of an analysis go in one submission whose results are read
//! back once.

use std::time::{Duration, Instant};

use super::kernels::output;
use super::{GpuContext, GpuError};
use crate::model::Trace;

/// One chunk of consecutive intervals, resident (cut anywhere: its first
/// and last location may continue in the chunks beside it).
pub(crate) struct ResidentChunk {
    /// The chunk's first location (global id); chunks are cut anywhere,
    /// so a location's intervals may span several.
    pub(crate) first_loc: usize,
    /// How many locations (`offsets` has one more entry).
    pub(crate) locs: usize,
    /// Global index of the chunk's first interval.
    pub(crate) first: u64,
    /// Intervals in the chunk.
    pub(crate) len: u64,
    pub(crate) starts: wgpu::Buffer,
    pub(crate) ends: wgpu::Buffer,
    pub(crate) states: wgpu::Buffer,
    /// Offsets relative to the chunk's first interval (`u32`), clamped to
    /// the chunk (its first and last location may continue outside).
    pub(crate) offsets: wgpu::Buffer,
    /// Each location's first start over the whole trace (`u64`): the
    /// origin of its moments, the same in every chunk.
    pub(crate) origins: wgpu::Buffer,
}

impl ResidentChunk {
    /// The chunk's local offset of its location `l` (local id, up to
    /// `locs`), clamped to the chunk.
    pub(crate) fn local_offset(&self, trace: &GpuTrace, l: usize) -> u32 {
        let o = trace.offsets[self.first_loc + l];
        (o.clamp(self.first, self.first + self.len) - self.first) as u32
    }
}

/// Time spent on each side of an analysis on the GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Uploading the trace (host wall time, until the GPU has the data);
    /// zero for an analysis of a trace already resident.
    pub upload: Duration,
    /// The kernels' own time (GPU timestamps around the passes), where the
    /// adapter has timestamp queries.
    pub kernel: Option<Duration>,
    /// The host's preparation before the submission (the pipeline, taken
    /// from the context's cache or compiled the first time, the small
    /// buffers, the bind groups and the commands), host wall time.
    pub prepare: Duration,
    /// Start to results mapped on the host (the preparation, the kernels,
    /// the copy back and the mapping), host wall time.
    pub run: Duration,
    /// Turning what came back into the result on the host (read in place
    /// in the mapped memory).
    pub finish: Duration,
}

/// A trace's intervals on the GPU. Cheap to keep: analyses borrow it.
pub struct GpuTrace {
    pub(crate) ctx: GpuContext,
    pub(crate) chunks: Vec<ResidentChunk>,
    /// The largest storage binding the kernels may use (bytes).
    pub(crate) limit: u64,
    /// The global CSR offsets (host copy; the origins of the moments).
    pub(crate) offsets: Vec<u64>,
    /// Each location's first start (host copy).
    pub(crate) origins: Vec<crate::model::Time>,
    intervals: u64,
    bytes: u64,
    upload: Duration,
    /// Output and read-back buffers kept between analyses (taken while in
    /// use, so concurrent analyses make their own).
    scratch: std::sync::Mutex<Option<Scratch>>,
    /// What the moment display's rows kernel reads of every location,
    /// uploaded on its first use.
    pub(crate) row_inputs: std::sync::OnceLock<super::kernels::moments::RowInputs>,
    /// Whether the moments kernel combines its tiles' first levels in
    /// subgroups (where the adapter has them; see [`GpuTrace::use_subgroups`]).
    pub(crate) subgroups: bool,
    /// The largest busy field (bytes) the views keep on the GPU: the tube
    /// and Gantt kernels bind the whole field at once.
    field_limit: u64,
}

/// A result buffer and its host-readable twin, reused while large enough.
pub(crate) struct Scratch {
    pub(crate) out: wgpu::Buffer,
    pub(crate) back: wgpu::Buffer,
}

impl GpuTrace {
    /// Uploads `trace`'s intervals. `max_binding` (bytes) lowers the
    /// device's storage binding limit, to force chunking in tests.
    ///
    /// Fails when the device refuses the memory.
    pub fn upload(
        ctx: &GpuContext,
        trace: &Trace,
        max_binding: Option<u64>,
    ) -> Result<Self, GpuError> {
        let t = Instant::now();
        let limit = max_binding
            .unwrap_or(ctx.max_binding())
            .min(ctx.max_binding())
            .min(ctx.limits.max_buffer_size)
            .max(4096);
        let iv = &trace.intervals;
        let offsets = iv.offsets().to_vec();
        let all = iv.all();
        let p = iv.num_locations();
        let max_iv = limit / 8;
        // the moments write 32 bytes per location of a chunk
        let max_locs = (limit / 32).max(1) as usize;
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let n = all.start.len() as u64;
        // the location of interval `i`: the last `l` with offsets[l] <= i
        let locate = |i: u64| offsets.partition_point(|&o| o <= i).saturating_sub(1);
        let mut chunks = Vec::new();
        // per chunk, its CSR offsets and origins (made here, uploaded below)
        let mut made: Vec<(Vec<u32>, Vec<[u32; 2]>)> = Vec::new();
        let mut c0 = 0u64;
        while c0 < n {
            // a chunk of at most `max_iv` intervals and `max_locs` locations;
            // a location may continue in the next chunk
            let l0 = locate(c0);
            let mut c1 = (c0 + max_iv).min(n);
            if let Some(&o) = offsets.get(l0 + max_locs) {
                c1 = c1.min(o);
            }
            let l1 = locate(c1 - 1);
            let local: Vec<u32> = offsets[l0..=l1 + 1]
                .iter()
                .map(|&o| (o.clamp(c0, c1) - c0) as u32)
                .collect();
            let origins: Vec<[u32; 2]> = (l0..=l1)
                .map(|l| {
                    let t = all.start[offsets[l] as usize];
                    [t as u32, (t >> 32) as u32]
                })
                .collect();
            let len = c1 - c0;
            chunks.push(ResidentChunk {
                first_loc: l0,
                first: c0,
                locs: l1 + 1 - l0,
                len,
                starts: column(ctx, "starts", len * 8),
                ends: column(ctx, "ends", len * 8),
                states: column(ctx, "states", len * 4),
                offsets: column(ctx, "offsets", local.len() as u64 * 4),
                origins: column(ctx, "origins", origins.len() as u64 * 8),
            });
            made.push((local, origins));
            c0 = c1;
        }
        let mut pieces = Vec::with_capacity(chunks.len() * 5);
        for (c, (local, origins)) in chunks.iter().zip(&made) {
            let (a, b) = (c.first as usize, (c.first + c.len) as usize);
            pieces.push((bytemuck::cast_slice(&all.start[a..b]), &c.starts));
            pieces.push((bytemuck::cast_slice(&all.end[a..b]), &c.ends));
            pieces.push((bytemuck::cast_slice(&all.state[a..b]), &c.states));
            pieces.push((bytemuck::cast_slice(local.as_slice()), &c.offsets));
            pieces.push((bytemuck::cast_slice(origins.as_slice()), &c.origins));
        }
        upload_columns(ctx, &pieces)?;
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Other(format!(
                "the GPU has no room for the trace's {} intervals: {e}",
                all.start.len()
            )));
        }
        let origins = (0..p)
            .map(|l| {
                let o = offsets[l] as usize;
                all.start.get(o).copied().unwrap_or(0)
            })
            .collect();
        Ok(GpuTrace {
            ctx: ctx.clone(),
            chunks,
            limit,
            offsets,
            origins,
            intervals: all.start.len() as u64,
            bytes: all.start.len() as u64 * 20 + (p as u64 + 1) * 4,
            upload: t.elapsed(),
            scratch: std::sync::Mutex::new(None),
            row_inputs: std::sync::OnceLock::new(),
            subgroups: ctx.features.contains(wgpu::Features::SUBGROUP),
            field_limit: ctx.max_binding().min(ctx.limits.max_buffer_size),
        })
    }

    /// Whether a busy field of `bins` bins over every location fits one
    /// storage binding, as the Kiviat tube's and the Gantt chart's kernels
    /// need; the views compute on the CPU otherwise (and say so).
    pub fn field_fits(&self, bins: usize) -> bool {
        (self.num_locations() as u64)
            .saturating_mul(bins as u64)
            .saturating_mul(8)
            <= self.field_limit
    }

    /// Lowers the largest field [`GpuTrace::field_fits`] accepts (bytes;
    /// never above the device's binding), to test the views' fallback.
    pub fn limit_fields(&mut self, bytes: u64) {
        self.field_limit = self.field_limit.min(bytes);
    }

    /// Lets the moments kernel combine the first levels of each tile's tree
    /// in subgroups (`shaders/moments_subgroups.wgsl`, the default where the
    /// adapter has `SUBGROUP`) or makes it use workgroup memory alone
    /// (`shaders/moments.wgsl`); both give the same results, bit for bit.
    /// Returns whether subgroups are now used (never without the feature).
    pub fn use_subgroups(&mut self, on: bool) -> bool {
        self.subgroups = on && self.ctx.features.contains(wgpu::Features::SUBGROUP);
        self.subgroups
    }

    /// The context the trace lives on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Locations.
    pub fn num_locations(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Intervals resident.
    pub fn num_intervals(&self) -> u64 {
        self.intervals
    }

    /// Bytes uploaded (20 per interval and 4 per location).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// How long the upload took.
    pub fn upload_time(&self) -> Duration {
        self.upload
    }

    /// "N intervals (X MB) uploaded in Y ms", for the user.
    pub fn upload_summary(&self) -> String {
        format!(
            "{} intervals ({:.1} MB) uploaded in {:.1} ms",
            self.intervals,
            self.bytes as f64 / 1e6,
            self.upload.as_secs_f64() * 1e3
        )
    }

    /// A result buffer of at least `out` bytes and a read-back buffer of at
    /// least `back` bytes: those of the previous analysis when large
    /// enough, else new ones (4 KiB at least, grown by half again, so that a
    /// run of growing analyses allocates a few times only). Give them back
    /// with [`GpuTrace::give_back`].
    pub(crate) fn scratch(&self, out: u64, back: u64) -> Scratch {
        let kept = self.scratch.lock().ok().and_then(|mut s| s.take());
        let grow = |n: u64| (n + n / 2).max(4096).next_multiple_of(256);
        match kept {
            Some(s) if s.out.size() >= out && s.back.size() >= back => s,
            Some(s) => Scratch {
                out: if s.out.size() >= out {
                    s.out
                } else {
                    output(&self.ctx, "results", grow(out))
                },
                back: if s.back.size() >= back {
                    s.back
                } else {
                    staging(&self.ctx, grow(back))
                },
            },
            None => Scratch {
                out: output(&self.ctx, "results", grow(out)),
                back: staging(&self.ctx, grow(back)),
            },
        }
    }

    /// The end of an analysis: submits `enc`, waits until the first
    /// `total` bytes of `scratch.back` are mapped (the pass's timestamps at
    /// byte `stamps`, where `timers` resolved them), turns them into the
    /// result with `f` in place, keeps the scratch for the next analysis,
    /// and says where the time went since `start`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete<R>(
        &self,
        enc: wgpu::CommandEncoder,
        scratch: Scratch,
        total: u64,
        timers: Option<&PassTimer>,
        stamps: u64,
        start: Instant,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<(R, Timing), GpuError> {
        let prepare = start.elapsed();
        self.ctx.queue.submit([enc.finish()]);
        let mut run = Duration::ZERO;
        let mut finish = Instant::now();
        let (result, kernel) = crate::gpu::map_read_with(&self.ctx, &scratch.back, total, |b| {
            run = start.elapsed();
            finish = Instant::now();
            let kernel =
                timers.and_then(|_| PassTimer::duration(&self.ctx, b.get(stamps as usize..)?));
            (f(b), kernel)
        })?;
        self.give_back(scratch);
        Ok((
            result,
            Timing {
                upload: Duration::ZERO,
                kernel,
                prepare,
                run,
                finish: finish.elapsed(),
            },
        ))
    }

    /// Keeps `s` for the next analysis.
    pub(crate) fn give_back(&self, s: Scratch) {
        if let Ok(mut k) = self.scratch.lock() {
            *k = Some(s);
        }
    }

    /// Chunks (dispatches per analysis).
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// A storage column of `bytes` bytes, filled by [`upload_columns`] (at
/// least 16 bytes: empty bindings are not allowed).
fn column(ctx: &GpuContext, label: &str, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Bytes of one staging buffer of an upload. Two alternate: the host fills
/// one (all cores copying) while the GPU copies the other out, so the
/// upload runs at the host's copy rate or the bus's, whichever is lower,
/// and its pinned memory is 2 × this, not the trace's size.
const STAGE: u64 = 64 << 20;

/// Bytes copied by one task while filling a staging buffer.
const STAGE_TASK: usize = 1 << 20;

/// One task's share of a mapped staging buffer.
struct Part(std::ptr::NonNull<[u8]>);

// SAFETY: a `Part` is a range of a mapping that no other `Part` overlaps,
// written by the one task it is handed to while the mapping is alive
unsafe impl Send for Part {}

/// Fills each column (`bytes`, destination) through two staging buffers in
/// turn, and waits until the GPU has it all. Lengths are multiples of 4
/// bytes and at most the buffer's size; a column shorter than its buffer
/// (at least 16 bytes) is padded with zeros.
pub(crate) fn upload_columns(
    ctx: &GpuContext,
    columns: &[(&[u8], &wgpu::Buffer)],
) -> Result<(), GpuError> {
    upload_staged(ctx, columns, STAGE)
}

/// [`upload_columns`] through staging buffers of `stage` bytes (a multiple
/// of 4).
fn upload_staged(
    ctx: &GpuContext,
    columns: &[(&[u8], &wgpu::Buffer)],
    stage: u64,
) -> Result<(), GpuError> {
    use rayon::prelude::*;
    // what goes up: each column's bytes, padded to its buffer's size
    let sources: Vec<(std::borrow::Cow<[u8]>, &wgpu::Buffer)> = columns
        .iter()
        .map(|&(b, dst)| {
            if (b.len() as u64) < dst.size() {
                let mut v = b.to_vec();
                v.resize(dst.size() as usize, 0);
                (v.into(), dst)
            } else {
                (b.into(), dst)
            }
        })
        .collect();
    let total: u64 = sources.iter().map(|(b, _)| b.len() as u64).sum();
    if total == 0 {
        return Ok(());
    }
    let stage = stage.min(total.next_multiple_of(4));
    let wait = |index: Option<wgpu::SubmissionIndex>| {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: index,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Other(format!("waiting for the upload: {e}")))
    };
    let mut ring: [Option<(wgpu::Buffer, Option<wgpu::SubmissionIndex>)>; 2] = [None, None];
    // where the upload stands: column `col`, byte `at` of it
    let (mut col, mut at) = (0usize, 0usize);
    let mut round = 0usize;
    while col < sources.len() {
        let slot = &mut ring[round % 2];
        round += 1;
        let buf = match slot.take() {
            None => ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("upload"),
                size: stage,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            }),
            Some((buf, index)) => {
                // mapped again once its last copy is done
                let (tx, rx) = std::sync::mpsc::channel();
                buf.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                    let _ = tx.send(r);
                });
                wait(index)?;
                rx.recv()
                    .map_err(|e| GpuError::Other(format!("mapping the upload: {e}")))?
                    .map_err(|e| GpuError::Other(format!("mapping the upload: {e}")))?;
                buf
            }
        };
        // this round's pieces: (staging offset, source bytes, destination, offset there)
        let mut plan: Vec<(u64, &[u8], &wgpu::Buffer, u64)> = Vec::new();
        let mut used = 0u64;
        while col < sources.len() && used < stage {
            let (src, dst) = (&sources[col].0[..], sources[col].1);
            let take = ((stage - used) as usize).min(src.len() - at);
            if take > 0 {
                plan.push((used, &src[at..at + take], dst, at as u64));
            }
            used += take as u64;
            at += take;
            if at == src.len() {
                col += 1;
                at = 0;
            }
        }
        {
            let view = buf.slice(..used);
            let mut view = view
                .get_mapped_range_mut()
                .map_err(|e| GpuError::Other(format!("filling the upload: {e}")))?;
            // cut the staging memory into the pieces' tasks, in order
            let mut rest = view.slice(..);
            let mut tasks = Vec::new();
            for &(_, src, _, _) in &plan {
                for part in src.chunks(STAGE_TASK) {
                    let (mut head, tail) = rest.split_at(part.len());
                    tasks.push((Part(head.as_raw_ptr()), part));
                    rest = tail;
                }
            }
            tasks.into_par_iter().for_each(|(dst, src)| {
                // SAFETY: the parts are disjoint ranges (split in turn) of
                // the mapping `view`, which outlives this loop
                unsafe { wgpu::WriteOnly::new(dst.0) }.copy_from_slice(src)
            });
        }
        buf.unmap();
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("upload"),
            });
        for &(from, src, dst, to) in &plan {
            enc.copy_buffer_to_buffer(&buf, from, dst, to, src.len() as u64);
        }
        let index = ctx.queue.submit([enc.finish()]);
        *slot = Some((buf, Some(index)));
    }
    // the upload is done when the GPU has the data
    wait(None)
}

/// Timestamps around one compute pass, where the adapter has
/// timestamp queries; resolved after the pass and read back with the
/// results.
pub(crate) struct PassTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
}

/// Bytes the resolved timestamps take (two u64).
pub(crate) const STAMPS: u64 = 16;

impl PassTimer {
    pub(crate) fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        Some(PassTimer {
            queries: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("kernel timestamps"),
                size: STAMPS,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        })
    }

    pub(crate) fn writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// After the pass: resolves the timestamps and copies them to `dst` at
    /// `offset`, to be read back with the results.
    pub(crate) fn resolve_into(
        &self,
        enc: &mut wgpu::CommandEncoder,
        dst: &wgpu::Buffer,
        offset: u64,
    ) {
        enc.resolve_query_set(&self.queries, 0..2, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, dst, offset, STAMPS);
    }

    /// The pass's duration from the bytes read back.
    pub(crate) fn duration(ctx: &GpuContext, bytes: &[u8]) -> Option<Duration> {
        let t: Vec<u64> = bytemuck::pod_collect_to_vec(bytes.get(..STAMPS as usize)?);
        let ns = t[1].saturating_sub(t[0]) as f64 * ctx.queue.get_timestamp_period() as f64;
        Some(Duration::from_secs_f64(ns * 1e-9))
    }
}

/// A host-readable buffer of `size` bytes.
pub(crate) fn staging(ctx: &GpuContext, size: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read back"),
        size: size.max(16).next_multiple_of(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns of awkward sizes (4 bytes, under 16, over a stage, a stage
    /// exactly, empty) through stages of 64 bytes to 1 MiB come back as
    /// sent, padded with zeros.
    #[test]
    fn staged_upload_delivers_every_column_whole() {
        let Ok(ctx) = GpuContext::new() else {
            eprintln!("no GPU adapter: skipped");
            return;
        };
        let sizes = [4usize, 12, 16, 4096, 100_004, 65_536, 0, 8, 300_004];
        let data: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| (i * 7 + k * 13 + i / 251) as u8).collect())
            .collect();
        for stage in [64u64, 4096, 1 << 20] {
            let bufs: Vec<wgpu::Buffer> = data
                .iter()
                .map(|d| {
                    ctx.device.create_buffer(&wgpu::BufferDescriptor {
                        label: None,
                        size: (d.len() as u64).max(16),
                        usage: wgpu::BufferUsages::STORAGE
                            | wgpu::BufferUsages::COPY_DST
                            | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    })
                })
                .collect();
            let cols: Vec<(&[u8], &wgpu::Buffer)> =
                data.iter().map(|d| d.as_slice()).zip(&bufs).collect();
            upload_staged(&ctx, &cols, stage).expect("upload");
            for (d, b) in data.iter().zip(&bufs) {
                let back = staging(&ctx, b.size());
                let mut enc = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                enc.copy_buffer_to_buffer(b, 0, &back, 0, b.size());
                ctx.queue.submit([enc.finish()]);
                let got = crate::gpu::map_read_prefix(&ctx, &back, b.size()).expect("read");
                let mut want = d.clone();
                want.resize(b.size() as usize, 0);
                assert_eq!(got, want, "{} bytes through stages of {stage}", d.len());
            }
        }
    }
}
