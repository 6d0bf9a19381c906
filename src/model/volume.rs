//! Volumes: fields over an X × Y × Z cube of elements, one per step of an
//! animation axis (code regions of a Boxfish table, time bins, the `T` of
//! a 4D array). Values are f64, x fastest, then y, z, then the step.

use ndarray::{ArrayView3, ArrayView4};
use serde::Serialize;

use crate::error::{Error, Result};

/// One quantity over the cube, per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Volume {
    /// What the values are ("netWrites", "accesses").
    pub name: String,
    /// Their unit ("" for plain counts of the name).
    pub unit: String,
    /// X, Y, Z.
    pub dims: [usize; 3],
    /// Names of the three axes ("x", "torus x", "element x").
    pub axes: [String; 3],
    /// What the steps are ("code region", "time bin", "T").
    pub step_axis: String,
    /// A label per step ("-2", "0.5 ms").
    pub steps: Vec<String>,
    /// `steps.len() × Z × Y × X` values.
    pub values: Vec<f64>,
    /// When the steps are time bins of a trace: their edges in ns
    /// (`steps + 1`); empty otherwise (code regions, tensor intervals).
    pub times: Vec<crate::model::Time>,
}

impl Volume {
    /// Checks that the shape holds the values.
    pub fn new(
        name: impl Into<String>,
        unit: impl Into<String>,
        dims: [usize; 3],
        axes: [String; 3],
        step_axis: impl Into<String>,
        steps: Vec<String>,
        values: Vec<f64>,
    ) -> Result<Volume> {
        let n = dims
            .iter()
            .try_fold(steps.len(), |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::Invalid(format!("a volume of {dims:?} overflows")))?;
        if n != values.len() || n == 0 {
            return Err(Error::Invalid(format!(
                "a volume of {} steps × {:?} needs {n} values, found {}",
                steps.len(),
                dims,
                values.len()
            )));
        }
        Ok(Volume {
            name: name.into(),
            unit: unit.into(),
            dims,
            axes,
            step_axis: step_axis.into(),
            steps,
            values,
            times: Vec::new(),
        })
    }

    /// Cells per step.
    pub fn cells(&self) -> usize {
        self.dims[0] * self.dims[1] * self.dims[2]
    }

    /// All steps as a `[step, z, y, x]` array view.
    pub fn view(&self) -> ArrayView4<'_, f64> {
        let [x, y, z] = self.dims;
        ArrayView4::from_shape((self.steps.len(), z, y, x), &self.values)
            .expect("shape checked in Volume::new")
    }

    /// One step as a `[z, y, x]` array view.
    pub fn step(&self, t: usize) -> ArrayView3<'_, f64> {
        let [x, y, z] = self.dims;
        let n = self.cells();
        let t = t.min(self.steps.len() - 1);
        ArrayView3::from_shape((z, y, x), &self.values[t * n..(t + 1) * n])
            .expect("shape checked in Volume::new")
    }

    /// The smallest and largest finite value over all steps.
    pub fn range(&self) -> (f64, f64) {
        self.values
            .iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            })
    }
}

/// The volumes of one input (every numeric column of a Boxfish node
/// table, or the one array of a `.npy`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolumeSet {
    pub source: std::path::PathBuf,
    /// The format read ("Boxfish tables", "NumPy volume").
    pub format: String,
    pub volumes: Vec<Volume>,
    /// The network links between the nodes, with a value per step (Boxfish
    /// link tables).
    pub links: Option<LinkSet>,
}

/// Directed links between nodes of a mesh or torus, each with a value
/// (packets) per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSet {
    /// The value's name (`packets`).
    pub name: String,
    /// Nodes per axis.
    pub dims: [usize; 3],
    /// Whether the network wraps around (a torus).
    pub torus: bool,
    pub src: Vec<[usize; 3]>,
    pub dst: Vec<[usize; 3]>,
    /// Step labels (code regions).
    pub steps: Vec<String>,
    /// `values[step * links + link]`.
    pub values: Vec<f64>,
}

impl LinkSet {
    pub fn len(&self) -> usize {
        self.src.len()
    }
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
    /// The values of step `t`.
    pub fn step(&self, t: usize) -> &[f64] {
        let n = self.len();
        let t = t.min(self.steps.len().saturating_sub(1));
        self.values.get(t * n..(t + 1) * n).unwrap_or(&[])
    }
}

impl VolumeSet {
    /// The volume called `name`, or an error listing them.
    pub fn find(&self, name: &str) -> Result<&Volume> {
        self.volumes.iter().find(|v| v.name == name).ok_or_else(|| {
            Error::Invalid(format!(
                "no quantity '{name}' in {} (quantities: {})",
                self.source.display(),
                self.volumes
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}
