//! `read_display_page`: the MCP Apps View's own tool (`_meta.ui.visibility:
//! ["app"]`, never the model's). A `display()` table too large for its
//! answer is a link to the `/work` file holding it; the View reads it here
//! one page at a time, sorted as the person asked, with the rights of the
//! caller, as `resources/read` would.

mod tables;

pub use tables::parses_of;

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::answer::schema;
use super::toolbox::{CallContext, HeapName, Toolbox, structured_result};
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};
use crate::protocol::uri;
use crate::units::MIB_U64;

pub(super) const NAME: &str = "read_display_page";

/// Rows one page holds at most.
const MAX_LIMIT: usize = 500;

/// Largest file paged: it is parsed whole, once (`tables`).
const MAX_TABLE_BYTES: u64 = 64 * MIB_U64;

pub(super) fn describe() -> Tool {
    Tool {
        name: NAME,
        title: "Read a page of a displayed table",
        description: "For the run_js View (MCP Apps) only. One page of rows (at most 500) of a table a run \
             displayed that was too large for its answer: a JSON array of objects in a heap's /work, named \
             by the resource_link of the run_js result."
            .into(),
        input_schema: schema::input::<PageArgs>(),
        execution: None,
        meta: Some(crate::protocol::apps::app_only_meta()),
        output_schema: Some(schema::output::<Page>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PageArgs {
    /// The resource_link URI of the table (mcp-v8://heaps/{heap}/files/{path}).
    uri: String,
    /// The first row of the page, from 0.
    #[serde(default)]
    offset: usize,
    /// Rows in the page, 1 to 500.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
    /// A column to sort the whole table by before paging: numbers by
    /// value, anything else by its text.
    #[serde(default)]
    sort_by: Option<String>,
    /// Sort from the largest.
    #[serde(default)]
    descending: bool,
}

fn default_limit() -> usize {
    25
}

/// One page of a table.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Page {
    /// The table's URI.
    uri: String,
    /// Rows in the whole table.
    total: usize,
    /// The first row of this page.
    offset: usize,
    /// Every row's keys, in the order they first appear.
    columns: Vec<String>,
    /// The page's rows.
    rows: Vec<Map<String, Value>>,
}

pub(super) async fn call(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    args: PageArgs,
    structured: bool,
) -> CallToolResult {
    match page(toolbox, context, args).await {
        Ok(page) => structured_result(&page, false, structured),
        Err(message) => CallToolResult::error(message),
    }
}

async fn page(toolbox: &Toolbox, context: CallContext<'_>, args: PageArgs) -> Result<Page, String> {
    if !(1..=MAX_LIMIT).contains(&args.limit) {
        return Err(format!(
            "limit is {}; a page holds 1 to {MAX_LIMIT} rows",
            args.limit
        ));
    }
    let not_found = || {
        format!(
            "{} names no file of yours: pass the uri of a resource_link a run_js result gave",
            args.uri
        )
    };
    let Some(uri::Resource::HeapFile { heap, path, .. }) = uri::parse(&args.uri) else {
        return Err(not_found());
    };
    let heap = HeapName::parse(&heap).ok_or_else(not_found)?;
    let heap = toolbox
        .heap_named(context.tenant, &heap)
        .await?
        .ok_or_else(not_found)?;
    let table = tables::table(context.tenant, &heap, &path, || async {
        let tree = toolbox
            .engine
            .files_of(context.tenant, &heap)
            .await
            .map_err(|e| format!("could not read the heap's /work: {e}"))?
            .ok_or_else(not_found)?;
        let entry = tree
            .into_iter()
            .find(|e| e.path == path && !e.dir)
            .ok_or_else(not_found)?;
        if entry.size > MAX_TABLE_BYTES {
            return Err(format!(
                "{path} is {} bytes; tables of at most {MAX_TABLE_BYTES} bytes are paged",
                entry.size
            ));
        }
        let bytes = toolbox.file_bytes(context.tenant, &entry).await?;
        let not_a_table =
            || format!("{path} is not a table: a page is read from a JSON array of objects");
        let rows: Vec<Value> = serde_json::from_slice(&bytes).map_err(|_| not_a_table())?;
        let rows = rows
            .into_iter()
            .map(|row| match row {
                Value::Object(row) => Ok(row),
                _ => Err(not_a_table()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((tables::Table::new(rows), entry.size))
    })
    .await?;
    let total = table.rows.len();
    let offset = args.offset.min(total);
    let end = offset.saturating_add(args.limit).min(total);
    let rows = match &args.sort_by {
        Some(column) => {
            if !table.columns.contains(column) {
                return Err(format!(
                    "sort_by {column:?} is not a column of {path} ({})",
                    table.columns.join(", ")
                ));
            }
            let order = table.sorted_by(column, args.descending, compare);
            order[offset..end]
                .iter()
                .map(|&i| table.rows[i].clone())
                .collect()
        }
        None => table.rows[offset..end].to_vec(),
    };
    Ok(Page {
        uri: args.uri,
        total,
        offset,
        columns: table.columns.clone(),
        rows,
    })
}

/// The View's order: numbers by value, anything else by its text (a
/// missing or null cell as empty text).
fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    if let (Some(Value::Number(a)), Some(Value::Number(b))) = (a, b) {
        let (a, b) = (
            a.as_f64().unwrap_or(f64::NAN),
            b.as_f64().unwrap_or(f64::NAN),
        );
        return a.partial_cmp(&b).unwrap_or(Ordering::Equal);
    }
    text(a).cmp(&text(b))
}

fn text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_sort_by_value_and_the_rest_by_text() {
        assert_eq!(compare(Some(&json!(9.5)), Some(&json!(10))), Ordering::Less);
        assert_eq!(compare(Some(&json!(-3)), Some(&json!(2))), Ordering::Less);
        // Text, where "10" comes before "9".
        assert_eq!(
            compare(Some(&json!("10")), Some(&json!("9"))),
            Ordering::Less
        );
        assert_eq!(
            compare(Some(&json!("b")), Some(&json!("a"))),
            Ordering::Greater
        );
        // Missing and null cells are empty text, first.
        assert_eq!(compare(None, Some(&json!("a"))), Ordering::Less);
        assert_eq!(compare(Some(&json!(null)), None), Ordering::Equal);
        assert_eq!(
            compare(Some(&json!(true)), Some(&json!("true"))),
            Ordering::Equal
        );
    }
}
