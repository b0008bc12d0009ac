//! `display()` blocks as tool-result content: images the model sees, text,
//! embedded files, and links to `/work` files for blocks too large for one
//! answer.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use uuid::Uuid;

use crate::engine::Displayed;
use crate::protocol::apps::DisplayEntry;
use crate::protocol::mcp::{Content, ResourceContents};
use crate::protocol::media::{essence, is_text};
use crate::tools::toolbox::MAX_READ_FILE_BYTES;

/// Image types MCP clients show to models.
const IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// What a run's blocks become in its answer.
pub(in crate::tools) struct Shown {
    /// The blocks, after the run's own text.
    pub content: Vec<Content>,
    /// Blocks that did not fit, and what became of them.
    pub warnings: Vec<String>,
    /// Every block, in call order, with its index in `content` when it is
    /// there: what an MCP Apps View reads.
    pub entries: Vec<DisplayEntry>,
    /// Blocks no `/work` file holds that are links to themselves, kept
    /// apart: their bytes, which the caller's file store must have before
    /// the answer leaves.
    pub kept: Vec<bytes::Bytes>,
    /// Bytes `content` adds to the answer's JSON, separators included.
    pub json_len: usize,
}

/// Where a run's blocks go.
pub(in crate::tools) struct Target<'a> {
    /// The run's output heap, whose `/work` files links name: its key, or
    /// the run's execution id while the heap is being stored (the
    /// resources accept either).
    pub heap: Option<&'a str>,
    pub execution_id: Uuid,
    /// Bytes of JSON the blocks may take in the answer.
    pub room: usize,
    /// Bytes of JSON text blocks may take: what the answer budget leaves
    /// after the run's own text. A text block over it is a link to its
    /// /work file when there is one (images cost a model the same at any
    /// size, and a block no file holds would be lost).
    pub text_room: usize,
    /// The answer budget, for the warning.
    pub budget: usize,
    /// The client's protocol has `resource_link` (2025-06-18 on).
    pub links: bool,
    /// Blocks no `/work` file holds may be kept apart (in the caller's
    /// file store, by the key of their bytes) and linked: the server keeps
    /// files.
    pub keep: bool,
}

/// The URI of `/work` file `path` of `heap` (a key or an execution id).
fn file_uri(heap: &str, path: &str) -> String {
    crate::protocol::uri::file_uri(heap, path)
}

/// The blocks of `displays`, in call order, within `target.room`.
pub(in crate::tools) fn blocks(displays: Vec<Displayed>, target: &Target<'_>) -> Shown {
    let mut shown = Shown {
        content: Vec::with_capacity(displays.len()),
        warnings: Vec::new(),
        entries: Vec::with_capacity(displays.len()),
        kept: Vec::new(),
        json_len: 0,
    };
    let mut room = target.room;
    let mut text_room = target.text_room;
    for (index, displayed) in displays.into_iter().enumerate() {
        let label = describe(index, &displayed);
        shown.entries.push(DisplayEntry {
            content: None,
            mime_type: displayed.mime_type.clone(),
            name: displayed.name.clone(),
            size: displayed.size,
        });
        let at = shown.content.len();
        let block = displayed
            .bytes
            .as_ref()
            .map(|bytes| block_of(&displayed, bytes, index, target));
        let cost = block.as_ref().map(json_cost);
        let is_text = matches!(block, Some(Content::Text { .. } | Content::Resource { .. }));
        let linked =
            (displayed.path.is_some() && target.heap.is_some()) || keepable(&displayed, target);
        let over_budget = is_text && linked && cost.is_some_and(|cost| cost > text_room);
        match (block, cost) {
            (Some(block), Some(cost)) if cost <= room && !over_budget => {
                room -= cost;
                shown.json_len += cost;
                if is_text {
                    text_room = text_room.saturating_sub(cost);
                }
                shown.entries[index].content = Some(at);
                shown.content.push(block);
            }
            _ => {
                let file = displayed.path.as_deref().zip(target.heap);
                let kept = file.is_none() && keepable(&displayed, target);
                let at_uri = match file {
                    Some((path, heap)) => Some((file_uri(heap, path), Some(path))),
                    None if kept => Some((
                        crate::protocol::uri::kept_display_uri(
                            displayed.key.as_str(),
                            &displayed.mime_type,
                        ),
                        None,
                    )),
                    None => None,
                };
                match at_uri {
                    Some((uri, path)) => {
                        if kept && let Some(bytes) = &displayed.bytes {
                            shown.kept.push(bytes.clone());
                        }
                        // Past what resources/read answers with, the link
                        // still names the file: a run reads it, and an
                        // MCP Apps View pages a table from it.
                        let read = match path {
                            Some(path) if displayed.size > MAX_READ_FILE_BYTES => format!(
                                "read it in a run_js call on this heap (fs.readFileSync({path:?})); \
                                 resources/read answers with files of at most {MAX_READ_FILE_BYTES} bytes"
                            ),
                            _ => "read it with resources/read".to_owned(),
                        };
                        let over = if over_budget {
                            format!("the answer budget of {} bytes (MCP_V8_ANSWER_BUDGET_KB)", target.budget)
                        } else {
                            "what one answer carries (5 MiB)".to_owned()
                        };
                        let description = format!("{label} is over {over}; {read}");
                        let block = if target.links {
                            Content::ResourceLink {
                                name: displayed.name.clone().unwrap_or_else(|| {
                                    uri.rsplit('/').next().unwrap_or_default().to_owned()
                                }),
                                uri: uri.clone(),
                                mime_type: displayed.mime_type.clone(),
                                size: displayed.size as u64,
                                description,
                            }
                        } else {
                            Content::text(format!("{description}: {uri}"))
                        };
                        let cost = json_cost(&block);
                        room = room.saturating_sub(cost);
                        shown.json_len += cost;
                        shown.entries[index].content = Some(at);
                        shown.content.push(block);
                        shown.warnings.push(if kept {
                            format!("{label} is over {over}, so it is a link to {uri}, which holds it whole")
                        } else {
                            format!(
                                "{label} is over {over}, so it is a link to {uri}, the file in /work that holds the same bytes"
                            )
                        });
                    }
                    None => shown.warnings.push(format!(
                        "{label} was left out: it is over what one answer carries (5 MiB). Make it smaller, or \
                         write it to /work in a stateful run and display the same bytes: the answer then links to the file"
                    )),
                }
            }
        }
    }
    shown
}

/// Whether `displayed`, which no `/work` file holds, may be kept apart and
/// linked: the server keeps files, and a read can answer with it.
fn keepable(displayed: &Displayed, target: &Target<'_>) -> bool {
    target.keep
        && displayed.path.is_none()
        && displayed.bytes.is_some()
        && displayed.size <= MAX_READ_FILE_BYTES
}

fn describe(index: usize, displayed: &Displayed) -> String {
    match &displayed.name {
        Some(name) => format!(
            "display {} ({name:?}, {}, {} bytes)",
            index + 1,
            displayed.mime_type,
            displayed.size
        ),
        None => format!(
            "display {} ({}, {} bytes)",
            index + 1,
            displayed.mime_type,
            displayed.size
        ),
    }
}

fn block_of(displayed: &Displayed, bytes: &[u8], index: usize, target: &Target<'_>) -> Content {
    let mime_type = displayed.mime_type.clone();
    let essence = essence(&mime_type);
    if IMAGES.contains(&essence.as_str()) {
        return Content::Image {
            data: STANDARD.encode(bytes),
            mime_type,
        };
    }
    if is_text(&essence)
        && let Ok(text) = std::str::from_utf8(bytes)
    {
        return Content::text(text);
    }
    let uri = match (displayed.path.as_deref(), target.heap) {
        (Some(path), Some(heap)) => file_uri(heap, path),
        // Names the block; not readable: only /work files are resources.
        _ => crate::protocol::uri::display_uri(&target.execution_id.to_string(), index + 1),
    };
    Content::Resource {
        resource: ResourceContents {
            uri,
            mime_type,
            text: None,
            blob: Some(STANDARD.encode(bytes)),
            meta: None,
        },
    }
}

/// Bytes the block adds to the answer's JSON.
fn json_cost(block: &Content) -> usize {
    serde_json::to_vec(block).map_or(usize::MAX, |json| json.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::HeapKey;

    fn displayed(mime: &str, bytes: &[u8], path: Option<&str>) -> Displayed {
        Displayed {
            mime_type: mime.into(),
            name: Some("x".into()),
            key: crate::files::ContentKey::of(bytes),
            size: bytes.len(),
            bytes: Some(bytes::Bytes::copy_from_slice(bytes)),
            path: path.map(Into::into),
        }
    }

    fn target(heap: Option<&HeapKey>, room: usize, links: bool) -> Target<'_> {
        Target {
            heap: heap.map(HeapKey::as_str),
            execution_id: Uuid::nil(),
            room,
            text_room: room,
            budget: room,
            links,
            keep: false,
        }
    }

    #[test]
    fn each_type_becomes_its_block() {
        let shown = blocks(
            vec![
                displayed("image/png", b"\x89PNG", None),
                displayed("image/svg+xml", b"<svg/>", None),
                displayed("application/json", b"{\"a\":1}", None),
                displayed("text/csv; charset=utf-8", b"a,b", None),
                displayed("application/pdf", b"%PDF", None),
            ],
            &target(None, 1 << 20, true),
        );
        assert!(shown.warnings.is_empty());
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json[0]["type"], "image");
        assert_eq!(json[0]["mimeType"], "image/png");
        assert_eq!(json[0]["data"], STANDARD.encode(b"\x89PNG"));
        assert_eq!(
            json[1],
            serde_json::json!({"type": "text", "text": "<svg/>"})
        );
        assert_eq!(json[2]["text"], "{\"a\":1}");
        assert_eq!(json[3]["text"], "a,b");
        assert_eq!(json[4]["type"], "resource");
        assert_eq!(json[4]["resource"]["blob"], STANDARD.encode(b"%PDF"));
        assert_eq!(json[4]["resource"]["mimeType"], "application/pdf");
    }

    #[test]
    fn a_block_past_the_room_is_a_link_when_a_file_holds_it_else_left_out() {
        let heap = HeapKey::parse(&"ab".repeat(32)).unwrap();
        let big = vec![7u8; 4096];
        let shown = blocks(
            vec![
                displayed("image/png", &big, Some("/work/out/chart 1.png")),
                displayed("image/png", &big, None),
                displayed("text/plain", b"small", None),
            ],
            &target(Some(&heap), 2048, true),
        );
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 2, "{json}");
        assert_eq!(json[0]["type"], "resource_link");
        assert_eq!(
            json[0]["uri"],
            format!("mcp-v8://heaps/{}/files/out/chart%201.png", heap.as_str())
        );
        assert_eq!(json[0]["size"], 4096);
        assert_eq!(json[1]["text"], "small");
        assert_eq!(shown.warnings.len(), 2);
        assert!(
            shown.warnings[0].contains("is a link to"),
            "{:?}",
            shown.warnings
        );
        assert!(
            shown.warnings[1].contains("was left out"),
            "{:?}",
            shown.warnings
        );

        // Before 2025-06-18 a link is text naming the URI.
        let shown = blocks(
            vec![displayed("image/png", &big, Some("/work/a.png"))],
            &target(Some(&heap), 100, false),
        );
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json[0]["type"], "text");
        assert!(json[0]["text"].as_str().unwrap().contains("/files/a.png"));
    }

    #[test]
    fn text_past_the_answer_budget_is_a_link_while_images_and_unkept_text_stay() {
        let heap = HeapKey::parse(&"cd".repeat(32)).unwrap();
        let html = "<p>row</p>".repeat(500);
        let png = vec![7u8; 8192];
        let mut target = target(Some(&heap), 1 << 20, true);
        target.text_room = 1024;
        target.budget = 4096;
        let shown = blocks(
            vec![
                displayed("text/html", html.as_bytes(), Some("/work/report.html")),
                displayed("image/png", &png, Some("/work/chart.png")),
                displayed("text/plain", b"small", Some("/work/small.txt")),
                displayed("text/plain", html.as_bytes(), None),
            ],
            &target,
        );
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json[0]["type"], "resource_link", "{json}");
        assert!(
            json[0]["description"]
                .as_str()
                .unwrap()
                .contains("over the answer budget of 4096 bytes (MCP_V8_ANSWER_BUDGET_KB)"),
            "{json}"
        );
        assert_eq!(json[1]["type"], "image");
        assert_eq!(json[2]["text"], "small");
        // Past the budget, but no file holds it: carried, not lost.
        assert_eq!(json[3]["type"], "text");
        assert_eq!(shown.warnings.len(), 1, "{:?}", shown.warnings);
    }

    /// Text a file holds that comes after unkept text has spent the
    /// answer's room is a link to its file, however small: the budget is
    /// spent in call order, and what no file holds is carried first.
    #[test]
    fn small_linked_text_after_the_room_is_spent_is_a_link() {
        let heap = HeapKey::parse(&"cd".repeat(32)).unwrap();
        let html = "<p>row</p>".repeat(500);
        let mut target = target(Some(&heap), 1 << 20, true);
        target.text_room = 1024;
        target.budget = 4096;
        let shown = blocks(
            vec![
                displayed("text/plain", html.as_bytes(), None),
                displayed("text/plain", b"small", Some("/work/small.txt")),
            ],
            &target,
        );
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json[0]["type"], "text", "{json}");
        assert_eq!(json[1]["type"], "resource_link", "{json}");
        assert_eq!(
            json[1]["uri"],
            format!("mcp-v8://heaps/{}/files/small.txt", heap.as_str())
        );
        // The link says why; the carried text needs no word.
        assert_eq!(shown.warnings.len(), 1, "{:?}", shown.warnings);
        assert!(
            shown.warnings[0].contains("display 2")
                && shown.warnings[0].contains("is over the answer budget"),
            "{:?}",
            shown.warnings
        );
    }

    #[test]
    fn a_block_past_what_resources_read_answers_is_still_a_link_to_its_file() {
        let heap = HeapKey::parse(&"cd".repeat(32)).unwrap();
        let mut table = displayed("application/json", b"[]", Some("/work/rows.json"));
        table.size = MAX_READ_FILE_BYTES + 1;
        table.bytes = None;
        let shown = blocks(vec![table], &target(Some(&heap), 1 << 20, true));
        let json = serde_json::to_value(&shown.content).unwrap();
        assert_eq!(json[0]["type"], "resource_link", "{json}");
        assert_eq!(
            json[0]["uri"],
            format!("mcp-v8://heaps/{}/files/rows.json", heap.as_str())
        );
        let description = json[0]["description"].as_str().unwrap();
        assert!(
            description.contains("fs.readFileSync(\"/work/rows.json\")"),
            "{description}"
        );
        assert_eq!(shown.entries[0].content, Some(0));
    }
}
