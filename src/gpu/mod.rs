//! The GPU: context (adapter and device selection, feature and limit
//! checks) and the compute kernels that mirror the heavy reductions of the
//! analysis core. Every kernel has its CPU reference in [`crate::analysis`]
//! and tests that both agree within a stated tolerance.

pub mod context;
pub mod kernels;

pub use context::{GpuContext, GpuError};

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

/// Inputs below this many intervals stay on the CPU in `Auto` mode.
pub const AUTO_GPU_MIN_INTERVALS: usize = 10_000_000;

/// The GPU context an analysis of `intervals` intervals should use under
/// `compute`, or `None` for the CPU. `Auto` takes the GPU only for large
/// inputs on a hardware adapter (on a software adapter the CPU path is
/// faster); `Gpu` fails without an adapter.
pub fn choose(compute: Compute, intervals: usize) -> Result<Option<GpuContext>, GpuError> {
    match compute {
        Compute::Cpu => Ok(None),
        Compute::Gpu => GpuContext::new().map(Some),
        Compute::Auto => {
            if intervals < AUTO_GPU_MIN_INTERVALS {
                return Ok(None);
            }
            Ok(GpuContext::new().ok().filter(|c| !c.is_software()))
        }
    }
}

/// Maps a `MAP_READ` buffer whose copy was submitted, and returns its bytes.
pub fn map_read(ctx: &GpuContext, staging: &wgpu::Buffer) -> Result<Vec<u8>, GpuError> {
    let slice = staging.slice(..);
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
    let data = slice
        .get_mapped_range()
        .map_err(|e| GpuError::Other(format!("reading the results: {e}")))?
        .to_vec();
    staging.unmap();
    Ok(data)
}

impl From<GpuError> for crate::error::Error {
    fn from(e: GpuError) -> Self {
        crate::error::Error::Gpu(e.to_string())
    }
}
