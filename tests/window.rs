//! The viewer window under a virtual display: it starts, renders frames,
//! takes a screenshot through its own key binding (F12), saves the view
//! state (F5), and exits cleanly after a scripted number of frames.
//! Needs `xvfb-run`; without it the test says so and passes, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it and installs xvfb).

mod common;

use std::process::Command;

#[test]
fn window_runs_screenshots_and_exits() {
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
