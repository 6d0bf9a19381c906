// Marching cubes on the GPU: the twin of `analysis::isosurface::extract`,
// with the same case table, the same vertex order (z plane; x, y, z edges;
// row y; x) and the same triangle order (cell slab z; row y; x; the case
// table), so the meshes are identical to the CPU path's; only the vertex
// arithmetic is f32 (the CPU's is f64).
//
// Bits: `inside` holds one bit per grid point (value >= iso), rows of `wp`
// 32-bit words; `ebits` one bit per crossing edge, word
// ((z·3 + axis)·ny + y)·wp + x/32; `eoffset` the exclusive prefix count of
// crossings before each word (a vertex's id is its word's offset plus the
// crossings before it in the word). Cell words cover 32 cells of a row:
// (z·(ny−1) + y)·wc + x/32, `coffset` the first triangle of each.
//
// The table: 256 triangle counts, then 16 slots per case, each edge as
// axis | cx << 2 | cy << 3 | cz << 4 (the edge's lower corner).

struct Params {
    nx: u32,
    ny: u32,
    nz: u32,
    wp: u32,
    wc: u32,
    items: u32,
    iso: f32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> field: array<f32>;
@group(0) @binding(1) var<storage, read_write> inside: array<u32>;
@group(0) @binding(2) var<storage, read_write> ebits: array<u32>;
@group(0) @binding(3) var<storage, read_write> eoffset: array<u32>;
@group(0) @binding(4) var<storage, read_write> coffset: array<u32>;
@group(0) @binding(5) var<storage, read> table: array<u32>;
@group(0) @binding(6) var<storage, read_write> positions: array<f32>;
@group(0) @binding(7) var<storage, read_write> normals: array<f32>;
@group(0) @binding(8) var<storage, read_write> indices: array<u32>;
@group(0) @binding(9) var<uniform> params: Params;

var<workgroup> packed: array<atomic<u32>, 8>;

fn linear(wid: vec3<u32>, groups: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * groups.x) * 256u + lid;
}

// One invocation per bit of `inside`: coalesced reads, packed in workgroup memory.
@compute @workgroup_size(256)
fn classify(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let slot = linear(wid, groups, lid);
    let word = slot / 32u;
    if (lid < 8u) {
        atomicStore(&packed[lid], 0u);
    }
    workgroupBarrier();
    let x = (word % params.wp) * 32u + slot % 32u;
    let row = word / params.wp;
    if (word < params.items && x < params.nx) {
        if (field[row * params.nx + x] >= params.iso) {
            atomicOr(&packed[lid / 32u], 1u << (slot % 32u));
        }
    }
    workgroupBarrier();
    if (lid % 32u == 0u && word < params.items) {
        inside[word] = atomicLoad(&packed[lid / 32u]);
    }
}

// Edge word idx as (word in row, y, axis, z).
fn edge_word(idx: u32) -> vec4<u32> {
    let r = idx / params.wp;
    let za = r / params.ny;
    return vec4<u32>(idx % params.wp, r % params.ny, za % 3u, za / 3u);
}

// Cell word idx as (word in row, y, z).
fn cell_word(idx: u32) -> vec3<u32> {
    let r = idx / params.wc;
    return vec3<u32>(idx % params.wc, r % (params.ny - 1u), r / (params.ny - 1u));
}

fn inside_word(y: u32, z: u32, w: u32) -> u32 {
    if (w >= params.wp) {
        return 0u;
    }
    return inside[(z * params.ny + y) * params.wp + w];
}

// Bits 0..n of a word whose first bit is x0, for coordinates below `limit`.
fn below(x0: u32, limit: u32) -> u32 {
    if (x0 >= limit) {
        return 0u;
    }
    let n = limit - x0;
    if (n >= 32u) {
        return 0xffffffffu;
    }
    return (1u << n) - 1u;
}

// One invocation per edge word: the crossing bits and their count.
@compute @workgroup_size(256)
fn edges(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let idx = linear(wid, groups, lid);
    if (idx >= params.items) {
        return;
    }
    let e = edge_word(idx);
    let w = e.x;
    let y = e.y;
    let axis = e.z;
    let z = e.w;
    let b = inside_word(y, z, w);
    var m = 0u;
    if (axis == 0u) {
        let shifted = (b >> 1u) | (inside_word(y, z, w + 1u) << 31u);
        m = (b ^ shifted) & below(w * 32u, params.nx - 1u);
    } else if (axis == 1u) {
        if (y + 1u < params.ny) {
            m = (b ^ inside_word(y + 1u, z, w)) & below(w * 32u, params.nx);
        }
    } else {
        if (z + 1u < params.nz) {
            m = (b ^ inside_word(y, z + 1u, w)) & below(w * 32u, params.nx);
        }
    }
    ebits[idx] = m;
    eoffset[idx] = countOneBits(m);
}

// The four corner rows of a cell word, as words whose bit k is the corner
// at x = 32w + k (lo) and at x + 1 (hi).
struct Corners {
    lo: array<u32, 4>,
    hi: array<u32, 4>,
    busy: u32,
}

fn corners(idx: u32) -> Corners {
    let cw = cell_word(idx);
    let w = cw.x;
    let y = cw.y;
    let z = cw.z;
    var c: Corners;
    var any = 0u;
    var all = 0xffffffffu;
    for (var k = 0u; k < 4u; k++) {
        let yy = y + (k & 1u);
        let zz = z + (k >> 1u);
        let b = inside_word(yy, zz, w);
        c.lo[k] = b;
        c.hi[k] = (b >> 1u) | (inside_word(yy, zz, w + 1u) << 31u);
        any = any | c.lo[k] | c.hi[k];
        all = all & c.lo[k] & c.hi[k];
    }
    c.busy = any & ~all & below(w * 32u, params.nx - 1u);
    return c;
}

fn case_of(corners_: Corners, bit: u32) -> u32 {
    // a variable: arrays inside values cannot be indexed dynamically
    var c = corners_;
    var case_ = 0u;
    for (var k = 0u; k < 4u; k++) {
        case_ = case_ | (((c.lo[k] >> bit) & 1u) << (2u * k)) | (((c.hi[k] >> bit) & 1u) << (2u * k + 1u));
    }
    return case_;
}

// One invocation per cell word: its triangle count.
@compute @workgroup_size(256)
fn cells(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let idx = linear(wid, groups, lid);
    if (idx >= params.items) {
        return;
    }
    let c = corners(idx);
    var m = c.busy;
    var n = 0u;
    while (m != 0u) {
        let bit = firstTrailingBit(m);
        m = m & (m - 1u);
        n = n + table[case_of(c, bit)];
    }
    coffset[idx] = n;
}

fn value(x: u32, y: u32, z: u32) -> f32 {
    return field[(z * params.ny + y) * params.nx + x];
}

// Central differences inside, one-sided at the faces (as on the CPU).
fn diff(c: u32, n: u32, at: u32, stride: u32) -> f32 {
    if (c > 0u && c + 1u < n) {
        return (field[at + stride] - field[at - stride]) * 0.5;
    } else if (c + 1u < n) {
        return field[at + stride] - field[at];
    } else if (c > 0u) {
        return field[at] - field[at - stride];
    }
    return 0.0;
}

fn gradient(x: u32, y: u32, z: u32) -> vec3<f32> {
    let at = (z * params.ny + y) * params.nx + x;
    let sy = params.nx;
    let sz = params.nx * params.ny;
    return vec3<f32>(diff(x, params.nx, at, 1u), diff(y, params.ny, at, sy), diff(z, params.nz, at, sz));
}

// One invocation per edge word: the vertices of its crossings.
@compute @workgroup_size(256)
fn vertices(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let idx = linear(wid, groups, lid);
    if (idx >= params.items) {
        return;
    }
    var m = ebits[idx];
    if (m == 0u) {
        return;
    }
    let e = edge_word(idx);
    let w = e.x;
    let y = e.y;
    let axis = e.z;
    let z = e.w;
    var d = vec3<u32>(0u);
    d[axis] = 1u;
    var id = eoffset[idx];
    while (m != 0u) {
        let x = w * 32u + firstTrailingBit(m);
        m = m & (m - 1u);
        let a = value(x, y, z);
        let b = value(x + d.x, y + d.y, z + d.z);
        let t = clamp((params.iso - a) / (b - a), 0.0, 1.0);
        let ga = gradient(x, y, z);
        let gb = gradient(x + d.x, y + d.y, z + d.z);
        let g = ga + t * (gb - ga);
        let l = length(g);
        var n = vec3<f32>(0.0, 0.0, 1.0);
        if (l > 0.0) {
            n = -g / l;
        }
        let p = vec3<f32>(f32(x), f32(y), f32(z)) + t * vec3<f32>(d);
        positions[3u * id] = p.x;
        positions[3u * id + 1u] = p.y;
        positions[3u * id + 2u] = p.z;
        normals[3u * id] = n.x;
        normals[3u * id + 1u] = n.y;
        normals[3u * id + 2u] = n.z;
        id = id + 1u;
    }
}

// One invocation per cell word: the triangles of its cells, with vertex
// ids found from the crossing bits of the edges' words.
@compute @workgroup_size(256)
fn triangles(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let idx = linear(wid, groups, lid);
    if (idx >= params.items) {
        return;
    }
    let c = corners(idx);
    let cw = cell_word(idx);
    let w = cw.x;
    let y = cw.y;
    let z = cw.z;
    var m = c.busy;
    var out = coffset[idx] * 3u;
    while (m != 0u) {
        let bit = firstTrailingBit(m);
        m = m & (m - 1u);
        let x = w * 32u + bit;
        let case_ = case_of(c, bit);
        let n = table[case_] * 3u;
        for (var j = 0u; j < n; j++) {
            let e = table[256u + case_ * 16u + j];
            let axis = e & 3u;
            let ex = x + ((e >> 2u) & 1u);
            let ey = y + ((e >> 3u) & 1u);
            let ez = z + ((e >> 4u) & 1u);
            let word = ((ez * 3u + axis) * params.ny + ey) * params.wp + ex / 32u;
            let before = ebits[word] & ((1u << (ex % 32u)) - 1u);
            indices[out] = eoffset[word] + countOneBits(before);
            out = out + 1u;
        }
    }
}
