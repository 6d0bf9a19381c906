//! Positions in input files and the warnings of a read.
//!
//! Readers repair recoverable damage (a truncated last record, an unmatched
//! begin/end, unsorted timestamps, ...) and report it here, counted by kind.
//! In strict mode the same call returns an error instead.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

/// A position in an input file: a line (1-based) and/or a byte offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Position {
    pub line: Option<u64>,
    pub byte: Option<u64>,
}

impl Position {
    pub fn line(line: u64) -> Self {
        Position {
            line: Some(line),
            byte: None,
        }
    }
    pub fn byte(byte: u64) -> Self {
        Position {
            line: None,
            byte: Some(byte),
        }
    }
    pub fn none() -> Self {
        Position::default()
    }

    /// `:line 3 (byte 40)` after a file name, or nothing for the whole file.
    pub fn suffix(&self) -> String {
        match (self.line, self.byte) {
            (None, None) => String::new(),
            _ => format!(":{self}"),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.byte) {
            (Some(l), Some(b)) => write!(f, "line {l} (byte {b})"),
            (Some(l), None) => write!(f, "line {l}"),
            (None, Some(b)) => write!(f, "byte {b}"),
            (None, None) => write!(f, "(whole file)"),
        }
    }
}

/// One kind of repaired damage, with how often it occurred and where first.
#[derive(Debug, Clone, Serialize)]
pub struct Warning {
    /// Short stable identifier, e.g. `unmatched-end`.
    pub kind: &'static str,
    /// How many records were affected.
    pub count: u64,
    /// File of the first occurrence.
    pub file: PathBuf,
    /// Position of the first occurrence.
    pub first: Position,
    /// Message describing the first occurrence and the repair.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}: {} [{}; {} record(s) affected]",
            self.file.display(),
            self.first.suffix(),
            self.message,
            self.kind,
            self.count
        )
    }
}

/// Warnings of one read, aggregated by kind, and the strictness switch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Diagnostics {
    #[serde(skip)]
    strict: bool,
    pub warnings: Vec<Warning>,
}

impl Diagnostics {
    pub fn new(strict: bool) -> Self {
        Diagnostics {
            strict,
            warnings: Vec::new(),
        }
    }

    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Reports `count` records affected by recoverable damage of `kind`.
    ///
    /// Returns an error in strict mode; otherwise records a warning and the
    /// caller goes on with its repair.
    pub fn repair(
        &mut self,
        kind: &'static str,
        file: &Path,
        pos: Position,
        count: u64,
        message: impl FnOnce() -> String,
    ) -> Result<(), Error> {
        if count == 0 {
            return Ok(());
        }
        if self.strict {
            return Err(Error::parse(
                file,
                pos,
                format!(
                    "{} (strict mode; without --strict this is repaired)",
                    message()
                ),
            ));
        }
        self.note(kind, file, pos, count, message);
        Ok(())
    }

    /// Records a warning that is not damage (kept in strict mode too):
    /// something the reader did differently from what the file says.
    pub fn note(
        &mut self,
        kind: &'static str,
        file: &Path,
        pos: Position,
        count: u64,
        message: impl FnOnce() -> String,
    ) {
        if count == 0 {
            return;
        }
        if let Some(w) = self.warnings.iter_mut().find(|w| w.kind == kind) {
            w.count += count;
        } else {
            self.warnings.push(Warning {
                kind,
                count,
                file: file.to_path_buf(),
                first: pos,
                message: message(),
            });
        }
    }

    /// Total number of affected records over all kinds.
    pub fn total(&self) -> u64 {
        self.warnings.iter().map(|w| w.count).sum()
    }

    /// Merges the warnings of `other` into `self`.
    pub fn absorb(&mut self, other: Diagnostics) {
        for w in other.warnings {
            if let Some(mine) = self.warnings.iter_mut().find(|m| m.kind == w.kind) {
                mine.count += w.count;
            } else {
                self.warnings.push(w);
            }
        }
    }
}
