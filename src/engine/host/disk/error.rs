//! What a disk operation reports: a Node error code (`ENOSPC`, `EBADF`,
//! ...) and the words after it, which `fs` throws as a Node error.

/// What went wrong, as a Node error code and the words after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiskError {
    pub code: &'static str,
    pub hint: String,
}

impl DiskError {
    pub(crate) fn new(code: &'static str, hint: impl Into<String>) -> Self {
        Self {
            code,
            hint: hint.into(),
        }
    }

    pub(crate) fn io(what: &str, e: std::io::Error) -> Self {
        let code = match e.raw_os_error() {
            Some(libc::ENOSPC) => "ENOSPC",
            _ => "EIO",
        };
        Self::new(code, format!("{what}: {e}"))
    }
}

pub(crate) type DiskResult<T> = Result<T, DiskError>;
