// needs colormap.wgsl, u64.wgsl
// The utilization Gantt chart of the moment display from a busy field
// resident on the GPU, the twin of the chart `views::moments::build` makes
// on the host (paper 000 Fig. 2): one cell per (row of `group` adjacent
// processors, bin), its value the mean busy fraction of the row's
// processors that have data in the window, drawn as a flat quad in the
// colour map's colour, or in the "no data" colour when none has.
//
// The field is as the busy kernel left it: per (location, bin) the busy
// time in ns as a u64 (low, high). A cell's sum is kept exact (u64 adds
// with carry) and written out for the hover texts, which the host divides
// in f64 as the CPU does; the colour is taken from the f32 quotient
// (relative error about 4e-7).

struct Params {
    // the colour of rows without data
    nodata: vec4<f32>,
    // the field: bins per location row of `sums`, locations
    bins: u32,
    elements: u32,
    // processors per row, rows
    group: u32,
    rows: u32,
    // height of a row, colour map stops, whether categorical
    scale: f32,
    stops: u32,
    categorical: u32,
    // invocations per row of the 2D grid
    row: u32,
}

@group(0) @binding(0) var<storage, read> sums: array<vec2<u32>>;
// one bit per location: whether it has intervals in the window
@group(0) @binding(1) var<storage, read> has: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
// 10 floats per vertex (position, normal, colour), 4 vertices a cell
@group(0) @binding(4) var<storage, read_write> verts: array<f32>;
// 6 indices a cell (two triangles, as `Mesh::rect` makes them)
@group(0) @binding(5) var<storage, read_write> indices: array<u32>;
// each cell's busy time summed over the row's processors with data (ns)
@group(0) @binding(6) var<storage, read_write> totals: array<vec2<u32>>;
// x of each bin edge (bins + 1), and each bin's inverse width
@group(0) @binding(7) var<storage, read> xs: array<f32>;
@group(0) @binding(8) var<storage, read> inv: array<f32>;

fn vertex(v: u32, x: f32, y: f32, c: vec4<f32>) {
    let o = v * 10u;
    verts[o] = x;
    verts[o + 1u] = y;
    verts[o + 2u] = 0.0;
    verts[o + 3u] = 0.0;
    verts[o + 4u] = 0.0;
    verts[o + 5u] = 1.0;
    verts[o + 6u] = c.x;
    verts[o + 7u] = c.y;
    verts[o + 8u] = c.z;
    verts[o + 9u] = c.w;
}

@compute @workgroup_size(64)
fn cells(@builtin(global_invocation_id) g: vec3<u32>) {
    let id = g.y * params.row + g.x;
    if (id >= params.rows * params.bins) {
        return;
    }
    let r = id / params.bins;
    let k = id % params.bins;
    let a = r * params.group;
    let b = min(a + params.group, params.elements);
    var total = vec2<u32>(0u, 0u);
    var n = 0u;
    for (var x = a; x < b; x++) {
        if ((has[x / 32u] & (1u << (x % 32u))) != 0u) {
            total = add(total, sums[x * params.bins + k]);
            n++;
        }
    }
    totals[id] = total;
    var c = params.nodata;
    if (n > 0u) {
        let v = (f32(total.x) + f32(total.y) * 4294967296.0) * inv[k] / f32(n);
        c = vec4<f32>(
            colour_at(v, 0.0, 1.0, false, params.stops, params.categorical != 0u),
            1.0,
        );
    }
    let y0 = -f32(r + 1u) * params.scale;
    let y1 = -f32(r) * params.scale;
    let base = id * 4u;
    vertex(base, xs[k], y0, c);
    vertex(base + 1u, xs[k + 1u], y0, c);
    vertex(base + 2u, xs[k + 1u], y1, c);
    vertex(base + 3u, xs[k], y1, c);
    let o = id * 6u;
    indices[o] = base;
    indices[o + 1u] = base + 1u;
    indices[o + 2u] = base + 2u;
    indices[o + 3u] = base;
    indices[o + 4u] = base + 2u;
    indices[o + 5u] = base + 3u;
}
