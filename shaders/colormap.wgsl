// A colour map on the GPU, the twin of `scene::colormap::Colormap::at`:
// the kernels that colour vertices (tube.wgsl, gantt.wgsl) put this file in
// front of their own, as the naga test does for every shader whose first
// line names it after "// needs ". The map's stops are bound at
// binding 3 of group 0, one (position, r, g, b) per stop.

@group(0) @binding(3) var<storage, read> stops: array<vec4<f32>>;

// The colour of `c` on a scale from `cmin` to `cmax` (the middle when the
// host found the scale `constant`) through the first `n` stops, blended
// or, when `categorical`, the nearest stop.
fn colour_at(c: f32, cmin: f32, cmax: f32, constant: bool, n: u32, categorical: bool) -> vec3<f32> {
    var t = 0.5;
    if (!constant) {
        t = (c - cmin) / (cmax - cmin);
    }
    if (n == 0u || t != t) {
        return vec3<f32>(0.5);
    }
    t = clamp(t, 0.0, 1.0);
    if (categorical) {
        let k = min(u32(round(t * f32(n - 1u))), n - 1u);
        return stops[k].yzw;
    }
    // the first stop past t (at least 1, at most n - 1)
    var i = 0u;
    while (i < n && stops[i].x <= t) {
        i++;
    }
    i = clamp(i, 1u, n - 1u);
    let a = stops[i - 1u];
    let b = stops[i];
    var f = 0.0;
    if (b.x > a.x) {
        f = (t - a.x) / (b.x - a.x);
    }
    return a.yzw + f * (b.yzw - a.yzw);
}
