//! MCP Apps: the HTML View a host that declares the extension renders a
//! `run_js` result in (status, result, console, error, each `display()`
//! block: HTML in a sandboxed frame, SVG and images, arrays of objects as a
//! sortable, paged table, `display.chart` blocks as charts, objects as a
//! tree). One self-contained document, no script or style from elsewhere:
//! the spec's default CSP (no network) holds. Built from `view/` by
//! `view/build.mjs` (rolldown, with Chart.js); docs/tools.md, "MCP Apps",
//! says what it shows.

use crate::protocol::apps::{MIME_TYPE, RUN_VIEW_URI};
use crate::protocol::mcp::{ReadResourceResult, ResourceContents};

/// The run View's document.
pub const RUN_VIEW: &str = include_str!("run.html");

/// `resources/read` of a `ui://` resource: the View at `uri`, if it is one.
pub fn read(uri: &str) -> Option<ReadResourceResult> {
    (uri == RUN_VIEW_URI).then(|| ReadResourceResult {
        contents: vec![ResourceContents {
            uri: uri.to_owned(),
            mime_type: MIME_TYPE.to_owned(),
            text: Some(RUN_VIEW.to_owned()),
            blob: None,
            meta: None,
        }],
    })
}
