//! The options `render` and `view` share, with the same defaults: the view
//! (from the registry), its parameters (`--param KEY=VALUE`), the data
//! specification, the animation start, the camera and view-state files.
//! Nothing here names a view.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser};
use tapestry::readers::Loaded;
use tapestry::views::{self, ViewState};

use super::parse::parse_window_spec;

/// The views of the registry as clap's possible values (with their help).
fn view_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        views::REGISTRY
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(v.about())),
    )
}

#[derive(Args, Clone, Debug)]
pub struct ViewSpecArgs {
    /// The view (default: the first of the list that can show the input).
    #[arg(long, value_parser = view_names())]
    pub view: Option<String>,
    /// A parameter of the view, KEY=VALUE (repeatable); `--list-params`
    /// lists them.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// List the parameters of the view and exit.
    #[arg(long)]
    pub list_params: bool,
    /// Time window T0:T1 (ns or with a unit: 10ms:20ms) [whole trace].
    #[arg(long)]
    pub window: Option<String>,
    /// The state set of busy fractions and moments [busy].
    #[arg(long, value_delimiter = ',', value_name = "STATES")]
    pub states: Option<Vec<String>>,
    /// Time bins of fields (Kiviat tube, Gantt chart) [100].
    #[arg(long)]
    pub bins: Option<usize>,
    /// The quantity: busy, messages, bytes, counter:NAME, tensor:PATH.npy [busy].
    #[arg(long)]
    pub quantity: Option<String>,
    /// A second quantity for the colour (same choices).
    #[arg(long)]
    pub color_by: Option<String>,
    /// Access kinds of a tensor quantity: all, reads, writes, local, remote,
    /// local-reads, remote-reads, local-writes, remote-writes [all].
    #[arg(long)]
    pub kinds: Option<String>,
    /// One processor of a tensor quantity [all].
    #[arg(long)]
    pub processor: Option<usize>,
    /// Colour map: viridis, magma, coolwarm, heat, categorical [the view's].
    #[arg(long)]
    pub colormap: Option<String>,
    /// The animation position: first time bin shown [0].
    #[arg(long)]
    pub start: Option<usize>,
    /// The time cursor shared by the views (ns or with a unit: 1.5ms):
    /// views over time show the step holding it, the performance image is
    /// exact at it, moments cover [window start, cursor), and frames
    /// (`render --frames` with --events-per-frame/--ticks-per-frame) start
    /// from it.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Select a processor (location index): highlighted in every view that
    /// draws processors.
    #[arg(long)]
    pub select: Option<usize>,
    /// Start from a view-state file (written by --save-view-state or F5);
    /// options given here override it.
    #[arg(long)]
    pub view_state: Option<PathBuf>,
    /// Camera position x,y,z.
    #[arg(long)]
    pub eye: Option<String>,
    /// Camera target x,y,z.
    #[arg(long)]
    pub target: Option<String>,
}

fn vec3(s: &str, what: &str) -> Result<[f32; 3]> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow!("expected {what} as x,y,z, found '{s}'"))?;
    match v[..] {
        [x, y, z] if v.iter().all(|c| c.is_finite()) => Ok([x, y, z]),
        _ => bail!("expected {what} as three finite numbers x,y,z, found '{s}'"),
    }
}

impl ViewSpecArgs {
    /// Prints the parameters of the chosen view (or of all views).
    pub fn print_params(&self) {
        for v in views::REGISTRY {
            if self.view.as_deref().is_some_and(|n| n != v.name()) {
                continue;
            }
            println!("{}: {}", v.name(), v.about());
            for d in v.params_doc() {
                println!("  --param {}=…   {}", d.key, d.help);
            }
        }
    }

    /// The options checked before any input is read (ripgrep's way: bad
    /// flags fail fast).
    pub fn validate(&self) -> Result<()> {
        if let Some(w) = &self.window {
            parse_window_spec(w)?;
        }
        if let Some(c) = &self.colormap {
            tapestry::scene::colormap::Colormap::named(c)?;
        }
        if self.bins == Some(0) {
            bail!("--bins must be at least 1");
        }
        for p in &self.params {
            p.split_once('=')
                .ok_or_else(|| anyhow!("expected --param KEY=VALUE, found '{p}'"))?;
        }
        if let Some(e) = &self.eye {
            vec3(e, "--eye")?;
        }
        if let Some(t) = &self.target {
            vec3(t, "--target")?;
        }
        if let Some(c) = &self.cursor {
            super::parse::parse_time(c).map_err(|e| anyhow!("--cursor: {e}"))?;
        }
        Ok(())
    }

    /// The view state: the defaults, then the view-state file, then the
    /// options given here; the view is chosen against `input` when none is
    /// named (with a note when the first choice cannot show it).
    pub fn state(&self, input: &Loaded) -> Result<(ViewState, Option<String>)> {
        let mut st = match &self.view_state {
            Some(p) => ViewState::read(p)?,
            None => ViewState::new(views::REGISTRY[0].name()),
        };
        let from_file = self.view_state.is_some();
        self.apply_data(&mut st)?;
        // the view: named here, else the file's, else the first that can show the input
        let requested = self
            .view
            .clone()
            .or_else(|| from_file.then(|| st.view.clone()));
        if self.view.as_deref().is_some_and(|v| v != st.view) {
            st.params = serde_json::Value::Null;
            st.camera = None;
        }
        // a named view gets its --param before it judges the input
        let apply = |view: &dyn views::ViewClass, params: &mut serde_json::Value| -> Result<()> {
            for kv in &self.params {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| anyhow!("expected --param KEY=VALUE, found '{kv}'"))?;
                views::set_param(view, params, k.trim(), v.trim())?;
            }
            Ok(())
        };
        let mut params = st.params.clone();
        if let Some(name) = requested.as_deref() {
            let v = views::find(name)?;
            params = v.normalize(&params)?;
            apply(v, &mut params)?;
        }
        let (view, mut params, note) =
            views::choose(requested.as_deref(), input, &st.data, &params)?;
        st.view = view.name().to_string();
        if requested.is_none() {
            apply(view, &mut params)?;
        }
        st.params = params;
        Ok((st, note))
    }

    /// Applies the data options, the animation start and the camera given
    /// here to `st`.
    pub fn apply_data(&self, st: &mut ViewState) -> Result<()> {
        let d = &mut st.data;
        if let Some(w) = &self.window {
            let (a, b) = parse_window_spec(w)?;
            d.window = Some([a, b]);
        }
        if let Some(s) = &self.states {
            d.states = s.clone();
        }
        if let Some(b) = self.bins {
            d.bins = b;
        }
        if let Some(q) = &self.quantity {
            d.quantity = q.clone();
        }
        if let Some(c) = &self.color_by {
            d.color_by = Some(c.clone());
        }
        if let Some(k) = &self.kinds {
            d.kinds = k.clone();
        }
        if let Some(p) = self.processor {
            d.processor = Some(p);
        }
        if let Some(c) = &self.colormap {
            d.colormap = Some(c.clone());
        }
        if let Some(s) = self.start {
            st.step = s;
        }
        if let Some(c) = &self.cursor {
            st.cursor = Some(super::parse::parse_time(c).map_err(|e| anyhow!("--cursor: {e}"))?);
        }
        if let Some(p) = self.select {
            st.selected = Some(p);
        }
        if self.eye.is_some() || self.target.is_some() {
            let cam = st.camera.get_or_insert(tapestry::scene::Camera {
                eye: [2.0, 2.0, 2.0],
                target: [0.0; 3],
                up: [0.0, 1.0, 0.0],
                fov_y: 40.0,
                ortho: None,
                shift: 0.0,
            });
            if let Some(e) = &self.eye {
                cam.eye = vec3(e, "--eye")?;
            }
            if let Some(t) = &self.target {
                cam.target = vec3(t, "--target")?;
            }
        }
        Ok(())
    }

    /// The tensor files the quantities name (inputs never to overwrite).
    pub fn tensor_inputs(st: &ViewState) -> Vec<PathBuf> {
        [Some(&st.data.quantity), st.data.color_by.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|q| q.strip_prefix("tensor:").map(PathBuf::from))
            .collect()
    }
}

/// Reads the trace (printing the reader's warnings).
pub fn load(trace: &std::path::Path, read: &super::ReadArgs) -> Result<Loaded> {
    if !trace.exists() {
        bail!("{}: no such file or directory", trace.display());
    }
    let l = tapestry::readers::load(trace, &read.options())?;
    if let Loaded::Trace(t) = &l {
        for w in &t.meta.diagnostics.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(l)
}
