//! Scenes: what the renderer draws, built by pure functions from analysis
//! results (one module per view) and tested without a GPU.
//!
//! The renderer knows only these primitives: lit triangle meshes with
//! per-vertex colour and transparency, line segments, and text labels; a
//! scene also carries its colour legend, title and a default camera.

pub mod colormap;
pub mod kiviat;
pub mod moments;

use serde::Serialize;

/// A vertex of a lit mesh.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable, Serialize)]
pub struct Vertex {
    pub position: [f32; 3],
    pub normal: [f32; 3],
    pub color: [f32; 4],
}

/// A triangle mesh. `lit = false` draws flat colours (2D views).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Mesh {
    pub vertices: Vec<Vertex>,
    pub indices: Vec<u32>,
    pub lit: bool,
}

impl Mesh {
    pub fn triangles(&self) -> usize {
        self.indices.len() / 3
    }

    /// Adds an axis-aligned rectangle in the z = `z` plane (unlit 2D views).
    pub fn rect(&mut self, x0: f32, y0: f32, x1: f32, y1: f32, z: f32, color: [f32; 4]) {
        let base = self.vertices.len() as u32;
        for (x, y) in [(x0, y0), (x1, y0), (x1, y1), (x0, y1)] {
            self.vertices.push(Vertex {
                position: [x, y, z],
                normal: [0.0, 0.0, 1.0],
                color,
            });
        }
        self.indices
            .extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
}

/// A line segment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segment {
    pub a: [f32; 3],
    pub b: [f32; 3],
    pub color: [f32; 4],
}

/// Where a label sits: in the scene, or in pixels of the image.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Anchor {
    World([f32; 3]),
    /// Fractions of the image size (0..1, origin top left).
    Screen([f32; 2]),
}

/// A text label.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub text: String,
    pub anchor: Anchor,
    /// Height in pixels.
    pub size: f32,
    pub color: [f32; 4],
}

/// The colour legend of a scene.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Legend {
    pub title: String,
    pub colormap: String,
    pub min: f64,
    pub max: f64,
    pub unit: String,
}

/// How the scene is looked at by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Projection {
    /// 3D perspective, orbiting the scene's centre.
    Perspective,
    /// 2D: the scene's x-y bounds fill the image.
    Orthographic,
}

/// Everything one view draws.
#[derive(Debug, Clone, Serialize)]
pub struct Scene {
    pub title: String,
    pub meshes: Vec<Mesh>,
    pub lines: Vec<Segment>,
    pub labels: Vec<Label>,
    pub legend: Option<Legend>,
    pub projection: Projection,
}

impl Scene {
    pub fn new(title: impl Into<String>, projection: Projection) -> Self {
        Scene {
            title: title.into(),
            meshes: Vec::new(),
            lines: Vec::new(),
            labels: Vec::new(),
            legend: None,
            projection,
        }
    }

    /// Triangles over all meshes.
    pub fn triangles(&self) -> usize {
        self.meshes.iter().map(Mesh::triangles).sum()
    }

    /// The axis-aligned bounds of all geometry (`None` when empty).
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        let mut any = false;
        let pts = self
            .meshes
            .iter()
            .flat_map(|m| m.vertices.iter().map(|v| v.position))
            .chain(self.lines.iter().flat_map(|l| [l.a, l.b]));
        for p in pts {
            any = true;
            for c in 0..3 {
                lo[c] = lo[c].min(p[c]);
                hi[c] = hi[c].max(p[c]);
            }
        }
        any.then_some((lo, hi))
    }
}

/// `[r, g, b]` + alpha.
pub fn rgba(c: [f32; 3], a: f32) -> [f32; 4] {
    [c[0], c[1], c[2], a]
}
