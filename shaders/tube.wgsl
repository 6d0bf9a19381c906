// needs colormap.wgsl
// The Kiviat tube's mesh from a busy field resident on the GPU, the twin
// of `views::kiviat::build`'s mesh (paper 003 §3.3): one vertex per
// (ring, sector), its radius the value averaged over the sector's
// elements and the ring's bins, its colour the colour map at that value;
// then each vertex's normal, the sum of its triangles' area-weighted
// normals. A third entry point summarises each bin (largest and smallest
// sector average, any busy time at all) for the scales and the trimming
// of leading empty bins, which the host reads back: 12 bytes a bin.
// Each vertex's averaged value is kept beside it, for hover texts.
//
// The field is kept as the busy kernel left it: per (location, bin) the
// busy time in ns as a u64 (low, high), times the bin's inverse width.
// Values are f32 here (relative error about 3e-7 per cell; the sums of
// averages add about 6e-8 per term).

struct Params {
    // the field: bins per location row of `sums`, locations (elements)
    bins: u32,
    elements: u32,
    // the bins shown: [first, first + shown)
    first: u32,
    shown: u32,
    // elements per sector, sectors per ring, bins per ring, rings
    eg: u32,
    sectors: u32,
    group: u32,
    rings: u32,
    // scales: largest radius value, colour range, log floor
    vmax: f32,
    cmin: f32,
    cmax: f32,
    floor: f32,
    inner: f32,
    stretch: f32,
    log: u32,
    constant: u32,
    // colour map stops and whether it is categorical
    stops: u32,
    categorical: u32,
    // invocations per row of the 2D grid
    row: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> sums: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> inv: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
// 10 floats per vertex: position, normal, colour
@group(0) @binding(4) var<storage, read_write> verts: array<f32>;
// 3 words per bin: largest and smallest sector average (f32 bits, values
// are never negative, so the bits order as the values), any busy time
@group(0) @binding(5) var<storage, read_write> summary: array<atomic<u32>>;
// each vertex's averaged value (hover texts read a frame's back, when few)
@group(0) @binding(6) var<storage, read_write> values: array<f32>;

const TAU: f32 = 6.283185307179586;
const HALF_PI: f32 = 1.5707963267948966;

fn cell(t: u32, x: u32) -> f32 {
    let s = sums[x * params.bins + t];
    return (f32(s.x) + f32(s.y) * 4294967296.0) * inv[t];
}

// The mean of sector `k`'s elements in bin `t`.
fn sector(t: u32, k: u32) -> f32 {
    let a = k * params.eg;
    let b = min(a + params.eg, params.elements);
    var s = 0.0;
    for (var x = a; x < b; x++) {
        s += cell(t, x);
    }
    return s / f32(max(b - a, 1u));
}

fn id_of(g: vec3<u32>) -> u32 {
    return g.y * params.row + g.x;
}

@compute @workgroup_size(64)
fn summarise(@builtin(global_invocation_id) g: vec3<u32>) {
    let id = id_of(g);
    if (id >= params.bins * params.sectors) {
        return;
    }
    let t = id / params.sectors;
    let k = id % params.sectors;
    let v = sector(t, k);
    atomicMax(&summary[3u * t], bitcast<u32>(v));
    atomicMin(&summary[3u * t + 1u], bitcast<u32>(v));
    let a = k * params.eg;
    let b = min(a + params.eg, params.elements);
    var any = 0u;
    for (var x = a; x < b; x++) {
        let s = sums[x * params.bins + t];
        any |= s.x | s.y;
    }
    if (any != 0u) {
        atomicOr(&summary[3u * t + 2u], 1u);
    }
}

fn radius(v: f32) -> f32 {
    if (params.vmax <= 0.0) {
        return 0.0;
    }
    var r: f32;
    if (params.log != 0u) {
        let f = params.floor;
        r = log(max(v, f) / f) / log(params.vmax / f);
    } else {
        r = max(v, 0.0) / params.vmax;
    }
    return clamp(r, 0.0, 1.0);
}

@compute @workgroup_size(64)
fn vertices(@builtin(global_invocation_id) g: vec3<u32>) {
    let id = id_of(g);
    let e = params.sectors;
    if (id >= params.rings * e) {
        return;
    }
    let r = id / e;
    let k = id % e;
    let a = params.first + r * params.group;
    let b = min(a + params.group, params.first + params.shown);
    var s = 0.0;
    for (var t = a; t < b; t++) {
        s += sector(t, k);
    }
    let v = s / f32(max(b - a, 1u));
    let rad = params.inner + (1.0 - params.inner) * radius(v);
    let ang = HALF_PI - TAU * f32(k) / f32(e);
    let z = -f32(r * params.group) * params.stretch;
    let c = colour_at(
        v,
        params.cmin,
        params.cmax,
        params.constant != 0u,
        params.stops,
        params.categorical != 0u,
    );
    values[id] = v;
    let o = id * 10u;
    verts[o] = rad * cos(ang);
    verts[o + 1u] = rad * sin(ang);
    verts[o + 2u] = z;
    verts[o + 3u] = 0.0;
    verts[o + 4u] = 0.0;
    verts[o + 5u] = 0.0;
    verts[o + 6u] = c.x;
    verts[o + 7u] = c.y;
    verts[o + 8u] = c.z;
    verts[o + 9u] = 1.0;
}

fn position(r: u32, k: u32) -> vec3<f32> {
    let o = (r * params.sectors + k) * 10u;
    return vec3<f32>(verts[o], verts[o + 1u], verts[o + 2u]);
}

// The two triangles of quad (r, k): (a, b, d) and (a, d, c), where a is
// (r, k), b (r, k + 1), c (r + 1, k) and d (r + 1, k + 1), k wrapping.
fn tri_abd(r: u32, k: u32) -> vec3<f32> {
    let k1 = (k + 1u) % params.sectors;
    let a = position(r, k);
    return cross(position(r, k1) - a, position(r + 1u, k1) - a);
}

fn tri_adc(r: u32, k: u32) -> vec3<f32> {
    let k1 = (k + 1u) % params.sectors;
    let a = position(r, k);
    return cross(position(r + 1u, k1) - a, position(r + 1u, k) - a);
}

@compute @workgroup_size(64)
fn normals(@builtin(global_invocation_id) g: vec3<u32>) {
    let id = id_of(g);
    let e = params.sectors;
    if (id >= params.rings * e) {
        return;
    }
    let r = id / e;
    let k = id % e;
    let kp = (k + e - 1u) % e;
    var n = vec3<f32>(0.0);
    if (r > 0u) {
        // the vertex is d of quad (r - 1, k - 1) and c of quad (r - 1, k)
        n += tri_abd(r - 1u, kp) + tri_adc(r - 1u, kp);
        n += tri_adc(r - 1u, k);
    }
    if (r + 1u < params.rings) {
        // b of quad (r, k - 1) and a of quad (r, k)
        n += tri_abd(r, kp);
        n += tri_abd(r, k) + tri_adc(r, k);
    }
    let len = length(n);
    var u = vec3<f32>(0.0, 0.0, 1.0);
    if (len > 0.0 && len < 3.0e38) {
        u = n / len;
    }
    let o = id * 10u;
    verts[o + 3u] = u.x;
    verts[o + 4u] = u.y;
    verts[o + 5u] = u.z;
}
