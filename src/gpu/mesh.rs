//! A triangle mesh whose vertices a kernel wrote on the GPU, in the
//! renderer's vertex layout ([`crate::scene::Vertex`]: position, normal,
//! RGBA colour, 40 bytes), drawn where it lies: no read-back between the
//! kernel that made it and the frame that shows it.

use super::{GpuContext, GpuError};
use crate::scene::Vertex;

/// A mesh resident on the GPU (cheap to clone: the buffers are shared).
#[derive(Clone)]
pub struct GpuMesh {
    pub(crate) ctx: GpuContext,
    /// `VERTEX | STORAGE | COPY_SRC`, `vertex_count` [`Vertex`]es.
    pub vertices: wgpu::Buffer,
    /// `INDEX | COPY_SRC`, `u32`, `index_count` of them.
    pub indices: wgpu::Buffer,
    pub vertex_count: u32,
    pub index_count: u32,
    /// Lit (3D) or flat.
    pub lit: bool,
    /// Whether any vertex is translucent.
    pub transparent: bool,
    /// Axis-aligned bounds of the vertices, known from how they were made
    /// (the camera frames the scene without reading them back).
    pub bounds: ([f32; 3], [f32; 3]),
}

impl std::fmt::Debug for GpuMesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMesh")
            .field("vertex_count", &self.vertex_count)
            .field("index_count", &self.index_count)
            .field("lit", &self.lit)
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl GpuMesh {
    /// Triangles.
    pub fn triangles(&self) -> usize {
        self.index_count as usize / 3
    }

    /// Reads vertices `range` back (tests, and the few vertices a view
    /// needs on the host).
    pub fn read_vertices(&self, range: std::ops::Range<u32>) -> Result<Vec<Vertex>, GpuError> {
        let range = range.start.min(self.vertex_count)..range.end.min(self.vertex_count);
        let size = std::mem::size_of::<Vertex>() as u64;
        self.read(
            &self.vertices,
            range.start as u64 * size,
            range.len() as u64 * size,
        )
    }

    /// Reads the indices back (tests).
    pub fn read_indices(&self) -> Result<Vec<u32>, GpuError> {
        self.read(&self.indices, 0, self.index_count as u64 * 4)
    }

    fn read<T: bytemuck::Pod>(
        &self,
        src: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<T>, GpuError> {
        let b = super::read_regions(&self.ctx, &[(src, offset, bytes)])?;
        Ok(bytemuck::pod_collect_to_vec(&b))
    }
}
