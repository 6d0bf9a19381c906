//! The viewer window (winit + egui): choose the view, its parameters and
//! the colour map, drag the time window along the Kiviat tube (slider, or
//! shift-drag in the view), play or pause its slide, orbit or fly, save a screenshot (F12) and the view
//! state (F5). Loading and analysis run on a worker thread; the event loop
//! never blocks on them and shows their progress.

pub mod controls;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::analysis::fields::{self, Field};
use crate::analysis::moments::{self, MomentAcc};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::readers::{self, Loaded, ReadOptions};
use crate::render::{Camera, PreparedScene, Renderer, Targets};
use crate::scene::{Scene, colormap, kiviat, moments as moment_scene};

/// The views of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ViewKind {
    Kiviat,
    Moments,
}

/// Everything needed to reproduce a view: saved with F5, loaded with
/// `--view-state`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewState {
    pub view: ViewKind,
    pub camera: Option<Camera>,
    pub colormap: String,
    pub kiviat_start: usize,
    pub kiviat_width: usize,
    pub kiviat_stretch: f32,
    pub kiviat_log: bool,
    pub fly: bool,
    /// The 3D variant of the moment display.
    #[serde(default)]
    pub moments_3d: bool,
    /// Colour the Kiviat tube by the messages sent instead of its radius.
    #[serde(default)]
    pub kiviat_color_messages: bool,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            view: ViewKind::Kiviat,
            camera: None,
            colormap: "viridis".into(),
            kiviat_start: 0,
            kiviat_width: 15,
            kiviat_stretch: 0.15,
            kiviat_log: false,
            fly: false,
            moments_3d: false,
            kiviat_color_messages: false,
        }
    }
}

/// Options of `tapestry view`.
#[derive(Debug, Clone)]
pub struct ViewerOptions {
    pub trace: PathBuf,
    pub read: ReadOptions,
    pub state: ViewState,
    pub bins: usize,
    pub size: (u32, u32),
    /// Close after this many frames (scripted runs).
    pub exit_after: Option<u64>,
    /// Keys pressed by script: (frame, key).
    pub presses: Vec<(u64, KeyCode)>,
    /// Where screenshots and view states go.
    pub output_dir: PathBuf,
}

/// What the worker thread computes.
struct Data {
    field: Field,
    /// Messages sent per location and bin: the Kiviat tube's second metric.
    messages: Field,
    accs: Vec<MomentAcc>,
    t0: u64,
    t1: u64,
    description: String,
}

enum Progress {
    Stage(String),
    Done(Box<Data>),
    Failed(String),
}

fn load(opts: &ViewerOptions, tx: &std::sync::mpsc::Sender<Progress>) -> Result<Data> {
    let _ = tx.send(Progress::Stage(format!("reading {}", opts.trace.display())));
    let t = match readers::load(&opts.trace, &opts.read)? {
        Loaded::Trace(t) => t,
        Loaded::Profile(_) => {
            return Err(Error::Invalid(
                "the viewer's views need a trace, not a profile".into(),
            ));
        }
    };
    let _ = tx.send(Progress::Stage(
        "computing the busy-fraction field and the moments".into(),
    ));
    let mask = t.states.select(&["busy".to_string()])?;
    let (t0, t1) = (0, t.meta.span.max(1));
    let bins = opts.bins.clamp(1, (t1 - t0) as usize);
    let field = fields::busy_fraction(&t, &mask, t0, t1, bins)?;
    let messages = fields::messages(&t, false, t0, t1, bins)?;
    let accs = (0..t.num_locations() as u32)
        .map(|l| moments::accumulate(t.intervals.of(l), &mask, t0, t1))
        .collect();
    Ok(Data {
        field,
        messages,
        accs,
        t0,
        t1,
        description: format!(
            "{} ({} locations, {})",
            opts.trace.display(),
            t.num_locations(),
            t.meta.format.name()
        ),
    })
}

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: GpuContext,
    renderer: Renderer,
    targets: Targets,
    egui_ctx: egui::Context,
    egui_state: egui_winit::State,
    egui_renderer: egui_wgpu::Renderer,
}

struct App {
    opts: ViewerOptions,
    gfx: Option<Gfx>,
    rx: Receiver<Progress>,
    stage: String,
    started: Instant,
    data: Option<Data>,
    state: ViewState,
    scene: Option<Scene>,
    /// `scene` on the GPU; made again only when the scene is rebuilt.
    prepared: Option<PreparedScene>,
    dirty: bool,
    playing: bool,
    last_step: Instant,
    last_frame: Instant,
    frame: u64,
    keys: controls::FlyKeys,
    fly_speed: f32,
    dragging: bool,
    cursor: Option<(f64, f64)>,
    shift: bool,
    /// Where the scene is drawn (points): the window right of the panel.
    scene_rect: Option<egui::Rect>,
    /// Fractional bins of a shift-drag along the tube not applied yet.
    slide: f32,
    shots: u32,
    message: String,
    error: Option<String>,
}

impl App {
    fn rebuild(&mut self) {
        let Some(d) = &self.data else { return };
        let built = match self.state.view {
            ViewKind::Kiviat => kiviat::build(
                &d.field,
                self.state.kiviat_color_messages.then_some(&d.messages),
                &kiviat::KiviatParams {
                    start: self.state.kiviat_start,
                    width: (self.state.kiviat_width > 0).then_some(self.state.kiviat_width),
                    stretch: self.state.kiviat_stretch,
                    scale: if self.state.kiviat_log {
                        kiviat::RadiusScale::Log
                    } else {
                        kiviat::RadiusScale::Linear
                    },
                    colormap: self.state.colormap.clone(),
                    ..Default::default()
                },
            ),
            ViewKind::Moments => {
                let mp = moment_scene::MomentParams {
                    t0: d.t0,
                    t1: d.t1,
                    colormap: self.state.colormap.clone(),
                    ..Default::default()
                };
                if self.state.moments_3d {
                    moment_scene::build_3d(&d.accs, &mp)
                } else {
                    moment_scene::build(&d.accs, Some(&d.field), &mp)
                }
            }
        };
        match built {
            Ok(s) => {
                let projection_changed = self
                    .scene
                    .as_ref()
                    .is_none_or(|old| old.projection != s.projection);
                if self.state.camera.is_none() || projection_changed {
                    self.state.camera = Some(Camera::fit(&s));
                }
                self.scene = Some(s);
                self.error = None;
            }
            Err(e) => self.error = Some(e.to_string()),
        }
        self.dirty = false;
    }

    fn max_start(&self) -> usize {
        self.data.as_ref().map_or(0, |d| {
            let skip = fields::leading_empty_bins(&d.field);
            d.field
                .bins
                .saturating_sub(skip + self.state.kiviat_width.max(1))
        })
    }

    fn key(&mut self, code: KeyCode, pressed: bool, el: &ActiveEventLoop) {
        match code {
            KeyCode::KeyW => self.keys.forward = pressed,
            KeyCode::KeyS => self.keys.back = pressed,
            KeyCode::KeyA => self.keys.left = pressed,
            KeyCode::KeyD => self.keys.right = pressed,
            KeyCode::KeyE => self.keys.up = pressed,
            KeyCode::KeyQ => self.keys.down = pressed,
            _ => {}
        }
        if !pressed {
            return;
        }
        match code {
            KeyCode::F12 => self.screenshot(),
            KeyCode::F5 => self.save_state(),
            KeyCode::Space => self.playing = !self.playing,
            KeyCode::Escape => el.exit(),
            _ => {}
        }
    }

    fn screenshot(&mut self) {
        let (Some(g), Some(s), Some(cam)) = (&self.gfx, &self.scene, &self.state.camera) else {
            self.message = "nothing to capture yet".into();
            return;
        };
        self.shots += 1;
        let path = self
            .opts
            .output_dir
            .join(format!("tapestry-{:04}.png", self.shots));
        let r = Renderer::new(&g.ctx);
        let bg = background(&self.state);
        self.message = match r
            .render(s, cam, g.config.width.max(1), g.config.height.max(1), bg)
            .and_then(|f| f.save_png(&path))
        {
            Ok(()) => format!("screenshot {}", path.display()),
            Err(e) => format!("screenshot failed: {e}"),
        };
        eprintln!("{}", self.message);
    }

    fn save_state(&mut self) {
        let path = self.opts.output_dir.join("tapestry-view.json");
        self.message = match serde_json::to_vec_pretty(&self.state)
            .map_err(|e| Error::Invalid(e.to_string()))
            .and_then(|b| crate::export::write_atomic(&path, &b, &[]))
        {
            Ok(()) => format!("view state {}", path.display()),
            Err(e) => format!("saving the view state failed: {e}"),
        };
        eprintln!("{}", self.message);
    }

    fn ui(&mut self, root: &mut egui::Ui) {
        let panel = egui::Panel::left("controls")
            .min_size(220.0)
            .show(root, |ui| {
                ui.heading("tapestry");
                match &self.data {
                    None => {
                        ui.label(format!(
                            "{} … {:.1} s",
                            self.stage,
                            self.started.elapsed().as_secs_f64()
                        ));
                        ui.spinner();
                    }
                    Some(d) => {
                        ui.label(&d.description);
                    }
                }
                ui.separator();
                let before = self.state.clone_key();
                ui.horizontal(|ui| {
                    ui.selectable_value(&mut self.state.view, ViewKind::Kiviat, "Kiviat tube");
                    ui.selectable_value(&mut self.state.view, ViewKind::Moments, "Moments");
                });
                egui::ComboBox::from_label("colour map")
                    .selected_text(self.state.colormap.clone())
                    .show_ui(ui, |ui| {
                        for n in colormap::names() {
                            ui.selectable_value(&mut self.state.colormap, n.to_string(), n);
                        }
                    });
                if self.state.view == ViewKind::Kiviat {
                    let max = self.max_start();
                    ui.add(
                        egui::Slider::new(&mut self.state.kiviat_start, 0..=max)
                            .text("time window"),
                    );
                    ui.add(
                        egui::Slider::new(&mut self.state.kiviat_width, 1..=200)
                            .text("animation width"),
                    );
                    ui.add(
                        egui::Slider::new(&mut self.state.kiviat_stretch, 0.01..=1.0)
                            .text("stretch"),
                    );
                    ui.checkbox(&mut self.state.kiviat_log, "logarithmic radius");
                    ui.checkbox(
                        &mut self.state.kiviat_color_messages,
                        "colour by messages sent",
                    );
                    if ui
                        .button(if self.playing {
                            "pause (space)"
                        } else {
                            "play (space)"
                        })
                        .clicked()
                    {
                        self.playing = !self.playing;
                    }
                }
                ui.separator();
                ui.checkbox(&mut self.state.fly, "fly (WASD/QE, right-drag to look)");
                ui.add(
                    egui::Slider::new(&mut self.fly_speed, 0.05..=20.0)
                        .logarithmic(true)
                        .text("fly speed"),
                );
                if ui.button("reset camera").clicked() {
                    self.state.camera = self.scene.as_ref().map(Camera::fit);
                }
                if ui.button("screenshot (F12)").clicked() {
                    self.screenshot();
                }
                if ui.button("save view state (F5)").clicked() {
                    self.save_state();
                }
                if let Some(s) = &self.scene {
                    ui.separator();
                    ui.label(&s.title);
                    ui.label(format!("{} triangles", s.triangles()));
                    if let Some(l) = &s.legend {
                        ui.label(format!(
                            "{}: {:.3} … {:.3} {}",
                            l.title, l.min, l.max, l.unit
                        ));
                    }
                }
                if let Some(e) = &self.error {
                    ui.colored_label(egui::Color32::RED, e);
                }
                if !self.message.is_empty() {
                    ui.label(&self.message);
                }
                if self.state.clone_key() != before {
                    self.dirty = true;
                }
            });
        // the scene fills the rest of the window; its title, legend and labels over it
        let mut rect = root.max_rect();
        rect.min.x = panel.response.rect.max.x;
        self.scene_rect = Some(rect);
        if let (Some(s), Some(cam)) = (&self.scene, &self.state.camera) {
            let dark = background(&self.state)[0] < 0.5;
            crate::render::overlay::paint(root.painter(), rect, s, cam, dark);
        }
    }

    fn redraw(&mut self, el: &ActiveEventLoop) {
        // scripted key presses and exit
        self.frame += 1;
        let presses: Vec<KeyCode> = self
            .opts
            .presses
            .iter()
            .filter(|(f, _)| *f == self.frame)
            .map(|(_, k)| *k)
            .collect();
        for k in presses {
            self.key(k, true, el);
            self.key(k, false, el);
        }
        if self.opts.exit_after.is_some_and(|n| self.frame >= n) {
            el.exit();
            return;
        }
        // worker progress
        while let Ok(p) = self.rx.try_recv() {
            match p {
                Progress::Stage(s) => self.stage = s,
                Progress::Done(d) => {
                    self.data = Some(*d);
                    self.dirty = true;
                }
                Progress::Failed(e) => self.error = Some(e),
            }
        }
        let now = Instant::now();
        let dt = (now - self.last_frame).as_secs_f32().min(0.1);
        self.last_frame = now;
        if self.playing
            && self.state.view == ViewKind::Kiviat
            && now.duration_since(self.last_step).as_secs_f32() > 0.1
        {
            self.last_step = now;
            let max = self.max_start();
            self.state.kiviat_start = if self.state.kiviat_start >= max {
                0
            } else {
                self.state.kiviat_start + 1
            };
            self.dirty = true;
        }
        if self.state.fly
            && let Some(c) = &mut self.state.camera
        {
            controls::fly(c, self.keys, self.fly_speed, dt);
        }
        let Some(mut g) = self.gfx.take() else { return };
        let raw = g.egui_state.take_egui_input(&g.window);
        let egui_ctx = g.egui_ctx.clone();
        let out = egui_ctx.run_ui(raw, |ui| self.ui(ui));
        g.egui_state
            .handle_platform_output(&g.window, out.platform_output);
        if self.dirty {
            self.rebuild();
            self.prepared = None;
        }
        let frame = match g.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                g.surface.configure(&g.ctx.device, &g.config);
                self.gfx = Some(g);
                return;
            }
            _ => {
                self.gfx = Some(g);
                return;
            }
        };
        let view = frame.texture.create_view(&Default::default());
        let mut enc = g.ctx.device.create_command_encoder(&Default::default());
        // the scene's viewport in pixels: right of the control panel
        let (fw, fh) = (g.config.width as f32, g.config.height as f32);
        let viewport = self.scene_rect.map(|r| {
            let k = out.pixels_per_point;
            let x = (r.min.x * k).clamp(0.0, fw - 1.0);
            let y = (r.min.y * k).clamp(0.0, fh - 1.0);
            [
                x,
                y,
                (r.width() * k).clamp(1.0, fw - x),
                (r.height() * k).clamp(1.0, fh - y),
            ]
        });
        let aspect = viewport.map_or(fw / fh.max(1.0), |v| v[2] / v[3]);
        let empty = Scene::new("", crate::scene::Projection::Perspective);
        let scene = self.scene.as_ref().unwrap_or(&empty);
        let cam = self.state.camera.unwrap_or_else(|| Camera::fit(scene));
        let prepared = self
            .prepared
            .get_or_insert_with(|| g.renderer.prepare(scene));
        g.renderer.encode(
            &mut enc,
            &g.targets,
            &view,
            prepared,
            &cam,
            aspect,
            background(&self.state),
            viewport,
        );
        let tris = egui_ctx.tessellate(out.shapes, out.pixels_per_point);
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [g.config.width, g.config.height],
            pixels_per_point: out.pixels_per_point,
        };
        for (id, deltas) in &out.textures_delta.set {
            for delta in deltas.iter() {
                g.egui_renderer
                    .update_texture(&g.ctx.device, &g.ctx.queue, *id, delta);
            }
        }
        g.egui_renderer
            .update_buffers(&g.ctx.device, &g.ctx.queue, &mut enc, &tris, &screen);
        crate::render::overlay::draw_egui(&g.egui_renderer, &mut enc, &view, &tris, &screen);
        for id in &out.textures_delta.free {
            g.egui_renderer.free_texture(id);
        }
        g.ctx.queue.submit([enc.finish()]);
        g.ctx.queue.present(frame);
        self.gfx = Some(g);
    }
}

impl ViewState {
    /// The fields whose change requires rebuilding the scene.
    fn clone_key(&self) -> (ViewKind, bool, bool, String, usize, usize, u32, bool) {
        (
            self.view,
            self.moments_3d,
            self.kiviat_color_messages,
            self.colormap.clone(),
            self.kiviat_start,
            self.kiviat_width,
            self.kiviat_stretch.to_bits(),
            self.kiviat_log,
        )
    }
}

fn background(s: &ViewState) -> [f64; 4] {
    match (s.view, s.moments_3d) {
        (ViewKind::Moments, false) => [1.0, 1.0, 1.0, 1.0],
        _ => [0.02, 0.02, 0.05, 1.0],
    }
}

fn open_gfx(el: &ActiveEventLoop, size: (u32, u32)) -> Result<Gfx> {
    let attrs = Window::default_attributes()
        .with_title("tapestry")
        .with_inner_size(winit::dpi::PhysicalSize::new(size.0, size.1));
    let window = Arc::new(
        el.create_window(attrs)
            .map_err(|e| Error::Invalid(format!("cannot open a window: {e}")))?,
    );
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let surface = instance
        .create_surface(window.clone())
        .map_err(|e| Error::Invalid(format!("cannot draw into the window: {e}")))?;
    let ctx = pollster::block_on(GpuContext::for_surface(&instance, &surface))?;
    let inner = window.inner_size();
    let config = surface
        .get_default_config(&ctx.adapter, inner.width.max(1), inner.height.max(1))
        .ok_or_else(|| Error::Invalid("the adapter cannot present to this window".into()))?;
    surface.configure(&ctx.device, &config);
    let renderer = Renderer::with_format(&ctx, config.format);
    let targets = Targets::new(&ctx, config.format, config.width, config.height);
    let egui_ctx = egui::Context::default();
    crate::render::overlay::install_font(&egui_ctx);
    let egui_state = egui_winit::State::new(
        egui_ctx.clone(),
        egui::ViewportId::ROOT,
        &window,
        None,
        None,
        None,
    );
    let egui_renderer = egui_wgpu::Renderer::new(
        &ctx.device,
        config.format,
        egui_wgpu::RendererOptions::default(),
    );
    Ok(Gfx {
        window,
        surface,
        config,
        ctx,
        renderer,
        targets,
        egui_ctx,
        egui_state,
        egui_renderer,
    })
}

impl ApplicationHandler for App {
    fn resumed(&mut self, el: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match open_gfx(el, self.opts.size) {
            Ok(g) => {
                eprintln!("adapter: {}", g.ctx.describe());
                g.window.request_redraw();
                self.gfx = Some(g);
            }
            Err(e) => {
                eprintln!("error: {e}");
                el.exit();
            }
        }
    }

    fn window_event(&mut self, el: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let consumed = match &mut self.gfx {
            Some(g) => g.egui_state.on_window_event(&g.window, &event).consumed,
            None => false,
        };
        match event {
            WindowEvent::CloseRequested => el.exit(),
            WindowEvent::Resized(s) => {
                if let Some(g) = &mut self.gfx {
                    g.config.width = s.width.max(1);
                    g.config.height = s.height.max(1);
                    g.surface.configure(&g.ctx.device, &g.config);
                    g.targets =
                        Targets::new(&g.ctx, g.config.format, g.config.width, g.config.height);
                }
            }
            WindowEvent::RedrawRequested => self.redraw(el),
            WindowEvent::KeyboardInput { event, .. } if !consumed => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    self.key(code, event.state == ElementState::Pressed, el);
                }
            }
            WindowEvent::MouseInput { state, button, .. } if !consumed => {
                let look = if self.state.fly {
                    MouseButton::Right
                } else {
                    MouseButton::Left
                };
                if button == look {
                    self.dragging = state == ElementState::Pressed;
                }
            }
            WindowEvent::ModifiersChanged(m) => self.shift = m.state().shift_key(),
            WindowEvent::CursorMoved { position, .. } => {
                if let (Some((x, _)), true, true, ViewKind::Kiviat) =
                    (self.cursor, self.dragging, self.shift, self.state.view)
                {
                    // shift-drag slides the time window along the tube: 8 pixels a bin
                    self.slide += (position.x - x) as f32 / 8.0;
                    let whole = self.slide.trunc();
                    if whole != 0.0 {
                        self.slide -= whole;
                        let max = self.max_start() as f32;
                        self.state.kiviat_start =
                            (self.state.kiviat_start as f32 + whole).clamp(0.0, max) as usize;
                        self.dirty = true;
                    }
                } else if let (Some((x, y)), true, Some(c)) =
                    (self.cursor, self.dragging, self.state.camera.as_mut())
                {
                    let (dx, dy) = ((position.x - x) as f32, (position.y - y) as f32);
                    if self.state.fly {
                        controls::look(c, dx, dy);
                    } else {
                        controls::orbit(c, dx, dy);
                    }
                }
                self.cursor = Some((position.x, position.y));
            }
            WindowEvent::MouseWheel { delta, .. } if !consumed => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                if self.state.fly {
                    self.fly_speed = (self.fly_speed * 1.2f32.powf(steps)).clamp(0.01, 100.0);
                } else if let Some(c) = self.state.camera.as_mut() {
                    controls::zoom(c, steps);
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _el: &ActiveEventLoop) {
        if let Some(g) = &self.gfx {
            g.window.request_redraw();
        }
    }
}

/// Opens the viewer on a trace; returns when the window closes.
pub fn run(opts: ViewerOptions) -> Result<()> {
    let event_loop = EventLoop::new().map_err(|e| {
        Error::Invalid(format!(
            "cannot start the window system (is a display available?): {e}"
        ))
    })?;
    let (tx, rx) = channel();
    let worker_opts = opts.clone();
    std::thread::spawn(move || {
        let msg = match load(&worker_opts, &tx) {
            Ok(d) => Progress::Done(Box::new(d)),
            Err(e) => Progress::Failed(e.to_string()),
        };
        let _ = tx.send(msg);
    });
    let mut app = App {
        state: opts.state.clone(),
        opts,
        gfx: None,
        rx,
        stage: "starting".into(),
        started: Instant::now(),
        data: None,
        scene: None,
        prepared: None,
        dirty: false,
        playing: false,
        last_step: Instant::now(),
        last_frame: Instant::now(),
        frame: 0,
        keys: Default::default(),
        fly_speed: 1.0,
        dragging: false,
        cursor: None,
        shift: false,
        scene_rect: None,
        slide: 0.0,
        shots: 0,
        message: String::new(),
        error: None,
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| Error::Invalid(format!("window event loop: {e}")))?;
    if let Some(e) = app.error {
        return Err(Error::Invalid(e));
    }
    Ok(())
}
