//! Videos (`.mp4`, `.webm`): raw RGBA frames piped to `ffmpeg`, which
//! writes a temporary file beside the destination, renamed into place only
//! when ffmpeg succeeds (an interrupted render leaves no half video).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::{Error, Result};
use crate::render::Frame;

/// The container of a video output, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Mp4,
    Webm,
}

impl Container {
    /// `.mp4` or `.webm` (any case); `None` for other extensions.
    pub fn of(path: &Path) -> Option<Container> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "mp4" => Some(Container::Mp4),
            "webm" => Some(Container::Webm),
            _ => None,
        }
    }
}

/// Whether `ffmpeg` runs here, with its first line of `-version`.
pub fn ffmpeg_version() -> Option<String> {
    let out = Command::new("ffmpeg")
        .arg("-version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_string)
}

/// The error when ffmpeg is missing.
pub fn no_ffmpeg() -> Error {
    Error::Invalid(
        "writing a video needs ffmpeg, which was not found on PATH (Debian/Ubuntu: apt-get install ffmpeg); \
         or write numbered frames with -o frame.png and encode them yourself"
            .into(),
    )
}

/// A video being written.
pub struct VideoWriter {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    tmp: PathBuf,
    dest: PathBuf,
    size: (u32, u32),
    frames: u64,
}

impl VideoWriter {
    /// Starts ffmpeg for `dest` at `fps` frames per second of `width ×
    /// height` frames; refuses to write over one of `inputs`.
    pub fn start(
        dest: &Path,
        (width, height): (u32, u32),
        fps: f64,
        inputs: &[&Path],
    ) -> Result<VideoWriter> {
        super::refuse_inputs(dest, inputs)?;
        let container = Container::of(dest).ok_or_else(|| {
            Error::Invalid(format!("{}: a video ends in .mp4 or .webm", dest.display()))
        })?;
        if !(fps.is_finite() && fps > 0.0 && fps <= 1000.0) {
            return Err(Error::Invalid(format!(
                "--fps {fps}: expected a rate in (0, 1000]"
            )));
        }
        if ffmpeg_version().is_none() {
            return Err(no_ffmpeg());
        }
        let (dir, name, tmp) = super::temporary_beside(dest, "video");
        super::remove_stale_temporaries(&dir, &name);
        let (format, codec): (&str, &[&str]) = match container {
            // yuv420p plays everywhere; even sizes are padded below
            Container::Mp4 => (
                "mp4",
                &["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18"],
            ),
            Container::Webm => (
                "webm",
                &[
                    "-c:v",
                    "libvpx-vp9",
                    "-pix_fmt",
                    "yuv420p",
                    "-b:v",
                    "0",
                    "-crf",
                    "30",
                ],
            ),
        };
        let mut cmd = Command::new("ffmpeg");
        cmd.args(["-hide_banner", "-loglevel", "error", "-y"])
            .args(["-f", "rawvideo", "-pix_fmt", "rgba"])
            .args(["-s", &format!("{width}x{height}")])
            .args(["-r", &format!("{fps}")])
            .args(["-i", "-"])
            .args(["-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2"])
            .args(codec)
            .args(["-f", format])
            .arg(&tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Invalid(format!("cannot start ffmpeg: {e}")))?;
        let stdin = child.stdin.take();
        Ok(VideoWriter {
            child: Some(child),
            stdin,
            tmp,
            dest: dest.to_path_buf(),
            size: (width, height),
            frames: 0,
        })
    }

    /// Appends a frame (of the size given at the start).
    pub fn push(&mut self, f: &Frame) -> Result<()> {
        if (f.width, f.height) != self.size {
            return Err(Error::Invalid(format!(
                "video frame {} is {}×{}, the video {}×{}",
                self.frames, f.width, f.height, self.size.0, self.size.1
            )));
        }
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::Invalid("the video is closed".into()))?;
        if let Err(e) = stdin.write_all(&f.rgba) {
            // ffmpeg stopped: its own message says why
            self.stdin = None;
            let why = self.wait_error();
            return Err(Error::Invalid(format!(
                "ffmpeg stopped at frame {} ({e}){why}",
                self.frames
            )));
        }
        self.frames += 1;
        Ok(())
    }

    fn wait_error(&mut self) -> String {
        let Some(child) = self.child.take() else {
            return String::new();
        };
        match child.wait_with_output() {
            Ok(o) => {
                let msg = String::from_utf8_lossy(&o.stderr).trim().to_string();
                if msg.is_empty() {
                    format!(": exit {}", o.status)
                } else {
                    format!(": {msg}")
                }
            }
            Err(e) => format!(": {e}"),
        }
    }

    /// Closes the stream, waits for ffmpeg and moves the video into place;
    /// returns the number of frames.
    pub fn finish(mut self) -> Result<u64> {
        drop(self.stdin.take());
        let child = self
            .child
            .take()
            .ok_or_else(|| Error::Invalid("ffmpeg is gone".into()))?;
        let out = child
            .wait_with_output()
            .map_err(|e| Error::Invalid(format!("waiting for ffmpeg: {e}")))?;
        if !out.status.success() {
            return Err(Error::Invalid(format!(
                "ffmpeg failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))?;
        Ok(self.frames)
    }
}

impl Drop for VideoWriter {
    fn drop(&mut self) {
        // unfinished: stop ffmpeg and remove its partial file
        drop(self.stdin.take());
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if !self.dest.exists() || self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_by_extension() {
        assert_eq!(Container::of(Path::new("a.MP4")), Some(Container::Mp4));
        assert_eq!(Container::of(Path::new("a.webm")), Some(Container::Webm));
        assert_eq!(Container::of(Path::new("a.png")), None);
        assert_eq!(Container::of(Path::new("a")), None);
    }

    #[test]
    fn bad_rates_and_inputs_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("v.mp4");
        assert!(VideoWriter::start(&p, (64, 64), 0.0, &[]).is_err());
        assert!(VideoWriter::start(&p, (64, 64), f64::NAN, &[]).is_err());
        std::fs::write(&p, b"x").unwrap();
        let e = VideoWriter::start(&p, (64, 64), 10.0, &[&p]).err().unwrap();
        assert!(e.to_string().contains("refusing"));
    }
}
