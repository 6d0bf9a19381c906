//! Sonification (paper 002 §6.7): the temporal signal w played as sound.
//!
//! Each sample of w becomes one tone of `tone_s` seconds. With
//! [`Mapping::Pitch`] the value sets the pitch on a logarithmic scale from
//! `f_lo` (the smallest value) to `f_hi` (the largest), at a constant
//! amplitude; with [`Mapping::Amplitude`] the value sets the loudness
//! (0.05 to 0.8 of full scale) of a tone at the geometric mean of `f_lo`
//! and `f_hi`. A constant signal sits in the middle of the scale; undefined
//! samples (NaN) are silent. The oscillator's phase runs on across tones and
//! the amplitude glides over 5 ms, so there are no clicks. Output: 16-bit
//! mono PCM WAV.

use std::io::Cursor;

use crate::error::{Error, Result};

/// What the value of w controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mapping {
    Pitch,
    Amplitude,
}

/// How w becomes sound.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SoundParams {
    pub mapping: Mapping,
    /// Samples per second of the sound.
    pub sample_rate: u32,
    /// Seconds of sound per sample of w.
    pub tone_s: f64,
    /// The pitch of the smallest and the largest value (Hz).
    pub f_lo: f64,
    pub f_hi: f64,
}

impl Default for SoundParams {
    fn default() -> Self {
        SoundParams {
            mapping: Mapping::Pitch,
            sample_rate: 44_100,
            tone_s: 0.05,
            f_lo: 220.0,
            f_hi: 880.0,
        }
    }
}

/// The longest sound written (seconds).
pub const MAX_SECONDS: f64 = 1200.0;

/// The sound of `w`: 16-bit samples.
pub fn sonify(w: &[f64], p: &SoundParams) -> Result<Vec<i16>> {
    if !(8_000..=192_000).contains(&p.sample_rate) {
        return Err(Error::Invalid(format!(
            "the sample rate must be 8000 to 192000 Hz, not {}",
            p.sample_rate
        )));
    }
    if !(p.tone_s.is_finite() && p.tone_s >= 0.001) {
        return Err(Error::Invalid(format!(
            "a tone must last at least 1 ms, not {} s",
            p.tone_s
        )));
    }
    if !(p.f_lo > 0.0 && p.f_hi > p.f_lo && p.f_hi < p.sample_rate as f64 / 2.0) {
        return Err(Error::Invalid(format!(
            "the pitch range {}..{} Hz must be positive, increasing and below half the sample rate",
            p.f_lo, p.f_hi
        )));
    }
    if w.is_empty() {
        return Err(Error::Invalid("the signal w has no samples".into()));
    }
    let seconds = w.len() as f64 * p.tone_s;
    if seconds > MAX_SECONDS {
        return Err(Error::Invalid(format!(
            "{} samples of {} s make {seconds:.0} s of sound; the limit is {MAX_SECONDS} s (a longer --period or a shorter --tone)",
            w.len(),
            p.tone_s
        )));
    }
    let finite = || w.iter().copied().filter(|v| v.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let unit = |v: f64| {
        if !v.is_finite() {
            None
        } else if hi > lo {
            Some((v - lo) / (hi - lo))
        } else {
            Some(0.5)
        }
    };
    let sr = p.sample_rate as f64;
    let per = (p.tone_s * sr).round().max(1.0) as usize;
    let glide = ((0.005 * sr) as usize).clamp(1, per);
    let mut out = Vec::with_capacity(w.len() * per);
    let mut phase = 0.0f64;
    let mut amp = 0.0f64;
    for &v in w {
        let (f, target) = match (unit(v), p.mapping) {
            (None, _) => (p.f_lo, 0.0),
            (Some(u), Mapping::Pitch) => (p.f_lo * (p.f_hi / p.f_lo).powf(u), 0.6),
            (Some(u), Mapping::Amplitude) => ((p.f_lo * p.f_hi).sqrt(), 0.05 + 0.75 * u),
        };
        let start = amp;
        let step = 2.0 * std::f64::consts::PI * f / sr;
        for i in 0..per {
            amp = if i < glide {
                start + (target - start) * (i + 1) as f64 / glide as f64
            } else {
                target
            };
            out.push((amp * phase.sin() * i16::MAX as f64) as i16);
            phase = (phase + step) % (2.0 * std::f64::consts::PI);
        }
    }
    Ok(out)
}

/// `samples` as a mono 16-bit WAV file.
pub fn wav_bytes(samples: &[i16], sample_rate: u32) -> Result<Vec<u8>> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut buf = Cursor::new(Vec::with_capacity(44 + samples.len() * 2));
    let err = |e: hound::Error| Error::Invalid(format!("writing WAV: {e}"));
    let mut wr = hound::WavWriter::new(&mut buf, spec).map_err(err)?;
    for &s in samples {
        wr.write_sample(s).map_err(err)?;
    }
    wr.finalize().map_err(err)?;
    Ok(buf.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zero crossings per second of a stretch of sound, halved: its pitch.
    fn pitch(s: &[i16], sr: f64) -> f64 {
        let z = s.windows(2).filter(|w| (w[0] < 0) != (w[1] < 0)).count();
        z as f64 / 2.0 / (s.len() as f64 / sr)
    }

    #[test]
    fn values_become_pitches_and_loudness() {
        let p = SoundParams {
            tone_s: 0.5,
            ..Default::default()
        };
        let s = sonify(&[0.0, 1.0, 0.5], &p).unwrap();
        let per = 22_050;
        assert_eq!(s.len(), 3 * per);
        let sr = 44_100.0;
        // skip the glide at each tone's start
        let f0 = pitch(&s[1000..per], sr);
        let f1 = pitch(&s[per + 1000..2 * per], sr);
        let f2 = pitch(&s[2 * per + 1000..], sr);
        assert!((f0 - 220.0).abs() < 3.0, "{f0}");
        assert!((f1 - 880.0).abs() < 3.0, "{f1}");
        assert!((f2 - 440.0).abs() < 3.0, "{f2}");
        let a = SoundParams {
            mapping: Mapping::Amplitude,
            ..p
        };
        let s = sonify(&[0.0, 1.0, f64::NAN], &a).unwrap();
        let peak = |x: &[i16]| x.iter().map(|v| v.unsigned_abs()).max().unwrap() as f64;
        let full = i16::MAX as f64;
        assert!((peak(&s[1000..per]) / full - 0.05).abs() < 0.01);
        assert!((peak(&s[per + 1000..2 * per]) / full - 0.8).abs() < 0.01);
        assert_eq!(peak(&s[2 * per + 1000..]), 0.0);
        assert!((pitch(&s[per + 1000..2 * per], sr) - 440.0).abs() < 3.0);
    }

    #[test]
    fn bad_requests_are_refused() {
        let p = SoundParams::default();
        assert!(sonify(&[], &p).is_err());
        assert!(
            sonify(
                &[1.0],
                &SoundParams {
                    sample_rate: 10,
                    ..p
                }
            )
            .is_err()
        );
        assert!(
            sonify(&vec![0.0; 100_000], &SoundParams { tone_s: 0.05, ..p })
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
        assert!(
            sonify(
                &[1.0],
                &SoundParams {
                    f_hi: 30_000.0,
                    ..p
                }
            )
            .is_err()
        );
    }
}
