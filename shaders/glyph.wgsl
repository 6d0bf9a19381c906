// needs globals.wgsl
// Instanced glyphs (spheres, boxes/towers): one base mesh, one instance per
// glyph with its position, scale and colour. Lit like meshes.

struct VertexIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) offset: vec3<f32>,
    @location(3) scale: vec3<f32>,
    @location(4) color: vec4<f32>,
}

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) color: vec4<f32>,
}

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    var out: VertexOut;
    let world = v.offset + v.position * v.scale;
    out.clip = globals.view_proj * vec4<f32>(world, 1.0);
    // normals of a scaled shape: divide by the scale
    out.normal = v.normal / max(abs(v.scale), vec3<f32>(1e-6, 1e-6, 1e-6));
    out.color = srgb_to_linear(v.color);
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    return lambert(in.normal, in.color);
}
