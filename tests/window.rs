//! The viewer window under a virtual display: it starts, renders frames,
//! takes a screenshot through its own key binding (F12), saves the view
//! state (F5), and exits cleanly after a scripted number of frames.
//! Needs `xvfb-run`; without it the test says so and passes, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it and installs xvfb).

mod common;

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// `xvfb-run -a` picks the first free display number by looking for lock
/// files, so two started at once may pick the same one and the second
/// client finds no X server ("Failed to open connection"). The tests of
/// this file therefore take their virtual displays one at a time.
fn one_display_at_a_time() -> MutexGuard<'static, ()> {
    static DISPLAY: Mutex<()> = Mutex::new(());
    DISPLAY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn window_runs_screenshots_and_exits() {
    let _display = one_display_at_a_time();
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        assert!(
            std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
            "xvfb-run is required in CI"
        );
        eprintln!("skipped: no xvfb-run");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("g.prv");
    let (code, _, err) = common::tapestry(&[
        "synth",
        "gauss",
        "-p",
        "8",
        "--n",
        "64",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for view in ["kiviat", "moments", "spectrum"] {
        let out = d.path().join(view);
        std::fs::create_dir(&out).unwrap();
        let o = Command::new("xvfb-run")
            .args(["-a", "-s", "-screen 0 1024x768x24"])
            .arg(env!("CARGO_BIN_EXE_tapestry"))
            .args([
                "view",
                trace.to_str().unwrap(),
                "--view",
                view,
                "--size",
                "640x480",
            ])
            .args([
                "--press",
                "F12@25",
                "--press",
                "F5@26",
                "--exit-after",
                "30",
            ])
            .arg("--output-dir")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{view}: {stderr}");
        let shot = out.join("tapestry-0001.png");
        let img = image::open(&shot)
            .unwrap_or_else(|e| panic!("{view}: no screenshot ({e}): {stderr}"))
            .to_rgba8();
        assert_eq!(img.dimensions(), (640, 480));
        // the scene was drawn: more than one colour in the image
        let first = img.get_pixel(0, 0);
        assert!(
            img.pixels().any(|p| p != first),
            "{view}: a blank screenshot"
        );
        let state: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("tapestry-view.json")).unwrap())
                .unwrap();
        assert_eq!(state["view"], view);
        assert!(state["camera"].is_object());
        // the window's view state is a render view state
        let png = out.join("again.png");
        let (code, _, err) = common::tapestry(&[
            "render",
            trace.to_str().unwrap(),
            "--view-state",
            out.join("tapestry-view.json").to_str().unwrap(),
            "-o",
            png.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{view}: {err}");
    }
}

/// CPU time (user + system, in clock ticks) of a process.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name
    f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0)
}

#[test]
fn an_idle_window_sleeps() {
    let _display = one_display_at_a_time();
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        assert!(std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none());
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("g.prv");
    let (code, _, err) = common::tapestry(&[
        "synth",
        "gauss",
        "-p",
        "8",
        "--n",
        "64",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut child = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1024x768x24"])
        .arg(env!("CARGO_BIN_EXE_tapestry"))
        .args(["view", trace.to_str().unwrap(), "--size", "640x480"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // the viewer is a child of xvfb-run: find it
    std::thread::sleep(std::time::Duration::from_secs(4));
    let pid = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                c.contains("tapestry")
                    && c.contains(trace.to_str().unwrap())
                    && c.starts_with(env!("CARGO_BIN_EXE_tapestry"))
            })
        });
    let Some(pid) = pid else {
        let _ = child.kill();
        panic!("the viewer did not start");
    };
    let before = cpu_ticks(pid);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let used = cpu_ticks(pid) - before;
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let _ = child.wait();
    // clock ticks are 1/100 s: an idle window uses well under 10 % of a core
    assert!(
        used <= 20,
        "the idle window used {used} ticks of CPU in 2 s"
    );
}

/// The window driven like a user, through X events (xdotool): two views
/// side by side, a click on a processor row selects it in both, ten frames
/// of execution control forward and ten back bring every statistic back to
/// its value before, and the screenshot and view state record it all.
#[test]
fn xdotool_steps_forward_and_back_and_picks() {
    let _display = one_display_at_a_time();
    let have = |c: &str| Command::new(c).arg("--help").output().is_ok();
    if !have("xvfb-run") || !have("xdotool") {
        assert!(
            std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
            "xvfb-run and xdotool are required in CI"
        );
        eprintln!("skipped: no xvfb-run or xdotool");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("g.prv");
    let (code, _, err) = common::tapestry(&[
        "synth",
        "gauss",
        "-p",
        "8",
        "--n",
        "64",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = r#"
"$BIN" view "$TRACE" --view moments --add-view kiviat --size 1000x600 --print-cursor --output-dir "$OUT" 2>"$OUT/err.txt" &
PID=$!
WID=""
for i in $(seq 1 150); do
  WID=$(xdotool search --name '^tapestry$' 2>/dev/null | head -1)
  [ -n "$WID" ] && break
  sleep 0.2
done
[ -n "$WID" ] || { echo "no window"; kill $PID; exit 3; }
sleep 4
xdotool windowfocus --sync "$WID" 2>/dev/null || true
# a click on processor row 2 of the moment display (pane from x = 280)
xdotool mousemove --window "$WID" 400 "$ROWY" click 1
sleep 1
for i in $(seq 1 11); do xdotool key Right; sleep 0.4; done
for i in $(seq 1 10); do xdotool key Left; sleep 0.4; done
xdotool mousemove --window "$WID" 400 "$ROWY"
sleep 1
xdotool key F12
sleep 2
xdotool key F5
sleep 1
xdotool key Escape
wait $PID
"#;
    // rows of the moment display: 8 processors between the title and the
    // time axis (about y = 70 … 520 at 600 pixels); row 2's middle
    let o = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24", "sh", "-c", script])
        .env("BIN", env!("CARGO_BIN_EXE_tapestry"))
        .env("TRACE", &trace)
        .env("OUT", &out)
        .env("ROWY", "190")
        .output()
        .unwrap();
    let log = std::fs::read_to_string(out.join("err.txt")).unwrap_or_default();
    assert!(
        o.status.success(),
        "{}{}{log}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let cursor: Vec<&str> = log.lines().filter(|l| l.starts_with("cursor ")).collect();
    assert_eq!(cursor.len(), 21, "{log}");
    // the first Right puts the cursor at the start; ten more and ten back
    assert_eq!(cursor[0], cursor[20], "{log}");
    assert_ne!(cursor[0], cursor[10]);
    let events = |l: &str| -> u64 {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix("events="))
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    assert!(events(cursor[10]) > events(cursor[0]), "{log}");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("tapestry-view.json")).unwrap()).unwrap();
    assert_eq!(state["view"], "moments");
    assert_eq!(state["panes"][0]["view"], "kiviat", "{state}");
    assert!(state["layout"].is_object(), "{state}");
    assert!(state["cursor"].as_u64().is_some(), "{state}");
    let sel = state["selected"]
        .as_u64()
        .unwrap_or_else(|| panic!("nothing selected: {state}"));
    assert!(sel < 8, "{state}");
    let img = image::open(out.join("tapestry-0001.png"))
        .unwrap()
        .to_rgba8();
    assert_eq!(img.dimensions(), (1000, 600));
    // the selection's orange frame is drawn (in both panes)
    let orange = |x0: u32, x1: u32| {
        (x0..x1).any(|x| {
            (0..600).any(|y| {
                let p = img.get_pixel(x, y);
                p[0] > 220 && (110..180).contains(&p[1]) && p[2] < 60
            })
        })
    };
    assert!(orange(290, 640), "no selection in the moment display");
    assert!(orange(640, 1000), "no selection in the Kiviat tube");
}

/// `view --gpu`: the window uploads the trace to its own GPU context, the
/// Kiviat tube and the moment display (up to a time cursor) are made there
/// from the busy field and drawn where they lie; the screenshot is the CPU
/// window's.
#[test]
fn window_draws_the_views_made_on_the_gpu() {
    let _display = one_display_at_a_time();
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        assert!(std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none());
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("b.prv");
    let (code, _, err) = common::tapestry(&[
        "synth",
        "bcast",
        "-p",
        "256",
        "--reps",
        "32",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut shots = Vec::new();
    for gpu in [false, true] {
        let out = d.path().join(format!("w{gpu}"));
        std::fs::create_dir(&out).unwrap();
        let mut cmd = Command::new("xvfb-run");
        cmd.args(["-a", "-s", "-screen 0 1024x768x24"])
            .arg(env!("CARGO_BIN_EXE_tapestry"))
            .args(["view", trace.to_str().unwrap(), "--view", "kiviat"])
            .args(["--add-view", "moments", "--cursor", "500us"])
            .args([
                "--size",
                "960x540",
                "--press",
                "F12@25",
                "--exit-after",
                "30",
            ])
            .arg("--output-dir")
            .arg(&out);
        if gpu {
            cmd.arg("--gpu");
        }
        let o = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        assert_eq!(gpu, stderr.contains("uploaded"), "{stderr}");
        assert!(!stderr.contains("computed on the CPU"), "{stderr}");
        shots.push(
            image::open(out.join("tapestry-0001.png"))
                .unwrap_or_else(|e| panic!("no screenshot ({e}): {stderr}"))
                .to_rgba8(),
        );
    }
    let (a, b) = (&shots[0], &shots[1]);
    assert_eq!(a.dimensions(), b.dimensions());
    let off = a
        .pixels()
        .zip(b.pixels())
        .filter(|(p, q)| {
            p.0.iter()
                .zip(q.0)
                .any(|(x, y)| (*x as i32 - y as i32).abs() > 24)
        })
        .count();
    assert!(
        off * 200 <= (a.width() * a.height()) as usize,
        "{off} pixels differ"
    );
    // the tube is there: many colours in the pane
    let colours: std::collections::HashSet<[u8; 4]> = b.pixels().map(|p| p.0).collect();
    assert!(colours.len() > 200, "{} colours", colours.len());
}
