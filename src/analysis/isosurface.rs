//! Isosurfaces of a scalar field on a grid (marching cubes), CPU path.
//!
//! The case table is derived, not transcribed: for each of the 256 sign
//! patterns of a cell, every face contributes directed segments between the
//! crossing points on its edges (a face with four crossings separates its
//! two inside corners: the choice depends on the face alone, so two cells
//! sharing a face cut it the same way and the surface has no cracks); the
//! segments link into closed loops, each loop is fanned into triangles.
//! Segment directions follow one rule on every face, so all triangles are
//! oriented alike: normals point from inside (values ≥ iso) to outside.
//!
//! Vertices lie on grid edges and are shared between cells (an indexed
//! mesh); their normals come from the field's gradient (central
//! differences, interpolated along the edge). Work is split over z slabs
//! with rayon; the output order is that of a sequential sweep (z, y, x,
//! then the case table), whatever the number of threads.

use std::sync::OnceLock;

use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// Corner `i` of a cell sits at `(i & 1, (i >> 1) & 1, (i >> 2) & 1)`.
const fn corner(i: usize) -> [usize; 3] {
    [i & 1, (i >> 1) & 1, (i >> 2) & 1]
}

/// The 12 edges: `(axis, lower corner)`; edge `4·axis + k`.
fn edges() -> [(usize, usize); 12] {
    let mut e = [(0, 0); 12];
    for axis in 0..3 {
        let bit = 1 << axis;
        let mut k = 0;
        for c in 0..8 {
            if c & bit == 0 {
                e[4 * axis + k] = (axis, c);
                k += 1;
            }
        }
    }
    e
}

/// The edge between corners `a` and `b` (adjacent).
fn edge_of(a: usize, b: usize) -> usize {
    let (lo, hi) = (a.min(b), a.max(b));
    let axis = (hi ^ lo).trailing_zeros() as usize;
    edges()
        .iter()
        .position(|&(ax, c)| ax == axis && c == lo)
        .unwrap_or(0)
}

/// The triangles (edge ids) of each of the 256 cases.
pub fn case_table() -> &'static [Vec<[u8; 3]>; 256] {
    static TABLE: OnceLock<[Vec<[u8; 3]>; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(triangles_of_case))
}

fn triangles_of_case(case: usize) -> Vec<[u8; 3]> {
    let inside = |c: usize| case >> c & 1 == 1;
    let pos = |c: usize| corner(c).map(|v| v as f32);
    let mid = |e: usize| {
        let (axis, c) = edges()[e];
        let mut p = pos(c);
        p[axis] += 0.5;
        p
    };
    // directed segments: next[e] = the edge point that follows e
    let mut next = [usize::MAX; 12];
    for axis in 0..3 {
        for side in 0..2 {
            // the face's corners in cyclic order
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let at = |a: usize, b: usize| (side << axis) | (a << u) | (b << v);
            let ring = [at(0, 0), at(1, 0), at(1, 1), at(0, 1)];
            let crossings: Vec<usize> = (0..4)
                .filter(|&k| inside(ring[k]) != inside(ring[(k + 1) % 4]))
                .collect();
            let mut segs: Vec<(usize, usize, usize)> = Vec::new(); // (edge a, edge b, an inside corner)
            let e = |k: usize| edge_of(ring[k], ring[(k + 1) % 4]);
            match crossings.len() {
                2 => {
                    let (k0, k1) = (crossings[0], crossings[1]);
                    let ins = (0..4).find(|&k| inside(ring[k])).map(|k| ring[k]);
                    if let Some(c) = ins {
                        segs.push((e(k0), e(k1), c));
                    }
                }
                4 => {
                    // separate the two inside corners: cut each off
                    for (k, &c) in ring.iter().enumerate() {
                        if inside(c) {
                            segs.push((e((k + 3) % 4), e(k), c));
                        }
                    }
                }
                _ => {}
            }
            // direct each segment: the inside corner on the left, seen from outside
            let mut normal = [0.0f32; 3];
            normal[axis] = if side == 1 { 1.0 } else { -1.0 };
            for (a, b, c) in segs {
                let (p, q, cc) = (Vec3::from(mid(a)), Vec3::from(mid(b)), Vec3::from(pos(c)));
                if (q - p).cross(cc - p).dot(Vec3::from(normal)) > 0.0 {
                    next[a] = b;
                } else {
                    next[b] = a;
                }
            }
        }
    }
    // link into loops and fan them (reversed: normals from inside to outside)
    let mut used = [false; 12];
    let mut tris = Vec::new();
    for start in 0..12 {
        if next[start] == usize::MAX || used[start] {
            continue;
        }
        let mut lp = vec![start];
        used[start] = true;
        let mut e = next[start];
        while e != start && e != usize::MAX && !used[e] && lp.len() < 12 {
            used[e] = true;
            lp.push(e);
            e = next[e];
        }
        // fan from an apex whose triangles never lie within one face of
        // the cell (a neighbour could draw the same triangle there)
        let n = lp.len();
        let flat = |a: usize, b: usize, c: usize| faces_of(a) & faces_of(b) & faces_of(c) != 0;
        let apex = (0..n)
            .find(|&r| {
                (1..n.saturating_sub(1)).all(|i| !flat(lp[r], lp[(r + i) % n], lp[(r + i + 1) % n]))
            })
            .unwrap_or(0);
        for i in 1..n.saturating_sub(1) {
            tris.push([
                lp[apex] as u8,
                lp[(apex + i + 1) % n] as u8,
                lp[(apex + i) % n] as u8,
            ]);
        }
    }
    tris
}

/// The case table for the GPU twin (`shaders/marching_cubes.wgsl`): 256
/// triangle counts, then 16 slots per case holding each triangle's edges as
/// `axis | cx << 2 | cy << 3 | cz << 4` (the edge's lower corner).
pub fn packed_table() -> Vec<u32> {
    let table = case_table();
    let mut out = vec![0u32; 256 + 256 * 16];
    for (case, tris) in table.iter().enumerate() {
        out[case] = tris.len() as u32;
        for (j, &e) in tris.iter().flatten().enumerate() {
            let (axis, c) = edges()[e as usize];
            let [cx, cy, cz] = corner(c);
            out[256 + case * 16 + j] = (axis | cx << 2 | cy << 3 | cz << 4) as u32;
        }
    }
    out
}

/// The two faces of the cell an edge lies on, as bits `2·axis + side`.
fn faces_of(e: usize) -> u8 {
    let (axis, c) = edges()[e];
    let mut m = 0u8;
    for other in 0..3 {
        if other != axis {
            m |= 1 << (2 * other + ((c >> other) & 1));
        }
    }
    m
}

/// An indexed triangle mesh in grid coordinates (x, y, z in cells).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IsoMesh {
    pub positions: Vec<[f32; 3]>,
    /// Unit normals pointing toward lower values.
    pub normals: Vec<[f32; 3]>,
    pub indices: Vec<u32>,
}

impl IsoMesh {
    pub fn triangles(&self) -> usize {
        self.indices.len() / 3
    }

    /// The corners of triangle `t` (three indices), in f64.
    fn corners(&self, t: &[u32]) -> [DVec3; 3] {
        [t[0], t[1], t[2]].map(|i| Vec3::from(self.positions[i as usize]).as_dvec3())
    }

    /// Total area (grid units²).
    pub fn area(&self) -> f64 {
        self.indices
            .chunks_exact(3)
            .map(|t| {
                let [a, b, c] = self.corners(t);
                0.5 * (b - a).cross(c - a).length()
            })
            .sum()
    }

    /// The signed volume enclosed (divergence theorem): positive when the
    /// normals point out of the enclosed region, i.e. the region holds the
    /// values above the isovalue; negative when it holds the values below.
    pub fn signed_volume(&self) -> f64 {
        self.indices
            .chunks_exact(3)
            .map(|t| {
                let [a, b, c] = self.corners(t);
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
    }
}

/// The crossing points of one z plane: edges of each axis whose lower end
/// lies in the plane, as sorted keys `y·nx + x` (their vertices are in the
/// mesh, the plane's from its offset on).
struct Plane {
    keys: [Vec<u32>; 3],
    /// First vertex of each axis, from the plane's offset.
    first: [u32; 3],
}

/// Extracts the isosurface `iso` of `values` (`nz × ny × nx`, x fastest).
/// A cell corner is inside when its value is ≥ iso. Dimensions below 2
/// give an empty mesh.
pub fn extract(values: &[f64], dims: [usize; 3], iso: f64) -> IsoMesh {
    let [nx, ny, nz] = dims;
    if nx < 2 || ny < 2 || nz < 2 || values.len() != nx * ny * nz {
        return IsoMesh::default();
    }
    let (sy, sz) = (nx, nx * ny);
    let grad = |x: usize, y: usize, z: usize| -> [f64; 3] {
        let i = x + sy * y + sz * z;
        // central differences inside, one-sided at the faces
        let diff = |c: usize, n: usize, stride: usize| -> f64 {
            if c > 0 && c + 1 < n {
                (values[i + stride] - values[i - stride]) * 0.5
            } else if c + 1 < n {
                values[i + stride] - values[i]
            } else if c > 0 {
                values[i] - values[i - stride]
            } else {
                0.0
            }
        };
        [diff(x, nx, 1), diff(y, ny, sy), diff(z, nz, sz)]
    };
    // pass 0: inside flags, 64 cells a word (one bit per cell): crossings
    // are the bits that differ
    let words = nx.div_ceil(64);
    let bits: Vec<Vec<u64>> = (0..nz)
        .into_par_iter()
        .map(|zz| {
            let mut b = vec![0u64; ny * words];
            for y in 0..ny {
                let r = &values[nx * (y + ny * zz)..nx * (y + ny * zz) + nx];
                let out = &mut b[y * words..(y + 1) * words];
                let mut full = r.chunks_exact(64);
                for (o, chunk) in out.iter_mut().zip(&mut full) {
                    // fixed-size chunks vectorize: compare 64 values, pack the mask
                    let mut word = 0u64;
                    for (k, &v) in chunk.iter().enumerate() {
                        word |= ((v >= iso) as u64) << k;
                    }
                    *o = word;
                }
                let rest = full.remainder();
                if !rest.is_empty() {
                    let mut word = 0u64;
                    for (k, &v) in rest.iter().enumerate() {
                        word |= ((v >= iso) as u64) << k;
                    }
                    out[words - 1] = word;
                }
            }
            b
        })
        .collect();
    // the crossing edges of plane z: f(axis, y, word, bits), bits at or
    // past the axis's last edge cleared
    let masks = |z: usize, f: &mut dyn FnMut(usize, usize, usize, u64)| {
        let here = &bits[z];
        let limit = |w: usize, n: usize| -> u64 {
            let left = n.saturating_sub(64 * w);
            if left >= 64 { !0 } else { (1u64 << left) - 1 }
        };
        for y in 0..ny {
            let row = &here[y * words..(y + 1) * words];
            for w in 0..words {
                let next = if w + 1 < words { row[w + 1] << 63 } else { 0 };
                f(
                    0,
                    y,
                    w,
                    (row[w] ^ ((row[w] >> 1) | next)) & limit(w, nx - 1),
                );
            }
        }
        for y in 0..ny - 1 {
            for w in 0..words {
                f(
                    1,
                    y,
                    w,
                    (here[y * words + w] ^ here[(y + 1) * words + w]) & limit(w, nx),
                );
            }
        }
        if z + 1 < nz {
            let above = &bits[z + 1];
            for y in 0..ny {
                for w in 0..words {
                    f(
                        2,
                        y,
                        w,
                        (here[y * words + w] ^ above[y * words + w]) & limit(w, nx),
                    );
                }
            }
        }
    };
    // pass 1a: vertices per plane and axis (popcounts), so that every plane
    // writes its vertices straight into the mesh
    let counts: Vec<[usize; 3]> = (0..nz)
        .into_par_iter()
        .map(|z| {
            let mut c = [0usize; 3];
            masks(z, &mut |axis, _, _, m| c[axis] += m.count_ones() as usize);
            c
        })
        .collect();
    let mut offsets = Vec::with_capacity(nz);
    let mut total = 0usize;
    for c in &counts {
        offsets.push(total as u32);
        total += c.iter().sum::<usize>();
    }
    let mut positions = vec![[0f32; 3]; total];
    let mut normals = vec![[0f32; 3]; total];
    let mut slices = Vec::with_capacity(nz);
    {
        let (mut pos, mut nrm) = (positions.as_mut_slice(), normals.as_mut_slice());
        for c in &counts {
            let n = c.iter().sum::<usize>();
            let (a, rest) = pos.split_at_mut(n);
            let (b, rest_n) = nrm.split_at_mut(n);
            slices.push((a, b));
            pos = rest;
            nrm = rest_n;
        }
    }
    // pass 1b: the crossing points of every plane
    let planes: Vec<Plane> = slices
        .into_par_iter()
        .zip(counts.par_iter())
        .enumerate()
        .map(|(z, ((pos, nrm), c))| {
            let mut p = Plane {
                keys: c.map(Vec::with_capacity),
                first: [0, c[0] as u32, (c[0] + c[1]) as u32],
            };
            let mut at = 0usize;
            let val = |x: usize, y: usize, zz: usize| values[x + nx * (y + ny * zz)];
            masks(z, &mut |axis, y, w, m| {
                let (dx, dy, dz) = [(1, 0, 0), (0, 1, 0), (0, 0, 1)][axis];
                let mut m = m;
                while m != 0 {
                    let x = 64 * w + m.trailing_zeros() as usize;
                    m &= m - 1;
                    let (a, b) = (val(x, y, z), val(x + dx, y + dy, z + dz));
                    let t = ((iso - a) / (b - a)).clamp(0.0, 1.0);
                    let ga = grad(x, y, z);
                    let gb = grad(x + dx, y + dy, z + dz);
                    let g = [0, 1, 2].map(|k| ga[k] + t * (gb[k] - ga[k]));
                    let l = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                    // toward lower values
                    nrm[at] = if l > 0.0 {
                        g.map(|c| (-c / l) as f32)
                    } else {
                        [0.0, 0.0, 1.0]
                    };
                    p.keys[axis].push((y * nx + x) as u32);
                    pos[at] = [
                        (x as f64 + t * dx as f64) as f32,
                        (y as f64 + t * dy as f64) as f32,
                        (z as f64 + t * dz as f64) as f32,
                    ];
                    at += 1;
                }
            });
            p
        })
        .collect();
    let table = case_table();
    let edge_list = edges();
    // pass 2: the triangles of every slab of cells, from the packed flags;
    // the vertex of each of the 12 cell edges is found by a cursor that
    // only moves forward
    let slabs: Vec<Vec<u32>> = (0..nz - 1)
        .into_par_iter()
        .map(|z| {
            let mut out = Vec::new();
            let mut cursor = [0usize; 12];
            let (lo, hi) = (&bits[z], &bits[z + 1]);
            for y in 0..ny - 1 {
                // corner rows: (y, z), (y+1, z), (y, z+1), (y+1, z+1)
                let rows = [
                    &lo[y * words..(y + 1) * words],
                    &lo[(y + 1) * words..(y + 2) * words],
                    &hi[y * words..(y + 1) * words],
                    &hi[(y + 1) * words..(y + 2) * words],
                ];
                for w in 0..words {
                    let word = |r: &[u64]| r[w];
                    let next = |r: &[u64]| if w + 1 < words { r[w + 1] } else { 0 };
                    let any = rows.iter().fold(0, |a, r| a | word(r));
                    let all = rows.iter().fold(!0, |a, r| a & word(r));
                    let any_n = rows.iter().fold(0, |a, r| a | next(r));
                    let all_n = rows.iter().fold(!0, |a, r| a & next(r));
                    // cell x has a corner inside and a corner outside
                    let some_in = any | (any >> 1) | (any_n << 63);
                    let all_in = all & ((all >> 1) | (all_n << 63));
                    let mut m = some_in & !all_in;
                    while m != 0 {
                        let b = m.trailing_zeros() as usize;
                        let x = 64 * w + b;
                        if x >= nx - 1 {
                            break;
                        }
                        m &= m - 1;
                        let bit = |r: &[u64], x: usize| (r[x / 64] >> (x % 64) & 1) as usize;
                        let mut case = 0usize;
                        for (k, r) in rows.iter().enumerate() {
                            case |= bit(r, x) << (2 * k) | bit(r, x + 1) << (2 * k + 1);
                        }
                        for tri in &table[case] {
                            for &e in tri {
                                let (axis, c) = edge_list[e as usize];
                                let [cx, cy, cz] = corner(c);
                                let p = &planes[z + cz];
                                let keys = &p.keys[axis];
                                let key = ((y + cy) * nx + x + cx) as u32;
                                let cur = &mut cursor[e as usize];
                                while *cur < keys.len() && keys[*cur] < key {
                                    *cur += 1;
                                }
                                out.push(offsets[z + cz] + p.first[axis] + *cur as u32);
                            }
                        }
                    }
                }
            }
            out
        })
        .collect();
    // the slabs' triangles side by side, copied in parallel
    let mut indices = vec![0u32; slabs.iter().map(Vec::len).sum()];
    let mut parts = Vec::with_capacity(slabs.len());
    let mut rest = indices.as_mut_slice();
    for s in &slabs {
        let (a, b) = rest.split_at_mut(s.len());
        parts.push(a);
        rest = b;
    }
    parts
        .into_par_iter()
        .zip(slabs.par_iter())
        .for_each(|(dst, src)| dst.copy_from_slice(src));
    IsoMesh {
        positions,
        normals,
        indices,
    }
}

/// `values` (`dims`, x fastest) resampled trilinearly onto `to` points
/// per axis spanning the same extent: point `i` of an axis of `m` points
/// sits at `i·(n − 1)/(m − 1)` of the original (the level of detail of
/// playback). Axes of fewer than 2 points are kept.
pub fn resample(values: &[f64], dims: [usize; 3], to: [usize; 3]) -> Vec<f64> {
    let [nx, ny, nz] = dims;
    let to = [0, 1, 2].map(|k| if dims[k] < 2 { dims[k] } else { to[k].max(2) });
    // for each axis and target index: the lower source index and the weight
    let taps = |n: usize, m: usize| -> Vec<(usize, f64)> {
        (0..m)
            .map(|i| {
                if n < 2 || m < 2 {
                    return (0, 0.0);
                }
                let x = i as f64 * (n - 1) as f64 / (m - 1) as f64;
                let lo = (x.floor() as usize).min(n - 2);
                (lo, x - lo as f64)
            })
            .collect()
    };
    let (tx, ty, tz) = (taps(nx, to[0]), taps(ny, to[1]), taps(nz, to[2]));
    let at = |x: usize, y: usize, z: usize| values[x + nx * (y + ny * z)];
    let step = |n: usize| usize::from(n > 1);
    let (sx, sy, sz) = (step(nx), step(ny), step(nz));
    let mut out = vec![0.0; to[0] * to[1] * to[2]];
    out.par_chunks_mut((to[0] * to[1]).max(1))
        .zip(tz.par_iter())
        .for_each(|(plane, &(z, wz))| {
            for (j, &(y, wy)) in ty.iter().enumerate() {
                for (i, &(x, wx)) in tx.iter().enumerate() {
                    let lerp = |a: f64, b: f64, w: f64| a + w * (b - a);
                    let c = |dy: usize, dz: usize| {
                        lerp(at(x, y + dy, z + dz), at(x + sx, y + dy, z + dz), wx)
                    };
                    plane[i + to[0] * j] = lerp(
                        lerp(c(0, 0), c(sy, 0), wy),
                        lerp(c(0, sz), c(sy, sz), wy),
                        wz,
                    );
                }
            }
        });
    out
}

/// `k` isovalues evenly inside `(lo, hi)`: lo + (i + 1)(hi − lo)/(k + 1).
pub fn isovalues(lo: f64, hi: f64, k: usize) -> Vec<f64> {
    (0..k)
        .map(|i| lo + (i + 1) as f64 * (hi - lo) / (k + 1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn sphere(n: usize, r: f64) -> (Vec<f64>, [usize; 3]) {
        let c = (n as f64 - 1.0) / 2.0;
        let v = (0..n * n * n)
            .map(|i| {
                let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
                let d = ((x as f64 - c).powi(2) + (y as f64 - c).powi(2) + (z as f64 - c).powi(2))
                    .sqrt();
                r - d
            })
            .collect();
        (v, [n, n, n])
    }

    /// Every undirected edge in exactly two triangles, once in each direction.
    fn closed_and_oriented(m: &IsoMesh) -> bool {
        let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
        for t in m.indices.chunks_exact(3) {
            for k in 0..3 {
                *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        directed
            .iter()
            .all(|(&(a, b), &n)| n == 1 && directed.get(&(b, a)) == Some(&1))
    }

    #[test]
    fn every_case_forms_closed_loops() {
        let t = case_table();
        assert!(t[0].is_empty() && t[255].is_empty());
        for (case, tris) in t.iter().enumerate() {
            let crossing = (0..12)
                .filter(|&e| {
                    let (axis, c) = edges()[e];
                    (case >> c & 1) != (case >> (c | 1 << axis) & 1)
                })
                .count();
            // every crossing edge is used, triangles = points − 2 per loop
            let used: std::collections::HashSet<u8> = tris.iter().flatten().copied().collect();
            assert_eq!(used.len(), crossing, "case {case}");
            // within the cell, every triangle edge between two crossing
            // points on one face is used once; interior edges twice, reversed
            let mut directed: HashMap<(u8, u8), u32> = HashMap::new();
            for t in tris {
                for k in 0..3 {
                    *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
                }
            }
            assert!(directed.values().all(|&n| n == 1), "case {case}: {tris:?}");
            // no triangle lies within one face of the cell
            for t in tris {
                let [a, b, c] = t.map(|e| faces_of(e as usize));
                assert_eq!(a & b & c, 0, "case {case}: {t:?} lies in a face");
            }
        }
        // one corner inside: one triangle
        assert_eq!(t[1].len(), 1);
        // the GPU table has room for 5 triangles a case
        assert!(
            t.iter().all(|c| c.len() <= 5),
            "{:?}",
            t.iter().map(Vec::len).max()
        );
    }

    #[test]
    fn sphere_is_closed_with_euler_characteristic_two_and_right_area() {
        let (v, d) = sphere(128, 40.0);
        let m = extract(&v, d, 0.0);
        assert!(closed_and_oriented(&m));
        // V − E + F = 2, E = 3F/2
        let f = m.triangles() as i64;
        let used: std::collections::HashSet<u32> = m.indices.iter().copied().collect();
        assert_eq!(used.len() as i64 - 3 * f / 2 + f, 2);
        let area = m.area();
        let want = 4.0 * std::f64::consts::PI * 40.0 * 40.0;
        assert!((area - want).abs() / want < 0.01, "area {area} vs {want}");
        // the ball holds the values above the isovalue: positive volume
        let vol = m.signed_volume();
        let want_v = 4.0 / 3.0 * std::f64::consts::PI * 40f64.powi(3);
        assert!((vol - want_v).abs() / want_v < 0.01, "volume {vol}");
        // normals point toward lower values: outward from the centre
        let c = 63.5f32;
        let out = m
            .positions
            .iter()
            .zip(&m.normals)
            .filter(|(p, n)| (p[0] - c) * n[0] + (p[1] - c) * n[1] + (p[2] - c) * n[2] > 0.0)
            .count();
        assert_eq!(out, m.positions.len());
    }

    #[test]
    fn random_fields_are_crack_free_and_thread_count_independent() {
        // random values inside, below the isovalue on the border: closed surfaces
        let n = 20;
        let mut s = 12345u64;
        let v: Vec<f64> = (0..n * n * n)
            .map(|i| {
                let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1 {
                    -1.0
                } else {
                    ((s >> 33) % 5) as f64 / 4.0 - 0.5
                }
            })
            .collect();
        for iso in [0.0, 0.25, -0.25] {
            // values exactly at the isovalue included (0.0, ±0.25 occur)
            let m = extract(&v, [n, n, n], iso);
            assert!(m.triangles() > 100);
            let pool = crate::test_pool::pool(1);
            let one = pool.install(|| extract(&v, [n, n, n], iso));
            assert_eq!(m, one);
            // crack-free: every undirected edge shared by exactly two triangles
            let mut und: HashMap<(u32, u32), u32> = HashMap::new();
            for t in m.indices.chunks_exact(3) {
                for k in 0..3 {
                    let (a, b) = (t[k], t[(k + 1) % 3]);
                    *und.entry((a.min(b), a.max(b))).or_default() += 1;
                }
            }
            assert!(und.values().all(|&c| c == 2), "iso {iso}: open edges");
        }
    }

    #[test]
    fn degenerate_and_constant_fields() {
        assert_eq!(extract(&[1.0; 10], [1, 1, 10], 0.5).triangles(), 0);
        assert_eq!(extract(&[1.0; 27], [3, 3, 3], 0.5).triangles(), 0);
        assert_eq!(extract(&[1.0; 27], [3, 3, 3], 1.5).triangles(), 0);
        // a constant field exactly at the isovalue: all inside, nothing to draw
        assert_eq!(extract(&[2.0; 27], [3, 3, 3], 2.0).triangles(), 0);
        assert_eq!(isovalues(0.0, 6.0, 5), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn resampling_keeps_linear_fields_and_the_corners() {
        // a linear field is reproduced exactly by trilinear resampling
        let dims = [9, 7, 5];
        let f = |x: f64, y: f64, z: f64| 2.0 * x - 3.0 * y + 0.5 * z + 1.0;
        let v: Vec<f64> = (0..9 * 7 * 5)
            .map(|i| f((i % 9) as f64, ((i / 9) % 7) as f64, (i / 63) as f64))
            .collect();
        let to = [4, 3, 3];
        let r = resample(&v, dims, to);
        for (i, &got) in r.iter().enumerate() {
            let (x, y, z) = (i % 4, (i / 4) % 3, i / 12);
            let want = f(x as f64 * 8.0 / 3.0, y as f64 * 3.0, z as f64 * 2.0);
            assert!((got - want).abs() < 1e-9, "{i}: {got} vs {want}");
        }
        // the same size is the identity
        assert_eq!(resample(&v, dims, dims), v);
    }
}
