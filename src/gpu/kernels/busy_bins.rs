//! The time-binned busy-fraction field on the GPU (`shaders/busy_bins.wgsl`).
//!
//! Locations are processed in chunks whose intervals fit one storage
//! binding. Overlaps are summed exactly in emulated 64-bit integers on the
//! GPU; the host divides each sum by its bin's width in f64 exactly as
//! [`crate::analysis::fields::busy_fraction`] does, so the two paths give
//! identical fields (tested bit for bit).

use super::{GpuContext, GpuError, grid, pipeline, read_back, storage, uniform};
use crate::analysis::fields::{Field, bin_edges, busy_field, inverse_widths};
use crate::model::{Time, Trace};

const SHADER: &str = include_str!("../../../shaders/busy_bins.wgsl");

fn split(t: Time) -> [u32; 2] {
    [t as u32, (t >> 32) as u32]
}

/// The busy fraction of every location per bin over `[t0, t1)`, on the GPU.
/// `max_binding` (bytes) overrides the device's binding limit, to force
/// chunking in tests.
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
/// around each dispatch, summed; `None` without timestamp queries).
pub fn busy_fraction_timed(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    bins: usize,
    max_binding: Option<u64>,
) -> Result<(Field, Option<f64>), GpuError> {
    let mut kernel_ns: Option<f64> = None;
    let timer = super::PassTimer::new(ctx);
    if bins == 0 || t1 <= t0 || bins as u64 > t1 - t0 {
        return Err(GpuError::Other(format!(
            "bad field parameters: {bins} bins over [{t0}, {t1})"
        )));
    }
    let limit = max_binding
        .unwrap_or(ctx.max_binding())
        .min(ctx.max_binding())
        .max(4096);
    let edges = bin_edges(t0, t1, bins);
    let edges_gpu: Vec<[u32; 2]> = edges.iter().map(|&e| split(e)).collect();
    let mask_gpu: Vec<u32> = mask.iter().map(|&m| m as u32).collect();
    let pipe = pipeline(ctx, "busy bins", SHADER);
    let p = trace.num_locations();
    let inv = inverse_widths(&edges);
    let mut values = vec![0f64; bins * p];
    let max_intervals = (limit / 8) as usize;
    let max_locs = ((limit / 8) as usize / bins).max(1);
    let mut l = 0usize;
    while l < p {
        // the locations of this chunk
        let mut starts: Vec<[u32; 2]> = Vec::new();
        let mut ends: Vec<[u32; 2]> = Vec::new();
        let mut states: Vec<u32> = Vec::new();
        let mut offsets: Vec<u32> = vec![0];
        let first = l;
        while l < p && l - first < max_locs {
            let w = trace.intervals.of(l as u32).window(t0, t1);
            if w.len() > max_intervals {
                return Err(GpuError::Other(format!(
                    "location {l} has {} intervals in the window, more than one storage binding holds",
                    w.len()
                )));
            }
            if starts.len() + w.len() > max_intervals && l > first {
                break;
            }
            starts.extend(w.start.iter().map(|&t| split(t)));
            ends.extend(w.end.iter().map(|&t| split(t)));
            states.extend_from_slice(w.state);
            offsets.push(starts.len() as u32);
            l += 1;
        }
        let nloc = l - first;
        let total = (nloc * bins) as u32;
        let groups = total.div_ceil(64);
        let (x, y) = grid(groups);
        let buffers = [
            storage(ctx, "starts", bytemuck::cast_slice(&starts), false),
            storage(ctx, "ends", bytemuck::cast_slice(&ends), false),
            storage(ctx, "states", bytemuck::cast_slice(&states), false),
            storage(ctx, "offsets", bytemuck::cast_slice(&offsets), false),
            storage(ctx, "mask", bytemuck::cast_slice(&mask_gpu), false),
            storage(ctx, "edges", bytemuck::cast_slice(&edges_gpu), false),
        ];
        let out_size = total as u64 * 8;
        // the busy times, then 16 bytes of timestamps
        let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fraction"),
            size: out_size + 16,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params = uniform(
            ctx,
            "params",
            bytemuck::cast_slice(&[nloc as u32, bins as u32, x * 64, 0]),
        );
        let mut entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        entries.push(wgpu::BindGroupEntry {
            binding: 6,
            // the results only: the timestamps after them stay out of the
            // binding (which may be as large as the limit allows)
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &out,
                offset: 0,
                size: wgpu::BufferSize::new(out_size),
            }),
        });
        entries.push(wgpu::BindGroupEntry {
            binding: 7,
            resource: params.as_entire_binding(),
        });
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("busy bins"),
            layout: &pipe.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("busy bins"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("busy bins"),
                timestamp_writes: timer.as_ref().map(|t| t.writes()),
            });
            pass.set_pipeline(&pipe);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
        if let Some(t) = &timer {
            t.resolve_into(&mut enc, &out, out_size);
        }
        let bytes = read_back(ctx, enc, &out, out_size + 16)?;
        if timer.is_some()
            && let Some(ns) = super::PassTimer::ns(ctx, &bytes[out_size as usize..])
        {
            kernel_ns = Some(kernel_ns.unwrap_or(0.0) + ns);
        }
        // (low, high) u32 pairs in little-endian order: one u64 each
        for (i, b) in bytes[..out_size as usize].chunks_exact(8).enumerate() {
            let mut le = [0u8; 8];
            le.copy_from_slice(b);
            let (j, k) = (i / bins, i % bins);
            values[k * p + first + j] = u64::from_le_bytes(le) as f64 * inv[k];
        }
    }
    Ok((busy_field(values, edges, p), kernel_ns))
}
