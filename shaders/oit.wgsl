// Order-independent transparency, composite pass: the transparent layers
// were accumulated (mesh.wgsl, fs_oit) as Σ c·a in rgb, Σ a in alpha, and
// Π (1 − a) in the revealage; here their weighted average colour is laid
// over the opaque image with coverage 1 − Π (1 − a). The sum commutes, so
// the result does not depend on the order the layers were drawn in.

@group(0) @binding(0) var accum_tex: texture_2d<f32>;
@group(0) @binding(1) var reveal_tex: texture_2d<f32>;

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    // one triangle covering the screen
    let x = f32((i << 1u) & 2u) * 2.0 - 1.0;
    let y = f32(i & 2u) * 2.0 - 1.0;
    return vec4<f32>(x, y, 0.0, 1.0);
}

@fragment
fn fs_main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let p = vec2<i32>(pos.xy);
    let accum = textureLoad(accum_tex, p, 0);
    let reveal = textureLoad(reveal_tex, p, 0).r;
    if (accum.a <= 1e-5) {
        discard;
    }
    return vec4<f32>(accum.rgb / accum.a, clamp(1.0 - reveal, 0.0, 1.0));
}
