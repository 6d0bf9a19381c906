//! Cameras: an orbit camera around the scene (3D views) and an orthographic
//! fit of the scene's x-y bounds (2D views). Serializable, so that a view
//! state file can reproduce a view exactly.

use glam::{Mat4, Vec3};
use serde::{Deserialize, Serialize};

use super::{Projection, Scene};

/// A camera.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Camera {
    pub eye: [f32; 3],
    pub target: [f32; 3],
    pub up: [f32; 3],
    /// Vertical field of view in degrees (perspective).
    pub fov_y: f32,
    /// Orthographic: the x-y rectangle shown `[x0, y0, x1, y1]`.
    pub ortho: Option<[f32; 4]>,
    /// Perspective: the image moved left by this fraction of its width (a
    /// lens shift: the camera still orbits the target), so that a narrow
    /// image keeps the legend's column clear.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shift: f32,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

impl Camera {
    /// The default camera of a scene for an image of `width × height`
    /// pixels. Orthographic (2D) views map the scene's x-y bounds onto the
    /// image less the scene's margins (kept for title, axes and legend).
    /// Perspective views look at the centre of the bounding sphere from
    /// above and aside, far enough that the whole sphere (with a margin)
    /// fits the narrower field of view, less the legend's strip.
    pub fn fit(scene: &Scene, width: u32, height: u32) -> Camera {
        let (lo, hi) = scene.bounds().unwrap_or(([-1.0; 3], [1.0; 3]));
        let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
        let c = (lo + hi) * 0.5;
        let (w, h) = (width.max(1) as f32, height.max(1) as f32);
        match scene.projection {
            Projection::Orthographic => {
                let column = scene.legend.is_some() || !scene.key.is_empty();
                let m = scene.margins.fitted(w, h, column);
                let (l, r, t, b) = (m.left, m.right, m.top, m.bottom);
                let span = (hi - lo).max(Vec3::splat(1e-6));
                let sx = (w - l - r) / span.x;
                let sy = (h - t - b) / span.y;
                Camera {
                    eye: [c.x, c.y, hi.z + 10.0],
                    target: [c.x, c.y, lo.z - 10.0],
                    up: [0.0, 1.0, 0.0],
                    fov_y: 45.0,
                    ortho: Some([lo.x - l / sx, lo.y - b / sy, hi.x + r / sx, hi.y + t / sy]),
                    shift: 0.0,
                }
            }
            Projection::Perspective => {
                let radius = ((hi - lo).length() * 0.5).max(1e-3);
                let fov_y: f32 = 40.0;
                let half_y = (fov_y.to_radians() / 2.0).tan();
                // the legend's strip on the right is not available; a
                // narrow image (a window pane) draws the scene beside it
                let column = super::LEGEND_COLUMN;
                let (usable, shift) = if scene.legend.is_none() {
                    (w, 0.0)
                } else if scene.margins.narrow(w) {
                    let usable = (w - column).max(w * 0.4);
                    (usable, (w - usable) / 2.0 / w)
                } else {
                    ((w - column).max(w * 0.6), 0.0)
                };
                let half_x = half_y * usable / h;
                let half = half_y.min(half_x).atan();
                let dist = radius / half.sin() * 1.05;
                let dir = Vec3::new(1.0, 0.9, 1.1).normalize();
                let eye = c + dir * dist;
                Camera {
                    eye: eye.into(),
                    target: c.into(),
                    up: [0.0, 1.0, 0.0],
                    fov_y,
                    ortho: None,
                    shift,
                }
            }
        }
    }

    /// The view-projection matrix for an image of `aspect` = width / height.
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        // (orthographic charts ignore the aspect: they fill the image)
        let (eye, target) = (Vec3::from(self.eye), Vec3::from(self.target));
        let view = Mat4::look_at_rh(eye, target, Vec3::from(self.up));
        let dist = (target - eye).length().max(1e-3);
        let proj = match self.ortho {
            Some([x0, y0, x1, y1]) => {
                // 2D charts fill the image: the rectangle maps onto it exactly
                let (ex, ey) = (eye.x, eye.y);
                Mat4::orthographic_rh(x0 - ex, x1 - ex, y0 - ey, y1 - ey, 0.0, dist * 2.0 + 20.0)
            }
            None => {
                // the lens shift: x in clip space moves by 2 × shift (of w)
                Mat4::from_translation(Vec3::new(-2.0 * self.shift, 0.0, 0.0))
                    * Mat4::perspective_rh(
                        self.fov_y.to_radians(),
                        aspect,
                        dist * 0.01,
                        dist * 10.0,
                    )
            }
        };
        proj * view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{KeyEntry, KeyMark, LEGEND_COLUMN, Mesh};

    /// The pixel x of the chart's right edge (scene x = 1) in an image
    /// `w` wide.
    fn right_edge(scene: &Scene, w: u32) -> f32 {
        let c = Camera::fit(scene, w, 500);
        let [x0, _, x1, _] = c.ortho.unwrap();
        (1.0 - x0) / (x1 - x0) * w as f32
    }

    #[test]
    fn small_charts_keep_the_legend_column_clear() {
        let mut s = Scene::new("chart", Projection::Orthographic);
        let mut m = Mesh::default();
        m.rect(0.0, 0.0, 1.0, 1.0, 0.0, [1.0; 4]);
        s.meshes.push(m);
        // without legend or key: margins shrink in proportion
        let bare = right_edge(&s, 360);
        assert!(bare > 360.0 - LEGEND_COLUMN + 20.0, "{bare}");
        s.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: [0.0; 4],
            text: "a mark".into(),
        });
        for w in [300u32, 360, 420] {
            // the chart keeps 40 % of the image at least
            let edge = right_edge(&s, w);
            let chart = edge - s.margins.fitted(w as f32, 500.0, true).left;
            assert!(chart >= 0.4 * w as f32 - 0.01, "{w}: {chart}");
        }
        // and is clear of the column where that leaves it 40 %
        assert!(right_edge(&s, 360) <= 360.0 - LEGEND_COLUMN + 0.01);
        // large images keep the margins as they are
        assert!((right_edge(&s, 1280) - (1280.0 - s.margins.right)).abs() < 0.01);
    }

    #[test]
    fn narrow_3d_views_are_drawn_beside_the_legend() {
        let mut s = Scene::new("3d", Projection::Perspective);
        let mut m = Mesh::default();
        m.rect(-1.0, -1.0, 1.0, 1.0, 0.0, [1.0; 4]);
        s.meshes.push(m);
        s.legend = Some(crate::scene::Legend {
            title: "v".into(),
            colormap: "viridis".into(),
            min: 0.0,
            max: 1.0,
            unit: crate::scene::axes::Unit::Fraction,
            note: None,
        });
        // the pixel x of the scene's centre in an image w × 500
        let centre = |w: u32| {
            let c = Camera::fit(&s, w, 500);
            let p = c.view_proj(w as f32 / 500.0).project_point3(Vec3::ZERO);
            (p.x + 1.0) / 2.0 * w as f32
        };
        // narrow: centred in what the legend's column leaves
        for w in [300u32, 360, 420] {
            let usable = (w as f32 - LEGEND_COLUMN).max(0.4 * w as f32);
            assert!((centre(w) - usable / 2.0).abs() < 0.5, "{w}: {}", centre(w));
        }
        // wide: centred in the image, as before
        for w in [640u32, 1280] {
            assert!((centre(w) - w as f32 / 2.0).abs() < 0.5, "{w}");
            assert_eq!(Camera::fit(&s, w, 500).shift, 0.0);
        }
        // a view state without the field reads as no shift
        let c: Camera = serde_json::from_str(
            r#"{"eye":[1,1,1],"target":[0,0,0],"up":[0,1,0],"fov_y":40,"ortho":null}"#,
        )
        .unwrap();
        assert_eq!(c.shift, 0.0);
    }
}
