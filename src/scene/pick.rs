//! Picking on the CPU: the scene builders describe what lies where
//! (processor rows, matrix cells, nodes, points) with the text a hover
//! shows; [`pick_at`] finds what is under the mouse by projecting those
//! shapes with the view's camera. Scenes keep their picks at the level of
//! detail they draw (never more than the pixels), so a linear scan per
//! mouse move stays well under a millisecond.

use glam::{Vec3, Vec4};
use serde::Serialize;

use super::{Camera, Scene};

/// Where a pickable thing lies, in world coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum PickShape {
    /// An axis-aligned rectangle `[x0, y0]–[x1, y1]` at depth `z` (2D
    /// views: rows, cells, bars).
    Rect {
        min: [f32; 2],
        max: [f32; 2],
        z: f32,
    },
    /// A point (3D nodes, glyphs, scatter points), picked within a few
    /// pixels.
    Point([f32; 3]),
}

/// Something the mouse can hover and select.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pick {
    pub shape: PickShape,
    /// What a hover shows: the element, processor, time and value.
    pub text: String,
    /// The processor (location index) it stands for, linking the selection
    /// across views.
    pub processor: Option<usize>,
}

impl Pick {
    pub fn rect(min: [f32; 2], max: [f32; 2], text: String, processor: Option<usize>) -> Pick {
        Pick {
            shape: PickShape::Rect {
                min: [min[0].min(max[0]), min[1].min(max[1])],
                max: [min[0].max(max[0]), min[1].max(max[1])],
                z: 0.0,
            },
            text,
            processor,
        }
    }

    pub fn point(p: [f32; 3], text: String, processor: Option<usize>) -> Pick {
        Pick {
            shape: PickShape::Point(p),
            text,
            processor,
        }
    }
}

/// How near (pixels) the mouse must be to a point.
pub const POINT_RADIUS: f32 = 10.0;

/// Projects a world point to pixels of a `width × height` image (origin
/// top left); `None` behind the camera.
pub fn to_pixels(camera: &Camera, (width, height): (f32, f32), p: [f32; 3]) -> Option<[f32; 2]> {
    project(
        &camera.view_proj(width / height.max(1.0)),
        (width, height),
        p,
    )
}

fn project(vp: &glam::Mat4, (width, height): (f32, f32), p: [f32; 3]) -> Option<[f32; 2]> {
    let c = *vp * Vec4::new(p[0], p[1], p[2], 1.0);
    (c.w > 1e-6).then(|| {
        let (x, y) = (c.x / c.w, c.y / c.w);
        [(x + 1.0) * 0.5 * width, (1.0 - y) * 0.5 * height]
    })
}

/// What is under the mouse at pixel `m` of a `width × height` view: the
/// rectangle holding it (the smallest, when they nest), else the nearest
/// point within [`POINT_RADIUS`] (the one nearest the camera on ties).
pub fn pick_at<'s>(
    scene: &'s Scene,
    camera: &Camera,
    size: (f32, f32),
    m: [f32; 2],
) -> Option<&'s Pick> {
    let mut best_rect: Option<(f32, &Pick)> = None;
    let mut best_point: Option<(f32, f32, &Pick)> = None;
    let eye = Vec3::from(camera.eye);
    let vp = camera.view_proj(size.0 / size.1.max(1.0));
    for p in &scene.picks {
        match p.shape {
            PickShape::Rect { min, max, z } => {
                let (Some(a), Some(b)) = (
                    project(&vp, size, [min[0], min[1], z]),
                    project(&vp, size, [max[0], max[1], z]),
                ) else {
                    continue;
                };
                let (x0, x1) = (a[0].min(b[0]), a[0].max(b[0]));
                let (y0, y1) = (a[1].min(b[1]), a[1].max(b[1]));
                // at least a pixel wide, so thin rows stay pickable
                let (x0, x1) = widen(x0, x1);
                let (y0, y1) = widen(y0, y1);
                if m[0] >= x0 && m[0] <= x1 && m[1] >= y0 && m[1] <= y1 {
                    let area = (x1 - x0) * (y1 - y0);
                    if best_rect.is_none_or(|(a, _)| area < a) {
                        best_rect = Some((area, p));
                    }
                }
            }
            PickShape::Point(w) => {
                let Some(s) = project(&vp, size, w) else {
                    continue;
                };
                let d = ((s[0] - m[0]).powi(2) + (s[1] - m[1]).powi(2)).sqrt();
                if d > POINT_RADIUS {
                    continue;
                }
                let depth = eye.distance(Vec3::from(w));
                let better = match best_point {
                    None => true,
                    Some((bd, bz, _)) => d < bd - 0.5 || ((d - bd).abs() <= 0.5 && depth < bz),
                };
                if better {
                    best_point = Some((d, depth, p));
                }
            }
        }
    }
    best_rect.map(|(_, p)| p).or(best_point.map(|(_, _, p)| p))
}

fn widen(a: f32, b: f32) -> (f32, f32) {
    if b - a < 1.0 {
        let c = (a + b) / 2.0;
        (c - 0.5, c + 0.5)
    } else {
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Projection;

    fn ortho_scene() -> (Scene, Camera) {
        let mut s = Scene::new("t", Projection::Orthographic);
        s.picks
            .push(Pick::rect([0.0, 0.0], [1.0, 1.0], "big".into(), Some(0)));
        s.picks
            .push(Pick::rect([0.0, 0.0], [0.5, 0.5], "small".into(), Some(1)));
        s.picks
            .push(Pick::point([2.0, 2.0, 0.0], "node".into(), Some(2)));
        let cam = Camera {
            eye: [1.0, 1.0, 10.0],
            target: [1.0, 1.0, 0.0],
            up: [0.0, 1.0, 0.0],
            fov_y: 40.0,
            ortho: Some([0.0, 0.0, 2.0, 2.0]),
            shift: 0.0,
        };
        (s, cam)
    }

    #[test]
    fn rectangles_and_points_under_the_mouse() {
        let (s, cam) = ortho_scene();
        let size = (200.0, 200.0);
        // world (0.25, 0.25) → pixel (25, 175): inside both rects, the smaller wins
        let p = to_pixels(&cam, size, [0.25, 0.25, 0.0]).unwrap();
        assert!(
            (p[0] - 25.0).abs() < 1.0 && (p[1] - 175.0).abs() < 1.0,
            "{p:?}"
        );
        assert_eq!(pick_at(&s, &cam, size, p).unwrap().text, "small");
        let p = to_pixels(&cam, size, [0.75, 0.75, 0.0]).unwrap();
        assert_eq!(pick_at(&s, &cam, size, p).unwrap().processor, Some(0));
        // the node at (2, 2) is the top right corner; 5 px away still picks it
        assert_eq!(pick_at(&s, &cam, size, [196.0, 3.0]).unwrap().text, "node");
        assert!(pick_at(&s, &cam, size, [150.0, 50.0]).is_none());
    }
}
