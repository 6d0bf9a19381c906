//! Typed errors of the library.
//!
//! Every error that comes from input names the file and, where it makes
//! sense, the position (line or byte offset), what was expected and what was
//! found.

use std::path::{Path, PathBuf};

use crate::diagnostics::Position;

/// Result type of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused an operation on a file.
    #[error("{}: {err}", path.display())]
    Io {
        path: PathBuf,
        /// The operating system's error (part of the message, so that it is
        /// not repeated as a cause).
        err: std::io::Error,
    },
    /// The content of a file does not follow its format.
    #[error("{}{}: {msg}", path.display(), pos.suffix())]
    Parse {
        path: PathBuf,
        pos: Position,
        msg: String,
    },
    /// The format of a file could not be recognised from its content.
    #[error("{}: unrecognised trace format: {found}", path.display())]
    UnknownFormat { path: PathBuf, found: String },
    /// The GPU could not be used (adapter, device, kernel or frame).
    #[error("{0}")]
    Gpu(String),
    /// A parameter given by the user is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// Another process of the job reading the trace together failed and
    /// said why ([`crate::readers::exchange`]); this one stops.
    #[error("another process failed reading its share of the trace (its error is above)")]
    OtherProcess,
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            err: source,
        }
    }

    /// A parse error at `pos` in `path`.
    pub fn parse(path: &Path, pos: Position, msg: impl Into<String>) -> Self {
        Error::Parse {
            path: path.to_path_buf(),
            pos,
            msg: msg.into(),
        }
    }
}
