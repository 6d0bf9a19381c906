//! `tapestry render TRACE`: a view headless to PNG or JPEG (or a numbered
//! sequence of animation frames), or its scene to glTF 2.0 (`.glb`,
//! `.gltf`). Views, parameters and defaults come from the registry.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use tapestry::analysis::cursor::{Stats, Step, Timeline};
use tapestry::gpu::GpuContext;
use tapestry::model::Time;
use tapestry::readers::Loaded;
use tapestry::render::Renderer;
use tapestry::scene::Camera;
use tapestry::scene::path::{self as campath, Keyframe};
use tapestry::views::{Prepared, ViewState};

use super::ReadArgs;
use super::parse::{parse_size, parse_time};
use super::viewspec::{ViewSpecArgs, load};

#[derive(Args)]
pub struct RenderArgs {
    /// The trace.
    pub trace: PathBuf,
    #[command(flatten)]
    pub spec: ViewSpecArgs,
    /// Image size WxH [1280x720, or the view-state file's].
    #[arg(long)]
    pub size: Option<String>,
    /// Output: .png, .jpg, .svg (2D charts), .glb, .gltf, or a video .mp4 /
    /// .webm (through ffmpeg) [TRACE-STEM-VIEW.png in the current
    /// directory]. With --frames, images are NAME-0000.png, ...
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Render N frames of the animation from --start to its end (more
    /// when N frames would skip bins); with --events-per-frame or
    /// --ticks-per-frame, N frames of execution control from --cursor;
    /// with --path, N frames along the camera path.
    #[arg(long)]
    pub frames: Option<usize>,
    /// Execution control: each frame advances the time cursor by this many
    /// records (interval starts, events, sends, receives, samples)...
    #[arg(long, value_name = "N")]
    pub events_per_frame: Option<u64>,
    /// ...or by this much time (ns or with a unit), whichever comes first.
    #[arg(long, value_name = "TIME")]
    pub ticks_per_frame: Option<String>,
    /// Execution control backwards (from --cursor, or the window's end).
    #[arg(long)]
    pub backward: bool,
    /// Execution control: wrap around at the window's ends.
    #[arg(long = "loop")]
    pub looping: bool,
    /// A camera path (a view-state file with "path" keyframes, or a JSON
    /// list of {"at": seconds, "camera": {...}}): the frames fly along it.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Frames per second of a video and of a camera path [25].
    #[arg(long)]
    pub fps: Option<f64>,
    /// Write the view state used (view, parameters, data, camera, size) to
    /// this JSON file; `--view-state` reproduces the image exactly.
    #[arg(long)]
    pub save_view_state: Option<PathBuf>,
    /// Upload the trace to the GPU and compute there what can stay there
    /// for drawing: the Kiviat tube of the busy field, and the moment
    /// display's Gantt chart, are made by GPU kernels and drawn without
    /// reading the field back; the moment display's moments come from the
    /// moments kernel (adapters with f64). Other views (and a tube with
    /// --color-by or another quantity) are computed on the CPU.
    #[arg(long)]
    pub gpu: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// What `-o` asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Png,
    Jpeg,
    Glb,
    Gltf,
    Svg,
    Video,
}

fn format_of(p: &Path) -> Result<Format> {
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "png" => Format::Png,
        "jpg" | "jpeg" => Format::Jpeg,
        "glb" => Format::Glb,
        "gltf" => Format::Gltf,
        "svg" => Format::Svg,
        "mp4" | "webm" => Format::Video,
        other => bail!(
            "{}: expected an output ending in .png, .jpg, .svg, .glb, .gltf, .mp4 or .webm, found '{}'",
            p.display(),
            if other.is_empty() {
                "no extension"
            } else {
                other
            }
        ),
    })
}

fn numbered(path: &Path, i: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "frame".into());
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|| "png".into());
    path.with_file_name(format!("{stem}-{i:04}.{ext}"))
}

/// Reads a camera path: a view-state file's `path`, or a bare list of
/// keyframes.
fn read_path(p: &Path) -> Result<Vec<Keyframe>> {
    let bytes = std::fs::read(p)
        .with_context(|| format!("{}: cannot read the camera path", p.display()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{}:{}: not JSON: {e}", p.display(), e.line()))?;
    let keys: Vec<Keyframe> = if v.is_array() {
        serde_json::from_value(v).map_err(|e| {
            anyhow::anyhow!(
                "{}: not a list of keyframes {{\"at\", \"camera\"}}: {e}",
                p.display()
            )
        })?
    } else {
        ViewState::read(p)?.path
    };
    campath::validate(&keys).with_context(|| p.display().to_string())?;
    Ok(keys)
}

/// The most frames one `render` writes.
const MAX_FRAMES: usize = 1_000_000;

/// One frame to render: the view's step, the time cursor, the camera.
struct FramePlan {
    step: usize,
    cursor: Option<Time>,
    stats: Option<Stats>,
}

pub fn run(a: RenderArgs) -> Result<()> {
    if a.spec.list_params {
        a.spec.print_params();
        return Ok(());
    }
    // flags first, before any reading
    a.spec.validate()?;
    if let Some(s) = &a.size {
        parse_size(s)?;
    }
    let ticks = a
        .ticks_per_frame
        .as_deref()
        .map(|t| parse_time(t).context("--ticks-per-frame"))
        .transpose()?;
    let control = a.events_per_frame.is_some() || ticks.is_some();
    if a.events_per_frame == Some(0) && ticks.unwrap_or(0) == 0 {
        bail!("--events-per-frame 0 advances nothing; give a positive count or --ticks-per-frame");
    }
    if (a.backward || a.looping) && !control {
        bail!(
            "--backward and --loop are execution control: give --events-per-frame or --ticks-per-frame"
        );
    }
    if control && a.frames.is_none() {
        bail!("execution control renders a sequence: give --frames N");
    }
    if a.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    if let Some(n) = a.frames.filter(|&n| n > MAX_FRAMES) {
        bail!("--frames {n}: at most {MAX_FRAMES} frames in one render");
    }
    if let Some(f) = a.fps
        && !(f.is_finite() && f > 0.0 && f <= 1000.0)
    {
        bail!("--fps {f}: expected a rate in (0, 1000]");
    }
    let fps = a.fps.unwrap_or(25.0);
    let path = a.path.as_deref().map(read_path).transpose()?;
    if let Some(o) = &a.out {
        let f = format_of(o)?;
        let sequence = a.frames.is_some() || path.is_some();
        if sequence && matches!(f, Format::Glb | Format::Gltf | Format::Svg) {
            bail!("a frame sequence writes images (.png, .jpg) or a video (.mp4, .webm)");
        }
        if a.gpu && matches!(f, Format::Glb | Format::Gltf | Format::Svg) {
            bail!(
                "--gpu keeps the tube on the GPU, where it is drawn: write an image (.png, .jpg) or a video, or export {} without --gpu",
                o.display()
            );
        }
        if f == Format::Video && tapestry::export::video::ffmpeg_version().is_none() {
            return Err(tapestry::export::video::no_ffmpeg().into());
        }
    }
    let input = load(&a.trace, &a.read)?;
    let (mut state, note) = a.spec.state(&input)?;
    if let Some(n) = note {
        eprintln!("note: {n}");
    }
    if let (Some(sel), Loaded::Trace(t)) = (state.selected, &input)
        && sel >= t.num_locations()
    {
        bail!(
            "--select {sel}: the trace has {} locations (0..{})",
            t.num_locations(),
            t.num_locations().saturating_sub(1)
        );
    }
    let (w, h) = match (&a.size, state.size) {
        (Some(s), _) => parse_size(s)?,
        (None, Some([w, h])) => (w, h),
        (None, None) => (1280, 720),
    };
    state.size = Some([w, h]);
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .trace
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into());
        PathBuf::from(format!("{stem}-{}.png", state.view))
    });
    let format = format_of(&out)?;
    // outputs never overwrite an input: the trace, its siblings, tensors
    let mut inputs = tapestry::readers::input_files(&a.trace);
    inputs.extend(ViewSpecArgs::tensor_inputs(&state));
    if let Some(vs) = &a.spec.view_state {
        inputs.push(vs.clone());
    }
    if let Some(p) = &a.path {
        inputs.push(p.clone());
    }
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();

    let t_data = std::time::Instant::now();
    // --gpu: one context for the analyses and the renderer, so that what
    // the kernels leave on the GPU is drawn where it lies
    let mut gpu_ctx = None;
    let mut resident = None;
    if a.gpu {
        let Loaded::Trace(t) = &input else {
            bail!("--gpu computes on a trace's intervals; this input is not a trace");
        };
        let ctx = GpuContext::new().context("--gpu needs a GPU adapter")?;
        let g = tapestry::gpu::GpuTrace::upload(&ctx, t, None)?;
        eprintln!("gpu: {} to {}", g.upload_summary(), ctx.describe());
        resident = Some(tapestry::views::inputs::GpuInput(std::sync::Arc::new(g)));
        gpu_ctx = Some(ctx);
    }
    let prepared = Prepared::with_gpu(&input, &state, resident)?;
    if let Some(n) = prepared.gpu_note() {
        eprintln!("note: {n}");
    }
    for w in &prepared.spec.warnings {
        eprintln!("warning: {w}");
    }
    let anim = prepared.animation()?;
    if state.step >= anim.steps {
        bail!(
            "--start {}: the animation has {} positions (0..{})",
            state.step,
            anim.steps,
            anim.steps.saturating_sub(1)
        );
    }
    let (t0, t1) = (prepared.spec.t0, prepared.spec.t1);
    let mut state_names = Vec::new();
    let plans: Vec<FramePlan> = if control {
        let Loaded::Trace(t) = &input else {
            bail!("execution control (--events-per-frame, --ticks-per-frame) needs a trace");
        };
        let tl = Timeline::new(t);
        state_names = tl.state_names.clone();
        let step = Step {
            events: a.events_per_frame.unwrap_or(0),
            ticks: ticks.unwrap_or(0),
            backward: a.backward,
        };
        let mut at = state
            .cursor
            .unwrap_or(if a.backward { t1 } else { t0 })
            .clamp(t0, t1);
        let n = a.frames.unwrap_or(1);
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            if i > 0 {
                at = tl.advance(at, step, (t0, t1), a.looping)?;
            }
            v.push(FramePlan {
                step: state.step,
                cursor: Some(at),
                stats: Some(tl.stats(at)),
            });
        }
        v
    } else {
        let n = match (a.frames, &path) {
            (Some(n), _) => n,
            (None, Some(p)) => {
                let n = (campath::duration(p) * fps).round() + 1.0;
                if n > MAX_FRAMES as f64 {
                    bail!(
                        "the camera path lasts {:.0} s: {n} frames at {fps} frames/s are more than {MAX_FRAMES}; give --frames",
                        campath::duration(p)
                    );
                }
                n as usize
            }
            (None, None) => 1,
        };
        let steps = if a.frames.is_some() && path.is_none() {
            let (p, note) = anim.positions(n, state.step);
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
            p
        } else {
            vec![state.step; n]
        };
        steps
            .into_iter()
            .map(|step| FramePlan {
                step,
                cursor: state.cursor,
                stats: None,
            })
            .collect()
    };
    let ctx_of = |f: &FramePlan| prepared.ctx(f.step, f.cursor, (w, h), state.selected);
    let first = prepared.build(ctx_of(&plans[0])?)?;
    let t_data = t_data.elapsed().as_secs_f64();
    let camera = state.camera.unwrap_or_else(|| Camera::fit(&first, w, h));
    state.camera = Some(camera);
    if let Some(p) = &path {
        state.path = p.clone();
    }
    if let Some(p) = &a.save_view_state {
        state.write(p, &inputs)?;
        eprintln!("wrote {}", p.display());
    }
    match format {
        Format::Glb | Format::Gltf => {
            let bytes = if format == Format::Glb {
                tapestry::export::gltf::glb(&first)?
            } else {
                tapestry::export::gltf::gltf(&first)?
            };
            tapestry::export::write_atomic(&out, &bytes, &inputs)?;
            eprintln!(
                "wrote {} ({} triangles, {} line segments): {}",
                out.display(),
                first.triangles(),
                first.lines.len(),
                first.title
            );
            return Ok(());
        }
        Format::Svg => {
            let chart = prepared.chart().ok_or_else(|| {
                anyhow::anyhow!(
                    "the {} view is not a 2D chart; SVG is written for signal, spectrum, correlation, histogram and markov (use .png)",
                    state.view
                )
            })??;
            let svg = tapestry::export::svg::chart_svg(&chart, w, h)?;
            tapestry::export::write_atomic(&out, svg.as_bytes(), &inputs)?;
            eprintln!("wrote {}: {}", out.display(), chart.title);
            return Ok(());
        }
        Format::Png | Format::Jpeg | Format::Video => {}
    }
    let gpu = match gpu_ctx {
        Some(c) => c,
        None => GpuContext::new().context("rendering needs a GPU adapter")?,
    };
    eprintln!("adapter: {}", gpu.describe());
    let renderer = Renderer::new(&gpu);
    let t_render = std::time::Instant::now();
    let sequence = plans.len() > 1 || a.frames.is_some();
    let mut video = if format == Format::Video {
        Some(tapestry::export::video::VideoWriter::start(
            &out,
            (w, h),
            fps,
            &inputs,
        )?)
    } else {
        None
    };
    let bar = if plans.len() > 1 {
        let b = indicatif::ProgressBar::new(plans.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} frame {pos}/{len} [{bar:30}] {per_sec}, {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut frames_json = Vec::new();
    let mut last: Option<(tapestry::views::BuildCtx, tapestry::scene::Scene)> = None;
    let dur = path.as_ref().map_or(0.0, |p| campath::duration(p));
    for (i, plan) in plans.iter().enumerate() {
        let ctx = ctx_of(plan)?;
        let scene = match last.take() {
            Some((c, s)) if c == ctx => s,
            _ if i == 0 => first.clone(),
            _ => prepared.build(ctx)?,
        };
        let cam = match &path {
            Some(p) => {
                let t = if plans.len() > 1 {
                    dur * i as f64 / (plans.len() - 1) as f64
                } else {
                    0.0
                };
                campath::camera_at(p, t).unwrap_or(camera)
            }
            None => camera,
        };
        let frame = renderer.render(&scene, &cam, w, h)?;
        let file = if let Some(v) = video.as_mut() {
            v.push(&frame)?;
            None
        } else {
            let path = if sequence {
                numbered(&out, i)
            } else {
                out.clone()
            };
            let bytes = if format == Format::Jpeg {
                frame.jpeg()?
            } else {
                frame.png()?
            };
            tapestry::export::write_atomic(&path, &bytes, &inputs)?;
            if !sequence {
                eprintln!(
                    "wrote {} ({} triangles): {}",
                    path.display(),
                    scene.triangles(),
                    scene.title
                );
            }
            Some(path)
        };
        if let Some(st) = &plan.stats {
            frames_json.push(serde_json::json!({
                "frame": i,
                "file": file.as_ref().map(|p| p.display().to_string()),
                "step": ctx.step,
                "cursor_ns": plan.cursor,
                "statistics": st,
            }));
        }
        bar.inc(1);
        last = Some((ctx, scene));
    }
    bar.finish_and_clear();
    if let Some(v) = video {
        let n = v.finish()?;
        eprintln!("wrote {} ({n} frames at {fps} frames/s)", out.display());
    } else if sequence {
        eprintln!(
            "wrote {} … {}",
            numbered(&out, 0).display(),
            numbered(&out, plans.len() - 1).display()
        );
    }
    if control {
        let json = serde_json::json!({
            "events_per_frame": a.events_per_frame.unwrap_or(0),
            "ticks_per_frame_ns": ticks.unwrap_or(0),
            "backward": a.backward,
            "loop": a.looping,
            "range_ns": [t0, t1],
            "state_names": state_names,
            "frames": frames_json,
        });
        let stem = out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "frames".into());
        let jp = out.with_file_name(format!("{stem}-frames.json"));
        tapestry::export::write_atomic(
            &jp,
            serde_json::to_string_pretty(&json)?.as_bytes(),
            &inputs,
        )?;
        eprintln!(
            "wrote {} (cursor and statistics of every frame)",
            jp.display()
        );
    }
    eprintln!(
        "{} frame(s): analyses and scene {:.2} s, rendering {:.2} s",
        plans.len(),
        t_data,
        t_render.elapsed().as_secs_f64()
    );
    Ok(())
}
