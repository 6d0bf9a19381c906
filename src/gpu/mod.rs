//! The GPU: context (adapter and device selection, feature and limit
//! checks) and the compute kernels that mirror the heavy reductions of the
//! analysis core. Every kernel has its CPU reference in [`crate::analysis`]
//! and tests that both agree within a stated tolerance.

pub mod context;
pub mod kernels;
pub mod mesh;
pub mod resident;

pub use context::{GpuContext, GpuError};
pub use mesh::GpuMesh;
pub use resident::{GpuTrace, Timing};

/// Where an analysis runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compute {
    /// The GPU for large inputs when a hardware adapter exists, else the CPU.
    #[default]
    Auto,
    /// Always the CPU.
    Cpu,
    /// Always the GPU (lavapipe included); an error without an adapter.
    Gpu,
}

/// Inputs below this many intervals stay on the CPU in `Auto` mode: by
/// default every input does. Measured on an NVIDIA H200 beside 16 CPU cores
/// (2026-11-27, `cargo bench --bench gpu`, upload included), the CPU path
/// was faster end to end for moments at every size up to 134 M intervals.
/// It was also faster for the busy field at 2^24 and 134 M intervals (two
/// sweeps disagreed at 2^22, a 10 % margin either way). The upload, at
/// 6–13 GB/s, costs more than the CPU's whole analysis. Only a trace
/// already resident on the GPU wins: from 2^18 intervals for the busy
/// field and 2^22 for moments.
pub const AUTO_GPU_MIN_INTERVALS: usize = usize::MAX;

/// The input size (intervals) from which `--gpu auto` uses a hardware
/// adapter: `TAPESTRY_GPU_CROSSOVER` when set (the crossover `cargo bench
/// --bench gpu` measures and prints for the machine's adapter), else
/// [`AUTO_GPU_MIN_INTERVALS`] (never). A software adapter is never chosen by `auto`.
pub fn auto_min_intervals() -> usize {
    crossover_of(std::env::var("TAPESTRY_GPU_CROSSOVER").ok().as_deref())
}

/// A crossover as written (`2000000`, `2_000_000`, `2e6`); the default
/// for anything else.
fn crossover_of(v: Option<&str>) -> usize {
    v.and_then(|v| v.trim().replace('_', "").parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map_or(AUTO_GPU_MIN_INTERVALS, |v| v as usize)
}

/// The GPU context an analysis of `intervals` intervals should use under
/// `compute`, or `None` for the CPU. `Auto` takes the GPU only for inputs of
/// [`auto_min_intervals`] and more on a hardware adapter (on a software adapter the CPU path is
/// faster); `Gpu` fails without an adapter.
pub fn choose(compute: Compute, intervals: usize) -> Result<Option<GpuContext>, GpuError> {
    match compute {
        Compute::Cpu => Ok(None),
        Compute::Gpu => GpuContext::new().map(Some),
        Compute::Auto => {
            if intervals < auto_min_intervals() {
                return Ok(None);
            }
            Ok(GpuContext::new().ok().filter(|c| !c.is_software()))
        }
    }
}

/// Maps a `MAP_READ` buffer whose copy was submitted, and returns its bytes.
pub fn map_read(ctx: &GpuContext, staging: &wgpu::Buffer) -> Result<Vec<u8>, GpuError> {
    map_read_prefix(ctx, staging, staging.size())
}

/// [`map_read`] of the first `size` bytes only (a multiple of 4; a reused
/// buffer may be larger than what was copied into it).
pub fn map_read_prefix(
    ctx: &GpuContext,
    staging: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, GpuError> {
    map_read_with(ctx, staging, size, |b| b.to_vec())
}

/// Waits until the first `size` bytes of `staging` (whose copy was
/// submitted) are mapped, and runs `f` on them in place: results are read
/// where they landed, not copied out first.
pub fn map_read_with<R>(
    ctx: &GpuContext,
    staging: &wgpu::Buffer,
    size: u64,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R, GpuError> {
    let slice = staging.slice(..size.min(staging.size()));
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuError::Other(format!("waiting for the GPU: {e}")))?;
    rx.recv()
        .map_err(|e| GpuError::Other(format!("mapping the results: {e}")))?
        .map_err(|e| GpuError::Other(format!("mapping the results: {e}")))?;
    let r = {
        let view = slice
            .get_mapped_range()
            .map_err(|e| GpuError::Other(format!("reading the results: {e}")))?;
        f(&view)
    };
    staging.unmap();
    Ok(r)
}

/// Copies the regions `(buffer, offset, bytes)` (each buffer `COPY_SRC`)
/// one after another into one host buffer, in one submission, and returns
/// their bytes (for the few values a view needs back; not for results).
pub(crate) fn read_regions(
    ctx: &GpuContext,
    regions: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<u8>, GpuError> {
    let total: u64 = regions.iter().map(|r| r.2).sum();
    if total == 0 {
        return Ok(Vec::new());
    }
    let back = resident::staging(ctx, total);
    let mut enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("read back"),
        });
    let mut at = 0;
    for &(src, offset, bytes) in regions {
        enc.copy_buffer_to_buffer(src, offset, &back, at, bytes);
        at += bytes;
    }
    ctx.queue.submit([enc.finish()]);
    map_read_prefix(ctx, &back, total)
}

impl From<GpuError> for crate::error::Error {
    fn from(e: GpuError) -> Self {
        crate::error::Error::Gpu(e.to_string())
    }
}

#[cfg(test)]
mod crossover_tests {
    use super::*;

    #[test]
    fn crossover_is_read_as_written_or_defaults() {
        assert_eq!(crossover_of(None), AUTO_GPU_MIN_INTERVALS);
        assert_eq!(crossover_of(Some("2000000")), 2_000_000);
        assert_eq!(crossover_of(Some(" 2_000_000 ")), 2_000_000);
        assert_eq!(crossover_of(Some("2e6")), 2_000_000);
        for bad in ["", "-5", "lots", "inf", "NaN"] {
            assert_eq!(crossover_of(Some(bad)), AUTO_GPU_MIN_INTERVALS, "{bad}");
        }
    }
}
