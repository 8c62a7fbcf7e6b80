//! Where a piece of source text is: a byte range of one file.
//!
//! Every stage carries spans from the syntax tree onwards so that a
//! diagnostic can point at the text it is about; the files themselves are in
//! the [`SourceMap`](super::SourceMap).

use serde::{Deserialize, Serialize};

/// A byte range of one source file. `file` indexes the [`SourceMap`](super::SourceMap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    pub file: u32,
    pub start: u32,
    pub end: u32,
}

thread_local! {
    /// The file id that deserialized spans take instead of the stored one.
    static SPAN_FILE: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every [`Span`] deserialized inside it placed in `file`.
///
/// Standard-library classes are parsed when rmoc is built and stored
/// serialized (`build.rs`); a file's id in the [`SourceMap`](super::SourceMap) is
/// only known when the file is read at run time, so it is set here rather than
/// by patching every node of the tree.
pub fn with_span_file<T>(file: u32, f: impl FnOnce() -> T) -> T {
    /// Restores the outer setting however `f` ends (a panic included).
    struct Restore(Option<u32>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPAN_FILE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SPAN_FILE.with(|c| c.replace(Some(file))));
    f()
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            file: u32,
            start: u32,
            end: u32,
        }
        let s = Stored::deserialize(d)?;
        Ok(Span {
            file: SPAN_FILE.with(|c| c.get()).unwrap_or(s.file),
            start: s.start,
            end: s.end,
        })
    }
}

impl Span {
    pub fn new(file: u32, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}
