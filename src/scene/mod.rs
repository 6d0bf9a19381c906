//! Scenes: what the renderer draws, built by pure functions from analysis
//! results (one module per view) and tested without a GPU.
//!
//! The renderer knows only these primitives: lit triangle meshes with
//! per-vertex colour and transparency, instanced glyphs, line segments,
//! and text labels; a scene also carries its colour legend, a key of
//! categorical marks, its title and background.
//!
//! Colours are sRGB-encoded, as in the colour maps and the legend (the
//! renderer converts them to linear light once, in the shaders; glTF
//! export converts them for `COLOR_0`). The views themselves live in
//! [`crate::views`].

pub mod axes;
pub mod camera;
pub mod chart;
pub mod colormap;
pub mod path;
pub mod pick;

use serde::Serialize;

pub use camera::Camera;

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

    /// Sets every vertex normal to the average of the face normals around
    /// it (weighted by area); isolated vertices face +z.
    pub fn smooth_normals(&mut self) {
        use glam::Vec3;
        let mut acc = vec![Vec3::ZERO; self.vertices.len()];
        for tri in self.indices.chunks_exact(3) {
            let [a, b, c] =
                [tri[0], tri[1], tri[2]].map(|i| Vec3::from(self.vertices[i as usize].position));
            let n = (b - a).cross(c - a);
            for &i in tri {
                acc[i as usize] += n;
            }
        }
        for (v, n) in self.vertices.iter_mut().zip(acc) {
            v.normal = n.try_normalize().unwrap_or(Vec3::Z).into();
        }
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

/// Which point of a label's text sits at its anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LabelAlign {
    /// The text starts right of and below the anchor.
    LeftTop,
    /// Centred under the anchor (tick labels of a horizontal axis).
    CenterTop,
    /// Ends left of the anchor, vertically centred (ticks of a left axis).
    RightCenter,
    /// Starts right of the anchor, vertically centred.
    LeftCenter,
    /// Centred above the anchor.
    CenterBottom,
    /// Centred, one text line below the tick labels (an axis title).
    AxisTitleBelow,
    /// Rotated a quarter turn, at the left edge of the image, centred on the anchor's height (a left axis title).
    AxisTitleLeft,
}

/// A text label.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub text: String,
    pub anchor: Anchor,
    /// Height in pixels.
    pub size: f32,
    pub color: [f32; 4],
    pub align: LabelAlign,
    /// Labels are placed in order of priority (lower first); a label that
    /// would overlap one already placed is left out.
    pub priority: u8,
}

impl Label {
    /// A label left-top aligned at a point of the scene.
    pub fn world(text: impl Into<String>, at: [f32; 3], size: f32, color: [f32; 4]) -> Label {
        Label {
            text: text.into(),
            anchor: Anchor::World(at),
            size,
            color,
            align: LabelAlign::LeftTop,
            priority: 2,
        }
    }

    pub fn aligned(mut self, align: LabelAlign) -> Label {
        self.align = align;
        self
    }

    pub fn priority(mut self, p: u8) -> Label {
        self.priority = p;
        self
    }
}

/// The colour legend of a scene: the colour map spans `min..max` (with
/// `min == max`, one value drawn in the map's middle colour).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Legend {
    pub title: String,
    pub colormap: String,
    pub min: f64,
    pub max: f64,
    pub unit: axes::Unit,
    /// A note under the bar (e.g. the scale of the range).
    pub note: Option<String>,
}

/// How a key entry is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KeyMark {
    /// A filled box.
    Bar,
    /// A thin line.
    Line,
}

/// One entry of a scene's key: a mark of a colour and what it means.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyEntry {
    pub mark: KeyMark,
    pub color: [f32; 4],
    pub text: String,
}

/// Pixels kept free of geometry around a 2D chart for its overlays
/// (title, axes, legend).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Margins {
    pub left: f32,
    pub top: f32,
    pub right: f32,
    pub bottom: f32,
}

/// The width (pixels) of the column on the right of an image that holds
/// the colour legend and the key: the overlay draws them there, and a
/// chart's camera keeps it clear.
pub const LEGEND_COLUMN: f32 = 150.0;

impl Margins {
    /// Whether an image `width` pixels wide is too narrow for the side
    /// margins as they are (they would take more than half of it).
    pub fn narrow(&self, width: f32) -> bool {
        width < 2.0 * (self.left + self.right)
    }

    /// The margins of a chart of `width × height` pixels: small images
    /// shrink them so that the chart keeps half the image, except that the
    /// right one keeps the legend's column when the scene has a legend or
    /// key (`column`; drawn over the chart otherwise) while the chart
    /// keeps 40 %.
    pub fn fitted(&self, width: f32, height: f32, column: bool) -> Margins {
        let kx = ((width * 0.5) / (self.left + self.right)).min(1.0);
        let ky = ((height * 0.5) / (self.top + self.bottom)).min(1.0);
        let keep = if column {
            self.right.min(LEGEND_COLUMN)
        } else {
            0.0
        };
        Margins {
            left: self.left * kx,
            top: self.top * ky,
            right: (self.right * kx).max(keep.min(width * 0.6 - self.left * kx)),
            bottom: self.bottom * ky,
        }
    }
}

impl Default for Margins {
    fn default() -> Self {
        Margins {
            left: 84.0,
            top: 44.0,
            right: 160.0,
            bottom: 52.0,
        }
    }
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
    pub key: Vec<KeyEntry>,
    pub projection: Projection,
    /// The background colour (sRGB).
    pub background: [f32; 4],
    /// 2D views: pixels kept free for the overlays.
    pub margins: Margins,
    /// What the world axes mean, with units (glTF export names them).
    pub axes: String,
    /// What the mouse can hover and select ([`pick::pick_at`]).
    pub picks: Vec<pick::Pick>,
    /// Meshes a GPU kernel made where they are drawn (the Kiviat tube of a
    /// field left on the GPU): drawn like `meshes`, never read back, so
    /// not exported to glTF.
    #[serde(skip)]
    pub resident: Vec<crate::gpu::GpuMesh>,
    /// Space the geometry may fill whatever its values (the Kiviat tube's
    /// unit radius): part of [`Scene::bounds`], so the camera frames every
    /// frame of an animation, and a mesh made on the GPU, alike.
    pub extent: Option<([f32; 3], [f32; 3])>,
}

/// The dark background of 3D views (sRGB).
pub const DARK: [f32; 4] = [0.09, 0.10, 0.14, 1.0];
/// The light background of 2D charts (sRGB).
pub const LIGHT: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

/// sRGB-encoded component → linear light.
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
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
            key: Vec::new(),
            background: match projection {
                Projection::Perspective => DARK,
                Projection::Orthographic => LIGHT,
            },
            margins: Margins::default(),
            axes: String::new(),
            picks: Vec::new(),
            resident: Vec::new(),
            extent: None,
            projection,
        }
    }

    /// Outlines the rectangle `[x0, y0]–[x1, y1]` at depth `z` (a
    /// selection in 2D views).
    pub fn frame_rect(&mut self, [x0, y0]: [f32; 2], [x1, y1]: [f32; 2], z: f32, color: [f32; 4]) {
        for (a, b) in [
            ([x0, y0], [x1, y0]),
            ([x1, y0], [x1, y1]),
            ([x1, y1], [x0, y1]),
            ([x0, y1], [x0, y0]),
        ] {
            self.lines.push(Segment {
                a: [a[0], a[1], z],
                b: [b[0], b[1], z],
                color,
            });
        }
    }

    /// Outlines a cube of half-size `h` around `c` (a selection in 3D
    /// views).
    pub fn frame_box(&mut self, c: [f32; 3], h: f32, color: [f32; 4]) {
        let p = |i: u32| {
            [
                c[0] + if i & 1 == 0 { -h } else { h },
                c[1] + if i & 2 == 0 { -h } else { h },
                c[2] + if i & 4 == 0 { -h } else { h },
            ]
        };
        for i in 0..8u32 {
            for bit in [1u32, 2, 4] {
                if i & bit == 0 {
                    self.lines.push(Segment {
                        a: p(i),
                        b: p(i | bit),
                        color,
                    });
                }
            }
        }
    }

    /// Whether the background is dark (light ink for the overlays).
    pub fn is_dark(&self) -> bool {
        self.background[0] + self.background[1] + self.background[2] < 1.5
    }

    /// Triangles over all meshes and glyphs.
    pub fn triangles(&self) -> usize {
        self.meshes.iter().map(Mesh::triangles).sum::<usize>()
            + self.resident.iter().map(|m| m.triangles()).sum::<usize>()
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
            .chain(self.resident.iter().flat_map(|m| [m.bounds.0, m.bounds.1]))
            .chain(self.extent.iter().flat_map(|&(lo, hi)| [lo, hi]))
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
