//! A synthetic scalar field for the data-parallel views and the
//! isosurface benchmarks: the gyroid-like
//! `sin(2x)cos(2y) + sin(2y)cos(2z) + sin(2z)cos(2x)` over [−π, π]³ (the
//! volume of the Flying Edges comparison), drifting along x by `drift`
//! radians per step so that an animation moves.

use rayon::prelude::*;

/// `steps` fields of `dims` = (x, y, z) points, x fastest, step-major.
pub fn gyroid(dims: [usize; 3], steps: usize, drift: f64) -> Vec<f64> {
    let [nx, ny, nz] = dims;
    let coord = |k: usize, n: usize| {
        -std::f64::consts::PI + k as f64 * 2.0 * std::f64::consts::PI / (n.max(2) - 1) as f64
    };
    let plane = nx * ny;
    let mut v = vec![0.0; plane * nz * steps];
    v.par_chunks_mut(plane.max(1))
        .enumerate()
        .for_each(|(sz, out)| {
            let (t, z) = (sz / nz.max(1), sz % nz.max(1));
            let z = coord(z, nz);
            for (i, o) in out.iter_mut().enumerate() {
                let x = coord(i % nx, nx) + drift * t as f64;
                let y = coord(i / nx, ny);
                *o = (2.0 * x).sin() * (2.0 * y).cos()
                    + (2.0 * y).sin() * (2.0 * z).cos()
                    + (2.0 * z).sin() * (2.0 * x).cos();
            }
        });
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_formula_at_known_points() {
        let v = super::gyroid([3, 3, 3], 2, 0.5);
        assert_eq!(v.len(), 54);
        // the centre (0, 0, 0) of step 0: 0; of step 1: x = 0.5
        assert!(v[13].abs() < 1e-12);
        let x: f64 = 0.5;
        let want = (2.0 * x).sin() + (2.0 * x).cos() * 0.0;
        assert!((v[27 + 13] - want).abs() < 1e-12);
    }
}
