//! Writing output files atomically: everything is written to a temporary file
//! in the destination's directory, which is renamed over the destination only
//! when complete. An interrupted export never leaves a half file.
//!
//! [`npy`] writes NumPy arrays (streamed, for element access tensors and
//! analysis results); [`sound`] turns the signal w into a WAV file;
//! [`svg`] writes 2D charts as SVG (plotters).

pub mod gltf;
pub mod npy;
pub mod sound;
pub mod svg;
pub mod video;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A file being written; [`AtomicFile::commit`] makes it appear.
pub struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `dest`. Refuses to write over one of `inputs`.
    pub fn create(dest: &Path, inputs: &[&Path]) -> Result<Self> {
        refuse_inputs(dest, inputs)?;
        let (dir, name, tmp) = temporary_beside(dest, "out");
        remove_stale_temporaries(&dir, &name);
        // errors name the destination the user asked for, not our temporary
        let f = File::create(&tmp).map_err(|e| Error::io(dest, e))?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            writer: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// The writer (buffered).
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("writer present until commit")
    }

    /// Overwrites `bytes` at `offset` (e.g. a header field only known at the
    /// end) and continues appending after the current end.
    pub fn patch_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let w = self.writer();
        w.flush()?;
        let f = w.get_mut();
        let end = f.stream_position()?;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(bytes)?;
        f.seek(SeekFrom::Start(end))?;
        Ok(())
    }

    /// Puts two files written together in place: both are flushed and
    /// synced first, then renamed one right after the other (`first`, then
    /// `second`), so that a kill can only fall between the two renames.
    /// A pair whose second file must describe the first carries a digest
    /// of it (the `.npy.json` sidecar records the array's data hash).
    pub fn commit_pair(mut first: AtomicFile, mut second: AtomicFile) -> Result<()> {
        first.sync()?;
        second.sync()?;
        first.rename()?;
        second.rename()
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(w) = self.writer.as_mut() {
            w.flush().map_err(|e| Error::io(&self.dest, e))?;
            w.get_ref()
                .sync_all()
                .map_err(|e| Error::io(&self.dest, e))?;
        }
        Ok(())
    }

    fn rename(mut self) -> Result<()> {
        self.writer = None;
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<()> {
        let w = self.writer.take().expect("writer present until commit");
        let f = w
            .into_inner()
            .map_err(|e| Error::io(&self.dest, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&self.dest, e))?;
        drop(f);
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.writer = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

/// The directory of `dest` (`.` for a bare name), its file name
/// (`fallback` when it has none) and this process's temporary beside it,
/// `.{name}.tmp-PID`, which is renamed over `dest` when complete.
pub(crate) fn temporary_beside(dest: &Path, fallback: &str) -> (PathBuf, String, PathBuf) {
    let dir = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| fallback.into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    (dir, name, tmp)
}

/// Removes the temporaries `.{name}.tmp-PID` of earlier writes of `name`
/// in `dir` whose process is gone (a run killed while writing, e.g. by
/// `kill -9`, leaves one behind). Only our own naming, only for this
/// destination, only when the process no longer exists (`/proc/PID`; on
/// systems without `/proc` nothing is removed).
pub fn remove_stale_temporaries(dir: &Path, name: &str) {
    let proc_fs = Path::new("/proc/self").exists();
    if !proc_fs {
        return;
    }
    let prefix = format!(".{name}.tmp-");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten().take(100_000) {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
            && e.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Refuses `dest` when it is one of `inputs` (the same file by its real
/// path, links resolved).
pub fn refuse_inputs(dest: &Path, inputs: &[&Path]) -> Result<()> {
    for inp in inputs {
        if same_file(dest, inp) {
            return Err(Error::Invalid(format!(
                "refusing to overwrite the input {} with an output",
                inp.display()
            )));
        }
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    let mut f = AtomicFile::create(dest, inputs)?;
    f.write_all(bytes).map_err(|e| Error::io(dest, e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_and_abort() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.txt");
        {
            let mut f = AtomicFile::create(&p, &[]).unwrap();
            f.write_all(b"half").unwrap();
            // dropped without commit
        }
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        write_atomic(&p, b"whole", &[]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"whole");
        let e = write_atomic(&p, b"x", &[&p]).unwrap_err();
        assert!(e.to_string().contains("refusing"));
    }

    #[test]
    fn stale_temporaries_of_dead_runs_are_removed() {
        let d = tempfile::tempdir().unwrap();
        // a pid that cannot be running (above the kernel's pid_max limit)
        let dead = d.path().join(".out.npy.tmp-4294967");
        std::fs::write(&dead, vec![0u8; 1000]).unwrap();
        // pid 1 always runs: its temporary may still be being written
        let alive = d.path().join(".out.npy.tmp-1");
        std::fs::write(&alive, b"busy").unwrap();
        let other = d.path().join(".other.npy.tmp-4294967");
        std::fs::write(&other, b"not this destination").unwrap();
        let keep = d.path().join("notes.txt.tmp-4294967");
        std::fs::write(&keep, b"not our naming").unwrap();
        write_atomic(&d.path().join("out.npy"), b"x", &[]).unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists());
        }
        assert!(alive.exists() && other.exists() && keep.exists());
    }
}
