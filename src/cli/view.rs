//! `tapestry view TRACE`: the viewer window.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use tapestry::app::{self, ViewKind, ViewState, ViewerOptions};
use winit::keyboard::KeyCode;

use super::ReadArgs;
use super::parse::{parse_size, read_view_state};

#[derive(Args)]
pub struct ViewArgs {
    /// The trace.
    pub trace: PathBuf,
    /// The first view shown.
    #[arg(long, value_enum)]
    pub view: Option<ViewKind>,
    /// Time bins of the busy-fraction field behind the views.
    #[arg(long, default_value_t = 200)]
    pub bins: usize,
    /// Window size WxH.
    #[arg(long, default_value = "1280x800")]
    pub size: String,
    /// Start from a view state saved with F5.
    #[arg(long)]
    pub view_state: Option<PathBuf>,
    /// Where screenshots (F12) and view states (F5) are written.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// Close the window after this many frames (scripted runs).
    #[arg(long)]
    pub exit_after: Option<u64>,
    /// Press a key at a frame, e.g. F12@30 (screenshot at frame 30); repeatable.
    #[arg(long, value_name = "KEY@FRAME")]
    pub press: Vec<String>,
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
        other => bail!("unknown key '{other}' (F12, F5, Space, Escape, W, A, S, D, Q, E)"),
    })
}

pub fn run(a: ViewArgs) -> Result<()> {
    let (w, h) = parse_size(&a.size)?;
    let mut state = match &a.view_state {
        Some(p) => read_view_state(p)?,
        None => ViewState::default(),
    };
    if let Some(v) = a.view {
        state.view = v;
    }
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
    app::run(ViewerOptions {
        trace: a.trace,
        read: a.read.options(),
        state,
        bins: a.bins,
        size: (w.max(64), h.max(64)),
        exit_after: a.exit_after,
        presses,
        output_dir: a.output_dir,
    })?;
    Ok(())
}
