// The uniforms and the lighting shared by the scene shaders (mesh, glyph,
// lines); the renderer and the naga test put this file in front of every
// shader whose first line reads "// needs globals.wgsl". Matches `Globals`
// in src/render/mod.rs.

struct Globals {
    view_proj: mat4x4<f32>,
    light_dir: vec4<f32>,
    // x: 1 for lit meshes, 0 for flat colours
    params: vec4<f32>,
}

@group(0) @binding(0) var<uniform> globals: Globals;

// Scene colours are sRGB-encoded (as the colour maps and the legend); the
// targets are sRGB, so colours are decoded to linear light once, here.
fn srgb_to_linear(c: vec4<f32>) -> vec4<f32> {
    let lo = c.rgb / 12.92;
    let hi = pow((c.rgb + vec3<f32>(0.055)) / 1.055, vec3<f32>(2.4));
    return vec4<f32>(select(hi, lo, c.rgb <= vec3<f32>(0.04045)), c.a);
}

// Two-sided Lambert lighting with a head light and an ambient term.
fn lambert(normal: vec3<f32>, color: vec4<f32>) -> vec4<f32> {
    let n = normalize(normal);
    let diffuse = abs(dot(n, normalize(globals.light_dir.xyz)));
    let shade = 0.35 + 0.65 * diffuse;
    return vec4<f32>(color.rgb * shade, color.a);
}
