//! Moments on the GPU (`shaders/moments.wgsl`).
//!
//! The host cuts every location's selected intervals (clipped to the
//! window) into segments of at most 256; each interval goes to the GPU as
//! its start relative to the segment's first start and its length, both
//! integer nanoseconds in (low, high) u32 pairs. A workgroup reduces a
//! segment with the Pébay merge in **f64** — the formulas and precision of
//! the CPU's [`MomentAcc`] — and the host merges the segments of a location
//! in f64, as the CPU does.
//!
//! The kernel needs `SHADER_F64`; [`supported`] says whether the adapter
//! has it (lavapipe and data-centre GPUs do; Metal does not). Without it
//! the caller computes on the CPU: an f32 reduction cannot keep intervals
//! of a nanosecond a second apart (the f32 kernel this replaced gave
//! m0 = 1 instead of 4 on [0, 1) ∪ [1 s, 1 s + 3 ns)).
//!
//! Stated error bound (tested against the CPU on adversarial inputs: short
//! intervals far apart, 10^18-ns offsets, one interval per location): m0
//! identical (integer lengths, exact sums below 2^53), m1 within 1e-9 of
//! the scaled deviation, m2 within 1e-9 relative, the cube of m3 within
//! 1e-9 of the cube of m2 — only the order of the f64 merges differs.

use bytemuck::{Pod, Zeroable};

use super::{GpuContext, GpuError, grid, pipeline, read_back, storage, uniform};
use crate::analysis::moments::{MomentAcc, Moments};
use crate::model::{Time, Trace};

const SHADER: &str = include_str!("../../../shaders/moments.wgsl");
const SEG: usize = 256;
/// Locations with at most this many selected intervals use the 32-lane
/// entry point.
const SMALL: usize = 32;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Segment {
    first: u32,
    count: u32,
}

/// Host-side description of a segment: location and origin.
struct SegMeta {
    loc: u32,
    origin: Time,
}

/// Whether the adapter can run this kernel (`SHADER_F64`).
pub fn supported(ctx: &GpuContext) -> bool {
    ctx.features.contains(wgpu::Features::SHADER_F64)
}

struct Chunk {
    /// (start lo, start hi, length lo, length hi) per interval.
    intervals: Vec<[u32; 4]>,
    segments: Vec<Segment>,
    meta: Vec<SegMeta>,
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            intervals: Vec::new(),
            segments: Vec::new(),
            meta: Vec::new(),
        }
    }
}

fn run_chunk(
    ctx: &GpuContext,
    pipe: &wgpu::ComputePipeline,
    c: &Chunk,
    accs: &mut [MomentAcc],
    kernel_ns: &mut Option<f64>,
) -> Result<(), GpuError> {
    if c.segments.is_empty() {
        return Ok(());
    }
    let timer = super::PassTimer::new(ctx);
    let n = c.segments.len() as u32;
    let iv = storage(ctx, "intervals", bytemuck::cast_slice(&c.intervals), false);
    let sg = storage(ctx, "segments", bytemuck::cast_slice(&c.segments), false);
    let out_size = (n as u64) * 32;
    // the partials, then 16 bytes of timestamps
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("partials"),
        size: out_size + 16,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let params = uniform(ctx, "params", bytemuck::cast_slice(&[n, 0u32, 0, 0]));
    let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("moments"),
        layout: &pipe.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: iv.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: sg.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                // the results only: the timestamps after them stay out of the
                // binding (which may be as large as the limit allows)
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &out,
                    offset: 0,
                    size: wgpu::BufferSize::new(out_size),
                }),
            },
            wgpu::BindGroupEntry {
                binding: 3,
                resource: params.as_entire_binding(),
            },
        ],
    });
    let mut enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("moments"),
        });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("moments"),
            timestamp_writes: timer.as_ref().map(|t| t.writes()),
        });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, &bind, &[]);
        let (x, y) = grid(n);
        pass.dispatch_workgroups(x, y, 1);
    }
    if let Some(t) = &timer {
        t.resolve_into(&mut enc, &out, out_size);
    }
    let bytes = read_back(ctx, enc, &out, out_size + 16)?;
    if timer.is_some()
        && let Some(ns) = super::PassTimer::ns(ctx, &bytes[out_size as usize..])
    {
        *kernel_ns = Some(kernel_ns.unwrap_or(0.0) + ns);
    }
    let parts: Vec<[f64; 4]> = bytes[..out_size as usize]
        .chunks_exact(32)
        .map(|b| {
            let mut v = [0f64; 4];
            for (k, x) in v.iter_mut().enumerate() {
                let mut le = [0u8; 8];
                le.copy_from_slice(&b[k * 8..k * 8 + 8]);
                *x = f64::from_le_bytes(le);
            }
            v
        })
        .collect();
    for (p, m) in parts.iter().zip(&c.meta) {
        let part = MomentAcc {
            origin: m.origin,
            w: p[0],
            mean: p[1],
            m2: p[2],
            m3: p[3],
        };
        let a = &mut accs[m.loc as usize];
        *a = a.merge(part);
    }
    Ok(())
}

/// Moments of every location for the states in `mask` over `[t0, t1)`, on
/// the GPU. `max_binding` (bytes) overrides the device's binding limit, to
/// force chunking in tests. Fails on an adapter without `SHADER_F64`
/// (see [`supported`]).
pub fn moments(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    max_binding: Option<u64>,
) -> Result<Vec<Moments>, GpuError> {
    moments_timed(ctx, trace, mask, t0, t1, max_binding).map(|(m, _)| m)
}

/// [`moments`], and the kernels' own GPU time in ns (timestamps around
/// each dispatch, summed; `None` without timestamp queries).
pub fn moments_timed(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    max_binding: Option<u64>,
) -> Result<(Vec<Moments>, Option<f64>), GpuError> {
    let mut kernel_ns = None;
    if !supported(ctx) {
        return Err(GpuError::Other(format!(
            "{} has no 64-bit floats in shaders (SHADER_F64), which exact moments need",
            ctx.info.name
        )));
    }
    let limit = max_binding
        .unwrap_or(ctx.max_binding())
        .min(ctx.max_binding())
        .max(4096);
    let max_intervals = (limit / 16) as usize;
    let max_segments = (limit / 32).min(MAX_SEGMENTS) as usize;
    let pipe = pipeline(ctx, "moments", SHADER);
    let small_pipe = super::pipeline_entry(ctx, "moments (small)", SHADER, "main_small");
    let p = trace.num_locations();
    let mut accs = vec![MomentAcc::default(); p];
    let mut chunks = [Chunk::new(), Chunk::new()];
    let mut sel: Vec<(Time, Time)> = Vec::with_capacity(SEG);
    for l in 0..p as u32 {
        let w = trace.intervals.of(l).window(t0, t1);
        let mut i = 0;
        while i < w.len() {
            // gather the next segment of selected intervals
            sel.clear();
            while i < w.len() && sel.len() < SEG {
                if mask.get(w.state[i] as usize).copied().unwrap_or(false) {
                    let (a, b) = (w.start[i].max(t0), w.end[i].min(t1));
                    if b > a {
                        sel.push((a, b));
                    }
                }
                i += 1;
            }
            if sel.is_empty() {
                continue;
            }
            // large segments and small ones (≤ 32 intervals) go to separate dispatches
            let kind = (sel.len() <= SMALL) as usize;
            let chunk = &mut chunks[kind];
            if chunk.intervals.len() + sel.len() > max_intervals
                || chunk.segments.len() + 1 > max_segments
            {
                run_chunk(
                    ctx,
                    if kind == 1 { &small_pipe } else { &pipe },
                    chunk,
                    &mut accs,
                    &mut kernel_ns,
                )?;
                *chunk = Chunk::new();
            }
            let origin = sel[0].0;
            chunk.segments.push(Segment {
                first: chunk.intervals.len() as u32,
                count: sel.len() as u32,
            });
            chunk.meta.push(SegMeta { loc: l, origin });
            for &(a, b) in &sel {
                let (s, len) = (a - origin, b - a);
                chunk
                    .intervals
                    .push([s as u32, (s >> 32) as u32, len as u32, (len >> 32) as u32]);
            }
        }
    }
    run_chunk(ctx, &pipe, &chunks[0], &mut accs, &mut kernel_ns)?;
    run_chunk(ctx, &small_pipe, &chunks[1], &mut accs, &mut kernel_ns)?;
    Ok((accs.iter().map(MomentAcc::moments).collect(), kernel_ns))
}

/// The most segments in one dispatch (65535 × 65535 workgroups).
const MAX_SEGMENTS: u64 = (super::MAX_GROUPS as u64) * (super::MAX_GROUPS as u64);
