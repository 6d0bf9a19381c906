//! Build script: links the `tapestry` binary with its reading code in one
//! block ([`link_binary`]); with the `otf2` feature, generates the bindings
//! to the installed OTF2 library headers and links the library.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    link_binary();
    #[cfg(feature = "otf2")]
    otf2::generate();
}

/// On x86-64 Linux with glibc, where rustc links with its own lld, the
/// `tapestry` binary (not the tests or benches) is linked with
/// - its reading code in one block at the front of its code, from
///   `scripts/hot-text.py`: `link/hot-text.ld` gathers the functions that
///   reading a trace runs by patterns of their names (valid from build to
///   build), and `link/hot-text.order` puts the instances of generic
///   functions among them right after (their names carry a hash of the
///   build's settings: a build with others, as the tests', leaves them
///   where they were). The kernel maps code in windows of 64–128 KiB around
///   each page first run, and each mapped page counts in the process's
///   resident memory: reading a Chrome trace ran ~240 KB of code spread
///   over 92 windows, 5.8 MiB resident beside a 45 MiB model; gathered,
///   1.5 MiB;
/// - packed relative relocations (`-z pack-relative-relocs`, glibc 2.36 and
///   later): the loader reads 12 KB of them at start instead of 1 MB.
///
/// `TAPESTRY_PLAIN_LINK=1` links without any of it (an older glibc, or
/// another linker: GNU ld has no `--symbol-ordering-file`).
fn link_binary() {
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-changed=link/hot-text.order");
    println!("cargo:rerun-if-env-changed=TAPESTRY_PLAIN_LINK");
    let target = std::env::var("TARGET").unwrap_or_default();
    let plain = std::env::var_os("TAPESTRY_PLAIN_LINK").is_some_and(|v| v != "0");
    if plain || target != "x86_64-unknown-linux-gnu" {
        return;
    }
    let link = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link");
    let script = link.join("hot-text.ld");
    let order = link.join("hot-text.order");
    // `-Xlinker` and the argument apart: a path may hold a comma or a blank
    for arg in [
        "-zpack-relative-relocs".to_string(),
        format!("--script={}", script.display()),
        format!("--symbol-ordering-file={}", order.display()),
        "--no-warn-symbol-ordering".to_string(),
    ] {
        println!("cargo:rustc-link-arg-bins=-Xlinker");
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}

#[cfg(feature = "otf2")]
mod otf2 {
    use std::path::PathBuf;

    const MISSING: &str = "\n\nThe `otf2` feature needs the OTF2 library and headers, version 3 \
        (Debian/Ubuntu: `apt-get install libopen-trace-format2-dev`), \
        or build without `--features otf2`.\n";

    pub fn generate() {
        let lib = match pkg_config::Config::new()
            .atleast_version("3.0")
            .probe("otf2")
        {
            Ok(l) => l,
            Err(e) => panic!("{MISSING}pkg-config: {e}\n"),
        };
        let mut dirs: Vec<PathBuf> = lib.include_paths.clone();
        dirs.push(PathBuf::from("/usr/include"));
        dirs.push(PathBuf::from("/usr/local/include"));
        let Some(header) = dirs
            .iter()
            .map(|d| d.join("otf2/otf2.h"))
            .find(|h| h.is_file())
        else {
            panic!("{MISSING}otf2/otf2.h was not found in {dirs:?}\n");
        };
        println!("cargo:rerun-if-changed={}", header.display());
        let bindings = bindgen::Builder::default()
            .header(header.to_string_lossy())
            .clang_args(
                lib.include_paths
                    .iter()
                    .map(|p| format!("-I{}", p.display())),
            )
            .allowlist_function("OTF2_.*")
            .allowlist_type("OTF2_.*")
            .allowlist_var("OTF2_.*")
            .prepend_enum_name(false)
            .generate()
            .unwrap_or_else(|e| panic!("{MISSING}generating the bindings failed: {e}\n"));
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
        bindings
            .write_to_file(out.join("otf2_bindings.rs"))
            .expect("writing the OTF2 bindings");
    }
}
