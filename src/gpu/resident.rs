//! A trace's state intervals resident on the GPU: uploaded once, then
//! reduced by any number of analyses (moments, busy fields, any window,
//! any state selection) without another transfer.
//!
//! The interval columns go up as they are in the model (`u64` starts and
//! ends, read by the shaders as `(low, high)` pairs, and `u32` states): no
//! host-side packing, so the upload is a copy at the bus's speed. They are
//! cut into chunks, each within one storage binding (a location may span
//! several); each chunk carries its own `u32` CSR offsets and its
//! locations' origins. A kernel runs one dispatch
//! per chunk over all of its intervals, in tiles (see
//! [`super::kernels::moments`] and [`super::kernels::busy_bins`]), and all
//! dispatches of an analysis go in one submission whose results are read
//! back once.

use std::time::{Duration, Instant};

use wgpu::util::DeviceExt;

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
    /// Submission to results on the host (the kernels, the copy back and
    /// the mapping), host wall time.
    pub run: Duration,
    /// Turning what came back into the result on the host.
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
            let (a, b) = (c0 as usize, c1 as usize);
            chunks.push(ResidentChunk {
                first_loc: l0,
                first: c0,
                locs: l1 + 1 - l0,
                len: c1 - c0,
                starts: column(ctx, "starts", bytemuck::cast_slice(&all.start[a..b])),
                ends: column(ctx, "ends", bytemuck::cast_slice(&all.end[a..b])),
                states: column(ctx, "states", bytemuck::cast_slice(&all.state[a..b])),
                offsets: column(ctx, "offsets", bytemuck::cast_slice(&local)),
                origins: column(ctx, "origins", bytemuck::cast_slice(&origins)),
            });
            c0 = c1;
        }
        // the upload is done when the GPU has the data
        ctx.queue.submit([]);
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Other(format!("waiting for the upload: {e}")))?;
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
        })
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

/// A read-only storage column (at least 16 bytes: empty bindings are not
/// allowed).
fn column(ctx: &GpuContext, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    if bytes.len() >= 16 {
        return ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE,
            });
    }
    let mut b = bytes.to_vec();
    b.resize(16, 0);
    ctx.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &b,
            usage: wgpu::BufferUsages::STORAGE,
        })
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
