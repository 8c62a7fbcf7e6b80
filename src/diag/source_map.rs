//! The source texts of one run, and `line:col` of a byte offset.

use super::Span;
use std::sync::Arc;

/// One source text known to the session: a user file or a library file.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as it should be shown to the user.
    pub path: String,
    pub text: Arc<str>,
    /// Byte offsets of line starts, for `line:col`.
    line_starts: Vec<usize>,
}

/// All source texts read in one run; `Span::file` indexes `files`.
#[derive(Debug, Default)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn add(&mut self, path: impl Into<String>, text: impl Into<Arc<str>>) -> u32 {
        let text: Arc<str> = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        self.files.push(SourceFile {
            path: path.into(),
            text,
            line_starts,
        });
        (self.files.len() - 1) as u32
    }

    pub fn file(&self, id: u32) -> &SourceFile {
        &self.files[id as usize]
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: u32, offset: u32) -> (usize, usize) {
        let f = self.file(file);
        let offset = (offset as usize).min(f.text.len());
        let line = f.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = f.line_starts[line];
        let col = f.text[start..offset].chars().count();
        (line + 1, col + 1)
    }

    /// `path:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        let (l, c) = self.line_col(span.file, span.start);
        format!("{}:{}:{}", self.file(span.file).path, l, c)
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        let f = self.file(span.file);
        let end = (span.end as usize).min(f.text.len());
        let start = (span.start as usize).min(end);
        &f.text[start..end]
    }
}
