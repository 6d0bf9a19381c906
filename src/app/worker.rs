//! The window's worker thread: reads the trace, builds the execution
//! control's timeline, then builds the scenes of the panes on request,
//! keeping each pane's analyses while its view and data specification stay
//! the same. The event loop only draws.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use winit::event_loop::EventLoopProxy;

use super::ViewerOptions;
use crate::analysis::cursor::Timeline;
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::{self, Loaded};
use crate::scene::Scene;
use crate::scene::chart::Chart;
use crate::views::{self, Animation, Prepared, ViewState};

/// Work for the worker thread.
pub enum Job {
    Build {
        pane: u64,
        generation: u64,
        /// The pane's state, with the shared cursor and selection.
        state: Box<ViewState>,
        size: (u32, u32),
        /// The playback triangle budget while playing.
        budget: Option<usize>,
    },
    /// A pane was closed: forget its analyses.
    Forget(u64),
    /// `view --gpu`: the window's GPU context. The trace is uploaded to it
    /// and the views that can compute there do, leaving their results
    /// where the window's renderer draws them.
    Gpu(Box<crate::gpu::GpuContext>),
}

/// What the worker reports.
pub enum Reply {
    Stage(String),
    /// The trace is read: its description, the state to show first, a note
    /// when the first choice of view could not show it, and the timeline
    /// of a trace (execution control).
    Ready {
        description: String,
        state: Box<ViewState>,
        note: Option<String>,
        timeline: Option<Arc<Timeline>>,
        /// The trace's span `[0, end]` (ns), for the cursor's range.
        span: Option<Time>,
    },
    Built {
        pane: u64,
        generation: u64,
        scene: Box<Scene>,
        chart: Option<Box<Chart>>,
        animation: Animation,
        /// The pane's data window `[t0, t1)` in ns.
        window: (Time, Time),
        warnings: Vec<String>,
    },
    BuildFailed {
        pane: u64,
        generation: u64,
        error: String,
    },
    /// Reading failed: the window closes with this error.
    Fatal(String),
}

/// Wakes the event loop when the worker has something.
#[derive(Debug, Clone, Copy)]
pub struct Wake;

fn describe(opts: &ViewerOptions, input: &Loaded, started: Instant) -> String {
    match input {
        Loaded::Trace(t) => format!(
            "{} ({} locations, {}), read in {:.1} s",
            opts.trace.display(),
            t.num_locations(),
            t.meta.format.name(),
            started.elapsed().as_secs_f64()
        ),
        Loaded::Profile(p) => format!("{} (profile, {} rows)", opts.trace.display(), p.rows.len()),
        Loaded::Tensor(t) => format!(
            "{} (access tensor {} intervals x {} elements x {} processors)",
            opts.trace.display(),
            t.shape[0],
            t.shape[1],
            t.shape[2]
        ),
        Loaded::Volumes(v) => format!(
            "{} ({}, {} quantities)",
            opts.trace.display(),
            v.format,
            v.volumes.len()
        ),
    }
}

/// The worker: reads the trace, then builds scenes on request.
pub fn run(
    opts: ViewerOptions,
    jobs: Receiver<Job>,
    tx: Sender<Reply>,
    proxy: EventLoopProxy<Wake>,
) {
    let send = |r: Reply| {
        let _ = tx.send(r);
        let _ = proxy.send_event(Wake);
    };
    let started = Instant::now();
    send(Reply::Stage(format!(
        "step 1 of 2: reading {}",
        opts.trace.display()
    )));
    let input = match readers::load(&opts.trace, &opts.read) {
        Ok(l) => l,
        Err(e) => return send(Reply::Fatal(e.to_string())),
    };
    if let Loaded::Trace(t) = &input {
        for w in &t.meta.diagnostics.warnings {
            eprintln!("warning: {w}");
        }
    }
    let description = describe(&opts, &input, started);
    let mut state = opts.state.clone();
    let requested = opts.view_explicit.then(|| state.view.clone());
    let note = match views::choose(requested.as_deref(), &input, &state.data, &state.params) {
        Ok((v, p, note)) => {
            state.view = v.name().to_string();
            state.params = p;
            note
        }
        Err(e) => return send(Reply::Fatal(e.to_string())),
    };
    let (timeline, span) = match &input {
        Loaded::Trace(t) => (Some(Arc::new(Timeline::new(t))), Some(t.meta.span)),
        _ => (None, None),
    };
    send(Reply::Ready {
        description,
        state: Box::new(state),
        note,
        timeline,
        span,
    });
    // per pane: (view, params' data key, data spec) → analyses
    let mut cache: HashMap<u64, (serde_json::Value, Prepared)> = HashMap::new();
    let mut resident: Option<views::inputs::GpuInput> = None;
    // --gpu: the window's context comes when it opens; builds wait for it
    let mut early = std::collections::VecDeque::new();
    if opts.gpu {
        while let Ok(j) = jobs.recv() {
            if let Job::Gpu(ctx) = &j {
                resident = upload(&input, ctx, &send);
                break;
            }
            early.push_back(j);
        }
    }
    while let Some(job) = early.pop_front().or_else(|| jobs.recv().ok()) {
        // only the newest request of each pane matters
        let mut pending: Vec<Job> = vec![job];
        while let Ok(j) = jobs.try_recv() {
            pending.push(j);
        }
        let mut newest: Vec<Job> = Vec::new();
        for j in pending {
            match &j {
                Job::Gpu(ctx) => {
                    if let Some(g) = upload(&input, ctx, &send) {
                        resident = Some(g);
                        // what was computed on the CPU is computed again
                        cache.clear();
                    }
                }
                Job::Forget(p) => {
                    cache.remove(p);
                    newest.retain(|n| !matches!(n, Job::Build { pane, .. } if pane == p));
                }
                Job::Build { pane, .. } => {
                    let p = *pane;
                    newest.retain(|n| !matches!(n, Job::Build { pane, .. } if *pane == p));
                    newest.push(j);
                }
            }
        }
        for job in newest {
            let Job::Build {
                pane,
                generation,
                state,
                size,
                budget,
            } = job
            else {
                continue;
            };
            let result = build(
                &input,
                &mut cache,
                pane,
                &state,
                (size, budget),
                resident.as_ref(),
                &send,
            );
            match result {
                Ok((scene, chart, animation, window, warnings)) => send(Reply::Built {
                    pane,
                    generation,
                    scene: Box::new(scene),
                    chart: chart.map(Box::new),
                    animation,
                    window,
                    warnings,
                }),
                Err(e) => send(Reply::BuildFailed {
                    pane,
                    generation,
                    error: e.to_string(),
                }),
            }
        }
    }
}

/// Uploads the trace to the window's GPU (`None`, with a note, when the
/// input is no trace or the GPU refuses it).
fn upload(
    input: &Loaded,
    ctx: &crate::gpu::GpuContext,
    send: &impl Fn(Reply),
) -> Option<views::inputs::GpuInput> {
    let Loaded::Trace(t) = input else {
        eprintln!("note: --gpu computes on a trace; this input is not one");
        return None;
    };
    send(Reply::Stage("uploading the trace to the GPU".into()));
    match crate::gpu::GpuTrace::upload(ctx, t, None) {
        Ok(g) => {
            eprintln!("gpu: {}", g.upload_summary());
            Some(views::inputs::GpuInput(Arc::new(g)))
        }
        Err(e) => {
            eprintln!("warning: the trace stays on the CPU: {e}");
            None
        }
    }
}

type Built = (Scene, Option<Chart>, Animation, (Time, Time), Vec<String>);

fn build(
    input: &Loaded,
    cache: &mut HashMap<u64, (serde_json::Value, Prepared)>,
    pane: u64,
    state: &ViewState,
    (size, budget): ((u32, u32), Option<usize>),
    resident: Option<&views::inputs::GpuInput>,
    send: &impl Fn(Reply),
) -> Result<Built> {
    let view = views::find(&state.view)?;
    let params = view.normalize(&state.params)?;
    let key = serde_json::json!([state.view, view.data_key(&params), state.data]);
    if cache.get(&pane).is_none_or(|(k, _)| *k != key) {
        send(Reply::Stage(format!(
            "step 2 of 2: analyses of the {} view",
            state.view
        )));
        cache.remove(&pane);
        let prep = Prepared::with_gpu(input, state, resident.cloned())?;
        if let Some(n) = prep.gpu_note() {
            eprintln!("note: {n}");
        }
        cache.insert(pane, (key.clone(), prep));
    }
    let (_, prep) = cache
        .get_mut(&pane)
        .ok_or_else(|| Error::Invalid("no analyses".into()))?;
    prep.params = params;
    let anim = prep.animation()?;
    let mut ctx = prep.ctx(state.step, state.cursor, size, state.selected)?;
    ctx.triangle_budget = budget;
    let scene = prep.build(ctx)?;
    // 2D charts also go to the window's interactive plot
    let chart = prep.chart().transpose()?;
    Ok((
        scene,
        chart,
        anim,
        (prep.spec.t0, prep.spec.t1),
        prep.spec.warnings.clone(),
    ))
}
