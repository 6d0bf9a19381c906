//! `analyze TRACE sonify -o w.wav` on a real trace: the WAV reads back
//! with the documented rate, length and mapping; bad requests are clear.

mod common;

use common::{shared_trace, tapestry};

#[test]
fn the_qsort_trace_as_sound() {
    let d = tempfile::tempdir().unwrap();
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let out = d.path().join("w.wav");
    let (code, _, err) = tapestry(&[
        "analyze",
        q.to_str().unwrap(),
        "sonify",
        "--period",
        "10ms",
        "--tone",
        "20ms",
        "--sample-rate",
        "22050",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("220 Hz to 880 Hz"), "{err}");
    let r = hound::WavReader::open(&out).unwrap();
    let spec = r.spec();
    assert_eq!(
        (spec.channels, spec.sample_rate, spec.bits_per_sample),
        (1, 22050, 16)
    );
    // 260.2 ms at 10 ms: 27 samples of w, 441 sound samples each
    let n = r.len() as usize;
    assert_eq!(n % 441, 0, "{n}");
    let samples: Vec<i16> = r.into_samples().map(|s| s.unwrap()).collect();
    assert!(samples.iter().any(|s| s.unsigned_abs() > 10_000));
    for (args, want) in [
        (vec!["-o", "/tmp/x.mp3"], ".wav"),
        (vec![], "-o FILE.wav"),
        (vec!["--period", "1us", "-o", "/tmp/x.wav"], "limit"),
        (
            vec![
                "--pitch-range",
                "880:220",
                "--period",
                "10ms",
                "-o",
                "/tmp/x.wav",
            ],
            "pitch range",
        ),
        (vec!["--pitch-range", "loud", "-o", "/tmp/x.wav"], "LO:HI"),
    ] {
        let mut a = vec!["analyze", q.to_str().unwrap(), "sonify"];
        a.extend(args);
        let (code, _, err) = tapestry(&a);
        assert_ne!(code, 0, "{a:?}");
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"));
    }
}
