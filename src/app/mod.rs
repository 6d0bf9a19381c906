//! The viewer window (winit + egui): views side by side (egui_tiles), each
//! with its own camera, sharing one time cursor (execution control: step
//! and play forward and backward, by events or ticks per frame, with the
//! statistics up to the cursor) and one selection (a processor picked in
//! one view is highlighted in all). The active view's parameters and data
//! specification are in the side panel; hover shows what is under the
//! mouse; F12 saves a screenshot of the window's surface, F5 the view state
//! (all panes, their layout, the cursor, the selection and camera paths),
//! K records a camera keyframe and P plays the path.
//!
//! Reading, analyses and scene building run on a worker thread
//! ([`worker`]); the event loop only draws. It redraws when something
//! changes — input, a result from the worker, playback, the fly camera —
//! and otherwise sleeps (an idle window uses no CPU).

pub mod controls;
pub mod exec;
pub mod pane;
pub mod plot;
pub mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::readers::ReadOptions;
use crate::render::Renderer;
use crate::scene::{Camera, colormap};
use crate::views::{self, ViewState};
use exec::{Exec, Play};
use pane::Pane;
use worker::{Job, Reply, Wake};

/// Width of the control panel (points); the views fill the rest.
const PANEL_WIDTH: f32 = 280.0;

/// Options of `tapestry view`.
#[derive(Debug, Clone)]
pub struct ViewerOptions {
    pub trace: PathBuf,
    pub read: ReadOptions,
    /// The first view state (its view chosen against the trace when
    /// `view_explicit` is false); its `panes` open beside it.
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
    /// Print the statistics to stderr whenever the time cursor moves.
    pub print_cursor: bool,
    /// Upload the trace to the window's GPU and compute there what can
    /// stay there for drawing (the Kiviat tube of the busy field).
    pub gpu: bool,
}

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: GpuContext,
    renderer: Renderer,
    /// One sample per pixel, for playback on a software adapter (4× MSAA
    /// costs lavapipe more than half of a frame); made when first needed.
    playback: Option<Renderer>,
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
    panes: BTreeMap<u64, Pane>,
    tree: Option<egui_tiles::Tree<u64>>,
    next_pane: u64,
    active: u64,
    /// The execution control (traces only).
    exec: Option<Exec>,
    /// The selected processor, shared by the panes.
    selected: Option<usize>,
    /// The active pane's own animation plays (inputs without a timeline,
    /// or the cursor off).
    playing: bool,
    software: bool,
    last_step: Instant,
    last_frame: Instant,
    frame: u64,
    keys: controls::FlyKeys,
    fly_speed: f32,
    shots: u32,
    want_shot: bool,
    message: String,
    fatal: Option<String>,
    repaint_at: Option<Instant>,
    /// The view chosen in "add a view".
    add_view: String,
}

/// The part of a pane's state whose change needs a new scene.
fn build_key(s: &ViewState, size: (u32, u32), budget: Option<usize>) -> serde_json::Value {
    serde_json::json!([
        s.view, s.params, s.data, s.step, s.cursor, s.selected, size, budget
    ])
}

struct Behavior<'a> {
    panes: &'a mut BTreeMap<u64, Pane>,
    fly: bool,
    active: u64,
    activated: Option<u64>,
    select: Option<Option<usize>>,
    closed: Vec<u64>,
    many: bool,
}

impl egui_tiles::Behavior<u64> for Behavior<'_> {
    fn pane_ui(
        &mut self,
        ui: &mut egui::Ui,
        _tile: egui_tiles::TileId,
        id: &mut u64,
    ) -> egui_tiles::UiResponse {
        let Some(p) = self.panes.get_mut(id) else {
            return egui_tiles::UiResponse::None;
        };
        let r = pane::show(ui, p, self.fly && *id == self.active);
        if r.activated {
            self.activated = Some(*id);
        }
        if r.select.is_some() {
            self.select = r.select;
        }
        egui_tiles::UiResponse::None
    }

    fn tab_title_for_pane(&mut self, id: &u64) -> egui::WidgetText {
        let name = self
            .panes
            .get(id)
            .map_or("?".to_string(), |p| p.state.view.clone());
        if *id == self.active && self.many {
            format!("● {name}").into()
        } else {
            name.into()
        }
    }

    fn is_tab_closable(&self, _tiles: &egui_tiles::Tiles<u64>, _tile: egui_tiles::TileId) -> bool {
        self.many
    }

    fn on_tab_close(
        &mut self,
        tiles: &mut egui_tiles::Tiles<u64>,
        tile: egui_tiles::TileId,
    ) -> bool {
        if let Some(egui_tiles::Tile::Pane(id)) = tiles.get(tile) {
            self.closed.push(*id);
        }
        true
    }

    fn simplification_options(&self) -> egui_tiles::SimplificationOptions {
        egui_tiles::SimplificationOptions {
            all_panes_must_have_tabs: true,
            ..Default::default()
        }
    }
}

impl App {
    fn active_pane(&mut self) -> Option<&mut Pane> {
        self.panes.get_mut(&self.active)
    }

    /// Sets up the panes from the first state (and its `panes`, `layout`).
    fn open_panes(&mut self, mut state: ViewState) {
        let extra = std::mem::take(&mut state.panes);
        let layout = state.layout.take();
        self.selected = state.selected;
        if let (Some(e), Some(c)) = (self.exec.as_mut(), state.cursor) {
            e.cursor = Some(c.min(e.span.1));
        }
        let mut ids = Vec::new();
        for st in std::iter::once(state).chain(extra) {
            let id = self.next_pane;
            self.next_pane += 1;
            self.panes.insert(id, Pane::new(id, st));
            ids.push(id);
        }
        self.active = ids[0];
        let restored = layout
            .and_then(|v| serde_json::from_value::<egui_tiles::Tree<u64>>(v).ok())
            .filter(|t| {
                let mut got: Vec<u64> = t
                    .tiles
                    .tiles()
                    .filter_map(|t| match t {
                        egui_tiles::Tile::Pane(p) => Some(*p),
                        _ => None,
                    })
                    .collect();
                got.sort();
                got == ids
            });
        self.tree =
            Some(restored.unwrap_or_else(|| {
                egui_tiles::Tree::new_horizontal(egui::Id::unique("views"), ids)
            }));
    }

    /// Adds a pane showing `view` with the active pane's data.
    fn add_pane(&mut self, view: &str) {
        let data = self
            .panes
            .get(&self.active)
            .map(|p| p.state.data.clone())
            .unwrap_or_default();
        let Ok(v) = views::find(view) else { return };
        let mut st = ViewState::new(view);
        st.data = data;
        st.params = v.default_params();
        let id = self.next_pane;
        self.next_pane += 1;
        self.panes.insert(id, Pane::new(id, st));
        if let Some(tree) = &mut self.tree {
            let tile = tree.tiles.insert_pane(id);
            match tree.root() {
                Some(root) => {
                    if let Some(egui_tiles::Tile::Container(c)) = tree.tiles.get_mut(root) {
                        c.add_child(tile);
                    } else {
                        let new_root = tree.tiles.insert_horizontal_tile(vec![root, tile]);
                        tree.root = Some(new_root);
                    }
                }
                None => tree.root = Some(tile),
            }
        }
        self.active = id;
    }

    /// Asks the worker for new scenes where a pane's state changed.
    fn request_builds(&mut self, ppp: f32) {
        if self.description.is_none() {
            return;
        }
        let cursor = self.exec.as_ref().and_then(|e| e.cursor);
        let playing = self.playing || self.exec.as_ref().is_some_and(|e| e.playing.is_some());
        let software = self.software;
        for p in self.panes.values_mut() {
            let Some(size) = p.pixels(ppp) else { continue };
            p.state.cursor = cursor;
            p.state.selected = self.selected;
            let budget = playing.then(|| views::playback_budget(software));
            let key = build_key(&p.state, size, budget);
            if p.built_for.as_ref() == Some(&key) {
                continue;
            }
            p.built_for = Some(key);
            p.generation += 1;
            p.building = true;
            let _ = self.jobs.send(Job::Build {
                pane: p.id,
                generation: p.generation,
                state: Box::new(p.state.clone()),
                size,
                budget,
            });
        }
    }

    fn cursor_moved(&mut self) {
        if self.opts.print_cursor
            && let Some(l) = self.exec.as_ref().and_then(|e| e.log_line())
        {
            eprintln!("{l}");
        }
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
        let mut moved = false;
        match code {
            KeyCode::F12 => self.want_shot = true,
            KeyCode::F5 => self.save_state(),
            KeyCode::Space => match self.exec.as_mut().filter(|e| e.cursor.is_some()) {
                Some(e) => {
                    e.playing = match e.playing {
                        Some(_) => None,
                        None => Some(Play::Forward),
                    }
                }
                None => self.playing = !self.playing,
            },
            KeyCode::ArrowRight | KeyCode::ArrowLeft => {
                let back = code == KeyCode::ArrowLeft;
                if let Some(e) = self.exec.as_mut() {
                    e.single_step(back);
                    moved = true;
                } else if let Some(p) = self.active_pane() {
                    let max = p.animation.steps.saturating_sub(1);
                    p.state.step = if back {
                        p.state.step.saturating_sub(1)
                    } else {
                        (p.state.step + 1).min(max)
                    };
                }
            }
            KeyCode::Home | KeyCode::End => {
                if let Some(e) = self.exec.as_mut() {
                    e.cursor = Some(if code == KeyCode::Home {
                        e.range.0
                    } else {
                        e.range.1
                    });
                    moved = true;
                }
            }
            KeyCode::KeyK => {
                let n = self.active_pane().and_then(|p| p.record_keyframe());
                self.message = match n {
                    Some(n) => {
                        format!("camera keyframe {n} recorded (P plays the path, F5 saves it)")
                    }
                    None => "no camera to record yet".into(),
                };
            }
            KeyCode::KeyP => {
                if let Some(p) = self.active_pane() {
                    if p.state.path.len() >= 2 {
                        p.path_time = Some(0.0);
                    } else {
                        self.message = "record at least two keyframes (K) first".into();
                    }
                }
            }
            KeyCode::Escape => el.exit(),
            _ => {}
        }
        if moved {
            self.cursor_moved();
        }
    }

    /// The view state of the window: the first pane, the others as its
    /// `panes`, the layout, the shared cursor and selection.
    fn window_state(&self) -> Option<ViewState> {
        let ppp = self
            .gfx
            .as_ref()
            .map_or(1.0, |g| g.egui_ctx.pixels_per_point());
        let mut all: Vec<ViewState> = self
            .panes
            .values()
            .map(|p| {
                let mut st = p.state.clone();
                if let Some((w, h)) = p.pixels(ppp) {
                    st.size = Some([w, h]);
                }
                st
            })
            .collect();
        if all.is_empty() {
            return None;
        }
        let mut first = all.remove(0);
        // pane numbers in the layout are positions: 0 the first, 1.. the rest
        let order: Vec<u64> = self.panes.keys().copied().collect();
        first.layout = self.tree.as_ref().and_then(|t| {
            let mut v = serde_json::to_value(t).ok()?;
            renumber(&mut v, &order);
            Some(v)
        });
        first.panes = all;
        first.cursor = self.exec.as_ref().and_then(|e| e.cursor);
        first.selected = self.selected;
        Some(first)
    }

    fn save_state(&mut self) {
        let path = self.opts.output_dir.join("tapestry-view.json");
        let Some(st) = self.window_state() else {
            return;
        };
        let inputs: Vec<&std::path::Path> = self.opts.inputs.iter().map(|p| p.as_path()).collect();
        self.message = match st.write(&path, &inputs) {
            Ok(()) => format!("view state {}", path.display()),
            Err(e) => format!("saving the view state failed: {e}"),
        };
        eprintln!("{}", self.message);
    }

    fn side_panel(&mut self, ui: &mut egui::Ui) {
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
                return;
            }
            Some(d) => {
                ui.label(d);
            }
        }
        if self.panes.values().any(|p| p.building) {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(&self.stage);
            });
        }
        let mut cursor_changed = false;
        egui::ScrollArea::vertical().show(ui, |ui| {
            if let Some(e) = self.exec.as_mut() {
                ui.separator();
                cursor_changed = e.panel(ui);
            }
            ui.separator();
            ui.horizontal(|ui| {
                egui::ComboBox::from_id_salt("add view")
                    .selected_text(self.add_view.clone())
                    .show_ui(ui, |ui| {
                        for v in views::REGISTRY {
                            ui.selectable_value(&mut self.add_view, v.name().to_string(), v.name())
                                .on_hover_text(v.about());
                        }
                    });
                if ui
                    .button("add view")
                    .on_hover_text("open this view beside the others")
                    .clicked()
                {
                    let v = self.add_view.clone();
                    self.add_pane(&v);
                }
            });
            if let Some(sel) = self.selected {
                ui.horizontal(|ui| {
                    ui.label(format!("selected: processor {sel}"));
                    if ui.small_button("clear").clicked() {
                        self.selected = None;
                    }
                });
            } else {
                ui.label("click a processor, node or cell to select it in every view");
            }
            ui.separator();
            let fly_speed = &mut self.fly_speed;
            let want_shot = &mut self.want_shot;
            let mut save = false;
            let playing = &mut self.playing;
            if let Some(p) = self.panes.get_mut(&self.active) {
                ui.label(egui::RichText::new("active view").strong());
                pane_controls(ui, p, playing, fly_speed);
                if ui.button("screenshot (F12)").clicked() {
                    *want_shot = true;
                }
                if ui.button("save view state (F5)").clicked() {
                    save = true;
                }
            }
            if save {
                self.save_state();
            }
            if !self.message.is_empty() {
                ui.label(&self.message);
            }
        });
        if cursor_changed {
            self.cursor_moved();
        }
    }

    fn ui(&mut self, root: &mut egui::Ui) {
        egui::Panel::left("controls")
            .resizable(false)
            .exact_size(PANEL_WIDTH)
            .show(root, |ui| self.side_panel(ui));
        let fly = self.panes.get(&self.active).is_some_and(|p| p.state.fly);
        let mut behavior = Behavior {
            panes: &mut self.panes,
            fly,
            active: self.active,
            activated: None,
            select: None,
            closed: Vec::new(),
            many: false,
        };
        behavior.many = behavior.panes.len() > 1;
        if let Some(tree) = &mut self.tree {
            egui::CentralPanel::default()
                .frame(egui::Frame::new().fill(egui::Color32::from_rgb(24, 26, 34)))
                .show(root, |ui| tree.ui(&mut behavior, ui));
        }
        let (activated, select, closed) = (behavior.activated, behavior.select, behavior.closed);
        if let Some(a) = activated {
            self.active = a;
        }
        if let Some(s) = select {
            self.selected = s;
        }
        for id in closed {
            if let Some(mut p) = self.panes.remove(&id)
                && let Some(g) = &mut self.gfx
            {
                p.free(&mut g.egui_renderer);
            }
            let _ = self.jobs.send(Job::Forget(id));
            if self.active == id {
                self.active = self.panes.keys().next().copied().unwrap_or(0);
            }
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
                    timeline,
                    span,
                } => {
                    self.description = Some(description);
                    if let (Some(tl), Some(span)) = (timeline, span) {
                        self.exec = Some(Exec::new(tl, span));
                    }
                    self.open_panes(*state);
                    if let Some(n) = note {
                        eprintln!("note: {n}");
                        self.message = n;
                    }
                }
                Reply::Built {
                    pane,
                    generation,
                    scene,
                    chart,
                    animation,
                    window,
                    warnings,
                } => {
                    let Some(p) = self.panes.get_mut(&pane) else {
                        continue;
                    };
                    if generation == p.generation {
                        p.building = false;
                    }
                    for w in warnings {
                        self.message = w;
                    }
                    p.chart = chart.map(|c| *c);
                    // 2D views fit their pane again when it was resized
                    let size = p.pixels(1.0).unwrap_or((800, 600));
                    let flat = scene.projection == crate::scene::Projection::Orthographic;
                    let refit = p
                        .scene
                        .as_ref()
                        .is_none_or(|old| old.projection != scene.projection)
                        || p.state.camera.is_none()
                        || (flat && p.fitted_for.is_some_and(|f| f != size));
                    if refit {
                        p.state.camera = Some(Camera::fit(&scene, size.0, size.1));
                        p.fitted_for = Some(size);
                    } else if p.fitted_for.is_none() {
                        p.fitted_for = Some(size);
                    }
                    p.animation = animation;
                    p.window = Some(window);
                    p.scene = Some(*scene);
                    p.prepared = None;
                    p.error = None;
                }
                Reply::BuildFailed {
                    pane,
                    generation,
                    error,
                } => {
                    if let Some(p) = self.panes.get_mut(&pane) {
                        if generation == p.generation {
                            p.building = false;
                        }
                        p.error = Some(error);
                    }
                }
                Reply::Fatal(e) => self.fatal = Some(e),
            }
        }
        changed
    }

    /// Whether frames must follow each other without waiting for input.
    fn animating(&self) -> bool {
        let k = self.keys;
        let flying = self.panes.get(&self.active).is_some_and(|p| p.state.fly)
            && (k.forward || k.back || k.left || k.right || k.up || k.down);
        let path = self.panes.values().any(|p| p.path_time.is_some());
        flying || path || self.opts.exit_after.is_some() || !self.opts.presses.is_empty()
    }

    fn redraw(&mut self, el: &ActiveEventLoop) {
        // scripted key presses and exit: frames count from the first scene
        if self
            .panes
            .values()
            .any(|p| p.scene.is_some() || p.error.is_some())
        {
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
        let building = self.panes.values().any(|p| p.building);
        if !building && self.exec.as_mut().is_some_and(|e| e.tick(now)) {
            self.cursor_moved();
        }
        if self.playing
            && !building
            && now.duration_since(self.last_step) >= Duration::from_millis(100)
        {
            self.last_step = now;
            if let Some(p) = self.panes.get_mut(&self.active)
                && p.animation.steps > 1
            {
                p.state.step = (p.state.step + 1) % p.animation.steps;
            }
        }
        let keys = self.keys;
        let speed = self.fly_speed;
        for p in self.panes.values_mut() {
            p.advance_path(dt as f64);
        }
        if let Some(p) = self.panes.get_mut(&self.active)
            && p.state.fly
            && let Some(c) = &mut p.state.camera
        {
            controls::fly(c, keys, speed, dt);
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
        self.request_builds(out.pixels_per_point);
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
        let mut enc = g.ctx.device.create_command_encoder(&Default::default());
        // each pane's scene into its texture (one sample while playing on
        // a software adapter)
        let playing = self.playing || self.exec.as_ref().is_some_and(|e| e.playing.is_some());
        if playing && self.software && g.playback.is_none() {
            g.playback = Some(Renderer::with_samples(
                &g.ctx,
                crate::render::FRAME_FORMAT,
                1,
            ));
        }
        let renderer = match &g.playback {
            Some(r) if playing && self.software => r,
            _ => &g.renderer,
        };
        let mut new_textures = false;
        for p in self.panes.values_mut() {
            let had = p.target.as_ref().map(|t| t.id);
            p.encode(
                &g.ctx,
                &mut g.egui_renderer,
                renderer,
                &mut enc,
                out.pixels_per_point,
            );
            new_textures |= p.target.as_ref().map(|t| t.id) != had;
        }
        // egui over the whole window
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
        clear(&mut enc, &gamma_view);
        crate::render::overlay::draw_egui(&g.egui_renderer, &mut enc, &gamma_view, &tris, &screen);
        for id in &out.textures_delta.free {
            g.egui_renderer.free_texture(id);
        }
        g.ctx.queue.submit([enc.finish()]);
        if std::mem::take(&mut self.want_shot) {
            self.screenshot(&g, &frame.texture);
        }
        g.ctx.queue.present(frame);
        if new_textures {
            // a pane's texture was made this frame: show it in the next
            g.window.request_redraw();
        }
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

/// Pane numbers in a saved layout are positions (0 the first state, 1..
/// its `panes`), not the window's ids: rewrites `"pane": id` values.
fn renumber(v: &mut serde_json::Value, order: &[u64]) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "Pane"
                    && let Some(id) = x.as_u64()
                    && let Some(pos) = order.iter().position(|&o| o == id)
                {
                    *x = serde_json::Value::from(pos as u64);
                } else {
                    renumber(x, order);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| renumber(x, order)),
        _ => {}
    }
}

/// The active pane's controls: view, colour map, parameters, animation,
/// camera.
fn pane_controls(ui: &mut egui::Ui, p: &mut Pane, playing: &mut bool, fly_speed: &mut f32) {
    egui::ComboBox::from_label("view")
        .selected_text(p.state.view.clone())
        .show_ui(ui, |ui| {
            for v in views::REGISTRY {
                if ui
                    .selectable_label(p.state.view == v.name(), v.name())
                    .on_hover_text(v.about())
                    .clicked()
                    && p.state.view != v.name()
                {
                    p.state.view = v.name().to_string();
                    p.state.params = v.default_params();
                    p.state.step = 0;
                    p.state.camera = None;
                }
            }
        });
    let mut cmap = p
        .state
        .data
        .colormap
        .clone()
        .or_else(|| {
            views::find(&p.state.view)
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
    if views::find(&p.state.view).is_ok_and(|v| v.colormap() != cmap) {
        p.state.data.colormap = Some(cmap);
    }
    if let Ok(v) = views::find(&p.state.view) {
        v.panel(ui, &mut p.state.params);
    }
    if p.animation.steps > 1 {
        let max = p.animation.steps - 1;
        ui.add(egui::Slider::new(&mut p.state.step, 0..=max).text("animation step"));
        if p.state.cursor.is_some() {
            ui.label("(the time cursor sets the step of views over time)");
        }
        if ui
            .button(if *playing {
                "pause animation"
            } else {
                "play animation"
            })
            .clicked()
        {
            *playing = !*playing;
        }
    }
    let mut color_messages = p.state.data.color_by.as_deref() == Some("messages");
    if ui
        .checkbox(&mut color_messages, "colour by messages sent")
        .changed()
    {
        p.state.data.color_by = color_messages.then(|| "messages".to_string());
    }
    ui.checkbox(&mut p.state.fly, "fly (WASD/QE, right-drag to look)");
    ui.add(
        egui::Slider::new(fly_speed, 0.05..=20.0)
            .logarithmic(true)
            .text("fly speed"),
    );
    if ui.button("reset camera").clicked() {
        let (w, h) = p.pixels(1.0).unwrap_or((800, 600));
        p.state.camera = p.scene.as_ref().map(|s| Camera::fit(s, w, h));
    }
    ui.horizontal_wrapped(|ui| {
        if ui
            .button("keyframe (K)")
            .on_hover_text("record the camera into the path")
            .clicked()
        {
            p.record_keyframe();
        }
        if ui.button("play path (P)").clicked() && p.state.path.len() >= 2 {
            p.path_time = Some(0.0);
        }
        if ui.button("clear path").clicked() {
            p.state.path.clear();
            p.path_time = None;
        }
    });
    if !p.state.path.is_empty() {
        ui.label(format!(
            "camera path: {} keyframes, {:.0} s",
            p.state.path.len(),
            crate::scene::path::duration(&p.state.path)
        ));
    }
    if let Some(s) = &p.scene {
        ui.label(format!("{} triangles", s.triangles()));
    }
    if let Some(e) = &p.error {
        ui.colored_label(egui::Color32::from_rgb(220, 60, 60), e);
    }
}

/// Clears the window before egui draws (panes are egui images).
fn clear(enc: &mut wgpu::CommandEncoder, view: &wgpu::TextureView) {
    let _ = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("clear"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(wgpu::Color {
                    r: 0.09,
                    g: 0.10,
                    b: 0.13,
                    a: 1.0,
                }),
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
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
    if let Some(f) = caps.formats.iter().find(|f| f.is_srgb()) {
        config.format = *f;
    }
    // egui draws through a non-sRGB view (it blends in gamma space)
    config.view_formats = vec![config.format.remove_srgb_suffix()];
    if caps.usages.contains(wgpu::TextureUsages::COPY_SRC) {
        config.usage |= wgpu::TextureUsages::COPY_SRC;
    }
    surface.configure(&ctx.device, &config);
    // panes are drawn into sRGB textures egui shows
    let renderer = Renderer::with_format(&ctx, crate::render::FRAME_FORMAT);
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
                self.software = g.ctx.is_software();
                if self.opts.gpu {
                    let _ = self.jobs.send(Job::Gpu(Box::new(g.ctx.clone())));
                }
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
                    g.window.request_redraw();
                }
            }
            WindowEvent::RedrawRequested => self.redraw(el),
            WindowEvent::KeyboardInput { event, .. } if !consumed => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    self.key(code, event.state == ElementState::Pressed, el);
                    if let Some(g) = &self.gfx {
                        g.window.request_redraw();
                    }
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
        // the next playback frame, egui's own repaint, or nothing: sleep
        let mut next: Option<Instant> = self.repaint_at;
        if self.playing {
            let t = self.last_step + Duration::from_millis(100);
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if let Some(e) = self.exec.as_ref().filter(|e| e.playing.is_some()) {
            let t = e.last_frame + e.frame_time();
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if self.description.is_none() || self.panes.values().any(|p| p.building) {
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
    std::thread::spawn(move || worker::run(worker_opts, job_rx, tx, proxy));
    let mut app = App {
        opts,
        gfx: None,
        rx,
        jobs,
        stage: "starting".into(),
        started: Instant::now(),
        description: None,
        panes: BTreeMap::new(),
        tree: None,
        next_pane: 0,
        active: 0,
        exec: None,
        selected: None,
        playing: false,
        software: true,
        last_step: Instant::now(),
        last_frame: Instant::now(),
        frame: 0,
        keys: Default::default(),
        fly_speed: 1.0,
        shots: 0,
        want_shot: false,
        message: String::new(),
        fatal: None,
        repaint_at: None,
        add_view: "moments".into(),
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| Error::Invalid(format!("window event loop: {e}")))?;
    if let Some(e) = app.fatal {
        return Err(Error::Invalid(e));
    }
    Ok(())
}
