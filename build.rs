//! Build script: with the `otf2` feature, generates the bindings to the
//! installed OTF2 library headers and links the library.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "otf2")]
    otf2::generate();
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
