//! View-state files: everything needed to reproduce a view exactly (the
//! view, its parameters, the data specification, the camera, the
//! animation step, the image size). `render --save-view-state`, the
//! window's F5, `render --view-state` and `view --view-state` all read and
//! write this one format (JSON).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Time;
use crate::scene::Camera;
use crate::scene::path::Keyframe;

/// The version written into view-state files.
pub const VERSION: u32 = 1;

/// What the view is computed from, shared by every view (the same
/// defaults in `render` and `view`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSpec {
    /// The time window `[t0, t1)` in ns; `None`: the whole trace.
    pub window: Option<[Time; 2]>,
    /// The state set behind busy fractions and moments (names, classes,
    /// `*` wildcards, ids).
    pub states: Vec<String>,
    /// Time bins of fields (Kiviat tube, Gantt chart).
    pub bins: usize,
    /// The main quantity: busy, messages, bytes, counter:NAME, tensor:PATH.
    pub quantity: String,
    /// A second quantity for the colour.
    pub color_by: Option<String>,
    /// Access kinds of tensor quantities.
    pub kinds: String,
    /// One processor of a tensor (all when absent).
    pub processor: Option<usize>,
    /// The colour map (the view's own when absent).
    pub colormap: Option<String>,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            window: None,
            states: vec!["busy".into()],
            bins: 100,
            quantity: "busy".into(),
            color_by: None,
            kinds: "all".into(),
            processor: None,
            colormap: None,
        }
    }
}

/// A view-state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewState {
    /// Format version ([`VERSION`]).
    #[serde(default = "version")]
    pub version: u32,
    /// The view's name (see `render --help`).
    pub view: String,
    /// The view's own parameters.
    #[serde(default)]
    pub params: Value,
    #[serde(default)]
    pub data: DataSpec,
    /// The camera; fitted to the scene when absent.
    #[serde(default)]
    pub camera: Option<Camera>,
    /// The animation position (first time bin shown).
    #[serde(default)]
    pub step: usize,
    /// The image size `[width, height]`.
    #[serde(default)]
    pub size: Option<[u32; 2]>,
    /// The window's fly-through camera was on.
    #[serde(default)]
    pub fly: bool,
    /// The time cursor shared by the views (ns); `None`: each view at its
    /// animation step.
    #[serde(default)]
    pub cursor: Option<Time>,
    /// The selected processor (location index), highlighted in every view.
    #[serde(default)]
    pub selected: Option<usize>,
    /// A recorded camera path (fly-through): keyframes played back by
    /// `render --path` and the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Keyframe>,
    /// More views shown beside this one in the window (each with its own
    /// view, parameters, data and camera; the cursor and the selection are
    /// this state's, shared by all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panes: Vec<ViewState>,
    /// The window's arrangement of the views (an egui_tiles tree over pane
    /// numbers: 0 is this state, 1.. the `panes`); side by side when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Value>,
}

fn version() -> u32 {
    VERSION
}

impl ViewState {
    /// A state for `view` with its default parameters.
    pub fn new(view: &str) -> ViewState {
        ViewState {
            version: VERSION,
            view: view.into(),
            params: Value::Null,
            data: DataSpec::default(),
            camera: None,
            step: 0,
            size: None,
            fly: false,
            cursor: None,
            selected: None,
            path: Vec::new(),
            panes: Vec::new(),
            layout: None,
        }
    }

    /// Reads a view-state file.
    pub fn read(path: &Path) -> Result<ViewState> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let s: ViewState = serde_json::from_slice(&bytes).map_err(|e| {
            Error::parse(
                path,
                crate::diagnostics::Position::line(e.line() as u64),
                format!("not a tapestry view-state file: {e}"),
            )
        })?;
        if s.version > VERSION {
            return Err(Error::Invalid(format!(
                "{}: view-state version {} is newer than this tapestry ({VERSION})",
                path.display(),
                s.version
            )));
        }
        if !s.path.is_empty() {
            crate::scene::path::validate(&s.path)
                .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        }
        for (i, st) in std::iter::once(&s).chain(&s.panes).enumerate() {
            let what = if i == 0 {
                String::new()
            } else {
                format!(" (pane {i})")
            };
            super::find(&st.view)
                .map_err(|e| Error::Invalid(format!("{}{what}: {e}", path.display())))?
                .normalize(&st.params)
                .map_err(|e| Error::Invalid(format!("{}{what}: {e}", path.display())))?;
            if i > 0 && !st.panes.is_empty() {
                return Err(Error::Invalid(format!(
                    "{}{what}: panes do not nest",
                    path.display()
                )));
            }
        }
        Ok(s)
    }

    /// The file's JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the file atomically, never over one of `inputs`.
    pub fn write(&self, path: &Path, inputs: &[&Path]) -> Result<()> {
        crate::export::write_atomic(path, self.to_json().as_bytes(), inputs)
    }
}
