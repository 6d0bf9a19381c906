//! `tapestry view TRACE`: the viewer window. It accepts every option of
//! `render` that describes a view, with the same defaults, so a PNG
//! matches what the window shows.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use tapestry::app::{self, ViewerOptions};
use tapestry::views::{self, ViewState};
use winit::keyboard::KeyCode;

use super::ReadArgs;
use super::parse::parse_size;
use super::viewspec::ViewSpecArgs;

#[derive(Args)]
pub struct ViewArgs {
    /// The trace.
    pub trace: PathBuf,
    #[command(flatten)]
    pub spec: ViewSpecArgs,
    /// Window size WxH.
    #[arg(long, default_value = "1280x800")]
    pub size: String,
    /// Where screenshots (F12) and view states (F5) are written.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// Close the window after this many frames (scripted runs; frames
    /// count from the first scene shown).
    #[arg(long)]
    pub exit_after: Option<u64>,
    /// Press a key at a frame, e.g. F12@30 (screenshot at frame 30); repeatable.
    #[arg(long, value_name = "KEY@FRAME")]
    pub press: Vec<String>,
    /// Open another view beside the first (repeatable), e.g.
    /// `--add-view kiviat --add-view topology`; they share the time cursor
    /// and the selection.
    #[arg(long, value_name = "VIEW")]
    pub add_view: Vec<String>,
    /// Print the statistics up to the cursor to stderr whenever the time
    /// cursor moves (for scripts).
    #[arg(long)]
    pub print_cursor: bool,
    /// Upload the trace to the window's GPU and compute there what can
    /// stay there for drawing: the Kiviat tube of the busy field and the
    /// moment display (its Gantt chart made by GPU kernels and drawn
    /// without reading the field back; its moments, also up to the time
    /// cursor, from the moments kernel). Other views are computed on the
    /// CPU.
    #[arg(long)]
    pub gpu: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

fn key(name: &str) -> Result<KeyCode> {
    Ok(match name {
        "F12" => KeyCode::F12,
        "F5" => KeyCode::F5,
        "Space" => KeyCode::Space,
        "Escape" => KeyCode::Escape,
        "W" => KeyCode::KeyW,
        "A" => KeyCode::KeyA,
        "S" => KeyCode::KeyS,
        "D" => KeyCode::KeyD,
        "Q" => KeyCode::KeyQ,
        "E" => KeyCode::KeyE,
        "K" => KeyCode::KeyK,
        "P" => KeyCode::KeyP,
        "Right" => KeyCode::ArrowRight,
        "Left" => KeyCode::ArrowLeft,
        "Home" => KeyCode::Home,
        "End" => KeyCode::End,
        other => bail!(
            "unknown key '{other}' (F12, F5, Space, Escape, W, A, S, D, Q, E, K, P, Right, Left, Home, End)"
        ),
    })
}

pub fn run(a: ViewArgs) -> Result<()> {
    if a.spec.list_params {
        a.spec.print_params();
        return Ok(());
    }
    // everything that can be checked before the window opens
    a.spec.validate()?;
    let (w, h) = parse_size(&a.size)?;
    let presses = a
        .press
        .iter()
        .map(|p| {
            let (k, f) = p
                .split_once('@')
                .ok_or_else(|| anyhow!("expected KEY@FRAME, found '{p}'"))?;
            Ok((
                f.parse::<u64>()
                    .map_err(|_| anyhow!("bad frame in '{p}'"))?,
                key(k)?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    if !a.output_dir.is_dir() {
        bail!("--output-dir {} is not a directory", a.output_dir.display());
    }
    if !a.trace.exists() {
        bail!("{}: no such file or directory", a.trace.display());
    }
    // the data specification and parameters as render builds them; the
    // view itself is chosen against the trace once it is read
    let mut state = match &a.spec.view_state {
        Some(p) => ViewState::read(p)?,
        None => ViewState::new(views::REGISTRY[0].name()),
    };
    let explicit = a.spec.view.is_some() || a.spec.view_state.is_some();
    if let Some(v) = &a.spec.view
        && *v != state.view
    {
        state = ViewState {
            data: state.data,
            ..ViewState::new(v)
        };
    }
    a.spec.apply_data(&mut state)?;
    let view = views::find(&state.view)?;
    let mut params = view.normalize(&state.params)?;
    for kv in &a.spec.params {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow!("expected --param KEY=VALUE, found '{kv}'"))?;
        if !explicit {
            bail!("--param needs --view (parameters belong to a view)");
        }
        views::set_param(view, &mut params, k.trim(), v.trim())?;
    }
    state.params = params;
    for v in &a.add_view {
        let class = views::find(v)?;
        let mut st = ViewState::new(v);
        st.data = state.data.clone();
        st.params = class.default_params();
        state.panes.push(st);
    }
    let mut inputs = tapestry::readers::input_files(&a.trace);
    inputs.extend(ViewSpecArgs::tensor_inputs(&state));
    app::run(ViewerOptions {
        trace: a.trace,
        read: a.read.options(),
        state,
        view_explicit: explicit,
        size: (w.max(64), h.max(64)),
        exit_after: a.exit_after,
        presses,
        output_dir: a.output_dir,
        inputs,
        print_cursor: a.print_cursor,
        gpu: a.gpu,
    })?;
    Ok(())
}
