//! The one error type of trace reading and writing. Every error about a trace's contents names
//! the file, the byte offset and — when the bytes belong to one thread's stream — the thread,
//! because a user with a 20 GB trace needs to know *where* it is broken, not just that it is.

use std::fmt;
use std::path::{Path, PathBuf};

/// An error reading or writing a trace.
#[derive(Debug)]
pub struct TraceError {
    /// The trace file.
    pub file: PathBuf,
    /// The thread whose stream holds the bad bytes, if the bytes belong to a stream.
    pub thread: Option<u32>,
    /// Byte offset in the file where the problem was found.
    pub offset: u64,
    /// What went wrong and what was expected.
    pub message: String,
    /// The underlying I/O error, if any.
    pub source: Option<std::io::Error>,
}

impl TraceError {
    /// An error about the trace's contents.
    pub fn at(file: &Path, thread: Option<u32>, offset: u64, message: impl Into<String>) -> Self {
        TraceError {
            file: file.to_path_buf(),
            thread,
            offset,
            message: message.into(),
            source: None,
        }
    }

    /// An I/O error while accessing the file.
    pub fn io(file: &Path, offset: u64, what: &str, err: std::io::Error) -> Self {
        TraceError {
            file: file.to_path_buf(),
            thread: None,
            offset,
            message: format!("{what}: {err}"),
            source: Some(err),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: byte {}", self.file.display(), self.offset)?;
        if let Some(t) = self.thread {
            write!(f, ", thread {t}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
