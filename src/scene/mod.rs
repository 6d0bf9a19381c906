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

/// The shape of a glyph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GlyphShape {
    /// A sphere of diameter 1.
    Sphere,
    /// A unit box centred at the origin (towers are boxes scaled in height).
    Box,
}

/// One glyph: where it is, its size along each axis, its colour.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable, Serialize)]
pub struct GlyphInstance {
    pub position: [f32; 3],
    pub scale: [f32; 3],
    pub color: [f32; 4],
}

/// Many glyphs of one shape, drawn instanced.
#[derive(Debug, Clone, Serialize)]
pub struct Glyphs {
    pub shape: GlyphShape,
    pub instances: Vec<GlyphInstance>,
}

impl Glyphs {
    /// Triangles of the base shape.
    pub fn shape_triangles(shape: GlyphShape) -> usize {
        match shape {
            GlyphShape::Box => 12,
            GlyphShape::Sphere => 2 * SPHERE_SEGMENTS * (SPHERE_RINGS - 1),
        }
    }
}

/// Tessellation of the sphere glyph.
pub const SPHERE_SEGMENTS: usize = 16;
pub const SPHERE_RINGS: usize = 10;

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
    pub glyphs: Vec<Glyphs>,
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
            glyphs: Vec::new(),
            lines: Vec::new(),
            labels: Vec::new(),
            legend: None,
            projection,
        }
    }

    /// Triangles over all meshes and glyphs.
    pub fn triangles(&self) -> usize {
        self.meshes.iter().map(Mesh::triangles).sum::<usize>()
            + self
                .glyphs
                .iter()
                .map(|g| g.instances.len() * Glyphs::shape_triangles(g.shape))
                .sum::<usize>()
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
            .chain(self.lines.iter().flat_map(|l| [l.a, l.b]))
            .chain(self.glyphs.iter().flat_map(|g| {
                g.instances.iter().flat_map(|i| {
                    let h = [i.scale[0] / 2.0, i.scale[1] / 2.0, i.scale[2] / 2.0];
                    let p = i.position;
                    [
                        [p[0] - h[0], p[1] - h[1], p[2] - h[2]],
                        [p[0] + h[0], p[1] + h[1], p[2] + h[2]],
                    ]
                })
            }));
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

/// The base mesh of a glyph shape: (positions, normals, indices).
pub fn glyph_mesh(shape: GlyphShape) -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<u32>) {
    match shape {
        GlyphShape::Box => {
            let mut p = Vec::new();
            let mut n = Vec::new();
            let mut idx = Vec::new();
            // six faces, four vertices each, outward normals
            let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
                ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
                ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
                ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
                ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
                ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
                ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
            ];
            for (nrm, u, v) in faces {
                let base = p.len() as u32;
                for (a, b) in [(-0.5f32, -0.5f32), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)] {
                    p.push([0, 1, 2].map(|c| nrm[c] * 0.5 + u[c] * a + v[c] * b));
                    n.push(nrm);
                }
                idx.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
            }
            (p, n, idx)
        }
        GlyphShape::Sphere => {
            let (s, r) = (SPHERE_SEGMENTS, SPHERE_RINGS);
            let mut p = Vec::new();
            let mut idx = Vec::new();
            for i in 0..=r {
                let phi = std::f32::consts::PI * i as f32 / r as f32;
                for j in 0..s {
                    let th = std::f32::consts::TAU * j as f32 / s as f32;
                    p.push([
                        phi.sin() * th.cos() * 0.5,
                        phi.cos() * 0.5,
                        phi.sin() * th.sin() * 0.5,
                    ]);
                }
            }
            for i in 0..r {
                for j in 0..s {
                    let (a, b) = ((i * s + j) as u32, (i * s + (j + 1) % s) as u32);
                    let (c, d) = (a + s as u32, b + s as u32);
                    if i > 0 {
                        idx.extend_from_slice(&[a, b, d]);
                    }
                    if i + 1 < r {
                        idx.extend_from_slice(&[a, d, c]);
                    }
                }
            }
            let n = p
                .iter()
                .map(|v| [v[0] * 2.0, v[1] * 2.0, v[2] * 2.0])
                .collect();
            (p, n, idx)
        }
    }
}

/// `[r, g, b]` + alpha.
pub fn rgba(c: [f32; 3], a: f32) -> [f32; 4] {
    [c[0], c[1], c[2], a]
}
