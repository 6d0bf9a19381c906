//! The renderer: draws any [`Scene`] (meshes, lines) with wgpu, headless
//! into an image (PNG export) — the window uses the same pipelines.
//!
//! Opaque meshes, glyphs and lines are drawn first with depth writes;
//! transparent meshes (any vertex alpha below 1) follow in any order into
//! accumulation targets (order-independent transparency: the weighted
//! average of the layers' colours, coverage 1 − Π(1 − alpha), so nested
//! isosurface shells look the same from every side) and are laid over the
//! opaque image. 4× MSAA, 32-bit depth.
//!
//! The title, colour legend and text labels are painted over the scene by
//! [`overlay`] (egui, DejaVu Sans from `assets/fonts/`), in the window and
//! in headless frames alike.

pub mod overlay;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use wgpu::util::DeviceExt;

pub use crate::scene::Camera;

use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::scene::Scene;

const MESH_SHADER: &str = concat!(
    include_str!("../../shaders/globals.wgsl"),
    include_str!("../../shaders/mesh.wgsl")
);
const LINES_SHADER: &str = concat!(
    include_str!("../../shaders/globals.wgsl"),
    include_str!("../../shaders/lines.wgsl")
);
const OIT_SHADER: &str = include_str!("../../shaders/oit.wgsl");
/// The accumulation format of transparent layers.
const ACCUM: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
/// The revealage format (Π (1 − a)).
const REVEAL: wgpu::TextureFormat = wgpu::TextureFormat::R16Float;
const GLYPH_SHADER: &str = concat!(
    include_str!("../../shaders/globals.wgsl"),
    include_str!("../../shaders/glyph.wgsl")
);
/// The format of headless frames.
pub const FRAME_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
/// The depth format.
pub const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// MSAA samples.
pub const SAMPLES: u32 = 4;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Globals {
    view_proj: [[f32; 4]; 4],
    light_dir: [f32; 4],
    params: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct LineVertex {
    position: [f32; 3],
    color: [f32; 4],
}

const MESH_ATTRS: [wgpu::VertexAttribute; 3] =
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4];
const LINE_ATTRS: [wgpu::VertexAttribute; 2] =
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4];
const BASE_ATTRS: [wgpu::VertexAttribute; 2] =
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];
const INSTANCE_ATTRS: [wgpu::VertexAttribute; 3] =
    wgpu::vertex_attr_array![2 => Float32x3, 3 => Float32x3, 4 => Float32x4];

/// A scene's geometry on the GPU, made by [`Renderer::prepare`].
pub struct PreparedScene {
    meshes: Vec<PreparedMesh>,
    glyphs: Vec<PreparedGlyphs>,
    /// The line vertex buffer and its vertex count.
    lines: Option<(wgpu::Buffer, u32)>,
}

struct PreparedMesh {
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    count: u32,
    lit: bool,
    transparent: bool,
}

struct PreparedGlyphs {
    shape: wgpu::Buffer,
    indices: wgpu::Buffer,
    instances: wgpu::Buffer,
    count: u32,
    instance_count: u32,
}

/// An RGBA8 image (sRGB), row-major from the top.
#[derive(Debug, Clone)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

impl Frame {
    /// Encodes as PNG.
    pub fn png(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let enc = image::codecs::png::PngEncoder::new(&mut out);
        image::ImageEncoder::write_image(
            enc,
            &self.rgba,
            self.width,
            self.height,
            image::ExtendedColorType::Rgba8,
        )
        .map_err(|e| Error::Invalid(format!("PNG encoding failed: {e}")))?;
        Ok(out)
    }

    /// Encodes as JPEG (quality 92; alpha dropped).
    pub fn jpeg(&self) -> Result<Vec<u8>> {
        let rgb: Vec<u8> = self
            .rgba
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        let mut out = Vec::new();
        let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 92);
        image::ImageEncoder::write_image(
            enc,
            &rgb,
            self.width,
            self.height,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| Error::Invalid(format!("JPEG encoding failed: {e}")))?;
        Ok(out)
    }
}

/// Pipelines for meshes and lines, reusable across frames.
pub struct Renderer {
    ctx: GpuContext,
    format: wgpu::TextureFormat,
    samples: u32,
    overlay: std::sync::Mutex<Option<overlay::Headless>>,
    lit: wgpu::RenderPipeline,
    /// Transparent meshes into the accumulation targets.
    oit: wgpu::RenderPipeline,
    /// The transparent layers over the opaque image.
    composite: wgpu::RenderPipeline,
    composite_layout: wgpu::BindGroupLayout,
    lines: wgpu::RenderPipeline,
    glyphs: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
}

/// The targets of one frame: multisampled colour and depth, and the
/// order-independent transparency targets (multisampled accumulation and
/// revealage, and their resolved images).
pub struct Targets {
    /// Samples per pixel; with 1 the passes draw into the resolved
    /// images directly.
    pub samples: u32,
    pub msaa: wgpu::TextureView,
    pub depth: wgpu::TextureView,
    accum: wgpu::TextureView,
    reveal: wgpu::TextureView,
    accum_resolved: wgpu::TextureView,
    reveal_resolved: wgpu::TextureView,
}

/// A 1×1 render target (a stand-in for an unused one).
fn tex_small(ctx: &GpuContext, format: wgpu::TextureFormat) -> wgpu::TextureView {
    ctx.device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("unused target"),
            size: wgpu::Extent3d {
                width: 1,
                height: 1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        })
        .create_view(&Default::default())
}

impl Targets {
    /// Multisampled colour and depth targets of `width × height`.
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat, width: u32, height: u32) -> Targets {
        Self::with_samples(ctx, format, width, height, SAMPLES)
    }

    /// Targets of `samples` per pixel (1 or 4; those of the renderer).
    pub fn with_samples(
        ctx: &GpuContext,
        format: wgpu::TextureFormat,
        width: u32,
        height: u32,
        samples: u32,
    ) -> Targets {
        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let tex_n = |format, usage, samples| {
            ctx.device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some("target"),
                    size,
                    mip_level_count: 1,
                    sample_count: samples,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                })
                .create_view(&Default::default())
        };
        let tex = |format, usage| tex_n(format, usage, samples);
        let attach = wgpu::TextureUsages::RENDER_ATTACHMENT;
        let read = attach | wgpu::TextureUsages::TEXTURE_BINDING;
        let accum_resolved = tex_n(ACCUM, read, 1);
        let reveal_resolved = tex_n(REVEAL, read, 1);
        let single = samples <= 1;
        Targets {
            samples: samples.max(1),
            // unused with one sample: a 1×1 stand-in
            msaa: if single {
                tex_small(ctx, format)
            } else {
                tex(format, attach)
            },
            depth: tex(DEPTH, attach),
            accum: if single {
                accum_resolved.clone()
            } else {
                tex(ACCUM, attach)
            },
            reveal: if single {
                reveal_resolved.clone()
            } else {
                tex(REVEAL, attach)
            },
            accum_resolved,
            reveal_resolved,
        }
    }
}

impl Renderer {
    /// A renderer for headless frames.
    pub fn new(ctx: &GpuContext) -> Renderer {
        Self::with_format(ctx, FRAME_FORMAT)
    }

    /// A renderer drawing into targets of `format` (a window's surface).
    pub fn with_format(ctx: &GpuContext, format: wgpu::TextureFormat) -> Renderer {
        Self::with_samples(ctx, format, SAMPLES)
    }

    /// A renderer of `samples` per pixel (4: antialiased; 1: cheaper on a
    /// software rasterizer, for playback), drawing into [`Targets`] of the
    /// same count.
    pub fn with_samples(ctx: &GpuContext, format: wgpu::TextureFormat, samples: u32) -> Renderer {
        let samples = samples.max(1);
        let d = &ctx.device;
        let layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("globals"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("scene"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = |label: &str, src: &str| {
            d.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(src.into()),
            })
        };
        let (mesh_mod, line_mod, glyph_mod) = (
            module("mesh", MESH_SHADER),
            module("lines", LINES_SHADER),
            module("glyphs", GLYPH_SHADER),
        );
        let per_vertex = |stride: usize, attributes: &'static [wgpu::VertexAttribute]| {
            Some(wgpu::VertexBufferLayout {
                array_stride: stride as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes,
            })
        };
        let mesh_buffers = [per_vertex(
            std::mem::size_of::<crate::scene::Vertex>(),
            &MESH_ATTRS,
        )];
        let line_buffers = [per_vertex(std::mem::size_of::<LineVertex>(), &LINE_ATTRS)];
        let glyph_buffers = [
            per_vertex(24, &BASE_ATTRS),
            Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<crate::scene::GlyphInstance>() as u64,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &INSTANCE_ATTRS,
            }),
        ];
        let blended = [Some(wgpu::ColorTargetState {
            format,
            blend: Some(wgpu::BlendState::ALPHA_BLENDING),
            write_mask: wgpu::ColorWrites::ALL,
        })];
        // every scene pipeline: 4x MSAA, depth test, `fs` into `targets`
        let pipeline = |module: &wgpu::ShaderModule,
                        buffers: &[Option<wgpu::VertexBufferLayout>],
                        topology: wgpu::PrimitiveTopology,
                        depth_write: bool,
                        fs: &str,
                        targets: &[Option<wgpu::ColorTargetState>]| {
            d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("scene"),
                layout: Some(&pl),
                vertex: wgpu::VertexState {
                    module,
                    entry_point: Some("vs_main"),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    cull_mode: None,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH,
                    depth_write_enabled: Some(depth_write),
                    depth_compare: Some(wgpu::CompareFunction::LessEqual),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: wgpu::MultisampleState {
                    count: samples,
                    mask: !0,
                    alpha_to_coverage_enabled: false,
                },
                fragment: Some(wgpu::FragmentState {
                    module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let triangles = wgpu::PrimitiveTopology::TriangleList;
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let times_one_minus = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::Zero,
            dst_factor: wgpu::BlendFactor::OneMinusSrc,
            operation: wgpu::BlendOperation::Add,
        };
        let layers = [
            Some(wgpu::ColorTargetState {
                format: ACCUM,
                blend: Some(wgpu::BlendState {
                    color: add,
                    alpha: add,
                }),
                write_mask: wgpu::ColorWrites::ALL,
            }),
            Some(wgpu::ColorTargetState {
                format: REVEAL,
                blend: Some(wgpu::BlendState {
                    color: times_one_minus,
                    alpha: times_one_minus,
                }),
                write_mask: wgpu::ColorWrites::ALL,
            }),
        ];
        let oit = pipeline(
            &mesh_mod,
            &mesh_buffers,
            triangles,
            false,
            "fs_oit",
            &layers,
        );
        let texture_entry = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Texture {
                sample_type: wgpu::TextureSampleType::Float { filterable: false },
                view_dimension: wgpu::TextureViewDimension::D2,
                multisampled: false,
            },
            count: None,
        };
        let composite_layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("composite"),
            entries: &[texture_entry(0), texture_entry(1)],
        });
        let composite_pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("composite"),
            bind_group_layouts: &[Some(&composite_layout)],
            immediate_size: 0,
        });
        let oit_mod = module("oit", OIT_SHADER);
        let composite = d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("composite"),
            layout: Some(&composite_pl),
            vertex: wgpu::VertexState {
                module: &oit_mod,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &oit_mod,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &blended,
            }),
            multiview_mask: None,
            cache: None,
        });
        Renderer {
            lit: pipeline(
                &mesh_mod,
                &mesh_buffers,
                triangles,
                true,
                "fs_main",
                &blended,
            ),
            oit,
            composite,
            composite_layout,
            lines: pipeline(
                &line_mod,
                &line_buffers,
                wgpu::PrimitiveTopology::LineList,
                true,
                "fs_main",
                &blended,
            ),
            glyphs: pipeline(
                &glyph_mod,
                &glyph_buffers,
                triangles,
                true,
                "fs_main",
                &blended,
            ),
            layout,
            ctx: ctx.clone(),
            format,
            samples,
            overlay: std::sync::Mutex::new(None),
        }
    }

    /// Samples per pixel of the pipelines (targets must match).
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// The colour format the pipelines draw into.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    fn globals(&self, vp: glam::Mat4, light: Vec3, lit: bool) -> wgpu::BindGroup {
        let g = Globals {
            view_proj: vp.to_cols_array_2d(),
            light_dir: [light.x, light.y, light.z, 0.0],
            params: [lit as u8 as f32, 0.0, 0.0, 0.0],
        };
        let buf = self
            .ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("globals"),
                contents: bytemuck::bytes_of(&g),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        self.ctx
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("globals"),
                layout: &self.layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: buf.as_entire_binding(),
                }],
            })
    }

    /// Uploads `scene`'s geometry (meshes, glyph shapes and instances,
    /// lines) to the GPU once; [`Renderer::encode`] then draws it as often
    /// as the camera moves without touching the buffers again.
    pub fn prepare(&self, scene: &Scene) -> PreparedScene {
        let d = &self.ctx.device;
        let buffer = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let (vertex, index) = (wgpu::BufferUsages::VERTEX, wgpu::BufferUsages::INDEX);
        let meshes = scene
            .meshes
            .iter()
            .filter(|m| !m.indices.is_empty())
            .map(|m| PreparedMesh {
                vertices: buffer("vertices", bytemuck::cast_slice(&m.vertices), vertex),
                indices: buffer("indices", bytemuck::cast_slice(&m.indices), index),
                count: m.indices.len() as u32,
                lit: m.lit,
                transparent: m.vertices.iter().any(|v| v.color[3] < 1.0),
            })
            .chain(
                scene
                    .resident
                    .iter()
                    // a mesh of another device cannot be drawn here
                    .filter(|m| {
                        m.index_count > 0 && std::sync::Arc::ptr_eq(&m.ctx.device, &self.ctx.device)
                    })
                    .map(|m| PreparedMesh {
                        vertices: m.vertices.clone(),
                        indices: m.indices.clone(),
                        count: m.index_count,
                        lit: m.lit,
                        transparent: m.transparent,
                    }),
            )
            .collect();
        let line_vertices: Vec<LineVertex> = scene
            .lines
            .iter()
            .flat_map(|s| {
                [s.a, s.b].map(|position| LineVertex {
                    position,
                    color: s.color,
                })
            })
            .collect();
        let lines = (!line_vertices.is_empty()).then(|| {
            (
                buffer("lines", bytemuck::cast_slice(&line_vertices), vertex),
                line_vertices.len() as u32,
            )
        });
        let glyphs = scene
            .glyphs
            .iter()
            .filter(|g| !g.instances.is_empty())
            .map(|g| {
                let (p, n, idx) = crate::scene::glyph_mesh(g.shape);
                let verts: Vec<[f32; 6]> = p
                    .iter()
                    .zip(&n)
                    .map(|(p, n)| [p[0], p[1], p[2], n[0], n[1], n[2]])
                    .collect();
                PreparedGlyphs {
                    shape: buffer("glyph shape", bytemuck::cast_slice(&verts), vertex),
                    indices: buffer("glyph indices", bytemuck::cast_slice(&idx), index),
                    instances: buffer(
                        "glyph instances",
                        bytemuck::cast_slice(&g.instances),
                        vertex,
                    ),
                    count: idx.len() as u32,
                    instance_count: g.instances.len() as u32,
                }
            })
            .collect();
        PreparedScene {
            meshes,
            glyphs,
            lines,
        }
    }

    /// Records the drawing of a prepared scene into `enc`: clears and
    /// draws into `targets`, resolving into `resolve`.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        enc: &mut wgpu::CommandEncoder,
        targets: &Targets,
        resolve: &wgpu::TextureView,
        scene: &PreparedScene,
        camera: &Camera,
        aspect: f32,
        background: [f32; 4],
        viewport: Option<[f32; 4]>,
    ) {
        // the background is sRGB, the clear colour of an sRGB target linear
        let lin = |c: f32| crate::scene::srgb_to_linear(c) as f64;
        let background = [
            lin(background[0]),
            lin(background[1]),
            lin(background[2]),
            background[3] as f64,
        ];
        let vp = camera.view_proj(aspect);
        let eye = Vec3::from(camera.eye);
        let light =
            (eye - Vec3::from(camera.target)).normalize_or(Vec3::Z) + Vec3::new(0.3, 0.5, 0.0);
        let multi = targets.samples > 1;
        let lit_bind = self.globals(vp, light, true);
        let flat_bind = self.globals(vp, light, false);
        // opaque meshes, glyphs and lines; then the transparent meshes in
        // any order, accumulated and laid over the opaque image
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("scene"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: if multi { &targets.msaa } else { resolve },
                    depth_slice: None,
                    resolve_target: multi.then_some(resolve),
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: background[0],
                            g: background[1],
                            b: background[2],
                            a: background[3],
                        }),
                        store: if multi {
                            wgpu::StoreOp::Discard
                        } else {
                            wgpu::StoreOp::Store
                        },
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &targets.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            if let Some([x, y, w, h]) = viewport {
                pass.set_viewport(x, y, w, h, 0.0, 1.0);
            }
            for m in scene.meshes.iter().filter(|m| !m.transparent) {
                pass.set_pipeline(&self.lit);
                pass.set_bind_group(0, if m.lit { &lit_bind } else { &flat_bind }, &[]);
                pass.set_vertex_buffer(0, m.vertices.slice(..));
                pass.set_index_buffer(m.indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..m.count, 0, 0..1);
            }
            for g in &scene.glyphs {
                pass.set_pipeline(&self.glyphs);
                pass.set_bind_group(0, &lit_bind, &[]);
                pass.set_vertex_buffer(0, g.shape.slice(..));
                pass.set_vertex_buffer(1, g.instances.slice(..));
                pass.set_index_buffer(g.indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..g.count, 0, 0..g.instance_count);
            }
            if let Some((lb, n)) = &scene.lines {
                pass.set_pipeline(&self.lines);
                pass.set_bind_group(0, &flat_bind, &[]);
                pass.set_vertex_buffer(0, lb.slice(..));
                pass.draw(0..*n, 0..1);
            }
        }
        if !scene.meshes.iter().any(|m| m.transparent) {
            return;
        }
        {
            let layer = |view, resolve_target, clear: f64| {
                Some(wgpu::RenderPassColorAttachment {
                    view: if multi { view } else { resolve_target },
                    depth_slice: None,
                    resolve_target: multi.then_some(resolve_target),
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: clear,
                            g: clear,
                            b: clear,
                            a: clear,
                        }),
                        store: if multi {
                            wgpu::StoreOp::Discard
                        } else {
                            wgpu::StoreOp::Store
                        },
                    },
                })
            };
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("transparent layers"),
                color_attachments: &[
                    layer(&targets.accum, &targets.accum_resolved, 0.0),
                    layer(&targets.reveal, &targets.reveal_resolved, 1.0),
                ],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &targets.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Load,
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            if let Some([x, y, w, h]) = viewport {
                pass.set_viewport(x, y, w, h, 0.0, 1.0);
            }
            pass.set_pipeline(&self.oit);
            for m in scene.meshes.iter().filter(|m| m.transparent) {
                pass.set_bind_group(0, if m.lit { &lit_bind } else { &flat_bind }, &[]);
                pass.set_vertex_buffer(0, m.vertices.slice(..));
                pass.set_index_buffer(m.indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..m.count, 0, 0..1);
            }
        }
        let bind = self
            .ctx
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("composite"),
                layout: &self.composite_layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(&targets.accum_resolved),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(&targets.reveal_resolved),
                    },
                ],
            });
        let mut pass = over(enc, resolve, "composite");
        pass.set_pipeline(&self.composite);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..3, 0..1);
    }

    /// Renders `scene` seen by `camera` into a `width × height` image.
    pub fn render(&self, scene: &Scene, camera: &Camera, width: u32, height: u32) -> Result<Frame> {
        let max = self.ctx.limits.max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(Error::Invalid(format!(
                "image size {width}x{height}: the adapter {} draws images of 1 to {max} pixels a side",
                self.ctx.info.name
            )));
        }
        let readback = (width * 4).next_multiple_of(256) as u64 * height as u64;
        // 4x MSAA colour and depth, the resolved image and its read-back copy
        let need = width as u64 * height as u64 * (SAMPLES as u64 * 8 + 4) + readback;
        let budget = self.ctx.limits.max_buffer_size.min(3 << 30);
        if readback > self.ctx.limits.max_buffer_size || need > budget {
            return Err(Error::Invalid(format!(
                "image size {width}x{height} needs about {} MiB of GPU memory; the limit here is {} MiB (adapter {})",
                need >> 20,
                budget >> 20,
                self.ctx.info.name
            )));
        }
        let d = &self.ctx.device;
        let oom = d.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let targets = Targets::with_samples(&self.ctx, self.format, width, height, self.samples);
        let resolve = d.create_texture(&wgpu::TextureDescriptor {
            label: Some("frame"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: self.format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[self.format.remove_srgb_suffix()],
        });
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(Error::Invalid(format!(
                "image size {width}x{height}: the GPU ({}) has no memory for it: {e}",
                self.ctx.info.name
            )));
        }
        let resolve_v = resolve.create_view(&Default::default());
        let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("frame"),
        });
        self.encode(
            &mut enc,
            &targets,
            &resolve_v,
            &self.prepare(scene),
            camera,
            width as f32 / height as f32,
            scene.background,
            None,
        );
        {
            let dark = scene.is_dark();
            let mut guard = self.overlay.lock().unwrap_or_else(|e| e.into_inner());
            // egui blends in gamma space, as it expects: it draws into a
            // non-sRGB view of the same image
            let gamma = self.format.remove_srgb_suffix();
            let gamma_v = resolve.create_view(&wgpu::TextureViewDescriptor {
                format: Some(gamma),
                ..Default::default()
            });
            let ov = guard.get_or_insert_with(|| overlay::Headless::new(&self.ctx, gamma));
            ov.encode(
                &self.ctx, &mut enc, &gamma_v, scene, camera, width, height, dark,
            );
        }
        self.ctx.queue.submit([enc.finish()]);
        read_back(&self.ctx, &resolve, width, height)
    }
}

/// A render pass drawing over what `target` holds (no depth): the
/// transparency composite and the egui overlays.
pub fn over<'e>(
    enc: &'e mut wgpu::CommandEncoder,
    target: &wgpu::TextureView,
    label: &str,
) -> wgpu::RenderPass<'e> {
    enc.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some(label),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: target,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Load,
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    })
}

/// Copies a `width × height` RGBA8 or BGRA8 texture (with `COPY_SRC`) back
/// to the host as an RGBA frame: a window's surface, or a headless target.
pub fn read_back(
    ctx: &GpuContext,
    texture: &wgpu::Texture,
    width: u32,
    height: u32,
) -> Result<Frame> {
    let d = &ctx.device;
    let size = wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    };
    let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("read back"),
    });
    {
        // texture → buffer with rows padded to 256 bytes
        let row = width * 4;
        let padded = row.next_multiple_of(256);
        let out = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame read back"),
            size: padded as u64 * height as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        enc.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &out,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(height),
                },
            },
            size,
        );
        ctx.queue.submit([enc.finish()]);
        let data = crate::gpu::map_read(ctx, &out)?;
        let bgra = matches!(
            texture.format(),
            wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb
        );
        let mut rgba = Vec::with_capacity((row * height) as usize);
        for y in 0..height as usize {
            let start = y * padded as usize;
            rgba.extend_from_slice(&data[start..start + row as usize]);
        }
        if bgra {
            for p in rgba.chunks_exact_mut(4) {
                p.swap(0, 2);
            }
        }
        Ok(Frame {
            width,
            height,
            rgba,
        })
    }
}
