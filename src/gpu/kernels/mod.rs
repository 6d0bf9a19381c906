//! Compute kernels (WGSL in `shaders/`), each the GPU twin of a CPU
//! analysis:
//!
//! * [`moments`]: per-location moments over state intervals
//!   (`analysis::moments`);
//! * [`busy_bins`]: the time-binned busy-fraction field
//!   (`analysis::fields::busy_fraction`);
//! * [`isosurface`]: marching cubes (`analysis::isosurface::extract`).
//!
//! Inputs larger than one storage binding are processed in chunks.

pub mod busy_bins;
pub mod isosurface;
pub mod moments;

use wgpu::util::DeviceExt;

use super::{GpuContext, GpuError};

/// The most workgroups in one dimension of a dispatch.
pub(crate) const MAX_GROUPS: u32 = 65_535;

/// A storage buffer holding `bytes` (at least 16 bytes: empty bindings are
/// not allowed).
pub(crate) fn storage(ctx: &GpuContext, label: &str, bytes: &[u8], writable: bool) -> wgpu::Buffer {
    let mut data = bytes.to_vec();
    if data.len() < 16 {
        data.resize(16, 0);
    }
    let usage = if writable {
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC
    } else {
        wgpu::BufferUsages::STORAGE
    };
    ctx.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &data,
            usage,
        })
}

pub(crate) fn uniform(ctx: &GpuContext, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    ctx.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

/// Copies `size` bytes of `src` back to the host.
pub(crate) fn read_back(
    ctx: &GpuContext,
    encoder: wgpu::CommandEncoder,
    src: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, GpuError> {
    let mut encoder = encoder;
    let size = size.max(4).next_multiple_of(4);
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read back"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(src, 0, &staging, 0, size);
    ctx.queue.submit([encoder.finish()]);
    super::map_read(ctx, &staging)
}

/// A compute pipeline from a WGSL source with entry point `main`.
pub(crate) fn pipeline(ctx: &GpuContext, label: &str, source: &str) -> wgpu::ComputePipeline {
    pipeline_entry(ctx, label, source, "main")
}

/// A compute pipeline from a WGSL source with the given entry point.
pub(crate) fn pipeline_entry(
    ctx: &GpuContext,
    label: &str,
    source: &str,
    entry: &str,
) -> wgpu::ComputePipeline {
    let module = ctx
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
    ctx.device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        })
}

/// Splits `groups` workgroups into a 2D dispatch: (x, y).
pub(crate) fn grid(groups: u32) -> (u32, u32) {
    let x = groups.clamp(1, MAX_GROUPS);
    (x, groups.div_ceil(x).max(1))
}
