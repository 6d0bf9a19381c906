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
//! Where the adapter has subgroups, each tile's tree starts with subgroup
//! shuffles (`shaders/moments_subgroups.wgsl`, entry `main_subgroups`):
//! the same pairs combined, so the same bits
//! ([`GpuTrace::use_subgroups`] chooses).
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
//! differs, and the merge's roundings (it divides once, by the weight, and
//! multiplies where the CPU divides three times).
//!
//! Shape: 32 lanes a workgroup, each folding 32 consecutive intervals. On
//! an H200 at its working clock this ran at 81 G intervals/s against 54 G
//! for 128 lanes of 8 with the CPU's three divisions (the bench's
//! `gpu/variants.rs` times the alternatives).

use std::time::Instant;

use super::{GpuContext, GpuError, grid, pipeline, pipeline_entry};
use crate::analysis::moments::{MomentAcc, Moments};
use crate::gpu::resident::{GpuTrace, PassTimer, ResidentChunk, STAMPS, Timing};
use crate::model::{Time, Trace};

const SHADER: &str = concat!(
    include_str!("../../../shaders/u64.wgsl"),
    include_str!("../../../shaders/moments.wgsl")
);
/// [`SHADER`] with the subgroup variant's entry point, `main_subgroups`.
const SHADER_SUBGROUPS: &str = concat!(
    include_str!("../../../shaders/u64.wgsl"),
    include_str!("../../../shaders/moments.wgsl"),
    include_str!("../../../shaders/moments_subgroups.wgsl")
);
const ROWS: &str = concat!(
    include_str!("../../../shaders/u64.wgsl"),
    include_str!("../../../shaders/moment_rows.wgsl")
);
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

/// The moments kernel to run: its pipeline, the intervals a workgroup
/// takes, and how many times its dispatches are recorded (once, but for
/// the bench's variants).
#[derive(Clone, Copy)]
struct Run<'a> {
    pipe: &'a wgpu::ComputePipeline,
    tile: u64,
    repeat: u32,
}

impl<'a> Run<'a> {
    fn shipped(pipe: &'a wgpu::ComputePipeline) -> Self {
        Run {
            pipe,
            tile: TILE,
            repeat: 1,
        }
    }
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
        self.reduce(Run::shipped(&self.moments_pipeline()), mask, t0, t1, |a| {
            a.moments()
        })
    }

    /// [`GpuTrace::moments`] with another WGSL source of the kernel (the
    /// same bindings and `Node`; `tile` intervals a workgroup), its
    /// dispatches recorded `repeat` times back to back in the timed pass
    /// (the kernel's time is then that of all of them). The bench times
    /// variants of the kernel on a real card through this, with the card
    /// kept busy long enough to run at its working clocks. `source` is
    /// compiled once per context (cached by its address).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn moments_variant(
        &self,
        source: &'static str,
        entry: &str,
        tile: u64,
        repeat: u32,
        mask: &[bool],
        t0: Time,
        t1: Time,
    ) -> Result<(Vec<Moments>, Timing), GpuError> {
        let pipe = pipeline_entry(&self.ctx, "moments (variant)", source, entry);
        let run = Run {
            pipe: &pipe,
            tile: tile.max(1),
            repeat: repeat.max(1),
        };
        self.reduce(run, mask, t0, t1, |a| a.moments())
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
        self.reduce(Run::shipped(&self.moments_pipeline()), mask, t0, t1, |a| a)
    }

    /// Runs the moments kernel and turns each location's accumulator by
    /// `finish`.
    fn reduce<T: Send>(
        &self,
        kernel: Run<'_>,
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
        let (layout, size) = self.layout(kernel.tile);
        let timers = PassTimer::new(ctx);
        let total = size + timers.as_ref().map_or(0, |_| STAMPS);
        let (mut enc, scratch) =
            self.record(kernel, mask, t0, t1, &layout, size, total, timers.as_ref());
        let (out, back) = (&scratch.out, &scratch.back);
        enc.copy_buffer_to_buffer(out, 0, back, 0, size);
        if let Some(t) = &timers {
            t.resolve_into(&mut enc, back, size);
        }
        self.complete(enc, scratch, total, timers.as_ref(), size, run, |bytes| {
            self.collect(bytes, &layout, &finish)
        })
    }

    /// Where the moments kernel leaves its results: per chunk, the offset
    /// of its complete locations' accumulators, of its tiles' nodes, and
    /// its tiles; and the bytes of all (each region aligned for binding
    /// offsets).
    fn layout(&self, tile: u64) -> (Vec<(u64, u64, u64)>, u64) {
        let align = self.ctx.limits.min_storage_buffer_offset_alignment.max(256) as u64;
        let mut layout = Vec::with_capacity(self.chunks.len());
        let mut size = 0u64;
        for c in &self.chunks {
            let done = size;
            size = (size + c.locs as u64 * 32).next_multiple_of(align);
            let tiles = size;
            let n_tiles = c.len.div_ceil(tile);
            size = (size + n_tiles.max(1) * NODE).next_multiple_of(align);
            layout.push((done, tiles, n_tiles));
        }
        (layout, size)
    }

    /// The moments kernel's pipeline: with subgroups where
    /// [`GpuTrace::use_subgroups`] says so.
    fn moments_pipeline(&self) -> wgpu::ComputePipeline {
        if self.subgroups {
            pipeline_entry(
                &self.ctx,
                "moments (subgroups)",
                SHADER_SUBGROUPS,
                "main_subgroups",
            )
        } else {
            pipeline(&self.ctx, "moments", SHADER)
        }
    }

    /// Records the moments kernel (`pipe`) over every chunk into a new encoder,
    /// its results in a scratch buffer of at least `size` bytes (read-back
    /// buffer of at least `back`), timed by `timers`.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        kernel: Run<'_>,
        mask: &[bool],
        t0: Time,
        t1: Time,
        layout: &[(u64, u64, u64)],
        size: u64,
        back: u64,
        timers: Option<&PassTimer>,
    ) -> (wgpu::CommandEncoder, crate::gpu::resident::Scratch) {
        let ctx = &self.ctx;
        let pipe = kernel.pipe;
        let mask_gpu: Vec<u32> = mask.iter().map(|&m| m as u32).collect();
        let mask_buf = super::storage(ctx, "mask", bytemuck::cast_slice(&mask_gpu), false);
        let scratch = self.scratch(size, back);
        let out = &scratch.out;
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
            .zip(layout)
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
                    pipe,
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
                timestamp_writes: timers.map(|t| t.writes()),
            });
            pass.set_pipeline(pipe);
            for _ in 0..kernel.repeat {
                for (bind, &(_, _, n_tiles)) in binds.iter().zip(layout) {
                    if n_tiles == 0 {
                        continue;
                    }
                    let (x, y) = grid(n_tiles as u32);
                    pass.set_bind_group(0, bind, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
        }
        (enc, scratch)
    }

    /// Every location's accumulator, as `finish` turns it, from what came
    /// back: the tiles' nodes merged in order ([`GpuTrace::settle`]), then
    /// (in parallel) every location, from the nodes where they settled it,
    /// else from the chunk that completed it on the GPU. `layout` is per
    /// chunk (complete locations' offset, nodes' offset, tiles).
    fn collect<T: Send>(
        &self,
        bytes: &[u8],
        layout: &[(u64, u64, u64)],
        finish: &(impl Fn(MomentAcc) -> T + Sync),
    ) -> Vec<T> {
        use rayon::prelude::*;
        let p = self.num_locations();
        let nodes = self
            .chunks
            .iter()
            .zip(layout)
            .flat_map(|(c, &(_, tiles, n))| {
                (0..n as usize).map(move |t| {
                    let at = tiles as usize + t * NODE as usize;
                    (c, &bytes[at..at + NODE as usize])
                })
            });
        let settled = self.settle(nodes);
        (0..p)
            .into_par_iter()
            .map(|g| {
                let a = match settled.binary_search_by_key(&g, |s| s.0) {
                    Ok(k) => Some(settled[k].1),
                    // completed on the GPU, in its slot
                    Err(_) => self.slot(layout, g).map(|at| {
                        let at = at as usize * 32;
                        f64s(&bytes[at..at + 32])
                    }),
                };
                finish(a.map_or_else(MomentAcc::default, |a| MomentAcc {
                    origin: self.origins[g],
                    w: a[0],
                    mean: a[1],
                    m2: a[2],
                    m3: a[3],
                }))
            })
            .collect()
    }

    /// Where location `g`'s accumulator lies in the kernel's results (in
    /// units of 32 bytes), `None` for a location without intervals: within
    /// one chunk, the last that starts at or before it (a location shared
    /// by two chunks spans tiles, so the host settles it and writes it
    /// there).
    fn slot(&self, layout: &[(u64, u64, u64)], g: usize) -> Option<u64> {
        if self.offsets[g + 1] <= self.offsets[g] {
            return None;
        }
        let k = self
            .chunks
            .partition_point(|c| c.first_loc <= g)
            .saturating_sub(1);
        Some(layout[k].0 / 32 + (g - self.chunks[k].first_loc) as u64)
    }

    /// The locations the tiles' `nodes` (in tile order, each with its
    /// chunk) leave unfinished, merged on the host: at most two a tile,
    /// sorted by location.
    fn settle<'a>(
        &self,
        nodes: impl Iterator<Item = (&'a ResidentChunk, &'a [u8])>,
    ) -> Vec<(usize, [f64; 4])> {
        let mut settled: Vec<(usize, [f64; 4])> = Vec::new();
        let mut carry: Option<Node> = None;
        for (c, b) in nodes {
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
        settled
    }

    /// The accumulators of rows of `group` adjacent locations over `[t0,
    /// t1)` (each the merge of its locations' in order, as the host folds
    /// them for the moment display): the moments kernel, then the
    /// locations it could not finish merged on the host from its tiles'
    /// nodes (72 bytes a tile come back) and written in, then a kernel that
    /// folds each row. 40 bytes a row come back, not 32 a location. When
    /// the kernel's results exceed one storage binding the locations'
    /// accumulators come back and the host folds them.
    pub fn moment_rows(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
        group: usize,
    ) -> Result<(Vec<MomentAcc>, Timing), GpuError> {
        let ctx = &self.ctx;
        check(ctx)?;
        let p = self.num_locations();
        let group = group.max(1);
        let rows = p.div_ceil(group);
        let (layout, size) = self.layout(TILE);
        if self.chunks.is_empty()
            || size > ctx.max_binding()
            || rows as u64 * 40 > ctx.max_binding()
        {
            let (accs, timing) = self.moment_accs(mask, t0, t1)?;
            return Ok((accs.chunks(group).map(MomentAcc::merged).collect(), timing));
        }
        let run = Instant::now();
        let timers = PassTimer::new(ctx);
        let nodes: u64 = layout.iter().map(|l| l.2 * NODE).sum();
        let total = nodes + timers.as_ref().map_or(0, |_| STAMPS);
        let (mut enc, scratch) = self.record(
            Run::shipped(&self.moments_pipeline()),
            mask,
            t0,
            t1,
            &layout,
            size,
            total,
            timers.as_ref(),
        );
        // the tiles' nodes, packed
        let mut at = 0;
        for &(_, tiles, n) in &layout {
            if n > 0 {
                enc.copy_buffer_to_buffer(&scratch.out, tiles, &scratch.back, at, n * NODE);
                at += n * NODE;
            }
        }
        if let Some(t) = &timers {
            t.resolve_into(&mut enc, &scratch.back, nodes);
        }
        let prepare = run.elapsed();
        ctx.queue.submit([enc.finish()]);
        let (settled, kernel) = crate::gpu::map_read_with(ctx, &scratch.back, total, |b| {
            let mut at = 0usize;
            let nodes = self
                .chunks
                .iter()
                .zip(&layout)
                .flat_map(|(c, &(_, _, n))| (0..n).map(move |_| c));
            let nodes = nodes.map(|c| {
                at += NODE as usize;
                (c, &b[at - NODE as usize..at])
            });
            let settled = self.settle(nodes);
            let kernel = timers
                .as_ref()
                .and_then(|_| PassTimer::duration(ctx, b.get(total as usize - STAMPS as usize..)?));
            (settled, kernel)
        })?;
        let finish = Instant::now();
        let patches: Vec<Patch> = settled
            .iter()
            .filter_map(|&(g, acc)| {
                Some(Patch {
                    slot: self.slot(&layout, g)? as u32,
                    pad: 0,
                    acc,
                })
            })
            .collect();
        let inputs = self.row_inputs.get_or_init(|| RowInputs {
            slots: super::storage(
                ctx,
                "moment slots",
                bytemuck::cast_slice(
                    &(0..p)
                        .map(|g| self.slot(&layout, g).map_or(NONE, |s| s as u32))
                        .collect::<Vec<u32>>(),
                ),
                false,
            ),
            origins: super::storage(
                ctx,
                "moment origins",
                bytemuck::cast_slice(&self.origins),
                false,
            ),
        });
        // at least one (zero) patch: a binding holds one element at least
        let one = [<Patch as bytemuck::Zeroable>::zeroed()];
        let patch_buf = super::storage(
            ctx,
            "moment patches",
            bytemuck::cast_slice(if patches.is_empty() { &one } else { &patches }),
            false,
        );
        let out = super::output(ctx, "moment rows", rows as u64 * 40);
        let threads = patches.len().max(rows) as u64;
        let (x, y) = grid(threads.div_ceil(64) as u32);
        let params = super::uniform(
            ctx,
            "moment rows params",
            bytemuck::cast_slice(&[
                p as u32,
                group as u32,
                rows as u32,
                patches.len() as u32,
                x * 64,
                0,
                0,
                0,
            ]),
        );
        let patch = pipeline_entry(ctx, "moment patches", ROWS, "write_patches");
        let fold = pipeline_entry(ctx, "moment rows", ROWS, "fold");
        let patch_bind = super::bind_at(
            ctx,
            &patch,
            &[(0, &scratch.out), (3, &patch_buf), (5, &params)],
        );
        let fold_bind = super::bind_at(
            ctx,
            &fold,
            &[
                (0, &scratch.out),
                (1, &inputs.slots),
                (2, &inputs.origins),
                (4, &out),
                (5, &params),
            ],
        );
        let enc = super::passes(
            ctx,
            "moment rows",
            &[(&patch, &patch_bind), (&fold, &fold_bind)],
            (x, y),
        );
        let bytes = super::read_back(ctx, enc, &out, rows as u64 * 40);
        self.give_back(scratch);
        let bytes = bytes?;
        let accs = bytes
            .chunks_exact(40)
            .take(rows)
            .map(|b| {
                let a = f64s(&b[8..40]);
                MomentAcc {
                    origin: u32_at(b, 0) as u64 | (u32_at(b, 4) as u64) << 32,
                    w: a[0],
                    mean: a[1],
                    m2: a[2],
                    m3: a[3],
                }
            })
            .collect();
        Ok((
            accs,
            Timing {
                upload: std::time::Duration::ZERO,
                kernel,
                prepare,
                run: run.elapsed(),
                finish: finish.elapsed(),
            },
        ))
    }
}

/// A location's accumulator settled on the host, for its slot
/// (`Patch` in moment_rows.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Patch {
    slot: u32,
    pad: u32,
    acc: [f64; 4],
}

/// What the rows kernel reads of every location, uploaded once per
/// resident trace: where its accumulator lies and its origin.
pub(crate) struct RowInputs {
    slots: wgpu::Buffer,
    origins: wgpu::Buffer,
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
