//! Embeds the standard library (`stdlib/**/*.rmo`) into the binary, so that
//! `rmoc` finds it from any working directory with no installation step.

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
    let mut files = Vec::new();
    collect(base, base, &mut files);
    let mut src = String::from("pub static STDLIB_FILES: &[(&str, &str)] = &[\n");
    for (rel, abs) in &files {
        println!("cargo:rerun-if-changed={abs}");
        let _ = writeln!(src, "    ({rel:?}, include_str!({abs:?})),");
    }
    src.push_str("];\n");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"))
        .join("stdlib_files.rs");
    std::fs::write(out, src).expect("write stdlib_files.rs");
}
