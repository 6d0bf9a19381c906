//! The viewer window (winit + egui): every view of the registry, its
//! parameters and the data specification in a side panel, the animation
//! (slider, shift-drag in the view, play/pause with Space), orbit and fly
//! cameras, a screenshot of the window's own surface (F12) and the view
//! state (F5, the same file `render --view-state` reads).
//!
//! Reading, analyses and scene building run on a worker thread; the event
//! loop only draws. It redraws when something changes — input, a result
//! from the worker, the animation, the fly camera — and otherwise sleeps
//! (an idle window uses no CPU).

pub mod controls;
pub mod plot;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop, EventLoopProxy};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::readers::{self, Loaded, ReadOptions};
use crate::render::{PreparedScene, Renderer, Targets};
use crate::scene::chart::Chart;
use crate::scene::{Camera, Scene, colormap};
use crate::views::{self, Animation, BuildCtx, Prepared, ViewState};

/// Width of the control panel (points); the scene fills the rest.
const PANEL_WIDTH: f32 = 260.0;

/// Options of `tapestry view`.
#[derive(Debug, Clone)]
pub struct ViewerOptions {
    pub trace: PathBuf,
    pub read: ReadOptions,
    /// The first view state (its view chosen against the trace when
    /// `view_explicit` is false).
    pub state: ViewState,
    pub view_explicit: bool,
    pub size: (u32, u32),
    /// Close after this many frames (scripted runs).
    pub exit_after: Option<u64>,
    /// Keys pressed by script: (frame, key).
    pub presses: Vec<(u64, KeyCode)>,
    /// Where screenshots and view states go.
    pub output_dir: PathBuf,
    /// Files never to overwrite (the trace and its siblings).
    pub inputs: Vec<PathBuf>,
}

/// Work for the worker thread.
enum Job {
    Build {
        generation: u64,
        state: ViewState,
        size: (u32, u32),
        /// The playback triangle budget while the animation plays.
        budget: Option<usize>,
    },
}

/// What the worker reports.
enum Reply {
    Stage(String),
    /// The trace is read: its description, the state to show first and a
    /// note when the first choice of view could not show it.
    Ready {
        description: String,
        state: Box<ViewState>,
        note: Option<String>,
    },
    Built {
        generation: u64,
        scene: Box<Scene>,
        chart: Option<Box<Chart>>,
        animation: Animation,
        warnings: Vec<String>,
    },
    BuildFailed {
        generation: u64,
        error: String,
    },
    /// Reading failed: the window closes with this error.
    Fatal(String),
}

/// Wakes the event loop when the worker has something.
#[derive(Debug, Clone, Copy)]
struct Wake;

/// The worker: reads the trace, then builds scenes on request, keeping the
/// analyses of the last view and data specification.
fn worker(
    opts: ViewerOptions,
    jobs: Receiver<Job>,
    tx: Sender<Reply>,
    proxy: EventLoopProxy<Wake>,
) {
    let send = |r: Reply| {
        let _ = tx.send(r);
        let _ = proxy.send_event(Wake);
    };
    let started = Instant::now();
    send(Reply::Stage(format!(
        "step 1 of 2: reading {}",
        opts.trace.display()
    )));
    let input = match readers::load(&opts.trace, &opts.read) {
        Ok(l) => l,
        Err(e) => return send(Reply::Fatal(e.to_string())),
    };
    let description = match &input {
        Loaded::Trace(t) => {
            for w in &t.meta.diagnostics.warnings {
                eprintln!("warning: {w}");
            }
            format!(
                "{} ({} locations, {}), read in {:.1} s",
                opts.trace.display(),
                t.num_locations(),
                t.meta.format.name(),
                started.elapsed().as_secs_f64()
            )
        }
        Loaded::Profile(p) => format!("{} (profile, {} rows)", opts.trace.display(), p.rows.len()),
        Loaded::Tensor(t) => format!(
            "{} (access tensor {} intervals x {} elements x {} processors)",
            opts.trace.display(),
            t.shape[0],
            t.shape[1],
            t.shape[2]
        ),
        Loaded::Volumes(v) => format!(
            "{} ({}, {} quantities)",
            opts.trace.display(),
            v.format,
            v.volumes.len()
        ),
    };
    let mut state = opts.state.clone();
    let requested = opts.view_explicit.then(|| state.view.clone());
    let note = match views::choose(requested.as_deref(), &input, &state.data, &state.params) {
        Ok((v, p, note)) => {
            state.view = v.name().to_string();
            state.params = p;
            note
        }
        Err(e) => return send(Reply::Fatal(e.to_string())),
    };
    send(Reply::Ready {
        description,
        state: Box::new(state),
        note,
    });
    // (view, params' data key, data spec) → analyses
    let mut cache: Option<(serde_json::Value, Prepared)> = None;
    while let Ok(job) = jobs.recv() {
        // only the newest request matters
        let mut job = job;
        while let Ok(j) = jobs.try_recv() {
            job = j;
        }
        let Job::Build {
            generation,
            state,
            size,
            budget,
        } = job;
        let result = (|| -> Result<(Scene, Option<Chart>, Animation, Vec<String>)> {
            let view = views::find(&state.view)?;
            let params = view.normalize(&state.params)?;
            let key = serde_json::json!([state.view, view.data_key(&params), state.data]);
            if cache.as_ref().is_none_or(|(k, _)| *k != key) {
                send(Reply::Stage(format!(
                    "step 2 of 2: analyses of the {} view",
                    state.view
                )));
                cache = None;
                cache = Some((key.clone(), Prepared::new(&input, &state)?));
            }
            let (_, prep) = cache
                .as_mut()
                .ok_or_else(|| Error::Invalid("no analyses".into()))?;
            prep.params = params;
            let anim = prep.animation()?;
            let scene = prep.build(BuildCtx {
                step: state.step.min(anim.steps.saturating_sub(1)),
                width: size.0,
                height: size.1,
                triangle_budget: budget,
            })?;
            // 2D charts also go to the window's interactive plot
            let chart = prep.chart().transpose()?;
            Ok((scene, chart, anim, prep.spec.warnings.clone()))
        })();
        match result {
            Ok((scene, chart, animation, warnings)) => send(Reply::Built {
                generation,
                scene: Box::new(scene),
                chart: chart.map(Box::new),
                animation,
                warnings,
            }),
            Err(e) => send(Reply::BuildFailed {
                generation,
                error: e.to_string(),
            }),
        }
    }
}

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: GpuContext,
    renderer: Renderer,
    targets: Targets,
    /// One sample per pixel, for playback on a software adapter (4× MSAA
    /// costs lavapipe more than half of a frame); made when first needed.
    playback: Option<(Renderer, Targets)>,
    egui_ctx: egui::Context,
    egui_state: egui_winit::State,
    egui_renderer: egui_wgpu::Renderer,
}

struct App {
    opts: ViewerOptions,
    gfx: Option<Gfx>,
    rx: Receiver<Reply>,
    jobs: Sender<Job>,
    stage: String,
    started: Instant,
    description: Option<String>,
    state: ViewState,
    /// The state the shown scene was built from (camera aside).
    built_for: Option<serde_json::Value>,
    generation: u64,
    building: bool,
    scene: Option<Scene>,
    /// The chart of a 2D plot view, shown as an interactive plot.
    chart: Option<Chart>,
    animation: Animation,
    /// `scene` on the GPU; made again only when the scene changes.
    prepared: Option<PreparedScene>,
    playing: bool,
    /// Whether the window's adapter is a software rasterizer (playback
    /// budget).
    software: bool,
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
    want_shot: bool,
    message: String,
    error: Option<String>,
    fatal: Option<String>,
    /// egui asked for a repaint at this time.
    repaint_at: Option<Instant>,
    /// The window's surface: width, height (pixels), scale factor.
    surface: (u32, u32, f64),
}

/// The part of a view state whose change needs a new scene.
fn build_key(s: &ViewState, size: (u32, u32), budget: Option<usize>) -> serde_json::Value {
    serde_json::json!([s.view, s.params, s.data, s.step, size, budget])
}

impl App {
    /// The pixels of the scene's area: the window less the panel.
    fn scene_size(&self) -> (u32, u32) {
        let (w, h, scale) = self.surface;
        let panel = (PANEL_WIDTH as f64 * scale) as u32;
        (w.saturating_sub(panel).max(64), h.max(1))
    }

    /// Asks the worker for a scene when the state changed since the last.
    fn request_build(&mut self) {
        if self.description.is_none() {
            return;
        }
        let size = self.scene_size();
        // lower detail while playing, where the view can (full when paused)
        let budget = (self.playing && self.animation.steps > 1)
            .then(|| views::playback_budget(self.software));
        let key = build_key(&self.state, size, budget);
        if self.built_for.as_ref() == Some(&key) {
            return;
        }
        self.built_for = Some(key);
        self.generation += 1;
        self.building = true;
        let _ = self.jobs.send(Job::Build {
            generation: self.generation,
            state: self.state.clone(),
            size,
            budget,
        });
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
            KeyCode::F12 => self.want_shot = true,
            KeyCode::F5 => self.save_state(),
            KeyCode::Space => self.playing = !self.playing,
            KeyCode::Escape => el.exit(),
            _ => {}
        }
    }

    fn save_state(&mut self) {
        let path = self.opts.output_dir.join("tapestry-view.json");
        let mut st = self.state.clone();
        let size = self.scene_size();
        st.size = Some([size.0.max(1), size.1.max(1)]);
        let inputs: Vec<&std::path::Path> = self.opts.inputs.iter().map(|p| p.as_path()).collect();
        self.message = match st.write(&path, &inputs) {
            Ok(()) => format!("view state {}", path.display()),
            Err(e) => format!("saving the view state failed: {e}"),
        };
        eprintln!("{}", self.message);
    }

    fn ui(&mut self, root: &mut egui::Ui) {
        let panel = egui::Panel::left("controls")
            .resizable(false)
            .exact_size(PANEL_WIDTH)
            .show(root, |ui| {
                ui.heading("tapestry");
                match &self.description {
                    None => {
                        // bytes of the trace read so far, when it is one file
                        let pct = std::fs::metadata(&self.opts.trace)
                            .ok()
                            .filter(|m| m.is_file() && m.len() > 0)
                            .map(|m| {
                                let done = crate::readers::input::bytes_read() as f64;
                                (100.0 * done / m.len() as f64).min(100.0)
                            });
                        ui.label(format!(
                            "{}{} … {:.1} s",
                            self.stage,
                            pct.map_or(String::new(), |p| format!(": {p:.0} %")),
                            self.started.elapsed().as_secs_f64()
                        ));
                        if let Some(p) = pct {
                            ui.add(egui::ProgressBar::new(p as f32 / 100.0));
                        }
                        ui.spinner();
                    }
                    Some(d) => {
                        ui.label(d);
                    }
                }
                if self.building && self.description.is_some() {
                    ui.horizontal(|ui| {
                        ui.spinner();
                        ui.label(&self.stage);
                    });
                }
                ui.separator();
                egui::ComboBox::from_label("view")
                    .selected_text(self.state.view.clone())
                    .show_ui(ui, |ui| {
                        for v in views::REGISTRY {
                            if ui
                                .selectable_label(self.state.view == v.name(), v.name())
                                .on_hover_text(v.about())
                                .clicked()
                                && self.state.view != v.name()
                            {
                                self.state.view = v.name().to_string();
                                self.state.params = v.default_params();
                                self.state.step = 0;
                                self.state.camera = None;
                            }
                        }
                    });
                let mut cmap = self
                    .state
                    .data
                    .colormap
                    .clone()
                    .or_else(|| {
                        views::find(&self.state.view)
                            .ok()
                            .map(|v| v.colormap().to_string())
                    })
                    .unwrap_or_default();
                egui::ComboBox::from_label("colour map")
                    .selected_text(cmap.clone())
                    .show_ui(ui, |ui| {
                        for n in colormap::names() {
                            ui.selectable_value(&mut cmap, n.to_string(), n);
                        }
                    });
                if views::find(&self.state.view).is_ok_and(|v| v.colormap() != cmap) {
                    self.state.data.colormap = Some(cmap);
                }
                if let Ok(v) = views::find(&self.state.view) {
                    v.panel(ui, &mut self.state.params);
                }
                if self.animation.steps > 1 {
                    let max = self.animation.steps - 1;
                    ui.add(egui::Slider::new(&mut self.state.step, 0..=max).text("animation step"));
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
                let mut color_messages = self.state.data.color_by.as_deref() == Some("messages");
                if ui
                    .checkbox(&mut color_messages, "colour by messages sent")
                    .changed()
                {
                    self.state.data.color_by = color_messages.then(|| "messages".to_string());
                }
                ui.separator();
                ui.checkbox(&mut self.state.fly, "fly (WASD/QE, right-drag to look)");
                ui.add(
                    egui::Slider::new(&mut self.fly_speed, 0.05..=20.0)
                        .logarithmic(true)
                        .text("fly speed"),
                );
                if ui.button("reset camera").clicked() {
                    let (w, h) = self.scene_size();
                    self.state.camera = self.scene.as_ref().map(|s| Camera::fit(s, w, h));
                }
                if ui.button("screenshot (F12)").clicked() {
                    self.want_shot = true;
                }
                if ui.button("save view state (F5)").clicked() {
                    self.save_state();
                }
                if let Some(s) = &self.scene {
                    ui.separator();
                    ui.label(format!("{} triangles", s.triangles()));
                }
                if let Some(e) = &self.error {
                    ui.colored_label(egui::Color32::from_rgb(220, 60, 60), e);
                }
                if !self.message.is_empty() {
                    ui.label(&self.message);
                }
            });
        // the scene fills the rest of the window; its title, legend and labels over it
        let mut rect = root.max_rect();
        rect.min.x = panel.response.rect.max.x;
        self.scene_rect = Some(rect);
        if let Some(c) = self.chart.as_ref().filter(|c| c.matrix.is_none()) {
            // pan, zoom (scroll, drag) and hover values over the series
            plot::show(root, rect, c);
        } else if let (Some(s), Some(cam)) = (&self.scene, &self.state.camera) {
            crate::render::overlay::paint(root.painter(), rect, s, cam, s.is_dark());
        }
    }

    /// Takes what the worker reported; true when something changed.
    fn poll_worker(&mut self) -> bool {
        let mut changed = false;
        while let Ok(r) = self.rx.try_recv() {
            changed = true;
            match r {
                Reply::Stage(s) => self.stage = s,
                Reply::Ready {
                    description,
                    state,
                    note,
                } => {
                    self.description = Some(description);
                    self.state = *state;
                    if let Some(n) = note {
                        eprintln!("note: {n}");
                        self.message = n;
                    }
                }
                Reply::Built {
                    generation,
                    scene,
                    chart,
                    animation,
                    warnings,
                } => {
                    self.chart = chart.map(|c| *c);
                    if generation == self.generation {
                        self.building = false;
                    }
                    for w in warnings {
                        self.message = w;
                    }
                    let refit = self
                        .scene
                        .as_ref()
                        .is_none_or(|old| old.projection != scene.projection)
                        || self.state.camera.is_none();
                    if refit {
                        let (w, h) = self.scene_size();
                        self.state.camera = Some(Camera::fit(&scene, w, h));
                    }
                    self.animation = animation;
                    self.scene = Some(*scene);
                    self.prepared = None;
                    self.error = None;
                }
                Reply::BuildFailed { generation, error } => {
                    if generation == self.generation {
                        self.building = false;
                    }
                    self.error = Some(error);
                }
                Reply::Fatal(e) => self.fatal = Some(e),
            }
        }
        changed
    }

    /// Whether frames must follow each other without waiting for input.
    fn animating(&self) -> bool {
        let flying = self.state.fly
            && (self.keys.forward
                || self.keys.back
                || self.keys.left
                || self.keys.right
                || self.keys.up
                || self.keys.down);
        flying || self.opts.exit_after.is_some() || !self.opts.presses.is_empty()
    }

    fn redraw(&mut self, el: &ActiveEventLoop) {
        // scripted key presses and exit: frames count from the first scene
        if self.scene.is_some() || self.error.is_some() {
            self.frame += 1;
        }
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
        self.poll_worker();
        if self.fatal.is_some() {
            el.exit();
            return;
        }
        let now = Instant::now();
        let dt = (now - self.last_frame).as_secs_f32().min(0.1);
        self.last_frame = now;
        if self.playing
            && self.animation.steps > 1
            && !self.building
            && now.duration_since(self.last_step) >= Duration::from_millis(100)
        {
            self.last_step = now;
            self.state.step = (self.state.step + 1) % self.animation.steps;
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
        self.repaint_at = out
            .viewport_output
            .get(&egui::ViewportId::ROOT)
            .filter(|v| v.repaint_delay < Duration::from_secs(3600))
            .map(|v| Instant::now() + v.repaint_delay);
        self.request_build();
        let frame = match g.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                g.surface.configure(&g.ctx.device, &g.config);
                g.window.request_redraw();
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
        let cam = self
            .state
            .camera
            .unwrap_or_else(|| Camera::fit(scene, fw as u32, fh as u32));
        let prepared = self
            .prepared
            .get_or_insert_with(|| g.renderer.prepare(scene));
        if self.playing && self.software && self.animation.steps > 1 && g.playback.is_none() {
            g.playback = Some((
                Renderer::with_samples(&g.ctx, g.config.format, 1),
                Targets::with_samples(&g.ctx, g.config.format, g.config.width, g.config.height, 1),
            ));
        }
        let (renderer, targets) = match &g.playback {
            Some((r, t)) if self.playing && self.software => (r, t),
            _ => (&g.renderer, &g.targets),
        };
        renderer.encode(
            &mut enc,
            targets,
            &view,
            prepared,
            &cam,
            aspect,
            scene.background,
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
        let gamma_view = frame.texture.create_view(&wgpu::TextureViewDescriptor {
            format: Some(g.config.format.remove_srgb_suffix()),
            ..Default::default()
        });
        crate::render::overlay::draw_egui(&g.egui_renderer, &mut enc, &gamma_view, &tris, &screen);
        for id in &out.textures_delta.free {
            g.egui_renderer.free_texture(id);
        }
        g.ctx.queue.submit([enc.finish()]);
        if std::mem::take(&mut self.want_shot) {
            self.screenshot(&g, &frame.texture);
        }
        g.ctx.queue.present(frame);
        self.gfx = Some(g);
    }

    /// Saves what the window shows: its own surface, read back.
    fn screenshot(&mut self, g: &Gfx, texture: &wgpu::Texture) {
        self.shots += 1;
        let path = self
            .opts
            .output_dir
            .join(format!("tapestry-{:04}.png", self.shots));
        let inputs: Vec<&std::path::Path> = self.opts.inputs.iter().map(|p| p.as_path()).collect();
        let r = if g.config.usage.contains(wgpu::TextureUsages::COPY_SRC) {
            crate::render::read_back(&g.ctx, texture, g.config.width, g.config.height)
                .and_then(|f| f.png())
                .and_then(|b| crate::export::write_atomic(&path, &b, &inputs))
        } else {
            Err(Error::Invalid(
                "this window's surface cannot be copied (no COPY_SRC)".into(),
            ))
        };
        self.message = match r {
            Ok(()) => format!("screenshot {}", path.display()),
            Err(e) => format!("screenshot failed: {e}"),
        };
        eprintln!("{}", self.message);
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
    let instance = wgpu::Instance::new(crate::gpu::context::instance_descriptor(false));
    let surface = instance
        .create_surface(window.clone())
        .map_err(|e| Error::Invalid(format!("cannot draw into the window: {e}")))?;
    let ctx = pollster::block_on(GpuContext::for_surface(&instance, &surface))?;
    let inner = window.inner_size();
    let mut config = surface
        .get_default_config(&ctx.adapter, inner.width.max(1), inner.height.max(1))
        .ok_or_else(|| Error::Invalid("the adapter cannot present to this window".into()))?;
    let caps = surface.get_capabilities(&ctx.adapter);
    // scene colours are decoded to linear light: draw into an sRGB surface
    if let Some(f) = caps.formats.iter().find(|f| f.is_srgb()) {
        config.format = *f;
    }
    // egui draws through a non-sRGB view (it blends in gamma space)
    config.view_formats = vec![config.format.remove_srgb_suffix()];
    if caps.usages.contains(wgpu::TextureUsages::COPY_SRC) {
        config.usage |= wgpu::TextureUsages::COPY_SRC;
    }
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
        config.format.remove_srgb_suffix(),
        egui_wgpu::RendererOptions::default(),
    );
    Ok(Gfx {
        window,
        surface,
        config,
        ctx,
        renderer,
        targets,
        playback: None,
        egui_ctx,
        egui_state,
        egui_renderer,
    })
}

impl ApplicationHandler<Wake> for App {
    fn resumed(&mut self, el: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match open_gfx(el, self.opts.size) {
            Ok(g) => {
                eprintln!("adapter: {}", g.ctx.describe());
                self.surface = (g.config.width, g.config.height, g.window.scale_factor());
                self.software = g.ctx.is_software();
                g.window.request_redraw();
                self.gfx = Some(g);
            }
            Err(e) => {
                self.fatal = Some(e.to_string());
                el.exit();
            }
        }
    }

    fn user_event(&mut self, el: &ActiveEventLoop, _w: Wake) {
        if self.poll_worker() {
            if self.fatal.is_some() {
                el.exit();
                return;
            }
            self.request_build();
            if let Some(g) = &self.gfx {
                g.window.request_redraw();
            }
        }
    }

    fn window_event(&mut self, el: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let response = match &mut self.gfx {
            Some(g) => g.egui_state.on_window_event(&g.window, &event),
            None => return,
        };
        let consumed = response.consumed;
        if response.repaint
            && !matches!(event, WindowEvent::RedrawRequested)
            && let Some(g) = &self.gfx
        {
            g.window.request_redraw();
        }
        match event {
            WindowEvent::CloseRequested => el.exit(),
            WindowEvent::Resized(s) => {
                if let Some(g) = &mut self.gfx {
                    g.config.width = s.width.max(1);
                    g.config.height = s.height.max(1);
                    g.surface.configure(&g.ctx.device, &g.config);
                    g.targets =
                        Targets::new(&g.ctx, g.config.format, g.config.width, g.config.height);
                    g.playback = None;
                    self.surface = (g.config.width, g.config.height, g.window.scale_factor());
                    g.window.request_redraw();
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
                if let (Some((x, _)), true, true) = (self.cursor, self.dragging, self.shift) {
                    // shift-drag slides the time window: 8 pixels a bin
                    self.slide += (position.x - x) as f32 / 8.0;
                    let whole = self.slide.trunc();
                    if whole != 0.0 && self.animation.steps > 1 {
                        self.slide -= whole;
                        let max = (self.animation.steps - 1) as f32;
                        self.state.step = (self.state.step as f32 + whole).clamp(0.0, max) as usize;
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
                if self.dragging
                    && let Some(g) = &self.gfx
                {
                    g.window.request_redraw();
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
                if let Some(g) = &self.gfx {
                    g.window.request_redraw();
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, el: &ActiveEventLoop) {
        let Some(g) = &self.gfx else { return };
        if self.animating() {
            el.set_control_flow(ControlFlow::Poll);
            g.window.request_redraw();
            return;
        }
        // the next animation step, egui's own repaint, or nothing: sleep
        let mut next: Option<Instant> = self.repaint_at;
        if self.playing && self.animation.steps > 1 {
            let t = self.last_step + Duration::from_millis(100);
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if self.description.is_none() || self.building {
            // the progress line counts seconds
            let t = Instant::now() + Duration::from_millis(250);
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        match next {
            Some(t) if t <= Instant::now() => {
                g.window.request_redraw();
                el.set_control_flow(ControlFlow::Wait);
            }
            Some(t) => el.set_control_flow(ControlFlow::WaitUntil(t)),
            None => el.set_control_flow(ControlFlow::Wait),
        }
    }

    fn new_events(&mut self, _el: &ActiveEventLoop, cause: winit::event::StartCause) {
        if matches!(cause, winit::event::StartCause::ResumeTimeReached { .. })
            && let Some(g) = &self.gfx
        {
            g.window.request_redraw();
        }
    }
}

/// Opens the viewer on a trace; returns when the window closes.
pub fn run(opts: ViewerOptions) -> Result<()> {
    let event_loop = EventLoop::<Wake>::with_user_event().build().map_err(|e| {
        Error::Invalid(format!(
            "cannot start the window system (is a display available?): {e}"
        ))
    })?;
    let (tx, rx) = channel();
    let (jobs, job_rx) = channel();
    let worker_opts = opts.clone();
    let proxy = event_loop.create_proxy();
    std::thread::spawn(move || worker(worker_opts, job_rx, tx, proxy));
    let opts_size = opts.size;
    let mut app = App {
        state: opts.state.clone(),
        opts,
        gfx: None,
        rx,
        jobs,
        stage: "starting".into(),
        started: Instant::now(),
        description: None,
        built_for: None,
        generation: 0,
        building: false,
        scene: None,
        animation: Animation::STILL,
        prepared: None,
        chart: None,
        playing: false,
        software: true,
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
        want_shot: false,
        message: String::new(),
        error: None,
        fatal: None,
        repaint_at: None,
        surface: (opts_size.0, opts_size.1, 1.0),
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| Error::Invalid(format!("window event loop: {e}")))?;
    if let Some(e) = app.fatal {
        return Err(Error::Invalid(e));
    }
    Ok(())
}
