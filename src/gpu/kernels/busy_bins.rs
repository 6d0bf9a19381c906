//! The time-binned busy-fraction field on the GPU
//! (`shaders/busy_bins.wgsl`), over a [`GpuTrace`].
//!
//! One dispatch per resident chunk (more only when a chunk's cells exceed
//! one storage binding), all in one compute pass and one submission; each
//! invocation takes 8 consecutive intervals, splits them over the bins and
//! adds its per-cell sums atomically. Overlaps are summed exactly in 64-bit
//! integers; the host divides each sum by its bin's width in f64 exactly
//! as [`crate::analysis::fields::busy_fraction`] does, so the two paths
//! give identical fields (tested bit for bit). The cells come back in one
//! read-back.

use std::time::Instant;

use rayon::prelude::*;

use super::{GpuContext, GpuError, grid, pipeline};
use crate::analysis::fields::{Field, bin_edges, busy_field, inverse_widths};
use crate::gpu::resident::{GpuTrace, PassTimer, STAMPS, Timing};
use crate::model::{Time, Trace};

const SHADER: &str = concat!(
    include_str!("../../../shaders/u64.wgsl"),
    include_str!("../../../shaders/busy_bins.wgsl")
);
/// Intervals per invocation (`PER` in the shader).
const PER: u64 = 8;
const GROUP: u64 = 64;

fn split(t: Time) -> [u32; 2] {
    [t as u32, (t >> 32) as u32]
}

/// The busy fraction of every location per bin over `[t0, t1)`, on the GPU:
/// uploads the trace, then [`GpuTrace::busy_fraction`]. `max_binding`
/// (bytes) lowers the device's binding limit, to force chunking in tests.
pub fn busy_fraction(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    bins: usize,
    max_binding: Option<u64>,
) -> Result<Field, GpuError> {
    busy_fraction_timed(ctx, trace, mask, t0, t1, bins, max_binding).map(|(f, _)| f)
}

/// [`busy_fraction`], and the kernel's own GPU time in ns (timestamps
/// around the pass; `None` without timestamp queries).
pub fn busy_fraction_timed(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    bins: usize,
    max_binding: Option<u64>,
) -> Result<(Field, Option<f64>), GpuError> {
    check(t0, t1, bins)?;
    let g = GpuTrace::upload(ctx, trace, max_binding)?;
    let (f, t) = g.busy_fraction(mask, t0, t1, bins)?;
    Ok((f, t.kernel.map(|d| d.as_secs_f64() * 1e9)))
}

pub(crate) fn check(t0: Time, t1: Time, bins: usize) -> Result<(), GpuError> {
    if bins == 0 || t1 <= t0 || bins as u64 > t1 - t0 || bins > u32::MAX as usize / 2 {
        return Err(GpuError::Other(format!(
            "bad field parameters: {bins} bins over [{t0}, {t1})"
        )));
    }
    Ok(())
}

/// One dispatch: locations `[a, b)` of chunk `chunk` (local ids).
struct Dispatch {
    chunk: usize,
    a: usize,
    b: usize,
}

impl GpuTrace {
    /// The busy fraction of every location per bin over `[t0, t1)` for the
    /// states in `mask`, from the resident intervals, and where the time
    /// went.
    pub fn busy_fraction(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
        bins: usize,
    ) -> Result<(Field, Timing), GpuError> {
        check(t0, t1, bins)?;
        let ctx = &self.ctx;
        let p = self.num_locations();
        let per_dispatch = self.busy_dispatch_size(bins)?;
        let size = p as u64 * bins as u64 * 8;
        let run = Instant::now();
        let edges = bin_edges(t0, t1, bins);
        let timers = PassTimer::new(ctx);
        let padded = size.max(16).next_multiple_of(4);
        let total = padded + timers.as_ref().map_or(0, |_| STAMPS);
        let scratch = self.scratch(padded, total);
        let (out, back) = (&scratch.out, &scratch.back);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("busy bins"),
            });
        self.busy_pass(&mut enc, out, mask, &edges, per_dispatch, timers.as_ref());
        enc.copy_buffer_to_buffer(out, 0, back, 0, padded);
        if let Some(t) = &timers {
            t.resolve_into(&mut enc, back, padded);
        }
        let inv = inverse_widths(&edges);
        let (values, timing) =
            self.complete(enc, scratch, total, timers.as_ref(), padded, run, |bytes| {
                fractions(&bytes[..size as usize], &inv, p)
            })?;
        Ok((busy_field(values, edges, p), timing))
    }
    /// The most locations of one dispatch whose `bins` cells of 8 bytes fit
    /// one storage binding, or an error when the field does not fit one
    /// buffer.
    pub(crate) fn busy_dispatch_size(&self, bins: usize) -> Result<usize, GpuError> {
        let ctx = &self.ctx;
        let p = self.num_locations();
        let size = (p as u64).saturating_mul(bins as u64).saturating_mul(8);
        if size > ctx.limits.max_buffer_size {
            return Err(GpuError::Other(format!(
                "a field of {bins} bins × {p} locations ({} MiB) is larger than one GPU buffer \
                 ({} MiB); use the CPU path or fewer bins",
                size >> 20,
                ctx.limits.max_buffer_size >> 20
            )));
        }
        let align = ctx.limits.min_storage_buffer_offset_alignment.max(256) as u64;
        let per_dispatch = ((self.limit.saturating_sub(align)) / (bins as u64 * 8)) as usize;
        if per_dispatch == 0 {
            return Err(GpuError::Other(format!(
                "{bins} bins of one location exceed one storage binding"
            )));
        }
        Ok(per_dispatch)
    }

    /// Records the busy sums of every (location, bin) over `edges` into
    /// `out` (`[location][bin]`, `u64`, cleared first): one compute pass of
    /// one dispatch per `per_dispatch` locations of each chunk.
    pub(crate) fn busy_pass(
        &self,
        enc: &mut wgpu::CommandEncoder,
        out: &wgpu::Buffer,
        mask: &[bool],
        edges: &[Time],
        per_dispatch: usize,
        timers: Option<&PassTimer>,
    ) {
        let ctx = &self.ctx;
        let bins = edges.len() - 1;
        let align = ctx.limits.min_storage_buffer_offset_alignment.max(256) as u64;
        let row = bins as u64 * 8;
        let size = self.num_locations() as u64 * row;
        let edges_gpu: Vec<[u32; 2]> = edges.iter().map(|&e| split(e)).collect();
        let mask_gpu: Vec<u32> = mask.iter().map(|&m| m as u32).collect();
        let pipe = pipeline(ctx, "busy bins", SHADER);
        let mask_buf = super::storage(ctx, "mask", bytemuck::cast_slice(&mask_gpu), false);
        let edges_buf = super::storage(ctx, "edges", bytemuck::cast_slice(&edges_gpu), false);
        let mut dispatches = Vec::new();
        for (i, c) in self.chunks.iter().enumerate() {
            let mut a = 0;
            while a < c.locs {
                let b = (a + per_dispatch).min(c.locs);
                dispatches.push(Dispatch { chunk: i, a, b });
                a = b;
            }
        }
        let mut work = Vec::with_capacity(dispatches.len());
        for d in &dispatches {
            let c = &self.chunks[d.chunk];
            let first = c.local_offset(self, d.a);
            let stop = c.local_offset(self, d.b);
            if stop == first {
                continue;
            }
            let off = (c.first_loc + d.a) as u64 * row;
            let bound = off - off % align;
            let shift = ((off - bound) / 8) as u32;
            let len = (d.b - d.a) as u64 * row + (off - bound);
            let threads = (stop - first) as u64;
            let groups = threads.div_ceil(PER).div_ceil(GROUP) as u32;
            let (x, y) = grid(groups);
            let params = super::uniform(
                ctx,
                "params",
                bytemuck::cast_slice(&[
                    first,
                    stop,
                    c.locs as u32,
                    bins as u32,
                    d.a as u32,
                    x * GROUP as u32,
                    shift,
                    0,
                ]),
            );
            let bind = super::bind_in_order(
                ctx,
                &pipe,
                "busy bins",
                vec![
                    c.starts.as_entire_binding(),
                    c.ends.as_entire_binding(),
                    c.states.as_entire_binding(),
                    c.offsets.as_entire_binding(),
                    mask_buf.as_entire_binding(),
                    edges_buf.as_entire_binding(),
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: out,
                        offset: bound,
                        size: wgpu::BufferSize::new(len.max(8)),
                    }),
                    params.as_entire_binding(),
                ],
            );
            work.push((bind, x, y));
        }
        // the cells are sums: a reused buffer starts from zero
        enc.clear_buffer(out, 0, Some(size.max(16).next_multiple_of(4)));
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("busy bins"),
            timestamp_writes: timers.map(|t| t.writes()),
        });
        pass.set_pipeline(&pipe);
        for (bind, x, y) in &work {
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(*x, *y, 1);
        }
    }
}

/// Locations per task of [`fractions`].
const BLOCK: usize = 4096;

/// The field `[bin][location]` from the sums as they come back
/// (`[location][bin]`, little-endian `u64`): each sum times its bin's
/// inverse width, as the CPU path computes it. Blocks of locations in
/// parallel, each reading its sums in order and writing its share of every
/// bin's row.
fn fractions(sums: &[u8], inv: &[f64], p: usize) -> Vec<f64> {
    let bins = inv.len();
    let mut values = vec![0f64; bins * p];
    if p == 0 {
        return values;
    }
    let mut blocks: Vec<Vec<&mut [f64]>> = (0..p.div_ceil(BLOCK))
        .map(|_| Vec::with_capacity(bins))
        .collect();
    for row in values.chunks_mut(p) {
        for (b, part) in row.chunks_mut(BLOCK).enumerate() {
            blocks[b].push(part);
        }
    }
    blocks
        .into_par_iter()
        .enumerate()
        .for_each(|(b, mut rows)| {
            let first = b * BLOCK;
            for l in 0..rows.first().map_or(0, |r| r.len()) {
                let cell = &sums[(first + l) * bins * 8..(first + l + 1) * bins * 8];
                for (k, row) in rows.iter_mut().enumerate() {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(&cell[k * 8..k * 8 + 8]);
                    row[l] = u64::from_le_bytes(le) as f64 * inv[k];
                }
            }
        });
    values
}
