//! One view in the window: its state (view, parameters, data, camera,
//! animation step), the scene the worker built for it, the texture it is
//! drawn into, and its mouse interaction (orbit, zoom, slide, hover,
//! select). Panes sit side by side in an egui_tiles layout.

use crate::gpu::GpuContext;
use crate::model::Time;
use crate::render::{PreparedScene, Renderer, Targets};
use crate::scene::chart::Chart;
use crate::scene::path::{self as campath, Keyframe};
use crate::scene::pick::{self, Pick};
use crate::scene::{Camera, Scene};
use crate::views::{Animation, ViewState};

use super::controls;

/// The texture a pane's scene is drawn into, shown by egui.
pub struct PaneTarget {
    pub size: (u32, u32),
    pub samples: u32,
    pub texture: wgpu::Texture,
    pub view: wgpu::TextureView,
    pub targets: Targets,
    pub id: egui::TextureId,
}

impl PaneTarget {
    pub fn new(
        ctx: &GpuContext,
        egui: &mut egui_wgpu::Renderer,
        size: (u32, u32),
        samples: u32,
    ) -> PaneTarget {
        let format = crate::render::FRAME_FORMAT;
        let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("pane"),
            size: wgpu::Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = texture.create_view(&Default::default());
        let id = egui.register_native_texture(&ctx.device, &view, wgpu::FilterMode::Nearest);
        PaneTarget {
            size,
            samples,
            targets: Targets::with_samples(ctx, format, size.0, size.1, samples),
            texture,
            view,
            id,
        }
    }
}

/// A pane.
pub struct Pane {
    pub id: u64,
    pub state: ViewState,
    /// The state the shown scene was built from.
    pub built_for: Option<serde_json::Value>,
    pub generation: u64,
    pub building: bool,
    pub scene: Option<Scene>,
    pub chart: Option<Chart>,
    pub animation: Animation,
    pub prepared: Option<PreparedScene>,
    pub target: Option<PaneTarget>,
    /// Where the pane was drawn last (points).
    pub rect: Option<egui::Rect>,
    /// The pane's data window (ns).
    pub window: Option<(Time, Time)>,
    pub error: Option<String>,
    /// Fractional bins of a shift-drag not applied yet.
    pub slide: f32,
    /// Playing the camera path: seconds into it.
    pub path_time: Option<f64>,
    /// The size (pixels) a 2D view's camera was fitted to.
    pub fitted_for: Option<(u32, u32)>,
}

impl Pane {
    pub fn new(id: u64, state: ViewState) -> Pane {
        Pane {
            id,
            state,
            built_for: None,
            generation: 0,
            building: false,
            scene: None,
            chart: None,
            animation: Animation::STILL,
            prepared: None,
            target: None,
            rect: None,
            window: None,
            error: None,
            slide: 0.0,
            path_time: None,
            fitted_for: None,
        }
    }

    /// The pane's size in pixels.
    pub fn pixels(&self, ppp: f32) -> Option<(u32, u32)> {
        self.rect.map(|r| {
            (
                ((r.width() * ppp).round() as u32).max(16),
                ((r.height() * ppp).round() as u32).max(16),
            )
        })
    }

    /// A 2D chart pane shows egui_plot instead of its scene.
    pub fn is_plot(&self) -> bool {
        self.chart.as_ref().is_some_and(|c| c.matrix.is_none())
    }

    /// Draws the scene into the pane's texture (made or resized as needed).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        egui: &mut egui_wgpu::Renderer,
        renderer: &Renderer,
        enc: &mut wgpu::CommandEncoder,
        ppp: f32,
    ) {
        let (Some(size), Some(scene)) = (self.pixels(ppp), self.scene.as_ref()) else {
            return;
        };
        if self.is_plot() {
            return;
        }
        let samples = renderer.samples();
        if self
            .target
            .as_ref()
            .is_none_or(|t| t.size != size || t.samples != samples)
        {
            if let Some(old) = self.target.take() {
                egui.free_texture(&old.id);
            }
            self.target = Some(PaneTarget::new(ctx, egui, size, samples));
        }
        let Some(t) = &self.target else { return };
        let cam = self
            .state
            .camera
            .unwrap_or_else(|| Camera::fit(scene, size.0, size.1));
        let prepared = self.prepared.get_or_insert_with(|| renderer.prepare(scene));
        renderer.encode(
            enc,
            &t.targets,
            &t.view,
            prepared,
            &cam,
            size.0 as f32 / size.1 as f32,
            scene.background,
            None,
        );
    }

    /// Releases the texture.
    pub fn free(&mut self, egui: &mut egui_wgpu::Renderer) {
        if let Some(t) = self.target.take() {
            egui.free_texture(&t.id);
        }
    }

    /// Records the camera as the path's next keyframe (2 s after the last).
    pub fn record_keyframe(&mut self) -> Option<usize> {
        let camera = self.state.camera?;
        let at = self.state.path.last().map_or(0.0, |k| k.at + 2.0);
        self.state.path.push(Keyframe { at, camera });
        Some(self.state.path.len())
    }

    /// Plays the camera path: the camera `dt` seconds further; false at
    /// the path's end.
    pub fn advance_path(&mut self, dt: f64) -> bool {
        let Some(t) = self.path_time else {
            return false;
        };
        let t = t + dt;
        if let Some(c) = campath::camera_at(&self.state.path, t) {
            self.state.camera = Some(c);
        }
        let more = t < campath::duration(&self.state.path);
        self.path_time = more.then_some(t);
        more
    }
}

/// What a pane reports from its interaction this frame.
#[derive(Default)]
pub struct Interaction {
    /// The pane was clicked (it becomes the active one).
    pub activated: bool,
    /// A click picked this processor (`Some(None)`: clicked on nothing).
    pub select: Option<Option<usize>>,
    /// Something changed that needs a redraw.
    pub changed: bool,
}

/// The pane's scene with its overlays, the hover text and the mouse: drag
/// orbits (or looks, flying), shift-drag slides the animation, scroll
/// zooms, a click selects what is under the mouse.
pub fn show(ui: &mut egui::Ui, pane: &mut Pane, fly: bool) -> Interaction {
    let mut out = Interaction::default();
    let rect = ui.max_rect();
    pane.rect = Some(rect);
    if pane.is_plot() {
        if let Some(c) = &pane.chart {
            super::plot::show(ui, rect, c, pane.id);
        }
        if ui.rect_contains_pointer(rect) && ui.input(|i| i.pointer.any_pressed()) {
            out.activated = true;
        }
        return out;
    }
    let resp = ui.interact(
        rect,
        egui::Id::unique(("pane", pane.id)),
        egui::Sense::click_and_drag(),
    );
    match (&pane.target, &pane.scene) {
        (Some(t), Some(_)) => {
            ui.painter().image(
                t.id,
                rect,
                egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                egui::Color32::WHITE,
            );
        }
        _ => {
            ui.painter()
                .rect_filled(rect, 0.0, egui::Color32::from_rgb(24, 26, 34));
        }
    }
    let (w, h) = (rect.width(), rect.height());
    if let (Some(s), Some(cam)) = (&pane.scene, &pane.state.camera) {
        crate::render::overlay::paint(ui.painter(), rect, s, cam, s.is_dark());
    }
    if let Some(e) = &pane.error {
        ui.painter().text(
            rect.center(),
            egui::Align2::CENTER_CENTER,
            e,
            egui::FontId::proportional(14.0),
            egui::Color32::from_rgb(230, 80, 80),
        );
    }
    if resp.clicked() || resp.drag_started() {
        out.activated = true;
    }
    let shift = ui.input(|i| i.modifiers.shift);
    let look = if fly {
        egui::PointerButton::Secondary
    } else {
        egui::PointerButton::Primary
    };
    if resp.dragged_by(look) {
        let d = resp.drag_delta();
        if shift && pane.animation.steps > 1 {
            // shift-drag slides the time window: 8 points a bin
            pane.slide += d.x / 8.0;
            let whole = pane.slide.trunc();
            if whole != 0.0 {
                pane.slide -= whole;
                let max = (pane.animation.steps - 1) as f32;
                pane.state.step = (pane.state.step as f32 + whole).clamp(0.0, max) as usize;
                out.changed = true;
            }
        } else if let Some(c) = pane.state.camera.as_mut() {
            if fly {
                controls::look(c, d.x, d.y);
            } else {
                controls::orbit(c, d.x, d.y);
            }
            pane.path_time = None;
            out.changed = true;
        }
    }
    if resp.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0
            && !fly
            && let Some(c) = pane.state.camera.as_mut()
        {
            controls::zoom(c, scroll / 40.0);
            out.changed = true;
        }
    }
    // hover and click: what is under the mouse
    let under = |p: egui::Pos2| -> Option<&Pick> {
        let s = pane.scene.as_ref()?;
        let cam = pane.state.camera.as_ref()?;
        pick::pick_at(s, cam, (w, h), [p.x - rect.min.x, p.y - rect.min.y])
    };
    if let Some(p) = resp.hover_pos()
        && let Some(hit) = under(p)
    {
        hover_box(ui, rect, p, &hit.text);
    }
    if resp.clicked()
        && let Some(p) = resp.interact_pointer_pos()
    {
        out.select = Some(under(p).and_then(|h| h.processor));
    }
    out
}

/// The hover text in a box beside the mouse, kept inside the pane.
fn hover_box(ui: &egui::Ui, rect: egui::Rect, at: egui::Pos2, text: &str) {
    let painter = ui.painter();
    let galley = painter.layout(
        text.to_string(),
        egui::FontId::proportional(13.0),
        egui::Color32::from_rgb(20, 20, 20),
        320.0,
    );
    let size = galley.size() + egui::vec2(10.0, 8.0);
    let mut min = at + egui::vec2(14.0, 14.0);
    if min.x + size.x > rect.max.x {
        min.x = at.x - 14.0 - size.x;
    }
    if min.y + size.y > rect.max.y {
        min.y = at.y - 14.0 - size.y;
    }
    let r = egui::Rect::from_min_size(min, size);
    painter.rect_filled(
        r,
        3.0,
        egui::Color32::from_rgba_unmultiplied(255, 255, 235, 240),
    );
    painter.rect_stroke(
        r,
        3.0,
        egui::Stroke::new(1.0, egui::Color32::from_gray(90)),
        egui::StrokeKind::Inside,
    );
    painter.galley(r.min + egui::vec2(5.0, 4.0), galley, egui::Color32::BLACK);
}
