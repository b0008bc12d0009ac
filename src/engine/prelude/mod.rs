//! The operator's prelude (`MCP_V8_PRELUDE`): a script evaluated once per
//! process into the heap that every fresh run starts from, so the packages
//! it imports and the helpers it defines cost a fresh run nothing.

pub(super) mod base;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::BoxError;

/// Where the prelude's code comes from (a file, an S3 object).
#[async_trait]
pub trait PreludeSource: Send + Sync + fmt::Debug + 'static {
    /// The prelude's JavaScript or TypeScript.
    async fn code(&self) -> Result<String, BoxError>;
    /// Where it is, for messages.
    fn location(&self) -> String;
}

/// A prelude and, once made, the heap it leaves (or why there is none).
#[derive(Debug)]
pub(crate) struct Prelude {
    pub source: Arc<dyn PreludeSource>,
    pub base: OnceCell<Result<Bytes, String>>,
}

impl Prelude {
    pub(crate) fn new(source: Arc<dyn PreludeSource>) -> Self {
        Self {
            source,
            base: OnceCell::new(),
        }
    }
}

/// A prelude in a file, read when the first fresh run needs it.
#[derive(Debug, Clone)]
pub struct FilePrelude(pub std::path::PathBuf);

#[async_trait]
impl PreludeSource for FilePrelude {
    async fn code(&self) -> Result<String, BoxError> {
        Ok(tokio::fs::read_to_string(&self.0).await?)
    }

    fn location(&self) -> String {
        self.0.display().to_string()
    }
}
