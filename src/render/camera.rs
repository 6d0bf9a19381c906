//! Cameras: an orbit camera around the scene (3D views) and an orthographic
//! fit of the scene's x-y bounds (2D views). Serializable, so that a view
//! state file can reproduce a view exactly.

use glam::{Mat4, Vec3};
use serde::{Deserialize, Serialize};

use crate::scene::{Projection, Scene};

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
}

impl Camera {
    /// The default camera of a scene: perspective views look at the bounds'
    /// centre from above and aside; orthographic views fit the bounds with
    /// a margin.
    pub fn fit(scene: &Scene) -> Camera {
        let (lo, hi) = scene.bounds().unwrap_or(([-1.0; 3], [1.0; 3]));
        let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
        let c = (lo + hi) * 0.5;
        match scene.projection {
            Projection::Orthographic => {
                let m = (hi - lo) * 0.04 + Vec3::splat(1e-3);
                Camera {
                    eye: [c.x, c.y, hi.z + 10.0],
                    target: [c.x, c.y, lo.z - 10.0],
                    up: [0.0, 1.0, 0.0],
                    fov_y: 45.0,
                    // room on the right for the colour legend
                    ortho: Some([
                        lo.x - m.x,
                        lo.y - m.y * 2.0,
                        hi.x + (hi.x - lo.x) * 0.12,
                        hi.y + m.y * 2.5,
                    ]),
                }
            }
            Projection::Perspective => {
                let r = ((hi - lo).length() * 0.5).max(1e-3);
                let dir = Vec3::new(1.0, 0.9, 1.1).normalize();
                let eye = c + dir * r * 2.2;
                Camera {
                    eye: eye.into(),
                    target: c.into(),
                    up: [0.0, 1.0, 0.0],
                    fov_y: 40.0,
                    ortho: None,
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
            None => Mat4::perspective_rh(self.fov_y.to_radians(), aspect, dist * 0.01, dist * 10.0),
        };
        proj * view
    }
}
