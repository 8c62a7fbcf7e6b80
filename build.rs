//! Embeds the standard library (`stdlib/**/*.rmo`) into the binary, so that
//! `rmoc` finds it from any working directory with no installation step, and
//! with it every stdlib class already parsed: the trees are serialized with
//! postcard, so a model that uses the contact library does not spend most of
//! `rmoc check` in the parser (docs/benchmarks.md, "Front end").
//!
//! The parser is rmoc's own (`src/syntax`, with `src/diag/` for its
//! errors), compiled into this script too: one grammar, one tree builder.
//! A class that fails to parse here is left out and parsed, with its error
//! reported, at run time like any library file.

// As in src/lib.rs: diagnostics are returned by value on purpose.
#![allow(clippy::result_large_err)]

#[allow(dead_code, unused_imports)]
#[path = "src/diag/mod.rs"]
mod diag;
#[allow(dead_code, unused_imports)]
#[path = "src/syntax/mod.rs"]
mod syntax;

use std::fmt::Write as _;
use std::path::Path;

fn collect(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, base, out);
        } else if p.extension().is_some_and(|e| e == "rmo") {
            let rel = p
                .strip_prefix(base)
                .expect("under base")
                .to_string_lossy()
                .replace('\\', "/");
            out.push((
                rel,
                p.canonicalize().expect("canonical").display().to_string(),
            ));
        }
    }
}

fn main() {
    let base = Path::new("stdlib");
    println!("cargo:rerun-if-changed=stdlib");
    println!("cargo:rerun-if-changed=grammar/rmo.pest");
    println!("cargo:rerun-if-changed=src/syntax");
    println!("cargo:rerun-if-changed=src/diag");
    let mut files = Vec::new();
    collect(base, base, &mut files);
    let mut src = String::from("pub static STDLIB_FILES: &[(&str, &str)] = &[\n");
    for (rel, abs) in &files {
        println!("cargo:rerun-if-changed={abs}");
        let _ = writeln!(src, "    ({rel:?}, include_str!({abs:?})),");
    }
    src.push_str("];\n");
    // Per file, per class of its scan: the byte range of its tree in
    // STDLIB_TREES (empty when it did not parse).
    let mut trees: Vec<u8> = Vec::new();
    src.push_str("pub static STDLIB_TREES_INDEX: &[&[(u32, u32)]] = &[\n");
    for (_, abs) in &files {
        let text = std::fs::read_to_string(abs).expect("read stdlib file");
        let scanned = syntax::scan::scan(&text);
        src.push_str("    &[");
        for idx in 0..scanned.classes.len() {
            let start = trees.len();
            if let Ok(class) = syntax::parse_class(&text, 0, &scanned, idx) {
                let bytes = postcard::to_allocvec(&class).expect("serialize a class tree");
                trees.extend_from_slice(&bytes);
            }
            let _ = write!(src, "({start}, {}), ", trees.len());
        }
        src.push_str("],\n");
    }
    src.push_str("];\n");
    src.push_str(
        "pub static STDLIB_TREES: &[u8] = include_bytes!(concat!(env!(\"OUT_DIR\"), \"/stdlib_trees.bin\"));\n",
    );
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out_dir.join("stdlib_trees.bin"), trees).expect("write stdlib_trees.bin");
    std::fs::write(out_dir.join("stdlib_files.rs"), src).expect("write stdlib_files.rs");
}
