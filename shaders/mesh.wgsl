// Lit (or flat) triangle meshes with per-vertex colour and transparency.
// Two-sided Lambert lighting with a head light and an ambient term.

struct Globals {
    view_proj: mat4x4<f32>,
    light_dir: vec4<f32>,
    // x: 1 for lit meshes, 0 for flat colours
    params: vec4<f32>,
}

@group(0) @binding(0) var<uniform> globals: Globals;

struct VertexIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
}

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) color: vec4<f32>,
}

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    var out: VertexOut;
    out.clip = globals.view_proj * vec4<f32>(v.position, 1.0);
    out.normal = v.normal;
    out.color = v.color;
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    if (globals.params.x < 0.5) {
        return in.color;
    }
    let n = normalize(in.normal);
    let diffuse = abs(dot(n, normalize(globals.light_dir.xyz)));
    let shade = 0.35 + 0.65 * diffuse;
    return vec4<f32>(in.color.rgb * shade, in.color.a);
}
