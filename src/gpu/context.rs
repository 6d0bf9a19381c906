//! Adapter and device selection.
//!
//! Prefers a hardware GPU and falls back to a software adapter (Mesa's
//! lavapipe); honours `WGPU_BACKEND` and `WGPU_ADAPTER_NAME`; checks the
//! optional features (`SHADER_F64`, subgroups, timestamp queries) and the
//! storage binding limit instead of assuming them.

use std::sync::Arc;

/// Why no GPU could be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no GPU adapter found ({0}); install a Vulkan driver, or Mesa's software one: \
         apt-get install mesa-vulkan-drivers libvulkan1 (analyses and info work without a GPU)"
    )]
    NoAdapter(String),
    #[error("the GPU adapter {adapter} refused a device: {reason}")]
    Device { adapter: String, reason: String },
    #[error("GPU: {0}")]
    Other(String),
}

/// The instance options: `WGPU_BACKEND` when set; otherwise the primary
/// backends (Vulkan, Metal, DX12), or with `gl` the GL backend as a last
/// resort (probing GL/EGL first prints noise on headless machines).
pub fn instance_descriptor(gl: bool) -> wgpu::InstanceDescriptor {
    let mut d = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if std::env::var_os("WGPU_BACKEND").is_none() {
        d.backends = if gl {
            wgpu::Backends::GL
        } else {
            wgpu::Backends::PRIMARY
        };
    }
    d
}

/// A device and queue with what the adapter offers.
#[derive(Clone)]
pub struct GpuContext {
    pub adapter: wgpu::Adapter,
    pub device: Arc<wgpu::Device>,
    pub queue: Arc<wgpu::Queue>,
    pub info: wgpu::AdapterInfo,
    pub features: wgpu::Features,
    pub limits: wgpu::Limits,
    /// Compute pipelines made on this device, by shader and entry point:
    /// each is compiled once per context, not per call.
    pub(crate) pipelines: Arc<std::sync::Mutex<PipelineCache>>,
}

/// Compute pipelines by (shader source address, length, entry point).
pub(crate) type PipelineCache =
    std::collections::HashMap<(usize, usize, String), wgpu::ComputePipeline>;

impl GpuContext {
    /// Opens the best adapter: `WGPU_ADAPTER_NAME` if set, else a
    /// high-performance hardware adapter, else any (software) adapter.
    pub fn new() -> Result<Self, GpuError> {
        pollster::block_on(Self::open())
    }

    async fn open() -> Result<Self, GpuError> {
        // the primary backends first; GL only when they offer nothing
        // (probing GL/EGL prints noise on headless machines)
        let mut all = wgpu::Instance::new(instance_descriptor(false))
            .enumerate_adapters(wgpu::Backends::all())
            .await;
        if all.is_empty() && std::env::var_os("WGPU_BACKEND").is_none() {
            all = wgpu::Instance::new(instance_descriptor(true))
                .enumerate_adapters(wgpu::Backends::all())
                .await;
        }
        if all.is_empty() {
            return Err(GpuError::NoAdapter(
                "no Vulkan, Metal, DX12 or GL adapter".into(),
            ));
        }
        if let Some(want) = std::env::var_os("WGPU_ADAPTER_NAME") {
            let want = want.to_string_lossy().to_lowercase();
            let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
            let i = names
                .iter()
                .position(|n| n.to_lowercase().contains(&want))
                .ok_or_else(|| {
                    GpuError::NoAdapter(format!(
                        "WGPU_ADAPTER_NAME={want} matches none of the adapters: {}",
                        names.join("; ")
                    ))
                })?;
            return Self::from_adapter(all.swap_remove(i)).await;
        }
        // hardware first, then integrated, then software
        let rank = |a: &wgpu::Adapter| match a.get_info().device_type {
            wgpu::DeviceType::DiscreteGpu => 0,
            wgpu::DeviceType::IntegratedGpu => 1,
            wgpu::DeviceType::VirtualGpu => 2,
            wgpu::DeviceType::Other => 3,
            wgpu::DeviceType::Cpu => 4,
        };
        all.sort_by_key(rank);
        Self::from_adapter(all.remove(0)).await
    }

    /// An adapter that can present to `surface` (a window), and its device.
    pub async fn for_surface(
        instance: &wgpu::Instance,
        surface: &wgpu::Surface<'_>,
    ) -> Result<Self, GpuError> {
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: Some(surface),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        Self::from_adapter(adapter).await
    }

    async fn from_adapter(adapter: wgpu::Adapter) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let offered = adapter.features();
        let wanted =
            wgpu::Features::SHADER_F64 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        let features = offered & wanted;
        let adapter_limits = adapter.limits();
        let mut limits = wgpu::Limits::default().using_resolution(adapter_limits.clone());
        // as large storage bindings as the adapter allows (chunking adapts to it)
        limits.max_storage_buffer_binding_size = adapter_limits.max_storage_buffer_binding_size;
        limits.max_buffer_size = adapter_limits.max_buffer_size;
        limits.max_storage_buffers_per_shader_stage = adapter_limits
            .max_storage_buffers_per_shader_stage
            .max(8)
            .min(adapter_limits.max_storage_buffers_per_shader_stage);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tapestry"),
                required_features: features,
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device {
                adapter: info.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(GpuContext {
            adapter,
            device: Arc::new(device),
            queue: Arc::new(queue),
            info,
            features,
            limits,
            pipelines: Arc::default(),
        })
    }

    /// Whether the adapter is a software rasterizer (lavapipe, llvmpipe).
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The largest storage binding, in bytes (at most 128 MiB is assumed
    /// by nothing: the kernels chunk to this).
    pub fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size
    }

    /// One line describing the adapter and what it offers.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}); f64 {}, subgroups {}, timestamps {}; storage bindings up to {} MiB",
            self.info.name,
            self.info.device_type,
            self.info.backend,
            self.features.contains(wgpu::Features::SHADER_F64),
            self.features.contains(wgpu::Features::SUBGROUP),
            self.features.contains(wgpu::Features::TIMESTAMP_QUERY),
            self.max_binding() >> 20
        )
    }
}
