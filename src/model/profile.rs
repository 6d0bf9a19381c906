//! Profiles: a matrix of values per row (function or source line) and column
//! (thread or processor), for one or more metrics. TAU profiles and
//! PerfVisS line-profile tables are read into it; it feeds the profile
//! terrain and its overview.

use serde::Serialize;

/// What the rows of a profile are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// Functions (and call paths), as TAU profiles them.
    Function,
    /// Source lines, as a pc-sampling line profile has them.
    Line,
}

/// One metric of a profile: `rows × columns` values, row-major.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileMetric {
    pub name: String,
    pub unit: String,
    pub values: Vec<f64>,
}

/// A procedure's line range in a line profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Procedure {
    pub name: String,
    pub first_line: i64,
    pub last_line: i64,
}

/// A profile matrix.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileMatrix {
    pub source: std::path::PathBuf,
    /// The format it was read from (`TAU profile`, `line profile table`).
    pub format: String,
    pub row_kind: RowKind,
    /// Row labels: function names, or `line N`.
    pub rows: Vec<String>,
    /// Line numbers of the rows (line profiles); row indices otherwise.
    pub row_ids: Vec<i64>,
    /// Whether a row is a call path (`a => b`), not a function.
    pub callpath: Vec<bool>,
    /// TAU group of each row (empty when unknown).
    pub groups: Vec<String>,
    /// Column labels: threads (`node,context,thread`) or processors.
    pub columns: Vec<String>,
    pub metrics: Vec<ProfileMetric>,
    pub procedures: Vec<Procedure>,
    pub source_file: Option<String>,
}

impl ProfileMatrix {
    pub fn num_rows(&self) -> usize {
        self.rows.len()
    }
    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }
    /// The metric shown by default: the first exclusive one (TAU), or the
    /// first metric (ticks of a line profile).
    pub fn primary_metric(&self) -> usize {
        self.metrics
            .iter()
            .position(|m| m.name.starts_with("exclusive"))
            .unwrap_or(0)
    }

    /// The metric named `name`.
    pub fn metric(&self, name: &str) -> Option<&ProfileMetric> {
        self.metrics.iter().find(|m| m.name == name)
    }
    /// Value of metric `m` at (`row`, `col`).
    pub fn value(&self, m: usize, row: usize, col: usize) -> Option<f64> {
        self.metrics
            .get(m)?
            .values
            .get(row * self.columns.len() + col)
            .copied()
    }
    /// Sum over the columns of each row, for metric `m`.
    pub fn row_totals(&self, m: usize) -> Vec<f64> {
        let c = self.columns.len().max(1);
        match self.metrics.get(m) {
            Some(met) => met.values.chunks(c).map(|r| r.iter().sum()).collect(),
            None => vec![0.0; self.rows.len()],
        }
    }
    /// Sum over the rows of each column, for metric `m` (call paths excluded,
    /// as their time is already in their functions).
    pub fn column_totals(&self, m: usize) -> Vec<f64> {
        let c = self.columns.len();
        let mut t = vec![0.0; c];
        if let Some(met) = self.metrics.get(m) {
            for (r, row) in met.values.chunks(c.max(1)).enumerate() {
                if self.callpath.get(r).copied().unwrap_or(false) {
                    continue;
                }
                for (x, v) in t.iter_mut().zip(row) {
                    *x += v;
                }
            }
        }
        t
    }
}
