//! Marching cubes on the GPU (`shaders/marching_cubes.wgsl`, prefix sums in
//! `shaders/scan.wgsl`): the twin of [`crate::analysis::isosurface::extract`].
//!
//! Five kernels per isovalue: `classify` packs one inside bit per grid
//! point; `edges` finds the crossing edges of every 32-edge word and counts
//! them; `cells` counts the triangles of every 32-cell word; both counts are
//! scanned (exclusive prefix sums, integer, deterministic); then `vertices`
//! writes each crossing's vertex at its word's offset and `triangles` each
//! cell's triangles, finding vertex ids from the crossing bits. The vertex
//! and triangle orders are the CPU path's, so the meshes are identical:
//! same vertex count, same indices, in the same order.
//!
//! Error bound (tested): the field is f32 on the GPU and inside means
//! `f32(value) >= f32(iso)`; on the same f32-rounded field the CPU path
//! gives the same indices, and positions and normals equal to f32 rounding
//! of the vertex arithmetic (within 1e-5 cells and 1e-4 per normal
//! component, away from vanishing gradients).
//!
//! Scratch on the device: about one byte per grid point (inside bits, edge
//! bits and offsets, cell offsets) beside the f32 field and the mesh.
//! Pipelines, the case table and the scratch are built once per
//! [`Extractor`] and reused over isovalues and animation steps.

use bytemuck::{Pod, Zeroable};

use super::{GpuContext, GpuError, grid, pipeline_entry, storage};
use crate::analysis::isosurface::{IsoMesh, packed_table};

const SHADER: &str = include_str!("../../../shaders/marching_cubes.wgsl");
const SCAN: &str = include_str!("../../../shaders/scan.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    nx: u32,
    ny: u32,
    nz: u32,
    wp: u32,
    wc: u32,
    items: u32,
    iso: f32,
    pad: u32,
}

/// One level of a prefix sum: its data scanned in blocks of 1024, the
/// block totals in `sums` (scanned by the next level).
struct Level {
    groups: u32,
    sums: wgpu::Buffer,
    /// For `scan_blocks` and for `scan_add` (auto layouts of two pipelines
    /// are not interchangeable).
    bind: [wgpu::BindGroup; 2],
}

/// An in-place exclusive scan of a buffer of `n` u32, by levels; the grand
/// total ends in the last level's `sums[0]`.
struct Scan {
    levels: Vec<Level>,
}

impl Scan {
    fn new(
        ctx: &GpuContext,
        pipes: [&wgpu::ComputePipeline; 2],
        data: &wgpu::Buffer,
        n: u32,
    ) -> Self {
        let mut levels = Vec::new();
        let mut n = n.max(1);
        let mut data = data.clone();
        loop {
            let groups = n.div_ceil(1024);
            let sums = super::output(ctx, "scan sums", groups as u64 * 4);
            let params = super::uniform(ctx, "scan params", bytemuck::cast_slice(&[n, 0, 0, 0]));
            let bind = pipes.map(|p| bind(ctx, p, &[&data, &sums, &params]));
            levels.push(Level {
                groups,
                sums: sums.clone(),
                bind,
            });
            if groups == 1 {
                break;
            }
            data = sums;
            n = groups;
        }
        Scan { levels }
    }

    fn encode(
        &self,
        pass: &mut wgpu::ComputePass,
        blocks: &wgpu::ComputePipeline,
        add: &wgpu::ComputePipeline,
    ) {
        pass.set_pipeline(blocks);
        for l in &self.levels {
            pass.set_bind_group(0, &l.bind[0], &[]);
            let (x, y) = grid(l.groups);
            pass.dispatch_workgroups(x, y, 1);
        }
        pass.set_pipeline(add);
        for l in self.levels.iter().rev().skip(1) {
            pass.set_bind_group(0, &l.bind[1], &[]);
            let (x, y) = grid(l.groups);
            pass.dispatch_workgroups(x, y, 1);
        }
    }

    fn total(&self) -> &wgpu::Buffer {
        &self.levels[self.levels.len() - 1].sums
    }
}

fn params_buffer(ctx: &GpuContext, label: &str) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: std::mem::size_of::<Params>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A bind group of `buffers` at bindings 0, 1, … of the pipeline's layout.
fn bind(
    ctx: &GpuContext,
    pipe: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    super::bind_at(
        ctx,
        pipe,
        &buffers
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u32, *b))
            .collect::<Vec<_>>(),
    )
}

/// Timestamps at the beginning and end of a pass, at `first` and `first + 1`.
fn writes(
    timer: &Option<(wgpu::QuerySet, wgpu::Buffer)>,
    first: u32,
) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
    timer
        .as_ref()
        .map(|(qs, _)| wgpu::ComputePassTimestampWrites {
            query_set: qs,
            beginning_of_pass_write_index: Some(first),
            end_of_pass_write_index: Some(first + 1),
        })
}

/// The mesh buffers of one capacity, and the bind groups that write them.
struct Outputs {
    vertices: u64,
    triangles: u64,
    positions: wgpu::Buffer,
    normals: wgpu::Buffer,
    indices: wgpu::Buffer,
    bind_vertices: wgpu::BindGroup,
    bind_triangles: wgpu::BindGroup,
}

/// Extracts isosurfaces of one field (any number of isovalues and steps of
/// the same shape) on the GPU.
pub struct Extractor {
    ctx: GpuContext,
    dims: [usize; 3],
    classify: wgpu::ComputePipeline,
    edges: wgpu::ComputePipeline,
    cells: wgpu::ComputePipeline,
    vertices: wgpu::ComputePipeline,
    triangles: wgpu::ComputePipeline,
    scan_blocks: wgpu::ComputePipeline,
    scan_add: wgpu::ComputePipeline,
    field: wgpu::Buffer,
    ebits: wgpu::Buffer,
    eoffset: wgpu::Buffer,
    coffset: wgpu::Buffer,
    table: wgpu::Buffer,
    params: [wgpu::Buffer; 3],
    items: [u32; 3],
    bind_classify: wgpu::BindGroup,
    bind_edges: wgpu::BindGroup,
    bind_cells: wgpu::BindGroup,
    inside: wgpu::Buffer,
    scan_edges: Scan,
    scan_cells: Scan,
    outputs: Option<Outputs>,
    /// Timestamp queries (begin and end of the counting and emitting
    /// passes) where the adapter offers them.
    timer: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    last_kernel_ns: Option<f64>,
}

impl Extractor {
    /// Prepares the pipelines and scratch for fields of `dims` (x, y, z;
    /// x fastest). Fails when the field or its scratch exceeds one storage
    /// binding of the adapter (the CPU path has no such limit).
    pub fn new(ctx: &GpuContext, dims: [usize; 3]) -> Result<Self, GpuError> {
        let [nx, ny, nz] = dims;
        if nx < 2 || ny < 2 || nz < 2 {
            return Err(GpuError::Other(format!(
                "a {nx}×{ny}×{nz} field has no cells (each dimension needs 2 points)"
            )));
        }
        let points = (nx as u64) * (ny as u64) * (nz as u64);
        let limit = ctx.max_binding().min(ctx.limits.max_buffer_size);
        if points * 4 > limit || points > u32::MAX as u64 / 4 {
            return Err(GpuError::Other(format!(
                "a {nx}×{ny}×{nz} field ({} MiB as f32) exceeds the adapter's storage binding ({} MiB); use the CPU path",
                (points * 4) >> 20,
                limit >> 20
            )));
        }
        let wp = nx.div_ceil(32) as u64;
        let wc = (nx - 1).div_ceil(32) as u64;
        let inside_words = wp * (ny * nz) as u64;
        let edge_words = 3 * wp * (ny * nz) as u64;
        let cell_words = wc * ((ny - 1) * (nz - 1)) as u64;
        let pipe = |entry: &str| pipeline_entry(ctx, entry, SHADER, entry);
        let classify = pipe("classify");
        let edges = pipe("edges");
        let cells = pipe("cells");
        let vertices = pipe("vertices");
        let triangles = pipe("triangles");
        let scan_blocks = pipeline_entry(ctx, "scan_blocks", SCAN, "scan_blocks");
        let scan_add = pipeline_entry(ctx, "scan_add", SCAN, "scan_add");
        let field = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("field"),
            size: (points * 4).next_multiple_of(16),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let inside = super::output(ctx, "inside bits", inside_words * 4);
        let ebits = super::output(ctx, "edge bits", edge_words * 4);
        let eoffset = super::output(ctx, "edge offsets", edge_words * 4);
        let coffset = super::output(ctx, "cell offsets", cell_words * 4);
        let table = storage(
            ctx,
            "case table",
            bytemuck::cast_slice(&packed_table()),
            false,
        );
        let params = [
            params_buffer(ctx, "classify params"),
            params_buffer(ctx, "edge params"),
            params_buffer(ctx, "cell params"),
        ];
        let bind_classify = super::bind_at(
            ctx,
            &classify,
            &[(0, &field), (1, &inside), (9, &params[0])],
        );
        let bind_edges = super::bind_at(
            ctx,
            &edges,
            &[(1, &inside), (2, &ebits), (3, &eoffset), (9, &params[1])],
        );
        let bind_cells = super::bind_at(
            ctx,
            &cells,
            &[(1, &inside), (4, &coffset), (5, &table), (9, &params[2])],
        );
        let scan_edges = Scan::new(ctx, [&scan_blocks, &scan_add], &eoffset, edge_words as u32);
        let scan_cells = Scan::new(ctx, [&scan_blocks, &scan_add], &coffset, cell_words as u32);
        Ok(Extractor {
            ctx: ctx.clone(),
            dims,
            classify,
            edges,
            cells,
            vertices,
            triangles,
            scan_blocks,
            scan_add,
            field,
            ebits,
            eoffset,
            coffset,
            table,
            params,
            items: [inside_words as u32, edge_words as u32, cell_words as u32],
            bind_classify,
            bind_edges,
            bind_cells,
            inside,
            scan_edges,
            scan_cells,
            outputs: None,
            timer: ctx
                .features
                .contains(wgpu::Features::TIMESTAMP_QUERY)
                .then(|| {
                    let qs = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("marching cubes timestamps"),
                        ty: wgpu::QueryType::Timestamp,
                        count: 4,
                    });
                    let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("timestamps"),
                        // the second pair at the resolve alignment (256)
                        size: 2 * wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT,
                        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    });
                    (qs, resolve)
                }),
            last_kernel_ns: None,
        })
    }

    /// Uploads the field (`nz × ny × nx` values, x fastest) as f32.
    pub fn set_field(&mut self, values: &[f64]) -> Result<(), GpuError> {
        let [nx, ny, nz] = self.dims;
        if values.len() != nx * ny * nz {
            return Err(GpuError::Other(format!(
                "{} values for a {nx}×{ny}×{nz} field",
                values.len()
            )));
        }
        let f: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        self.ctx
            .queue
            .write_buffer(&self.field, 0, bytemuck::cast_slice(&f));
        Ok(())
    }

    fn write_params(&self, iso: f32) {
        let [nx, ny, nz] = self.dims.map(|d| d as u32);
        let wp = nx.div_ceil(32);
        let wc = (nx - 1).div_ceil(32);
        for (buf, items) in self.params.iter().zip(self.items) {
            let p = Params {
                nx,
                ny,
                nz,
                wp,
                wc,
                items,
                iso,
                pad: 0,
            };
            self.ctx.queue.write_buffer(buf, 0, bytemuck::bytes_of(&p));
        }
    }

    /// Makes room for at least `v` vertices and `t` triangles.
    fn reserve(&mut self, v: u64, t: u64) -> Result<(), GpuError> {
        let fits = self
            .outputs
            .as_ref()
            .is_some_and(|o| o.vertices >= v && o.triangles >= t);
        if !fits {
            let limit = self.ctx.max_binding().min(self.ctx.limits.max_buffer_size);
            if v * 12 > limit || t * 12 > limit {
                return Err(GpuError::Other(format!(
                    "{v} vertices and {t} triangles exceed the adapter's storage binding ({} MiB); use the CPU path",
                    limit >> 20
                )));
            }
            // room to grow: animation steps vary a little
            let (v, t) = ((v + v / 4).min(limit / 12), (t + t / 4).min(limit / 12));
            let ctx = &self.ctx;
            let positions = super::output(ctx, "positions", v * 12);
            let normals = super::output(ctx, "normals", v * 12);
            let indices = super::output(ctx, "indices", t * 12);
            let bind_vertices = super::bind_at(
                ctx,
                &self.vertices,
                &[
                    (0, &self.field),
                    (2, &self.ebits),
                    (3, &self.eoffset),
                    (6, &positions),
                    (7, &normals),
                    (9, &self.params[1]),
                ],
            );
            let bind_triangles = super::bind_at(
                ctx,
                &self.triangles,
                &[
                    (1, &self.inside),
                    (2, &self.ebits),
                    (3, &self.eoffset),
                    (4, &self.coffset),
                    (5, &self.table),
                    (8, &indices),
                    (9, &self.params[2]),
                ],
            );
            self.outputs = Some(Outputs {
                vertices: v,
                triangles: t,
                positions,
                normals,
                indices,
                bind_vertices,
                bind_triangles,
            });
        }
        Ok(())
    }

    /// The adapter's description.
    pub fn adapter(&self) -> String {
        self.ctx.info.name.clone()
    }

    /// GPU time of the last extraction's kernels (both passes, transfers
    /// excluded), in ns, where the adapter offers timestamp queries.
    pub fn last_kernel_ns(&self) -> Option<f64> {
        self.last_kernel_ns
    }

    /// The isosurface at `iso` of the field last set: inside means
    /// `f32(value) >= f32(iso)`.
    pub fn extract(&mut self, iso: f64) -> Result<IsoMesh, GpuError> {
        self.write_params(iso as f32);
        let ctx = self.ctx.clone();
        // counting: bits, counts, prefix sums, and the two totals
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("marching cubes: count"),
                timestamp_writes: writes(&self.timer, 0),
            });
            let dispatch = |pass: &mut wgpu::ComputePass, pipe, bindg, threads: u64| {
                pass.set_pipeline(pipe);
                pass.set_bind_group(0, bindg, &[]);
                let (x, y) = grid(threads.div_ceil(256) as u32);
                pass.dispatch_workgroups(x, y, 1);
            };
            dispatch(
                &mut pass,
                &self.classify,
                &self.bind_classify,
                self.items[0] as u64 * 32,
            );
            dispatch(
                &mut pass,
                &self.edges,
                &self.bind_edges,
                self.items[1] as u64,
            );
            dispatch(
                &mut pass,
                &self.cells,
                &self.bind_cells,
                self.items[2] as u64,
            );
            self.scan_edges
                .encode(&mut pass, &self.scan_blocks, &self.scan_add);
            self.scan_cells
                .encode(&mut pass, &self.scan_blocks, &self.scan_add);
        }
        let totals = super::output(&ctx, "totals", 24);
        enc.copy_buffer_to_buffer(self.scan_edges.total(), 0, &totals, 0, 4);
        enc.copy_buffer_to_buffer(self.scan_cells.total(), 0, &totals, 4, 4);
        if let Some((qs, resolve)) = &self.timer {
            enc.resolve_query_set(qs, 0..2, resolve, 0);
            enc.copy_buffer_to_buffer(resolve, 0, &totals, 8, 16);
        }
        let bytes = super::read_back(&ctx, enc, &totals, 24)?;
        // a Vec<u8> is not promised any alignment: read by copying
        let counts: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes[..8]);
        let (nv, nt) = (counts[0] as u64, counts[1] as u64);
        let period = ctx.queue.get_timestamp_period() as f64;
        let span = |b: &[u8]| {
            let t: Vec<u64> = bytemuck::pod_collect_to_vec(b);
            t[1].saturating_sub(t[0]) as f64 * period
        };
        self.last_kernel_ns = self.timer.as_ref().map(|_| span(&bytes[8..24]));
        if nt == 0 {
            return Ok(IsoMesh::default());
        }
        let items = self.items;
        self.reserve(nv, nt)?;
        let out = self
            .outputs
            .as_ref()
            .ok_or_else(|| GpuError::Other("mesh buffers".into()))?;
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("marching cubes: emit"),
                timestamp_writes: writes(&self.timer, 2),
            });
            pass.set_pipeline(&self.vertices);
            pass.set_bind_group(0, &out.bind_vertices, &[]);
            let (x, y) = grid((items[1] as u64).div_ceil(256) as u32);
            pass.dispatch_workgroups(x, y, 1);
            pass.set_pipeline(&self.triangles);
            pass.set_bind_group(0, &out.bind_triangles, &[]);
            let (x, y) = grid((items[2] as u64).div_ceil(256) as u32);
            pass.dispatch_workgroups(x, y, 1);
        }
        let (pb, ib) = (nv * 12, nt * 12);
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mesh read back"),
            size: 2 * pb + ib + 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        enc.copy_buffer_to_buffer(&out.positions, 0, &staging, 0, pb);
        enc.copy_buffer_to_buffer(&out.normals, 0, &staging, pb, pb);
        enc.copy_buffer_to_buffer(&out.indices, 0, &staging, 2 * pb, ib);
        if let Some((qs, resolve)) = &self.timer {
            let at = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;
            enc.resolve_query_set(qs, 2..4, resolve, at);
            enc.copy_buffer_to_buffer(resolve, at, &staging, 2 * pb + ib, 16);
        }
        ctx.queue.submit([enc.finish()]);
        let bytes = crate::gpu::map_read(&ctx, &staging)?;
        if let Some(count) = self.last_kernel_ns {
            let end = (2 * pb + ib) as usize;
            self.last_kernel_ns = Some(count + span(&bytes[end..end + 16]));
        }
        let floats: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes[..(2 * pb) as usize]);
        let triple = |s: &[f32]| s.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        Ok(IsoMesh {
            positions: triple(&floats[..(3 * nv) as usize]),
            normals: triple(&floats[(3 * nv) as usize..]),
            indices: bytemuck::pod_collect_to_vec(
                &bytes[(2 * pb) as usize..(2 * pb + ib) as usize],
            ),
        })
    }
}

/// The isosurface of `values` (`dims` = x, y, z, x fastest) at `iso` on the
/// GPU; see [`Extractor`] to reuse the pipelines over isovalues and steps.
pub fn extract(
    ctx: &GpuContext,
    values: &[f64],
    dims: [usize; 3],
    iso: f64,
) -> Result<IsoMesh, GpuError> {
    if dims.iter().any(|&d| d < 2) {
        return Ok(IsoMesh::default());
    }
    let mut x = Extractor::new(ctx, dims)?;
    x.set_field(values)?;
    x.extract(iso)
}
