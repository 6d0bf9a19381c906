//! Moments on the GPU (`shaders/moments.wgsl`), over a [`GpuTrace`].
//!
//! One dispatch per resident chunk, all in one compute pass and one
//! submission: a workgroup reduces a tile of 1,024 consecutive intervals
//! (whatever locations they belong to) with a segmented reduction. The
//! intervals are selected (state mask) and clipped to the window on the
//! GPU, so the trace is uploaded once for any number of analyses. Locations
//! complete within a tile are written directly; the partial results of the
//! tiles' first and last locations are merged on the host in tile order
//! (O(intervals / 1,024)). Both go back in one read-back.
//!
//! The reduction is the Pébay merge in **f64** — the formulas and
//! precision of the CPU's [`MomentAcc`] — over positions relative to each
//! location's first start. The kernel needs `SHADER_F64`; [`supported`]
//! says whether the adapter has it (lavapipe and data-centre GPUs do; Metal
//! does not). Without it the caller computes on the CPU: an f32 reduction
//! cannot keep intervals of a nanosecond a second apart.
//!
//! Stated error bound (tested against the CPU on adversarial inputs: short
//! intervals far apart, 10^18-ns offsets, one interval per location, tiles
//! cut anywhere): m0 identical (integer lengths, exact sums below 2^53), m1
//! within 1e-9 of the scaled deviation, m2 within 1e-9 relative, the cube
//! of m3 within 1e-9 of the cube of m2 — only the order of the f64 merges
//! differs.

use std::time::Instant;

use super::{GpuContext, GpuError, grid, pipeline};
use crate::analysis::moments::{MomentAcc, Moments};
use crate::gpu::resident::{GpuTrace, PassTimer, STAMPS, Timing};
use crate::model::{Time, Trace};

const SHADER: &str = include_str!("../../../shaders/moments.wgsl");
/// Intervals per workgroup (`TILE` in the shader).
const TILE: u64 = 1024;
/// Bytes of a `Node` in the shader (two u32, two accumulators of 4 f64).
const NODE: u64 = 72;
const NONE: u32 = u32::MAX;

/// Whether the adapter can run this kernel (`SHADER_F64`).
pub fn supported(ctx: &GpuContext) -> bool {
    ctx.features.contains(wgpu::Features::SHADER_F64)
}

/// Moments of every location for the states in `mask` over `[t0, t1)`, on
/// the GPU: uploads the trace, then [`GpuTrace::moments`]. `max_binding`
/// (bytes) lowers the device's binding limit, to force chunking in tests.
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

/// [`moments`], and the kernels' own GPU time in ns (timestamps around the
/// pass; `None` without timestamp queries).
pub fn moments_timed(
    ctx: &GpuContext,
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    max_binding: Option<u64>,
) -> Result<(Vec<Moments>, Option<f64>), GpuError> {
    check(ctx)?;
    let g = GpuTrace::upload(ctx, trace, max_binding)?;
    let (m, t) = g.moments(mask, t0, t1)?;
    Ok((m, t.kernel.map(|d| d.as_secs_f64() * 1e9)))
}

fn check(ctx: &GpuContext) -> Result<(), GpuError> {
    if supported(ctx) {
        return Ok(());
    }
    Err(GpuError::Other(format!(
        "{} has no 64-bit floats in shaders (SHADER_F64), which exact moments need",
        ctx.info.name
    )))
}

/// A node as read back: first and last location, their accumulators.
#[derive(Clone, Copy)]
struct Node {
    first: u32,
    last: u32,
    fa: [f64; 4],
    la: [f64; 4],
}

fn f64s(b: &[u8]) -> [f64; 4] {
    let mut v = [0f64; 4];
    for (k, x) in v.iter_mut().enumerate() {
        let mut le = [0u8; 8];
        le.copy_from_slice(&b[k * 8..k * 8 + 8]);
        *x = f64::from_le_bytes(le);
    }
    v
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl GpuTrace {
    /// Moments of every location for the states in `mask` over `[t0, t1)`
    /// of the resident intervals, and where the time went.
    pub fn moments(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
    ) -> Result<(Vec<Moments>, Timing), GpuError> {
        self.reduce(mask, t0, t1, |a| a.moments())
    }

    /// The accumulators behind [`GpuTrace::moments`] (32 bytes a location
    /// come back either way): what a display that merges processors into
    /// rows needs.
    pub fn moment_accs(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
    ) -> Result<(Vec<MomentAcc>, Timing), GpuError> {
        self.reduce(mask, t0, t1, |a| a)
    }

    /// Runs the moments kernel and turns each location's accumulator by
    /// `finish`.
    fn reduce<T: Send>(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
        finish: impl Fn(MomentAcc) -> T + Sync,
    ) -> Result<(Vec<T>, Timing), GpuError> {
        let ctx = &self.ctx;
        check(ctx)?;
        let p = self.num_locations();
        if self.chunks.is_empty() {
            // no intervals: nothing to run (and nothing to map)
            let none = (0..p).map(|_| finish(MomentAcc::default())).collect();
            return Ok((none, Timing::default()));
        }
        let run = Instant::now();
        let pipe = pipeline(ctx, "moments", SHADER);
        let mask_gpu: Vec<u32> = mask.iter().map(|&m| m as u32).collect();
        let mask_buf = super::storage(ctx, "mask", bytemuck::cast_slice(&mask_gpu), false);
        // per chunk: its complete locations, then its tiles' nodes, each
        // region aligned for binding offsets
        let align = ctx.limits.min_storage_buffer_offset_alignment.max(256) as u64;
        let mut layout = Vec::with_capacity(self.chunks.len());
        let mut size = 0u64;
        for c in &self.chunks {
            let done = size;
            size = (size + c.locs as u64 * 32).next_multiple_of(align);
            let tiles = size;
            let n_tiles = c.len.div_ceil(TILE);
            size = (size + n_tiles.max(1) * NODE).next_multiple_of(align);
            layout.push((done, tiles, n_tiles));
        }
        let timers = PassTimer::new(ctx);
        let total = size + timers.as_ref().map_or(0, |_| STAMPS);
        let scratch = self.scratch(size, total);
        let (out, back) = (&scratch.out, &scratch.back);
        let chunk_params: Vec<wgpu::Buffer> = self
            .chunks
            .iter()
            .map(|c| {
                super::uniform(
                    ctx,
                    "params",
                    bytemuck::cast_slice(&[
                        c.len as u32,
                        c.locs as u32,
                        t0 as u32,
                        (t0 >> 32) as u32,
                        t1 as u32,
                        (t1 >> 32) as u32,
                        0,
                        0,
                    ]),
                )
            })
            .collect();
        let binds: Vec<wgpu::BindGroup> = self
            .chunks
            .iter()
            .zip(&layout)
            .zip(&chunk_params)
            .map(|((c, &(done, tiles, n_tiles)), params)| {
                let region = |offset: u64, size: u64| {
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: out,
                        offset,
                        size: wgpu::BufferSize::new(size.max(32)),
                    })
                };
                super::bind_in_order(
                    ctx,
                    &pipe,
                    "moments",
                    vec![
                        c.starts.as_entire_binding(),
                        c.ends.as_entire_binding(),
                        c.states.as_entire_binding(),
                        c.offsets.as_entire_binding(),
                        c.origins.as_entire_binding(),
                        mask_buf.as_entire_binding(),
                        region(done, c.locs as u64 * 32),
                        region(tiles, n_tiles.max(1) * NODE),
                        params.as_entire_binding(),
                    ],
                )
            })
            .collect();
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("moments"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("moments"),
                timestamp_writes: timers.as_ref().map(|t| t.writes()),
            });
            pass.set_pipeline(&pipe);
            for (bind, &(_, _, n_tiles)) in binds.iter().zip(&layout) {
                if n_tiles == 0 {
                    continue;
                }
                let (x, y) = grid(n_tiles as u32);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        enc.copy_buffer_to_buffer(out, 0, back, 0, size);
        if let Some(t) = &timers {
            t.resolve_into(&mut enc, back, size);
        }
        self.complete(enc, scratch, total, timers.as_ref(), size, run, |bytes| {
            self.collect(bytes, &layout, &finish)
        })
    }

    /// Every location's accumulator, as `out` turns it, from what came back: the tiles'
    /// nodes merged in order, then (in parallel) every location, from the
    /// nodes where they settled it, else from the chunk that completed it
    /// on the GPU. `layout` is per chunk (complete locations' offset,
    /// nodes' offset, tiles).
    fn collect<T: Send>(
        &self,
        bytes: &[u8],
        layout: &[(u64, u64, u64)],
        out: &(impl Fn(MomentAcc) -> T + Sync),
    ) -> Vec<T> {
        use rayon::prelude::*;
        let p = self.num_locations();
        // the locations the nodes settle (those spanning tiles: at most
        // two per tile), in location order
        let mut settled: Vec<(usize, [f64; 4])> = Vec::new();
        let mut carry: Option<Node> = None;
        for (c, &(_, tiles, n_tiles)) in self.chunks.iter().zip(layout) {
            for t in 0..n_tiles as usize {
                let at = tiles as usize + t * NODE as usize;
                let b = &bytes[at..at + NODE as usize];
                let global = |l: u32| {
                    if l == NONE {
                        NONE
                    } else {
                        l + c.first_loc as u32
                    }
                };
                let node = Node {
                    first: global(u32_at(b, 0)),
                    last: global(u32_at(b, 4)),
                    fa: f64s(&b[8..40]),
                    la: f64s(&b[40..72]),
                };
                carry = Some(match carry {
                    None => node,
                    Some(prev) => combine(prev, node, &mut |l, a| settled.push((l as usize, a))),
                });
            }
        }
        if let Some(n) = carry
            && n.first != NONE
        {
            settled.push((n.first as usize, n.fa));
            if n.last != n.first {
                settled.push((n.last as usize, n.la));
            }
        }
        // a location settled twice keeps the later (none is, by the merge)
        settled.reverse();
        settled.sort_by_key(|s| s.0);
        settled.dedup_by_key(|s| s.0);
        (0..p)
            .into_par_iter()
            .map(|g| {
                let a = match settled.binary_search_by_key(&g, |s| s.0) {
                    Ok(k) => Some(settled[k].1),
                    // completed on the GPU: within one chunk, the last that
                    // starts at or before it (a location shared by two
                    // chunks spans tiles, so the nodes settled it)
                    Err(_) if self.offsets[g + 1] > self.offsets[g] => {
                        let k = self
                            .chunks
                            .partition_point(|c| c.first_loc <= g)
                            .saturating_sub(1);
                        let (c, &(done, _, _)) = (&self.chunks[k], &layout[k]);
                        let at = done as usize + (g - c.first_loc) * 32;
                        Some(f64s(&bytes[at..at + 32]))
                    }
                    Err(_) => None,
                };
                out(a.map_or_else(MomentAcc::default, |a| MomentAcc {
                    origin: self.origins[g],
                    w: a[0],
                    mean: a[1],
                    m2: a[2],
                    m3: a[3],
                }))
            })
            .collect()
    }
}

/// The shader's `merge` (same origin on both sides).
fn merge(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    if b[0] == 0.0 {
        return a;
    }
    if a[0] == 0.0 {
        return b;
    }
    let w = a[0] + b[0];
    let d = b[1] - a[1];
    let mean = a[1] + d * b[0] / w;
    let m2 = a[2] + b[2] + d * d * a[0] * b[0] / w;
    let m3 = a[3]
        + b[3]
        + d * d * d * a[0] * b[0] * (a[0] - b[0]) / (w * w)
        + 3.0 * d * (a[0] * b[2] - b[0] * a[2]) / w;
    [w, mean, m2, m3]
}

/// The shader's `combine`: `l` then `r`; a location that becomes interior
/// is complete and goes to `finish`.
fn combine(l: Node, r: Node, finish: &mut impl FnMut(u32, [f64; 4])) -> Node {
    if l.first == NONE {
        return r;
    }
    if r.first == NONE {
        return l;
    }
    let (ls, rs) = (l.first == l.last, r.first == r.last);
    let zero = [0.0; 4];
    if l.last == r.first {
        let mid = merge(if ls { l.fa } else { l.la }, r.fa);
        return match (ls, rs) {
            (true, true) => Node {
                first: l.first,
                last: l.first,
                fa: mid,
                la: zero,
            },
            (true, false) => Node {
                first: l.first,
                last: r.last,
                fa: mid,
                la: r.la,
            },
            (false, true) => Node {
                first: l.first,
                last: l.last,
                fa: l.fa,
                la: mid,
            },
            (false, false) => {
                finish(l.last, mid);
                Node {
                    first: l.first,
                    last: r.last,
                    fa: l.fa,
                    la: r.la,
                }
            }
        };
    }
    if !ls {
        finish(l.last, l.la);
    }
    if !rs {
        finish(r.first, r.fa);
        return Node {
            first: l.first,
            last: r.last,
            fa: l.fa,
            la: r.la,
        };
    }
    Node {
        first: l.first,
        last: r.first,
        fa: l.fa,
        la: r.fa,
    }
}
