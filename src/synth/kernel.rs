//! A data-parallel kernel over a `W × H` grid (or a `W × H × D` cube) of
//! elements (paper 003), distributed over the processors by planes of the
//! outermost axis (rows of a grid, z planes of a cube): `block` (contiguous
//! planes, `(BLOCK,*)`), `cyclic` (plane i on processor i mod P) or
//! `block-cyclic` (blocks of b planes dealt round-robin). Stencil steps read
//! the neighbours of every owned element (4 in a grid, 6 in a cube: remote
//! reads across plane boundaries between processors, halo messages between
//! them) and write the element; shift steps write each element to the plane
//! `shift` further on (remote writes where it changes owner). A few setup
//! intervals without accesses come first, as in the traces of the paper
//! (leading empty bins of a Kiviat tube).
//!
//! The element access tensor has the shape `[interval, element, processor,
//! kind]` with kinds local read, remote read, local write, remote write;
//! element `(x, y, z)` is number `(z·H + y)·W + x`.

use super::sim::Sim;
use super::sink::SimEvent;
use crate::error::{Error, Result};
use crate::export::npy::NpyWriter;

/// How planes are dealt to processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelDist {
    /// Contiguous blocks of planes.
    #[default]
    Block,
    /// Plane i on processor i mod P.
    Cyclic,
    /// Blocks of `max(1, N / 4P)` planes dealt round-robin.
    BlockCyclic,
}

/// Kinds of access, the last axis of the tensor.
pub const ACCESS_KINDS: [&str; 4] = ["local read", "remote read", "local write", "remote write"];

/// Parameters of the kernel.
#[derive(Debug, Clone, Copy)]
pub struct KernelParams {
    pub width: u32,
    pub height: u32,
    /// Depth of a cube (1: a grid).
    pub depth: u32,
    pub dist: KernelDist,
    /// Intervals with accesses (alternating stencil and shift steps).
    pub steps: u32,
    /// Leading intervals without accesses.
    pub setup_steps: u32,
    /// Operations of computation per element update.
    pub ops_per_element: f64,
}

/// The largest grid simulated.
pub const MAX_ELEMENTS: u64 = 1 << 28;

/// The largest tensor written (elements of 4 bytes).
pub const MAX_TENSOR_ELEMENTS: u64 = 1 << 30;

/// The processor of plane `i` of `n` under `dist`.
fn owner(i: u32, n: u32, p: u32, dist: KernelDist) -> u32 {
    match dist {
        KernelDist::Block => ((i as u64 * p as u64) / n as u64) as u32,
        KernelDist::Cyclic => i % p,
        KernelDist::BlockCyclic => (i / (n / (4 * p)).max(1)) % p,
    }
}

/// Shape of the tensor for `procs` processors.
pub fn tensor_shape(k: &KernelParams, procs: u32) -> [u64; 4] {
    [
        (k.setup_steps + k.steps) as u64,
        k.width as u64 * k.height as u64 * k.depth.max(1) as u64,
        procs as u64,
        4,
    ]
}

/// Simulates the kernel; writes the access tensor when `tensor` is given.
pub fn run(sim: &mut Sim, k: KernelParams, mut tensor: Option<&mut NpyWriter<u32>>) -> Result<()> {
    let p = sim.procs();
    let (w, h, d) = (k.width, k.height, k.depth.max(1));
    let total = w as u64 * h as u64 * d as u64;
    if total > MAX_ELEMENTS {
        return Err(Error::Invalid(format!(
            "the kernel {w} x {h} x {d} has more than {MAX_ELEMENTS} elements"
        )));
    }
    if !k.ops_per_element.is_finite() || k.ops_per_element < 0.0 {
        return Err(Error::Invalid(format!(
            "operations per element must be a finite non-negative number, got {}",
            k.ops_per_element
        )));
    }
    // planes of the outermost axis: rows of a grid, z planes of a cube
    let (n, plane) = if d > 1 { (d, w * h) } else { (h, w) };
    if w == 0 || h == 0 || n < p {
        return Err(Error::Invalid(format!(
            "the kernel needs at least one plane per processor: {w} x {h} x {d} ({n} planes) on {p} processors"
        )));
    }
    let e = total as usize;
    let mut slab = vec![
        0u32;
        if tensor.is_some() {
            e * p as usize * 4
        } else {
            0
        }
    ];
    let idx = |el: usize, q: u32, kind: usize| (el * p as usize + q as usize) * 4 + kind;
    let own = |i: u32| owner(i, n, p, k.dist);
    let planes_of: Vec<u32> = {
        let mut c = vec![0u32; p as usize];
        for i in 0..n {
            c[own(i) as usize] += 1;
        }
        c
    };
    let shift = (n / (2 * p)).max(1);
    // halo pairs: adjacent planes on different processors, per (lo, hi) pair
    let mut halo: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
    for i in 0..n - 1 {
        let (a, b) = (own(i), own(i + 1));
        if a != b {
            *halo.entry((a.min(b), a.max(b))).or_default() += 1;
        }
    }
    // shifted planes leaving their processor, per (from, to)
    let mut moves: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
    for i in 0..n {
        let (a, b) = (own(i), own((i + shift) % n));
        if a != b {
            *moves.entry((a, b)).or_default() += 1;
        }
    }
    for q in 0..p {
        sim.event(q, SimEvent::Phase, 5);
    }
    for _ in 0..k.setup_steps {
        for q in 0..p {
            sim.compute(
                q,
                (plane as u64 * planes_of[q as usize] as u64) as f64 * k.ops_per_element,
            );
        }
        if let Some(tw) = tensor.as_deref_mut() {
            tw.write(&slab)?;
        }
    }
    for q in 0..p {
        sim.event(q, SimEvent::Phase, 6);
    }
    for s in 0..k.steps {
        sim.event(0, SimEvent::Iteration, s as i64);
        slab.iter_mut().for_each(|v| *v = 0);
        let stencil = s % 2 == 0;
        if stencil {
            // halo exchange across every boundary between two processors
            for (&(a, b), &count) in &halo {
                sim.transfer(a, b, 8 * plane as u64 * count);
                sim.transfer(b, a, 8 * plane as u64 * count);
            }
        } else if p > 1 {
            // shifted planes move to their new owners
            for (&(a, b), &count) in &moves {
                sim.transfer(a, b, 8 * plane as u64 * count);
            }
        }
        for q in 0..p {
            let planes = planes_of[q as usize] as u64;
            sim.compute(
                q,
                (planes * plane as u64) as f64
                    * k.ops_per_element
                    * if stencil { 1.0 } else { 0.2 },
            );
        }
        if tensor.is_some() {
            let at = |x: u32, y: u32, z: u32| ((z * h + y) * w + x) as usize;
            let plane_of = |y: u32, z: u32| if d > 1 { z } else { y };
            for z in 0..d {
                for y in 0..h {
                    let q = own(plane_of(y, z));
                    for x in 0..w {
                        let el = at(x, y, z);
                        if stencil {
                            let mut read = |nx: i64, ny: i64, nz: i64| {
                                if nx < 0
                                    || ny < 0
                                    || nz < 0
                                    || nx >= w as i64
                                    || ny >= h as i64
                                    || nz >= d as i64
                                {
                                    return;
                                }
                                let (nx, ny, nz) = (nx as u32, ny as u32, nz as u32);
                                let kind = if own(plane_of(ny, nz)) == q { 0 } else { 1 };
                                slab[idx(at(nx, ny, nz), q, kind)] += 1;
                            };
                            let (xi, yi, zi) = (x as i64, y as i64, z as i64);
                            read(xi, yi, zi);
                            read(xi - 1, yi, zi);
                            read(xi + 1, yi, zi);
                            read(xi, yi - 1, zi);
                            read(xi, yi + 1, zi);
                            if d > 1 {
                                read(xi, yi, zi - 1);
                                read(xi, yi, zi + 1);
                            }
                            slab[idx(el, q, 2)] += 1;
                        } else {
                            slab[idx(el, q, 0)] += 1;
                            let (ty, tz) = if d > 1 {
                                (y, (z + shift) % d)
                            } else {
                                ((y + shift) % h, z)
                            };
                            let target = at(x, ty, tz);
                            let kind = if own(plane_of(ty, tz)) == q { 2 } else { 3 };
                            slab[idx(target, q, kind)] += 1;
                        }
                    }
                }
            }
        }
        if let Some(tw) = tensor.as_deref_mut() {
            tw.write(&slab)?;
        }
        sim.checkpoint()?;
    }
    Ok(())
}
