//! A data-parallel kernel over a `W × H` grid of elements, `(BLOCK,*)`
//! distributed by rows (paper 003): stencil steps read the four neighbours
//! of every owned element (remote reads across block boundaries, halo
//! messages between neighbouring processors) and write the element; shift
//! steps write each element to the row `shift` below (remote writes into the
//! next block). A few setup intervals without accesses come first, as in the
//! traces of the paper (leading empty bins of a Kiviat tube).
//!
//! The element access tensor has the shape `[interval, element, processor,
//! kind]` with kinds local read, remote read, local write, remote write.

use super::sim::Sim;
use super::sink::SimEvent;
use crate::error::{Error, Result};
use crate::export::npy::NpyWriter;

/// Kinds of access, the last axis of the tensor.
pub const ACCESS_KINDS: [&str; 4] = ["local read", "remote read", "local write", "remote write"];

/// Parameters of the kernel.
#[derive(Debug, Clone, Copy)]
pub struct KernelParams {
    pub width: u32,
    pub height: u32,
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

fn owner(y: u32, h: u32, p: u32) -> u32 {
    ((y as u64 * p as u64) / h as u64) as u32
}

/// Shape of the tensor for `procs` processors.
pub fn tensor_shape(k: &KernelParams, procs: u32) -> [u64; 4] {
    [
        (k.setup_steps + k.steps) as u64,
        k.width as u64 * k.height as u64,
        procs as u64,
        4,
    ]
}

/// Simulates the kernel; writes the access tensor when `tensor` is given.
pub fn run(sim: &mut Sim, k: KernelParams, mut tensor: Option<&mut NpyWriter<u32>>) -> Result<()> {
    let p = sim.procs();
    let (w, h) = (k.width, k.height);
    if w as u64 * h as u64 > MAX_ELEMENTS {
        return Err(Error::Invalid(format!(
            "the kernel grid {w} x {h} has more than {MAX_ELEMENTS} elements"
        )));
    }
    if !k.ops_per_element.is_finite() || k.ops_per_element < 0.0 {
        return Err(Error::Invalid(format!(
            "operations per element must be a finite non-negative number, got {}",
            k.ops_per_element
        )));
    }
    if w == 0 || h < p {
        return Err(Error::Invalid(format!(
            "the kernel needs a grid at least one row per processor: {w} x {h} on {p} processors"
        )));
    }
    let e = w as usize * h as usize;
    let mut slab = vec![
        0u32;
        if tensor.is_some() {
            e * p as usize * 4
        } else {
            0
        }
    ];
    let idx = |el: usize, q: u32, kind: usize| (el * p as usize + q as usize) * 4 + kind;
    // rows owned by q: owner(y) = floor(y P / H) = q  <=>  q H / P <= y < (q + 1) H / P
    let first_row = |q: u64| (q * h as u64).div_ceil(p as u64) as u32;
    let rows_of = |q: u32| first_row(q as u64)..first_row(q as u64 + 1);
    let shift = (h / (2 * p)).max(1);
    for q in 0..p {
        sim.event(q, SimEvent::Phase, 5);
    }
    for _ in 0..k.setup_steps {
        for q in 0..p {
            sim.compute(
                q,
                (w as u64 * rows_of(q).len() as u64) as f64 * k.ops_per_element,
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
            // halo exchange with both neighbours
            for q in 0..p.saturating_sub(1) {
                sim.transfer(q, q + 1, 8 * w as u64);
                sim.transfer(q + 1, q, 8 * w as u64);
            }
        } else {
            // shifted rows move into the next block
            for q in 0..p {
                let moved = rows_of(q)
                    .filter(|&y| owner((y + shift) % h, h, p) != q)
                    .count() as u64;
                if moved > 0 && p > 1 {
                    let dst = owner((rows_of(q).next_back().unwrap_or(0) + shift) % h, h, p);
                    sim.transfer(q, dst, 8 * w as u64 * moved);
                }
            }
        }
        for q in 0..p {
            let rows = rows_of(q).len() as u64;
            sim.compute(
                q,
                (rows * w as u64) as f64 * k.ops_per_element * if stencil { 1.0 } else { 0.2 },
            );
        }
        if tensor.is_some() {
            for y in 0..h {
                let q = owner(y, h, p);
                for x in 0..w {
                    let el = (y * w + x) as usize;
                    if stencil {
                        let mut read = |nx: i64, ny: i64| {
                            if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                                return;
                            }
                            let n = (ny as u32 * w + nx as u32) as usize;
                            let kind = if owner(ny as u32, h, p) == q { 0 } else { 1 };
                            slab[idx(n, q, kind)] += 1;
                        };
                        let (xi, yi) = (x as i64, y as i64);
                        read(xi, yi);
                        read(xi - 1, yi);
                        read(xi + 1, yi);
                        read(xi, yi - 1);
                        read(xi, yi + 1);
                        slab[idx(el, q, 2)] += 1;
                    } else {
                        slab[idx(el, q, 0)] += 1;
                        let ty = (y + shift) % h;
                        let target = (ty * w + x) as usize;
                        let kind = if owner(ty, h, p) == q { 2 } else { 3 };
                        slab[idx(target, q, kind)] += 1;
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
