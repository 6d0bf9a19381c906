//! Compute kernels (WGSL in `shaders/`), each the GPU twin of a CPU
//! analysis:
//!
//! * [`moments`]: per-location moments over state intervals
//!   (`analysis::moments`);
//! * [`busy_bins`]: the time-binned busy-fraction field
//!   (`analysis::fields::busy_fraction`);
//! * [`isosurface`]: marching cubes (`analysis::isosurface::extract`);
//! * [`tube`]: the Kiviat tube's mesh from a busy field left on the GPU
//!   (`views::kiviat::build`'s mesh);
//! * [`gantt`]: the moment display's Gantt chart from the same field
//!   (`views::moments::build`'s chart).
//!
//! Inputs larger than one storage binding are processed in chunks.

pub mod busy_bins;
pub mod gantt;
pub mod isosurface;
pub mod moments;
pub mod tube;

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

/// A bind group of `pipe`'s group 0 with `resources` at bindings 0, 1, 2…
/// in order.
pub(crate) fn bind_in_order(
    ctx: &GpuContext,
    pipe: &wgpu::ComputePipeline,
    label: &str,
    resources: Vec<wgpu::BindingResource<'_>>,
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = resources
        .into_iter()
        .enumerate()
        .map(|(i, resource)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource,
        })
        .collect();
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout: &pipe.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// A bind group of `pipe`'s group 0 with whole buffers at the given
/// bindings (those its entry point uses).
pub(crate) fn bind_at(
    ctx: &GpuContext,
    pipe: &wgpu::ComputePipeline,
    buffers: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: *i,
            resource: b.as_entire_binding(),
        })
        .collect();
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipe.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// Records one compute pass per (pipeline, bind group) into a new encoder,
/// each dispatching `(x, y)` workgroups: passes in order, so each sees what
/// the previous wrote.
pub(crate) fn passes(
    ctx: &GpuContext,
    label: &str,
    steps: &[(&wgpu::ComputePipeline, &wgpu::BindGroup)],
    (x, y): (u32, u32),
) -> wgpu::CommandEncoder {
    let mut enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    for (pipe, bind) in steps {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: None,
        });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, *bind, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }
    enc
}

/// A buffer the kernels write and that is copied back (at least 16
/// bytes).
pub(crate) fn output(ctx: &GpuContext, label: &str, size: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16).next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
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
pub(crate) fn pipeline(
    ctx: &GpuContext,
    label: &str,
    source: &'static str,
) -> wgpu::ComputePipeline {
    pipeline_entry(ctx, label, source, "main")
}

/// A compute pipeline from a WGSL source (a `'static` shader of
/// `shaders/`) with the given entry point: compiled on the first call per
/// context, then taken from the context's cache.
pub(crate) fn pipeline_entry(
    ctx: &GpuContext,
    label: &str,
    source: &'static str,
    entry: &str,
) -> wgpu::ComputePipeline {
    let key = (source.as_ptr() as usize, source.len(), entry.to_string());
    if let Ok(cache) = ctx.pipelines.lock()
        && let Some(p) = cache.get(&key)
    {
        return p.clone();
    }
    let p = compile(ctx, label, source, entry);
    if let Ok(mut cache) = ctx.pipelines.lock() {
        cache.insert(key, p.clone());
    }
    p
}

fn compile(ctx: &GpuContext, label: &str, source: &str, entry: &str) -> wgpu::ComputePipeline {
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

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str =
        "@compute @workgroup_size(1) fn main() {}\n@compute @workgroup_size(1) fn other() {}";

    #[test]
    fn pipelines_are_compiled_once_per_context() {
        let Ok(ctx) = GpuContext::new() else {
            eprintln!("skipped: no adapter");
            return;
        };
        let n = || ctx.pipelines.lock().map(|c| c.len()).unwrap_or(0);
        let before = n();
        pipeline(&ctx, "a", A);
        pipeline(&ctx, "a again", A);
        assert_eq!(n(), before + 1);
        pipeline_entry(&ctx, "other", A, "other");
        assert_eq!(n(), before + 2);
        // a context of its own compiles its own
        let fresh = GpuContext::new().unwrap();
        pipeline(&fresh, "a", A);
        assert_eq!(fresh.pipelines.lock().map(|c| c.len()).unwrap_or(0), 1);
    }
}
