//! 2D overlays of a scene, painted with egui (in the window and headless):
//! the title, the colour legend with ticks, and the text labels at their
//! anchors. Text uses DejaVu Sans from `assets/fonts/`.

use std::sync::Arc;

use egui::{Color32, FontId, Pos2, Rect, Stroke, Vec2};
use glam::Vec4;

use super::Camera;
use crate::gpu::GpuContext;
use crate::scene::colormap::Colormap;
use crate::scene::{Anchor, KeyMark, LabelAlign, Scene};

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

/// An sRGB scene colour as egui's colour (egui paints sRGB).
pub fn color(c: [f32; 4]) -> Color32 {
    let b = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
    Color32::from_rgba_unmultiplied(b(c[0]), b(c[1]), b(c[2]), b(c[3]))
}

/// Places text without overlaps: each placed rectangle is remembered; a
/// text that would overlap one is left out, one that would leave the
/// image is moved inside it.
struct Placer<'a> {
    painter: &'a egui::Painter,
    bounds: Rect,
    taken: Vec<Rect>,
    backdrop: Color32,
}

impl Placer<'_> {
    /// Lays out `text`; `place` gives its rectangle from its size.
    fn put(
        &mut self,
        text: &str,
        size: f32,
        ink: Color32,
        angle: f32,
        place: impl Fn(Vec2) -> Rect,
        required: bool,
    ) -> Option<Rect> {
        let galley = self
            .painter
            .layout_no_wrap(text.to_string(), FontId::proportional(size), ink);
        let gs = galley.size();
        let shown = if angle != 0.0 {
            Vec2::new(gs.y, gs.x)
        } else {
            gs
        };
        let mut r = place(shown);
        // keep inside the image
        let dx = (self.bounds.min.x - r.min.x).max(0.0) + (self.bounds.max.x - r.max.x).min(0.0);
        let dy = (self.bounds.min.y - r.min.y).max(0.0) + (self.bounds.max.y - r.max.y).min(0.0);
        r = r.translate(Vec2::new(dx, dy));
        let padded = r.expand(1.5);
        if !required && self.taken.iter().any(|t| t.intersects(padded)) {
            return None;
        }
        self.taken.push(padded);
        self.painter.rect_filled(r.expand(2.0), 2.0, self.backdrop);
        if angle != 0.0 {
            // rotated a quarter turn left: the text's start at the bottom left
            let pos = Pos2::new(r.min.x, r.max.y);
            self.painter
                .add(egui::epaint::TextShape::new(pos, galley, ink).with_angle(angle));
        } else {
            self.painter.galley(r.min, galley, ink);
        }
        Some(r)
    }
}

/// The ink (text and axes) on a dark or light background.
pub fn ink(dark: bool) -> Color32 {
    color(crate::scene::axes::ink(dark))
}

/// Paints the overlays of `scene` into `rect` (the area showing the scene):
/// the title, the legend and key on the right, the labels at their
/// anchors. Text never overlaps other text nor leaves the image.
pub fn paint(painter: &egui::Painter, rect: Rect, scene: &Scene, camera: &Camera, dark: bool) {
    let ink = ink(dark);
    let backdrop = if dark {
        Color32::from_rgba_unmultiplied(10, 12, 18, 170)
    } else {
        Color32::from_rgba_unmultiplied(255, 255, 255, 190)
    };
    let mut placer = Placer {
        painter,
        bounds: rect.shrink(2.0),
        taken: Vec::new(),
        backdrop,
    };
    // title: top centre, shrunk to fit the width; a title that would be
    // smaller than 11 points breaks at its dash onto two lines
    let width_at = |t: &str, s: f32| {
        painter
            .layout_no_wrap(t.to_string(), FontId::proportional(s), ink)
            .size()
            .x
    };
    let room = rect.width() - 12.0;
    let title = if width_at(&scene.title, 11.0) > room && scene.title.contains(" — ") {
        scene.title.replacen(" — ", "\n", 1)
    } else {
        scene.title.clone()
    };
    let mut title_size = if title.contains('\n') { 12.0f32 } else { 15.0 };
    while title_size > 9.0 && width_at(&title, title_size) > room {
        title_size -= 1.0;
    }
    placer.put(
        &title,
        title_size,
        ink,
        0.0,
        |s| Rect::from_min_size(Pos2::new(rect.center().x - s.x / 2.0, rect.min.y + 6.0), s),
        true,
    );
    // legend and key: a column on the right
    let right = legend(&mut placer, rect, scene, ink);
    key(&mut placer, rect, scene, right);
    // labels, in order of priority
    let vp = camera.view_proj(rect.width() / rect.height().max(1.0));
    let mut order: Vec<&crate::scene::Label> = scene.labels.iter().collect();
    order.sort_by_key(|l| l.priority);
    for l in order {
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
        let Some(p) = pos.filter(|p| rect.expand(20.0).contains(*p)) else {
            continue;
        };
        let c = color(l.color);
        // dark labels on a dark background (and light on light) use the ink
        let lum = l.color[0] + l.color[1] + l.color[2];
        let c = if (dark && lum < 0.9) || (!dark && lum > 2.4) {
            ink
        } else {
            c
        };
        let angle = if l.align == LabelAlign::AxisTitleLeft {
            -std::f32::consts::FRAC_PI_2
        } else {
            0.0
        };
        placer.put(
            &l.text,
            l.size,
            c,
            angle,
            |s| match l.align {
                LabelAlign::LeftTop => Rect::from_min_size(p + Vec2::new(4.0, 2.0), s),
                LabelAlign::CenterTop => Rect::from_min_size(p + Vec2::new(-s.x / 2.0, 3.0), s),
                LabelAlign::RightCenter => {
                    Rect::from_min_size(p + Vec2::new(-s.x - 4.0, -s.y / 2.0), s)
                }
                LabelAlign::LeftCenter => Rect::from_min_size(p + Vec2::new(4.0, -s.y / 2.0), s),
                LabelAlign::CenterBottom => {
                    Rect::from_min_size(p + Vec2::new(-s.x / 2.0, -s.y - 3.0), s)
                }
                LabelAlign::AxisTitleBelow => {
                    Rect::from_min_size(p + Vec2::new(-s.x / 2.0, 3.0 + l.size + 9.0), s)
                }
                LabelAlign::AxisTitleLeft => {
                    Rect::from_min_size(Pos2::new(rect.min.x + 4.0, p.y - s.y / 2.0), s)
                }
            },
            false,
        );
    }
}

/// The colour legend: a vertical bar on the right with ticks at nice
/// values; returns the bottom of what it drew (for the key below it).
fn legend(placer: &mut Placer<'_>, rect: Rect, scene: &Scene, ink: Color32) -> f32 {
    let top = rect.min.y + 44.0;
    let Some(leg) = &scene.legend else {
        return top;
    };
    let Ok(cmap) = Colormap::named(&leg.colormap) else {
        return top;
    };
    let painter = placer.painter;
    let h = (rect.height() * 0.45).clamp(50.0, 360.0);
    let x = rect.max.x - 130.0;
    let bar = Rect::from_min_size(Pos2::new(x, top + 28.0), Vec2::new(16.0, h));
    // legend title above the bar, within the column
    let mut tsize = 12.0f32;
    while tsize > 8.0
        && painter
            .layout_no_wrap(leg.title.clone(), FontId::proportional(tsize), ink)
            .size()
            .x
            > 124.0
    {
        tsize -= 0.5;
    }
    placer.put(
        &leg.title,
        tsize,
        ink,
        0.0,
        |s| Rect::from_min_size(Pos2::new(rect.max.x - 4.0 - s.x.max(120.0), top), s),
        true,
    );
    placer.taken.push(bar.expand(2.0));
    let constant = leg.max <= leg.min;
    if constant {
        let c = cmap.at(0.5);
        painter.rect_filled(bar, 0.0, color([c[0], c[1], c[2], 1.0]));
    } else {
        // one flat quad per step, colours sampled from the map as the scene
        // samples it; one mesh without antialiased edges between the steps
        let steps = 128;
        let mut mesh = egui::Mesh::default();
        for i in 0..steps {
            let (a, b) = (i as f32 / steps as f32, (i + 1) as f32 / steps as f32);
            let c = cmap.at((a + b) / 2.0);
            let col = color([c[0], c[1], c[2], 1.0]);
            let (y0, y1) = (bar.max.y - a * bar.height(), bar.max.y - b * bar.height());
            let k = mesh.vertices.len() as u32;
            for p in [
                Pos2::new(bar.min.x, y0),
                Pos2::new(bar.max.x, y0),
                Pos2::new(bar.max.x, y1),
                Pos2::new(bar.min.x, y1),
            ] {
                mesh.colored_vertex(p, col);
            }
            mesh.add_triangle(k, k + 1, k + 2);
            mesh.add_triangle(k, k + 2, k + 3);
        }
        painter.add(egui::Shape::mesh(mesh));
    }
    painter.rect_stroke(bar, 0.0, Stroke::new(1.0, ink), egui::StrokeKind::Outside);
    let ticks: Vec<(f32, String)> = if constant {
        vec![(
            0.5,
            crate::scene::axes::format_value(leg.min, &leg.unit, leg.min, 0.0),
        )]
    } else {
        let (mut t, mut step) = crate::scene::axes::nice_ticks(leg.min, leg.max, 5);
        // counts have integer ticks
        if matches!(leg.unit, crate::scene::axes::Unit::Count(_)) && step < 1.0 {
            t.retain(|v| v.fract() == 0.0);
            step = 1.0;
        }
        let mag = leg.min.abs().max(leg.max.abs());
        t.into_iter()
            .map(|v| {
                (
                    ((v - leg.min) / (leg.max - leg.min)) as f32,
                    crate::scene::axes::format_value(v, &leg.unit, mag, step),
                )
            })
            .collect()
    };
    for (t, text) in ticks {
        let y = bar.max.y - t * bar.height();
        painter.line_segment(
            [Pos2::new(bar.max.x, y), Pos2::new(bar.max.x + 5.0, y)],
            Stroke::new(1.0, ink),
        );
        placer.put(
            &text,
            11.0,
            ink,
            0.0,
            |s| Rect::from_min_size(Pos2::new(bar.max.x + 8.0, y - s.y / 2.0), s),
            false,
        );
    }
    let mut bottom = bar.max.y + 6.0;
    if let Some(note) = &leg.note
        && let Some(r) = placer.put(
            note,
            10.0,
            ink,
            0.0,
            |s| Rect::from_min_size(Pos2::new(rect.max.x - 4.0 - s.x.max(124.0), bottom), s),
            false,
        )
    {
        bottom = r.max.y + 4.0;
    }
    bottom + 8.0
}

/// The key: one mark and text per entry, stacked from `top`.
fn key(placer: &mut Placer<'_>, rect: Rect, scene: &Scene, top: f32) {
    let mut y = top;
    let x = rect.max.x - crate::scene::LEGEND_COLUMN;
    let ink = ink(scene.is_dark());
    let fitted = scene.margins.fitted(rect.width(), rect.height(), true);
    // the text's room: from the mark (19 pixels, after a gap of 4 from the
    // chart's right edge) to 4 pixels short of the image's edge
    let room = if scene.projection == crate::scene::Projection::Orthographic {
        fitted.right - 27.0
    } else {
        crate::scene::LEGEND_COLUMN - 23.0
    }
    .max(40.0);
    let width = |t: &str, s: f32| {
        placer
            .painter
            .layout_no_wrap(t.to_string(), FontId::proportional(s), ink)
            .size()
            .x
    };
    // the entries share one size: the smallest that any of them needs
    let start = scene
        .key
        .iter()
        .map(|k| key_text(&k.text, room, 10.5, width).1)
        .fold(10.5f32, f32::min);
    let texts: Vec<(String, f32)> = scene
        .key
        .iter()
        .map(|k| key_text(&k.text, room, start, width))
        .collect();
    // one column: the marks in a line, the texts left-aligned beside them,
    // the widest ending 4 pixels short of the image's edge
    let widest = texts.iter().map(|(t, s)| width(t, *s)).fold(0.0, f32::max);
    let left = (x + 19.0).min(rect.max.x - 4.0 - widest);
    for (k, (text, size)) in scene.key.iter().zip(&texts) {
        let Some(r) = placer.put(
            text,
            *size,
            ink,
            0.0,
            |s| Rect::from_min_size(Pos2::new(left, y), s),
            false,
        ) else {
            continue;
        };
        let mark = Rect::from_min_size(
            Pos2::new(r.min.x - 19.0, r.min.y + 3.0),
            Vec2::new(14.0, 9.0),
        );
        placer.taken.push(mark);
        match k.mark {
            KeyMark::Bar => {
                placer.painter.rect_filled(mark, 0.0, color(k.color));
                placer.painter.rect_stroke(
                    mark,
                    0.0,
                    Stroke::new(0.5, Color32::from_gray(128)),
                    egui::StrokeKind::Inside,
                );
            }
            KeyMark::Line => {
                placer.painter.line_segment(
                    [mark.left_center(), mark.right_center()],
                    Stroke::new(2.0, color(k.color)),
                );
            }
        }
        y = r.max.y + 4.0;
    }
}

/// A key entry's text and size within `room` pixels (`width` measures a
/// text at a size): `start` points, a little smaller (down to 9) before the
/// text reaches past its room, and then broken onto as many lines as it
/// takes at 9.5 points: at its commas where each clause fits, else at
/// spaces. A word longer than the room keeps its line.
fn key_text(text: &str, room: f32, start: f32, width: impl Fn(&str, f32) -> f32) -> (String, f32) {
    let mut size = start;
    while size >= 9.0 {
        if width(text, size) <= room {
            return (text.to_string(), size);
        }
        size -= 0.5;
    }
    let size = 9.5;
    // packs pieces joined by `sep` greedily onto lines within the room
    let pack = |pieces: Vec<&str>, sep: &str| {
        let mut lines: Vec<String> = Vec::new();
        for piece in pieces.into_iter().filter(|w| !w.is_empty()) {
            match lines.last_mut() {
                Some(line) if width(&format!("{line}{sep}{piece}"), size) <= room => {
                    line.push_str(sep);
                    line.push_str(piece);
                }
                _ => lines.push(piece.to_string()),
            }
        }
        lines
    };
    // at the commas when each clause fits, else at any space
    let clauses: Vec<String> = pack(text.split(", ").collect(), ", ");
    let last = clauses.len().saturating_sub(1);
    let clauses: Vec<String> = clauses
        .into_iter()
        .enumerate()
        .map(|(i, c)| if i < last { format!("{c},") } else { c })
        .collect();
    let lines = if clauses.iter().all(|c| width(c, size) <= room) {
        clauses
    } else {
        pack(text.split(' ').collect(), " ")
    };
    (lines.join("\n"), size)
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
    let mut pass = super::over(enc, target, "overlay").forget_lifetime();
    renderer.render(&mut pass, tris, screen);
}

#[cfg(test)]
mod tests {
    use super::key_text;

    /// A text's width at a size: 0.5 of the size a character.
    fn width(t: &str, s: f32) -> f32 {
        t.lines().map(|l| l.chars().count()).max().unwrap_or(0) as f32 * s * 0.5
    }

    #[test]
    fn a_key_text_shrinks_then_breaks_within_its_room() {
        // fits as it is
        assert_eq!(
            key_text("busy", 100.0, 10.5, width),
            ("busy".to_string(), 10.5)
        );
        // the size the other entries need
        assert_eq!(
            key_text("busy", 100.0, 9.5, width),
            ("busy".to_string(), 9.5)
        );
        // 20 characters: 105 pixels at 10.5, 100 at 10
        assert_eq!(
            key_text("busy, moving average", 100.0, 10.5, width),
            ("busy, moving average".to_string(), 10.0)
        );
        // too long even at 9 points: broken at spaces, each line in its room
        let long = "counter:PAPI.TOT_INS, moving average of 20";
        let (text, size) = key_text(long, 133.0, 10.5, width);
        assert_eq!(size, 9.5);
        assert_eq!(text, "counter:PAPI.TOT_INS,\nmoving average of 20");
        assert!(text.lines().all(|l| width(l, size) <= 133.0));
        // a word longer than the room keeps its own line
        let (text, _) = key_text("a verylongwordindeed b", 40.0, 10.5, width);
        assert_eq!(text, "a\nverylongwordindeed\nb");
    }
}
