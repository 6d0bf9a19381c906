//! The `tapestry` binary is linked with its reading code in one block at
//! the front of its code (`link/hot-text.ld` and `link/hot-text.order`,
//! from `scripts/hot-text.py`, passed by build.rs): the section is there,
//! the readers' entry point lies in it, and the files are in the form the
//! linker reads.

use std::path::Path;
use std::process::Command;

/// The script, as `scripts/hot-text.py` writes it.
fn script() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-text.ld");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_script_is_one_output_section_of_function_patterns() {
    let s = script();
    assert!(
        s.contains("SECTIONS {\n  .text.hot : {\n"),
        "no .text.hot section"
    );
    assert!(
        s.trim_end().ends_with("}\n}\nINSERT BEFORE .text;"),
        "no INSERT BEFORE .text"
    );
    let lines: Vec<&str> = s
        .lines()
        .filter(|l| l.trim_start().starts_with("*("))
        .collect();
    assert!(lines.len() > 500, "{} patterns", lines.len());
    for l in &lines {
        let inner = l
            .trim()
            .strip_prefix("*(")
            .and_then(|r| r.strip_suffix(')'));
        let parts: Vec<&str> = inner.map(|i| i.split(' ').collect()).unwrap_or_default();
        assert_eq!(parts.len(), 2, "{l}");
        let name = parts[0].strip_prefix(".text.");
        assert!(name.is_some(), "{l}");
        assert_eq!(
            Some(parts[1]),
            name.map(|n| format!(".text.unlikely.{n}")).as_deref(),
            "{l}"
        );
        // nothing at which the linker's lexer would cut a name
        let cut = ['(', ')', '{', '}', ';', '"', ',', '='];
        assert!(!parts[0].contains(cut.as_slice()), "{l}");
    }
    // the readers' entry point and the model's build are among them, and
    // a Chrome trace's read by ranges (which only large traces take)
    for needle in [
        "_ZN8tapestry7readers4load17h*",
        "_ZN8tapestry5model7builder12TraceBuilder6finish17h",
        "_ZN8tapestry7readers6chrome6ranges11read_shares17h*",
    ] {
        assert!(
            s.contains(needle),
            "{needle} missing: regenerate with scripts/hot-text.py"
        );
    }
}

#[test]
fn the_ordering_file_is_one_symbol_a_line() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-text.order");
    let s = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let names: Vec<&str> = s.lines().collect();
    assert!(names.len() > 100, "{} names", names.len());
    for n in &names {
        assert!(
            n.starts_with("_ZN") || n.starts_with("_R"),
            "not a Rust symbol: {n:?}"
        );
        assert!(!n.contains(char::is_whitespace), "{n:?}");
    }
    let distinct: std::collections::HashSet<&&str> = names.iter().collect();
    assert_eq!(distinct.len(), names.len(), "a name twice");
}

/// `(address, size)` of a section of `binary`, from `readelf -SW`.
fn section(binary: &str, name: &str) -> Option<(u64, u64)> {
    let out = Command::new("readelf")
        .args(["-SW", binary])
        .output()
        .expect("readelf (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| {
        let l = l.split_once(']')?.1;
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.first() == Some(&name)).then(|| {
            let hex = |s: &str| u64::from_str_radix(s, 16).expect("readelf's hex");
            (hex(f[2]), hex(f[4]))
        })
    })
}

/// build.rs links so on x86-64 Linux with glibc only
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[test]
fn the_readers_lie_in_the_binarys_hot_text() {
    if option_env!("TAPESTRY_PLAIN_LINK").is_some_and(|v| v != "0") {
        return; // linked without the script, as asked
    }
    let bin = env!("CARGO_BIN_EXE_tapestry");
    let (start, size) = section(bin, ".text.hot").expect("the binary has no .text.hot section");
    assert!(size > 100_000, ".text.hot holds {size} bytes");
    let out = Command::new("nm").arg(bin).output().expect("nm (binutils)");
    let syms = String::from_utf8_lossy(&out.stdout);
    let load = syms
        .lines()
        .find(|l| l.contains(" _ZN8tapestry7readers4load17h"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .expect("no tapestry::readers::load in the binary");
    assert!(
        (start..start + size).contains(&load),
        "readers::load at {load:#x}, outside .text.hot {start:#x}+{size:#x}"
    );
}
