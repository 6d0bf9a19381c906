//! The Kiviat tube's mesh made on the GPU from a busy field resident there
//! (`shaders/tube.wgsl`): the field goes from the busy kernel to the
//! renderer without a read-back. Its CPU twin is the mesh of
//! `views::kiviat::build`; `tests/gpu_kernels.rs` holds the two equal
//! within the f32 bound stated in the shader.
//!
//! The host reads back only 12 bytes a bin ([`GpuField::summaries`]): the
//! largest and smallest sector average and whether the bin has any busy
//! time, which give the tube's scales, its leading empty bins and its
//! animation.

use super::{GpuContext, GpuError, grid, pipeline_entry};
use crate::analysis::fields::{Field, bin_edges, busy_field, inverse_widths};
use crate::gpu::GpuMesh;
use crate::gpu::resident::GpuTrace;
use crate::model::Time;
use crate::scene::Vertex;

const SHADER: &str = concat!(
    include_str!("../../../shaders/colormap.wgsl"),
    include_str!("../../../shaders/tube.wgsl")
);
const GROUP: u32 = 64;

/// A busy field resident on the GPU: per (location, bin) the busy time in
/// ns as the busy kernel summed it, and each bin's inverse width.
#[derive(Clone)]
pub struct GpuField {
    pub(super) ctx: GpuContext,
    /// `[location][bin]`, `u64`.
    pub(super) sums: wgpu::Buffer,
    /// `f32` per bin.
    pub(super) inv: wgpu::Buffer,
    pub bins: usize,
    pub elements: usize,
    pub edges: Vec<Time>,
    /// The last tube's index buffer, by (rings, sectors): the frames of an
    /// animation share it (uploaded once, not per frame).
    indices: std::sync::Arc<std::sync::Mutex<Option<TubeIndices>>>,
}

/// An index buffer of a tube of `rings` × `sectors`, `count` indices.
struct TubeIndices {
    rings: usize,
    sectors: usize,
    buffer: wgpu::Buffer,
    count: u32,
}

/// One bin of a resident field, summarised over sectors of `eg` elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinSummary {
    /// The largest and smallest sector average.
    pub max: f32,
    pub min: f32,
    /// Whether any element has busy time in the bin.
    pub any: bool,
}

/// How the tube is cut and scaled (the numbers `views::kiviat` derives
/// from its parameters, the same for the CPU and the GPU mesh).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TubeShape {
    /// Bins shown: `[first, first + shown)`.
    pub first: usize,
    pub shown: usize,
    /// Elements per sector, sectors, bins per ring, rings.
    pub eg: usize,
    pub sectors: usize,
    pub group: usize,
    pub rings: usize,
    /// The largest radius value and the colour range.
    pub vmax: f64,
    pub cmin: f64,
    pub cmax: f64,
    /// The log radius's floor (log10(value / floor)), when `log`.
    pub floor: f64,
    pub log: bool,
    /// Radius of a zero value, and bin length along the axis.
    pub inner: f32,
    pub stretch: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    bins: u32,
    elements: u32,
    first: u32,
    shown: u32,
    eg: u32,
    sectors: u32,
    group: u32,
    rings: u32,
    vmax: f32,
    cmin: f32,
    cmax: f32,
    floor: f32,
    inner: f32,
    stretch: f32,
    log: u32,
    constant: u32,
    stops: u32,
    categorical: u32,
    row: u32,
    pad: u32,
}

impl GpuTrace {
    /// The busy field of the states in `mask` over `[t0, t1)` in `bins`
    /// bins, left on the GPU (the busy kernel's sums, not read back).
    pub fn busy_field(
        &self,
        mask: &[bool],
        t0: Time,
        t1: Time,
        bins: usize,
    ) -> Result<GpuField, GpuError> {
        super::busy_bins::check(t0, t1, bins)?;
        let per_dispatch = self.busy_dispatch_size(bins)?;
        let ctx = &self.ctx;
        let p = self.num_locations();
        let size = p as u64 * bins as u64 * 8;
        let sums = super::output(ctx, "busy field", size);
        let edges = bin_edges(t0, t1, bins);
        let inv: Vec<f32> = inverse_widths(&edges).iter().map(|&w| w as f32).collect();
        let inv = super::storage(ctx, "inverse widths", bytemuck::cast_slice(&inv), false);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("busy field"),
            });
        self.busy_pass(&mut enc, &sums, mask, &edges, per_dispatch, None);
        ctx.queue.submit([enc.finish()]);
        Ok(GpuField {
            ctx: ctx.clone(),
            sums,
            inv,
            bins,
            elements: p,
            edges,
            indices: Default::default(),
        })
    }
}

impl GpuField {
    /// The field on the host (`[bin][location]`, f64, as the CPU computes
    /// it: identical): for tests and exports, not for drawing.
    pub fn read(&self) -> Result<Field, GpuError> {
        let size = self.sums.size();
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("busy field read-back"),
            });
        let back = crate::gpu::resident::staging(&self.ctx, size);
        enc.copy_buffer_to_buffer(&self.sums, 0, &back, 0, size);
        self.ctx.queue.submit([enc.finish()]);
        let inv = inverse_widths(&self.edges);
        let (p, bins) = (self.elements, self.bins);
        let values = crate::gpu::map_read_with(&self.ctx, &back, size, |b| {
            let mut v = vec![0f64; bins * p];
            for l in 0..p {
                for (k, w) in inv.iter().enumerate() {
                    let o = (l * bins + k) * 8;
                    let mut le = [0u8; 8];
                    le.copy_from_slice(&b[o..o + 8]);
                    v[k * p + l] = u64::from_le_bytes(le) as f64 * w;
                }
            }
            v
        })?;
        Ok(busy_field(values, self.edges.clone(), p))
    }

    /// Whether the tube kernels can bind the whole field at once.
    pub(super) fn check_binding(&self) -> Result<(), GpuError> {
        if self.sums.size() > self.ctx.max_binding() {
            return Err(GpuError::Other(format!(
                "a field of {} bins × {} locations ({} MiB) is more than one GPU storage binding \
                 ({} MiB) holds; use fewer bins or the CPU path",
                self.bins,
                self.elements,
                self.sums.size() >> 20,
                self.ctx.max_binding() >> 20
            )));
        }
        Ok(())
    }

    fn params(&self, shape: &TubeShape, stops: usize, categorical: bool, row: u32) -> Params {
        Params {
            bins: self.bins as u32,
            elements: self.elements as u32,
            first: shape.first as u32,
            shown: shape.shown as u32,
            eg: shape.eg.max(1) as u32,
            sectors: shape.sectors as u32,
            group: shape.group.max(1) as u32,
            rings: shape.rings as u32,
            vmax: shape.vmax as f32,
            cmin: shape.cmin as f32,
            cmax: shape.cmax as f32,
            floor: shape.floor as f32,
            inner: shape.inner,
            stretch: shape.stretch,
            log: shape.log as u32,
            constant: (shape.cmax <= shape.cmin) as u32,
            stops: stops as u32,
            categorical: categorical as u32,
            row,
            pad: 0,
        }
    }

    /// Each bin's largest and smallest average over sectors of `eg`
    /// elements, and whether it has any busy time (12 bytes a bin come
    /// back; the field stays).
    pub fn summaries(&self, eg: usize) -> Result<Vec<BinSummary>, GpuError> {
        self.check_binding()?;
        let ctx = &self.ctx;
        let eg = eg.max(1);
        let sectors = self.elements.div_ceil(eg);
        let threads = (self.bins * sectors) as u64;
        let (x, y) = grid(threads.div_ceil(GROUP as u64) as u32);
        let shape = TubeShape {
            first: 0,
            shown: self.bins,
            eg,
            sectors,
            group: 1,
            rings: 0,
            vmax: 0.0,
            cmin: 0.0,
            cmax: 0.0,
            floor: 1.0,
            log: false,
            inner: 0.0,
            stretch: 0.0,
        };
        let params = self.params(&shape, 0, false, x * GROUP);
        let params = super::uniform(ctx, "tube params", bytemuck::bytes_of(&params));
        // largest 0, smallest +inf, none busy
        let init: Vec<u32> = (0..self.bins)
            .flat_map(|_| [0u32, f32::INFINITY.to_bits(), 0])
            .collect();
        let summary = super::storage(ctx, "bin summaries", bytemuck::cast_slice(&init), true);
        let pipe = pipeline_entry(ctx, "tube summaries", SHADER, "summarise");
        let bind = super::bind_at(
            ctx,
            &pipe,
            &[(0, &self.sums), (1, &self.inv), (2, &params), (5, &summary)],
        );
        let enc = super::passes(ctx, "tube summaries", &[(&pipe, &bind)], (x, y));
        let bytes = super::read_back(ctx, enc, &summary, self.bins as u64 * 12)?;
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        Ok(words
            .chunks_exact(3)
            .take(self.bins)
            .map(|w| BinSummary {
                max: f32::from_bits(w[0]),
                min: f32::from_bits(w[1]),
                any: w[2] != 0,
            })
            .collect())
    }

    /// The tube's mesh for `shape`, coloured by the value through the
    /// colour map's `stops` (position, sRGB colour), with `indices` (the
    /// quads between rings, as the CPU mesh has them; made and uploaded
    /// only when the previous tube's shape differs): vertices and normals
    /// written on the GPU, nothing read back.
    pub fn tube(
        &self,
        shape: &TubeShape,
        stops: &[(f32, [f32; 3])],
        categorical: bool,
        indices: impl FnOnce() -> Vec<u32>,
    ) -> Result<Tube, GpuError> {
        self.check_binding()?;
        let ctx = &self.ctx;
        let e = shape.sectors;
        if e == 0
            || shape.rings == 0
            || shape.first + shape.shown > self.bins
            || shape.eg.max(1) * e < self.elements
        {
            return Err(GpuError::Other(format!(
                "a tube of {} rings × {e} sectors over bins {}..{} does not fit a field of {} bins × {} elements",
                shape.rings,
                shape.first,
                shape.first + shape.shown,
                self.bins,
                self.elements
            )));
        }
        let count = (shape.rings * e) as u64;
        let (x, y) = grid(count.div_ceil(GROUP as u64) as u32);
        let params = self.params(shape, stops.len(), categorical, x * GROUP);
        let params = super::uniform(ctx, "tube params", bytemuck::bytes_of(&params));
        let stops: Vec<[f32; 4]> = stops.iter().map(|(t, c)| [*t, c[0], c[1], c[2]]).collect();
        let stops = super::storage(ctx, "colour map", bytemuck::cast_slice(&stops), false);
        let size = count * std::mem::size_of::<crate::scene::Vertex>() as u64;
        let vertices = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tube vertices"),
            size: size.max(16),
            usage: wgpu::BufferUsages::VERTEX
                | wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let (index_buf, index_count) = {
            let mut kept = self.indices.lock().unwrap_or_else(|e| e.into_inner());
            match &*kept {
                Some(k) if (k.rings, k.sectors) == (shape.rings, e) => (k.buffer.clone(), k.count),
                _ => {
                    let indices = indices();
                    let buffer = wgpu::util::DeviceExt::create_buffer_init(
                        &*ctx.device,
                        &wgpu::util::BufferInitDescriptor {
                            label: Some("tube indices"),
                            contents: bytemuck::cast_slice(if indices.is_empty() {
                                &[0u32; 4]
                            } else {
                                &indices
                            }),
                            usage: wgpu::BufferUsages::INDEX | wgpu::BufferUsages::COPY_SRC,
                        },
                    );
                    let count = indices.len() as u32;
                    *kept = Some(TubeIndices {
                        rings: shape.rings,
                        sectors: e,
                        buffer: buffer.clone(),
                        count,
                    });
                    (buffer, count)
                }
            }
        };
        let values = super::output(ctx, "tube values", count * 4);
        let make = pipeline_entry(ctx, "tube vertices", SHADER, "vertices");
        let shade = pipeline_entry(ctx, "tube normals", SHADER, "normals");
        let make_bind = super::bind_at(
            ctx,
            &make,
            &[
                (0, &self.sums),
                (1, &self.inv),
                (2, &params),
                (3, &stops),
                (4, &vertices),
                (6, &values),
            ],
        );
        let shade_bind = super::bind_at(ctx, &shade, &[(2, &params), (4, &vertices)]);
        // two passes: every position is written before any normal reads it
        let enc = super::passes(
            ctx,
            "tube",
            &[(&make, &make_bind), (&shade, &shade_bind)],
            (x, y),
        );
        ctx.queue.submit([enc.finish()]);
        let z1 = -(((shape.rings - 1) * shape.group) as f32) * shape.stretch;
        Ok(Tube {
            mesh: GpuMesh {
                ctx: ctx.clone(),
                vertices,
                indices: index_buf,
                vertex_count: count as u32,
                index_count,
                lit: true,
                transparent: false,
                bounds: ([-1.0, -1.0, z1], [1.0, 1.0, 0.0]),
            },
            values,
        })
    }
}

/// A tube made on the GPU: its mesh, and each vertex's averaged value
/// beside it (ring-major, `sectors` a ring).
pub struct Tube {
    pub mesh: GpuMesh,
    values: wgpu::Buffer,
}

impl Tube {
    /// Vertices and their values of the given runs of vertex indices, in
    /// order (what hover texts and a selected sector's spoke need: a few
    /// vertices, not the field): one submission, 44 bytes a vertex.
    pub fn read(&self, runs: &[std::ops::Range<u32>]) -> Result<(Vec<Vertex>, Vec<f32>), GpuError> {
        let ctx = &self.mesh.ctx;
        let n = self.mesh.vertex_count;
        let runs: Vec<std::ops::Range<u32>> = runs
            .iter()
            .map(|r| r.start.min(n)..r.end.min(n))
            .filter(|r| !r.is_empty())
            .collect();
        let vsize = std::mem::size_of::<Vertex>() as u64;
        // the runs' vertices, then their values
        let regions: Vec<(&wgpu::Buffer, u64, u64)> = runs
            .iter()
            .map(|r| {
                (
                    &self.mesh.vertices,
                    r.start as u64 * vsize,
                    r.len() as u64 * vsize,
                )
            })
            .chain(
                runs.iter()
                    .map(|r| (&self.values, r.start as u64 * 4, r.len() as u64 * 4)),
            )
            .collect();
        let b = crate::gpu::read_regions(ctx, &regions)?;
        let split = runs.iter().map(|r| r.len()).sum::<usize>() * vsize as usize;
        Ok((
            bytemuck::pod_collect_to_vec(&b[..split]),
            bytemuck::pod_collect_to_vec(&b[split..]),
        ))
    }
}
