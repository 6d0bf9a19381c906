//! Bindings to the OTF2 C library, generated at build time by bindgen from
//! the installed headers (see `build.rs`).
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/otf2_bindings.rs"));
