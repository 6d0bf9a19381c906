// needs u64.wgsl
// The moment display's rows on the GPU (needs SHADER_F64): each row's
// accumulator, the merge of `group` adjacent locations' accumulators in
// location order, the fold the host's `views::moments::row_moments` does,
// with `MomentAcc::merge`'s formulas in its order. The locations'
// accumulators are where the moments kernel left them (`done` regions of
// its results, moments.wgsl); those it could not finish on the GPU (the
// locations spanning tiles, merged on the host from the tiles' nodes) are
// written in first by `write_patches`. Only the rows come back: 40 bytes a row.

struct Acc {
    w: f64,
    mean: f64,
    m2: f64,
    m3: f64,
}

struct Patch {
    slot: u32,
    pad: u32,
    acc: Acc,
}

struct Row {
    origin: vec2<u32>,
    acc: Acc,
}

struct Params {
    locations: u32,
    group: u32,
    rows: u32,
    patches: u32,
    // invocations per row of the 2D grid
    row: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// the moments kernel's results, in units of one accumulator
@group(0) @binding(0) var<storage, read_write> accs: array<Acc>;
// each location's accumulator in `accs`, NONE for a location without
// intervals
@group(0) @binding(1) var<storage, read> slots: array<u32>;
// each location's first start: the origin of its accumulator
@group(0) @binding(2) var<storage, read> origins: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> patches: array<Patch>;
@group(0) @binding(4) var<storage, read_write> rows: array<Row>;
@group(0) @binding(5) var<uniform> params: Params;

const NONE: u32 = 0xffffffffu;

fn id_of(g: vec3<u32>) -> u32 {
    return g.y * params.row + g.x;
}

@compute @workgroup_size(64)
fn write_patches(@builtin(global_invocation_id) g: vec3<u32>) {
    let id = id_of(g);
    if (id >= params.patches) {
        return;
    }
    accs[patches[id].slot] = patches[id].acc;
}

fn to_f64(v: vec2<u32>) -> f64 {
    return f64(v.y) * f64(4294967296.0) + f64(v.x);
}

@compute @workgroup_size(64)
fn fold(@builtin(global_invocation_id) g: vec3<u32>) {
    let r = id_of(g);
    if (r >= params.rows) {
        return;
    }
    let first = r * params.group;
    let last = min(first + params.group, params.locations);
    var a = Acc(f64(0.0), f64(0.0), f64(0.0), f64(0.0));
    var origin = vec2<u32>(0u, 0u);
    for (var l = first; l < last; l++) {
        let s = slots[l];
        if (s == NONE) {
            continue;
        }
        let b = accs[s];
        if (b.w == f64(0.0)) {
            continue;
        }
        let o = origins[l];
        if (a.w == f64(0.0)) {
            a = b;
            origin = o;
            continue;
        }
        // b's mean relative to a's origin (the integer part exact)
        var shift: f64;
        if (lt(o, origin)) {
            shift = -to_f64(sub(origin, o));
        } else {
            shift = to_f64(sub(o, origin));
        }
        let w = a.w + b.w;
        let d = b.mean + shift - a.mean;
        let mean = a.mean + d * b.w / w;
        let m2 = a.m2 + b.m2 + d * d * a.w * b.w / w;
        let m3 = a.m3 + b.m3 + d * d * d * a.w * b.w * (a.w - b.w) / (w * w)
            + f64(3.0) * d * (a.w * b.m2 - b.w * a.m2) / w;
        a = Acc(w, mean, m2, m3);
    }
    rows[r] = Row(origin, a);
}
