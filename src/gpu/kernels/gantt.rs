//! The moment display's utilization Gantt chart made on the GPU from a
//! busy field resident there (`shaders/gantt.wgsl`): the field goes from
//! the busy kernel to the renderer without a read-back. Its CPU twin is the
//! chart of `views::moments::build`; `tests/gpu_kernels.rs` holds the two
//! equal.
//!
//! What comes back is one exact sum per cell (rows × bins × 8 bytes, the
//! rows being at most the chart's pixel rows): the hover texts' values.
//! The field itself (locations × bins × 8 bytes) stays.

use super::tube::GpuField;
use super::{GpuError, grid, pipeline_entry};
use crate::gpu::GpuMesh;

const SHADER: &str = concat!(
    include_str!("../../../shaders/colormap.wgsl"),
    include_str!("../../../shaders/u64.wgsl"),
    include_str!("../../../shaders/gantt.wgsl")
);
const GROUP: u32 = 64;
/// Bytes of a cell's four vertices.
const CELL_VERTICES: u64 = 4 * std::mem::size_of::<crate::scene::Vertex>() as u64;

/// Where the chart lies and how its rows group the processors (the
/// numbers `views::moments` derives, the same for the CPU and the GPU).
#[derive(Debug, Clone, PartialEq)]
pub struct GanttShape {
    /// Processors per row (the last row may have fewer).
    pub group: usize,
    /// The x of each bin edge (bins + 1).
    pub xs: Vec<f32>,
    /// The height of a row: row r spans y from -(r + 1)·scale to -r·scale.
    pub scale: f32,
    /// The colour of a row none of whose processors has data.
    pub nodata: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    nodata: [f32; 4],
    bins: u32,
    elements: u32,
    group: u32,
    rows: u32,
    scale: f32,
    stops: u32,
    categorical: u32,
    row: u32,
}

/// A Gantt chart made on the GPU: its flat mesh (a quad per cell), and
/// each cell's busy time summed over the row's processors with data.
#[derive(Clone)]
pub struct Gantt {
    pub mesh: GpuMesh,
    /// `[row][bin]`, ns, exact.
    pub totals: Vec<u64>,
    pub rows: usize,
}

impl GpuField {
    /// The Gantt chart of this field for `shape`, the processors with
    /// `has_data` averaged per row, coloured through the colour map's
    /// `stops` (position, sRGB colour) on the fixed scale 0..1: vertices
    /// and indices written on the GPU, the cells' sums read back.
    pub fn gantt(
        &self,
        shape: &GanttShape,
        has_data: &[bool],
        stops: &[(f32, [f32; 3])],
        categorical: bool,
    ) -> Result<Gantt, GpuError> {
        self.check_binding()?;
        let ctx = &self.ctx;
        let group = shape.group.max(1);
        let rows = self.elements.div_ceil(group);
        let cells = (rows * self.bins) as u64;
        if has_data.len() != self.elements || shape.xs.len() != self.bins + 1 {
            return Err(GpuError::Other(format!(
                "a Gantt chart of {} locations and {} bin edges does not fit a field of {} bins × {} locations",
                has_data.len(),
                shape.xs.len(),
                self.bins,
                self.elements
            )));
        }
        if cells * CELL_VERTICES > ctx.max_binding() || cells * 4 > u32::MAX as u64 {
            return Err(GpuError::Other(format!(
                "a Gantt chart of {rows} rows × {} bins is more than one GPU storage binding holds; \
                 use fewer bins or rows",
                self.bins
            )));
        }
        let (x, y) = grid(cells.div_ceil(GROUP as u64) as u32);
        let params = Params {
            nodata: shape.nodata,
            bins: self.bins as u32,
            elements: self.elements as u32,
            group: group as u32,
            rows: rows as u32,
            scale: shape.scale,
            stops: stops.len() as u32,
            categorical: categorical as u32,
            row: x * GROUP,
        };
        let params = super::uniform(ctx, "gantt params", bytemuck::bytes_of(&params));
        let mut bits = vec![0u32; self.elements.div_ceil(32)];
        for (l, _) in has_data.iter().enumerate().filter(|(_, h)| **h) {
            bits[l / 32] |= 1 << (l % 32);
        }
        let has = super::storage(ctx, "has data", bytemuck::cast_slice(&bits), false);
        let stops: Vec<[f32; 4]> = stops.iter().map(|(t, c)| [*t, c[0], c[1], c[2]]).collect();
        let stops = super::storage(ctx, "colour map", bytemuck::cast_slice(&stops), false);
        let xs = super::storage(ctx, "bin edges", bytemuck::cast_slice(&shape.xs), false);
        let buffer = |label, size: u64, usage| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage: usage | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        let vertices = buffer(
            "gantt vertices",
            cells * CELL_VERTICES,
            wgpu::BufferUsages::VERTEX,
        );
        let indices = buffer("gantt indices", cells * 24, wgpu::BufferUsages::INDEX);
        let totals = super::output(ctx, "gantt totals", cells * 8);
        let pipe = pipeline_entry(ctx, "gantt", SHADER, "cells");
        let bind = super::bind_at(
            ctx,
            &pipe,
            &[
                (0, &self.sums),
                (1, &has),
                (2, &params),
                (3, &stops),
                (4, &vertices),
                (5, &indices),
                (6, &totals),
                (7, &xs),
                (8, &self.inv),
            ],
        );
        let enc = super::passes(ctx, "gantt", &[(&pipe, &bind)], (x, y));
        let bytes = super::read_back(ctx, enc, &totals, cells * 8)?;
        let totals: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes[..cells as usize * 8]);
        let (x0, x1) = (
            shape.xs.first().copied().unwrap_or(0.0),
            shape.xs.last().copied().unwrap_or(0.0),
        );
        Ok(Gantt {
            mesh: GpuMesh {
                ctx: ctx.clone(),
                vertices,
                indices,
                vertex_count: (cells * 4) as u32,
                index_count: (cells * 6) as u32,
                lit: false,
                transparent: false,
                bounds: ([x0, -(rows as f32) * shape.scale, 0.0], [x1, 0.0, 0.0]),
            },
            totals,
            rows,
        })
    }
}
