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
        super::find(&s.view)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?
            .normalize(&s.params)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
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
