//! 2D overlays of a scene, painted with egui (in the window and headless):
//! the title, the colour legend with ticks, and the text labels at their
//! anchors. Text uses DejaVu Sans from `assets/fonts/`.

use std::sync::Arc;

use egui::{Align2, Color32, FontId, Pos2, Rect, Stroke, Vec2};
use glam::Vec4;

use super::Camera;
use crate::gpu::GpuContext;
use crate::scene::colormap::Colormap;
use crate::scene::{Anchor, Scene};

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Makes DejaVu Sans (from `assets/`) the first font of every family.
pub fn install_font(ctx: &egui::Context) {
    let mut defs = egui::FontDefinitions::default();
    defs.font_data
        .insert("dejavu".into(), Arc::new(egui::FontData::from_static(FONT)));
    for fam in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        defs.families
            .entry(fam)
            .or_default()
            .insert(0, "dejavu".into());
    }
    ctx.set_fonts(defs);
}

fn color(c: [f32; 4]) -> Color32 {
    Color32::from_rgba_unmultiplied(
        (c[0] * 255.0) as u8,
        (c[1] * 255.0) as u8,
        (c[2] * 255.0) as u8,
        (c[3] * 255.0) as u8,
    )
}

/// Paints the overlays of `scene` into `rect` (the area showing the scene).
pub fn paint(painter: &egui::Painter, rect: Rect, scene: &Scene, camera: &Camera, dark: bool) {
    let ink = if dark {
        Color32::from_gray(230)
    } else {
        Color32::from_gray(20)
    };
    // title
    painter.text(
        rect.center_top() + Vec2::new(0.0, 8.0),
        Align2::CENTER_TOP,
        &scene.title,
        FontId::proportional(15.0),
        ink,
    );
    // labels
    let vp = camera.view_proj(rect.width() / rect.height().max(1.0));
    for l in &scene.labels {
        let pos = match l.anchor {
            Anchor::Screen([x, y]) => {
                Some(rect.min + Vec2::new(x * rect.width(), y * rect.height()))
            }
            Anchor::World(p) => {
                let c = vp * Vec4::new(p[0], p[1], p[2], 1.0);
                (c.w > 1e-6).then(|| {
                    let (x, y) = (c.x / c.w, c.y / c.w);
                    Pos2::new(
                        rect.min.x + (x + 1.0) * 0.5 * rect.width(),
                        rect.min.y + (1.0 - y) * 0.5 * rect.height(),
                    )
                })
            }
        };
        if let Some(p) = pos.filter(|p| rect.expand(40.0).contains(*p)) {
            let c = if dark {
                color(l.color).gamma_multiply(1.0)
            } else {
                color(l.color)
            };
            let c = if dark && l.color[0] + l.color[1] + l.color[2] < 0.6 {
                ink
            } else {
                c
            };
            painter.text(
                p + Vec2::new(4.0, 2.0),
                Align2::LEFT_TOP,
                &l.text,
                FontId::proportional(l.size),
                c,
            );
        }
    }
    // legend: a vertical colour bar on the right with 5 ticks
    if let Some(leg) = &scene.legend
        && let Ok(cmap) = Colormap::named(&leg.colormap)
    {
        let h = (rect.height() * 0.5).clamp(80.0, 400.0);
        let bar = Rect::from_min_size(
            Pos2::new(rect.max.x - 90.0, rect.center().y - h / 2.0),
            Vec2::new(16.0, h),
        );
        let mut mesh = egui::Mesh::default();
        let steps = 48;
        for i in 0..=steps {
            let t = i as f32 / steps as f32;
            let y = bar.max.y - t * bar.height();
            let c = cmap.at(t);
            let col = color([c[0], c[1], c[2], 1.0]);
            mesh.colored_vertex(Pos2::new(bar.min.x, y), col);
            mesh.colored_vertex(Pos2::new(bar.max.x, y), col);
            if i > 0 {
                let k = (2 * i) as u32;
                mesh.add_triangle(k - 2, k - 1, k);
                mesh.add_triangle(k - 1, k + 1, k);
            }
        }
        painter.add(egui::Shape::mesh(mesh));
        painter.rect_stroke(bar, 0.0, Stroke::new(1.0, ink), egui::StrokeKind::Outside);
        for i in 0..=4 {
            let t = i as f32 / 4.0;
            let y = bar.max.y - t * bar.height();
            let v = leg.min + (leg.max - leg.min) * t as f64;
            painter.line_segment(
                [Pos2::new(bar.max.x, y), Pos2::new(bar.max.x + 5.0, y)],
                Stroke::new(1.0, ink),
            );
            painter.text(
                Pos2::new(bar.max.x + 8.0, y),
                Align2::LEFT_CENTER,
                format!("{v:.3}"),
                FontId::proportional(11.0),
                ink,
            );
        }
        painter.text(
            bar.center_top() - Vec2::new(0.0, 6.0),
            Align2::CENTER_BOTTOM,
            format!("{} [{}]", leg.title, leg.unit),
            FontId::proportional(12.0),
            ink,
        );
    }
}

/// Draws the overlays of a scene onto an already rendered target (headless).
pub struct Headless {
    ctx: egui::Context,
    renderer: egui_wgpu::Renderer,
}

impl Headless {
    pub fn new(gpu: &GpuContext, format: wgpu::TextureFormat) -> Headless {
        let ctx = egui::Context::default();
        install_font(&ctx);
        Headless {
            renderer: egui_wgpu::Renderer::new(
                &gpu.device,
                format,
                egui_wgpu::RendererOptions::default(),
            ),
            ctx,
        }
    }

    /// Records the overlay drawing into `enc`, onto `target` of `w × h`.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        gpu: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        scene: &Scene,
        camera: &Camera,
        w: u32,
        h: u32,
        dark: bool,
    ) {
        let rect = Rect::from_min_size(Pos2::ZERO, Vec2::new(w as f32, h as f32));
        let raw = egui::RawInput {
            screen_rect: Some(rect),
            ..Default::default()
        };
        // fonts are loaded on the first pass: run two, keep the second
        let mut out = self.ctx.run_ui(raw.clone(), |ui| {
            paint(ui.painter(), rect, scene, camera, dark)
        });
        let first_textures = std::mem::take(&mut out.textures_delta);
        out = self
            .ctx
            .run_ui(raw, |ui| paint(ui.painter(), rect, scene, camera, dark));
        let tris = self.ctx.tessellate(out.shapes, 1.0);
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [w, h],
            pixels_per_point: 1.0,
        };
        for delta_set in [&first_textures, &out.textures_delta] {
            for (id, deltas) in &delta_set.set {
                for d in deltas.iter() {
                    self.renderer
                        .update_texture(&gpu.device, &gpu.queue, *id, d);
                }
            }
        }
        self.renderer
            .update_buffers(&gpu.device, &gpu.queue, enc, &tris, &screen);
        draw_egui(&self.renderer, enc, target, &tris, &screen);
    }
}

/// Draws tessellated egui output over `target`, keeping what is there.
pub fn draw_egui(
    renderer: &egui_wgpu::Renderer,
    enc: &mut wgpu::CommandEncoder,
    target: &wgpu::TextureView,
    tris: &[egui::ClippedPrimitive],
    screen: &egui_wgpu::ScreenDescriptor,
) {
    let pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("overlay"),
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
    });
    let mut pass = pass.forget_lifetime();
    renderer.render(&mut pass, tris, screen);
}
