//! Camera paths (fly-throughs): keyframes recorded in the window or written
//! by hand, played back smoothly. Eye and target follow centripetal-free
//! uniform Catmull-Rom splines through the keyframes (the path passes
//! through every keyframe, with a continuous tangent); the field of view,
//! the up vector and an orthographic rectangle are interpolated linearly.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use super::Camera;
use crate::error::{Error, Result};

/// A keyframe of a camera path: the camera at a time (seconds from the
/// path's start).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyframe {
    pub at: f64,
    pub camera: Camera,
}

/// Checks a path: at least one keyframe, finite times strictly increasing
/// from the first.
pub fn validate(keys: &[Keyframe]) -> Result<()> {
    if keys.is_empty() {
        return Err(Error::Invalid("the camera path has no keyframes".into()));
    }
    for (i, k) in keys.iter().enumerate() {
        if !k.at.is_finite() {
            return Err(Error::Invalid(format!(
                "keyframe {i}: time {} is not a number",
                k.at
            )));
        }
        if i > 0 && k.at <= keys[i - 1].at {
            return Err(Error::Invalid(format!(
                "keyframe {i}: time {} s is not after keyframe {}'s {} s (times must increase)",
                k.at,
                i - 1,
                keys[i - 1].at
            )));
        }
        let finite = |v: [f32; 3]| v.iter().all(|x| x.is_finite());
        if !finite(k.camera.eye) || !finite(k.camera.target) || !finite(k.camera.up) {
            return Err(Error::Invalid(format!(
                "keyframe {i}: the camera has a coordinate that is not a number"
            )));
        }
    }
    Ok(())
}

/// The duration of the path in seconds.
pub fn duration(keys: &[Keyframe]) -> f64 {
    match (keys.first(), keys.last()) {
        (Some(a), Some(b)) => b.at - a.at,
        _ => 0.0,
    }
}

fn catmull(p0: Vec3, p1: Vec3, p2: Vec3, p3: Vec3, u: f32) -> Vec3 {
    let u2 = u * u;
    let u3 = u2 * u;
    0.5 * ((2.0 * p1)
        + (-p0 + p2) * u
        + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * u2
        + (-p0 + 3.0 * p1 - 3.0 * p2 + p3) * u3)
}

/// The camera at time `t` (seconds from the path's start; clamped to the
/// path). A path of one keyframe is that camera.
pub fn camera_at(keys: &[Keyframe], t: f64) -> Option<Camera> {
    let first = keys.first()?;
    if keys.len() == 1 {
        return Some(first.camera);
    }
    let t = (first.at + t).clamp(first.at, keys[keys.len() - 1].at);
    // the segment [i, i+1] holding t
    let i = keys
        .partition_point(|k| k.at <= t)
        .saturating_sub(1)
        .min(keys.len() - 2);
    let (a, b) = (&keys[i], &keys[i + 1]);
    let u = ((t - a.at) / (b.at - a.at)).clamp(0.0, 1.0) as f32;
    let pick = |j: isize| keys[j.clamp(0, keys.len() as isize - 1) as usize].camera;
    let (c0, c1, c2, c3) = (
        pick(i as isize - 1),
        pick(i as isize),
        pick(i as isize + 1),
        pick(i as isize + 2),
    );
    let spline = |f: fn(&Camera) -> [f32; 3]| {
        catmull(
            Vec3::from(f(&c0)),
            Vec3::from(f(&c1)),
            Vec3::from(f(&c2)),
            Vec3::from(f(&c3)),
            u,
        )
        .to_array()
    };
    let up = Vec3::from(c1.up).lerp(Vec3::from(c2.up), u);
    let up = if up.length_squared() > 1e-12 {
        up.normalize()
    } else {
        Vec3::from(c1.up)
    };
    let ortho = match (c1.ortho, c2.ortho) {
        (Some(x), Some(y)) => Some(std::array::from_fn(|k| x[k] + (y[k] - x[k]) * u)),
        (x, _) => x,
    };
    Some(Camera {
        eye: spline(|c| c.eye),
        target: spline(|c| c.target),
        up: up.to_array(),
        fov_y: c1.fov_y + (c2.fov_y - c1.fov_y) * u,
        ortho,
        shift: c1.shift + (c2.shift - c1.shift) * u,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cam(x: f32) -> Camera {
        Camera {
            eye: [x, 1.0, 5.0],
            target: [x, 0.0, 0.0],
            up: [0.0, 1.0, 0.0],
            fov_y: 40.0 + x,
            ortho: None,
            shift: 0.0,
        }
    }

    #[test]
    fn passes_through_keyframes_and_clamps() {
        let keys: Vec<Keyframe> = [0.0, 1.0, 3.0, 4.0]
            .iter()
            .map(|&t| Keyframe {
                at: t,
                camera: cam(t as f32 * 2.0),
            })
            .collect();
        validate(&keys).unwrap();
        assert_eq!(duration(&keys), 4.0);
        for k in &keys {
            let c = camera_at(&keys, k.at).unwrap();
            for j in 0..3 {
                assert!((c.eye[j] - k.camera.eye[j]).abs() < 1e-5);
            }
            assert!((c.fov_y - k.camera.fov_y).abs() < 1e-5);
        }
        // evenly spaced points on a line stay on it
        let c = camera_at(&keys, 2.0).unwrap();
        assert!((c.eye[0] - 4.0).abs() < 0.3, "{:?}", c.eye);
        assert_eq!(camera_at(&keys, -5.0).unwrap().eye, keys[0].camera.eye);
        assert_eq!(camera_at(&keys, 99.0).unwrap().eye, keys[3].camera.eye);
        assert!(camera_at(&[], 0.0).is_none());
    }

    #[test]
    fn bad_paths_are_refused() {
        assert!(validate(&[]).is_err());
        let k = |t: f64| Keyframe {
            at: t,
            camera: cam(0.0),
        };
        assert!(
            validate(&[k(0.0), k(0.0)])
                .unwrap_err()
                .to_string()
                .contains("increase")
        );
        assert!(validate(&[k(f64::NAN)]).is_err());
        let mut bad = k(0.0);
        bad.camera.eye[0] = f32::INFINITY;
        assert!(validate(&[bad]).is_err());
    }
}
