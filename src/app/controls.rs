//! Camera controllers: orbit (drag to rotate, wheel to zoom) and
//! fly-through (WASD/QE to move at a speed changed with the wheel, mouse
//! look). Mouse look turns by the mouse's movement, never by frame time,
//! so it feels the same at any frame rate; movement scales with frame time.

use glam::Vec3;

use crate::render::Camera;

/// Radians per pixel of mouse movement.
pub const LOOK_SENSITIVITY: f32 = 0.004;

/// Keys held for flying.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlyKeys {
    pub forward: bool,
    pub back: bool,
    pub left: bool,
    pub right: bool,
    pub up: bool,
    pub down: bool,
}

/// Rotates `cam` around its target by mouse movement (pixels).
pub fn orbit(cam: &mut Camera, dx: f32, dy: f32) {
    let target = Vec3::from(cam.target);
    let offset = Vec3::from(cam.eye) - target;
    let r = offset.length().max(1e-6);
    let mut yaw = offset.z.atan2(offset.x);
    let mut pitch = (offset.y / r).clamp(-1.0, 1.0).asin();
    yaw += dx * LOOK_SENSITIVITY;
    pitch = (pitch + dy * LOOK_SENSITIVITY).clamp(-1.5, 1.5);
    let dir = Vec3::new(
        pitch.cos() * yaw.cos(),
        pitch.sin(),
        pitch.cos() * yaw.sin(),
    );
    cam.eye = (target + dir * r).into();
}

/// Moves the eye towards (or away from) the target: `steps` wheel notches.
pub fn zoom(cam: &mut Camera, steps: f32) {
    let target = Vec3::from(cam.target);
    let offset = Vec3::from(cam.eye) - target;
    cam.eye = (target + offset * 0.9f32.powf(steps)).into();
}

/// Turns the view direction by mouse movement (fly mode): the target moves
/// around the eye.
pub fn look(cam: &mut Camera, dx: f32, dy: f32) {
    let eye = Vec3::from(cam.eye);
    let dir = Vec3::from(cam.target) - eye;
    let r = dir.length().max(1e-6);
    let mut yaw = dir.z.atan2(dir.x);
    let mut pitch = (dir.y / r).clamp(-1.0, 1.0).asin();
    yaw += dx * LOOK_SENSITIVITY;
    pitch = (pitch - dy * LOOK_SENSITIVITY).clamp(-1.5, 1.5);
    let d = Vec3::new(
        pitch.cos() * yaw.cos(),
        pitch.sin(),
        pitch.cos() * yaw.sin(),
    );
    cam.target = (eye + d * r).into();
}

/// Moves eye and target by the held keys: `speed` units per second for
/// `dt` seconds.
pub fn fly(cam: &mut Camera, keys: FlyKeys, speed: f32, dt: f32) {
    let eye = Vec3::from(cam.eye);
    let fwd = (Vec3::from(cam.target) - eye).normalize_or(Vec3::NEG_Z);
    let right = fwd.cross(Vec3::Y).normalize_or(Vec3::X);
    let mut m = Vec3::ZERO;
    let k = |b: bool| b as u8 as f32;
    m += fwd * (k(keys.forward) - k(keys.back));
    m += right * (k(keys.right) - k(keys.left));
    m += Vec3::Y * (k(keys.up) - k(keys.down));
    let step = m.normalize_or_zero() * speed * dt;
    cam.eye = (eye + step).into();
    cam.target = (Vec3::from(cam.target) + step).into();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cam() -> Camera {
        Camera {
            eye: [0.0, 0.0, 5.0],
            target: [0.0, 0.0, 0.0],
            up: [0.0, 1.0, 0.0],
            fov_y: 45.0,
            ortho: None,
            shift: 0.0,
        }
    }

    #[test]
    fn orbit_keeps_distance_and_zoom_scales_it() {
        let mut c = cam();
        orbit(&mut c, 100.0, 30.0);
        assert!((Vec3::from(c.eye).length() - 5.0).abs() < 1e-4);
        zoom(&mut c, 1.0);
        assert!((Vec3::from(c.eye).length() - 4.5).abs() < 1e-4);
    }

    #[test]
    fn flying_is_frame_rate_independent() {
        let keys = FlyKeys {
            forward: true,
            ..Default::default()
        };
        let (mut a, mut b) = (cam(), cam());
        fly(&mut a, keys, 2.0, 1.0);
        for _ in 0..60 {
            fly(&mut b, keys, 2.0, 1.0 / 60.0);
        }
        assert!((Vec3::from(a.eye) - Vec3::from(b.eye)).length() < 1e-4);
        assert!((a.eye[2] - 3.0).abs() < 1e-5);
        // looking turns the view by the mouse movement alone
        let mut c = cam();
        look(&mut c, 0.0, 0.0);
        assert!(Vec3::from(c.target).length() < 1e-5);
    }
}
