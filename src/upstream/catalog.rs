//! What the model reads about the upstreams: a paragraph of `run_js`'s
//! description (each server and a line per tool, listed once per instance,
//! bounded in length) and, per server, TypeScript declarations of its
//! tools generated from their schemas
//! (`mcp-v8://mcp-servers/{name}/tools.d.ts`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Cached;
use super::call::ToolInfo;
use super::client::Upstreams;

/// Longest the paragraph about the upstreams may be, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 6000;
/// Longest one tool's line, in characters.
const MAX_TOOL_LINE_CHARS: usize = 160;
/// How long listing one server may hold up `tools/list`.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a paragraph with a server that could not be listed is kept
/// before the next `tools/list` tries again.
const RETRY_AFTER: Duration = Duration::from_secs(60);

pub use crate::protocol::uri::{declarations_uri, server_of_declarations_uri as server_of_uri};

/// `run_js`'s paragraph about the upstreams: listed once per instance, and
/// again after [`RETRY_AFTER`] when a server could not be listed.
pub async fn describe(upstreams: &Arc<Upstreams>) -> String {
    let mut cached = upstreams.catalog.lock().await;
    if let Some(found) = cached.as_ref()
        && found
            .incomplete_since
            .is_none_or(|since| since.elapsed() < RETRY_AFTER)
    {
        return found.text.clone();
    }
    // All at once, so servers that do not answer cost one timeout together.
    let tasks: Vec<_> = upstreams
        .names()
        .into_iter()
        .map(|name| {
            let upstreams = upstreams.clone();
            let task = upstreams.runtime().clone().spawn({
                let name = name.clone();
                async move { tokio::time::timeout(LIST_TIMEOUT, upstreams.tools(&name)).await }
            });
            (name, task)
        })
        .collect();
    let mut listed = Vec::new();
    let mut complete = true;
    for (name, task) in tasks {
        let tools = match task.await {
            Ok(Ok(Ok(tools))) => Ok(tools),
            Ok(Ok(Err(error))) => Err(error.to_string()),
            Ok(Err(_)) => Err(format!("no answer within {LIST_TIMEOUT:?}")),
            Err(error) => Err(error.to_string()),
        };
        complete &= tools.is_ok();
        listed.push((name, tools));
    }
    let text = paragraph(&listed);
    *cached = Some(Cached {
        text: text.clone(),
        incomplete_since: (!complete).then(Instant::now),
    });
    text
}

/// A server's tools as listing them went: the tools, or why not.
type Listed = (String, Result<Arc<Vec<ToolInfo>>, String>);

/// The paragraph for servers and what listing each gave.
fn paragraph(listed: &[Listed]) -> String {
    let mut text = String::from(
        "Code mode: the global `mcp` calls tools of other MCP servers from your code, so one run can call many tools, \
loop and filter, and return only what matters. `await mcp.callTool(server, tool, args)` (or `await mcp.<server>.<tool>(args)`) \
gives the tool's structuredContent when it has one (a value the tool's output schema only wraps as {result} comes back as the value itself), \
else its text (parsed when it is a JSON object or array); a tool error throws an Error with its text. \
`mcp.servers` names the servers; `await mcp.listTools(server)` gives each tool's name, description and schemas; \
TypeScript declarations of a server's tools are the resource mcp-v8://mcp-servers/<server>/tools.d.ts. Servers and tools:",
    );
    let mut left = 0usize;
    let mut omitted: Vec<(String, usize)> = Vec::new();
    for (server, tools) in listed {
        match tools {
            Err(error) => {
                let line = format!(
                    " [{server}] tools not listed ({}); `await mcp.listTools(\"{server}\")` tries again.",
                    cut(error, MAX_TOOL_LINE_CHARS)
                );
                text.push_str(&line);
            }
            Ok(tools) => {
                let _ = write!(text, " [{server}]");
                let mut shown = 0;
                for tool in tools.iter() {
                    let line = tool_line(tool);
                    if text.len() + line.len() > MAX_DESCRIPTION_CHARS {
                        break;
                    }
                    text.push_str(&line);
                    shown += 1;
                }
                if shown < tools.len() {
                    omitted.push((server.clone(), tools.len() - shown));
                    left += tools.len() - shown;
                }
                if tools.is_empty() {
                    text.push_str(" (no tools)");
                }
            }
        }
    }
    if left > 0 {
        let servers: Vec<String> = omitted
            .iter()
            .map(|(server, n)| format!("{n} of {server}"))
            .collect();
        let _ = write!(
            text,
            " ({left} more tools not shown: {}; `await mcp.listTools(server)` lists them all.)",
            servers.join(", ")
        );
    }
    text
}

/// ` name(arg, opt?): first sentence of the description.`
fn tool_line(tool: &ToolInfo) -> String {
    let args = tool.argument_names();
    let summary = tool
        .description
        .as_deref()
        .map(first_sentence)
        .unwrap_or_default();
    let line = if summary.is_empty() {
        format!(" {}({});", tool.name, args.join(", "))
    } else {
        format!(" {}({}): {summary};", tool.name, args.join(", "))
    };
    cut(&line, MAX_TOOL_LINE_CHARS)
}

fn first_sentence(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let end = line.find(". ").map(|i| i + 1).unwrap_or(line.len());
    line[..end].trim().trim_end_matches('.').to_owned()
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// TypeScript declarations of `server`'s tools: an interface whose methods
/// are the tools (what `mcp.<server>.<tool>(args)` calls), their argument
/// and result types from the JSON Schemas.
pub fn declarations(server: &str, tools: &[ToolInfo]) -> String {
    let interface = format!("McpServer_{}", server.replace('-', "_"));
    let mut out = format!(
        "// Tools of the upstream MCP server \"{server}\", generated from their JSON Schemas.\n\
// Call them as `await mcp.{proxy}.<tool>(args)` or `await mcp.callTool(\"{server}\", \"<tool>\", args)`.\n\
// A result is the tool's structuredContent (typed below when the tool declares an output schema;\n\
// a value the schema only wraps as {{result}} is the value itself), else its text, parsed when it is\n\
// a JSON object or array. A tool error throws an Error carrying its text.\n\n\
interface {interface} {{\n",
        proxy = property_access(server),
    );
    for tool in tools {
        if let Some(description) = &tool.description {
            out.push_str("  /**\n");
            for line in description.lines() {
                let _ = writeln!(out, "   * {}", line.replace("*/", "*\\/"));
            }
            out.push_str("   */\n");
        }
        let args = ts_type(&tool.input_schema, 1);
        let optional = required(&tool.input_schema).is_empty();
        let result = tool
            .result_schema()
            .map(|s| ts_type(s, 1))
            .unwrap_or_else(|| "unknown".to_owned());
        let _ = writeln!(
            out,
            "  {}(args{}: {args}): Promise<{result}>;",
            property_name(&tool.name),
            if optional { "?" } else { "" },
        );
    }
    out.push_str("}\n\n");
    let _ = writeln!(
        out,
        "declare const mcp: {{\n  readonly servers: string[];\n  listTools(server: string): Promise<{{ name: string; description?: string; inputSchema: object; outputSchema?: object }}[]>;\n  callTool(server: string, tool: string, args?: object): Promise<unknown>;\n  readonly {}: {interface};\n}};",
        property_name(server)
    );
    out
}

/// `name` as a property key: bare when it is an identifier.
fn property_name(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        serde_json::to_string(name).unwrap_or_default()
    }
}

/// `.name`-style access as the model writes it.
fn property_access(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        format!("[{}]", serde_json::to_string(name).unwrap_or_default())
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Deepest schema nesting turned into a type; deeper is `unknown`.
const MAX_DEPTH: usize = 8;

/// A TypeScript type for a JSON Schema, `indent` levels deep.
fn ts_type(schema: &Value, indent: usize) -> String {
    if indent > MAX_DEPTH {
        return "unknown".to_owned();
    }
    let Some(object) = schema.as_object() else {
        // `true` accepts anything, `false` nothing.
        return if schema == &Value::Bool(false) {
            "never".to_owned()
        } else {
            "unknown".to_owned()
        };
    };
    if let Some(constant) = object.get("const") {
        return constant.to_string();
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        let literals: Vec<String> = values.iter().map(Value::to_string).collect();
        return literals.join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = object.get(key).and_then(Value::as_array) {
            let types: Vec<String> = variants.iter().map(|v| ts_type(v, indent)).collect();
            return union(types);
        }
    }
    if let Some(all) = object.get("allOf").and_then(Value::as_array) {
        let types: Vec<String> = all.iter().map(|v| ts_type(v, indent)).collect();
        return types.join(" & ");
    }
    match object.get("type") {
        Some(Value::Array(kinds)) => {
            let types: Vec<String> = kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| single_type(object, kind, indent))
                .collect();
            union(types)
        }
        Some(Value::String(kind)) => single_type(object, kind, indent),
        _ if object.contains_key("properties") => single_type(object, "object", indent),
        _ => "unknown".to_owned(),
    }
}

fn union(mut types: Vec<String>) -> String {
    types.dedup();
    if types.is_empty() {
        return "unknown".to_owned();
    }
    types
        .into_iter()
        .map(|t| {
            if t.contains("=>") {
                format!("({t})")
            } else {
                t
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn single_type(object: &serde_json::Map<String, Value>, kind: &str, indent: usize) -> String {
    match kind {
        "string" => "string".to_owned(),
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match object.get("items") {
            Some(items) => {
                let item = ts_type(items, indent);
                if item.contains(' ') && !item.starts_with('{') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            None => "unknown[]".to_owned(),
        },
        "object" => {
            let properties = object.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let pad = "  ".repeat(indent + 1);
            let mut out = String::from("{\n");
            for (name, property) in properties.into_iter().flatten() {
                if let Some(description) = property.get("description").and_then(Value::as_str) {
                    let _ = writeln!(
                        out,
                        "{pad}/** {} */",
                        cut(&description.replace("*/", "*\\/").replace('\n', " "), 200)
                    );
                }
                let _ = writeln!(
                    out,
                    "{pad}{}{}: {};",
                    property_name(name),
                    if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    },
                    ts_type(property, indent + 1)
                );
            }
            match object.get("additionalProperties") {
                Some(Value::Bool(false)) => {}
                Some(extra) if extra.is_object() => {
                    let _ = writeln!(out, "{pad}[key: string]: {};", ts_type(extra, indent + 1));
                }
                _ if properties.is_none_or(|p| p.is_empty()) => {
                    let _ = writeln!(out, "{pad}[key: string]: unknown;");
                }
                _ => {}
            }
            let _ = write!(out, "{}}}", "  ".repeat(indent));
            out
        }
        _ => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, input: Value, output: Option<Value>) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: Some(description.into()),
            input_schema: input,
            output_schema: output,
        }
    }

    #[test]
    fn declarations_type_arguments_and_results_from_the_schemas() {
        let tools = [
            tool(
                "search_issues",
                "Search issues. Returns at most 100.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "GitHub search syntax"},
                    "state": {"enum": ["open", "closed"]},
                    "limit": {"type": ["integer", "null"]},
                    "labels": {"type": "array", "items": {"type": "string"}}
                }, "required": ["query"]}),
                Some(
                    json!({"type": "object", "properties": {"total": {"type": "integer"}},
                    "required": ["total"]}),
                ),
            ),
            tool("get-time", "Now.", json!({"type": "object"}), None),
            tool(
                "count",
                "Counts.",
                json!({"type": "object"}),
                Some(json!({"type": "object", "title": "countOutput",
                    "properties": {"result": {"type": "integer"}}, "required": ["result"]})),
            ),
        ];
        let text = declarations("gh", &tools);
        for expected in [
            "interface McpServer_gh {",
            "search_issues(args: {",
            "query: string;",
            "state?: \"open\" | \"closed\";",
            "limit?: number | null;",
            "labels?: string[];",
            "/** GitHub search syntax */",
            "}): Promise<{",
            "total: number;",
            "\"get-time\"(args?: {",
            "[key: string]: unknown;",
            "}): Promise<unknown>;",
            "readonly gh: McpServer_gh;",
            // A wrapped result is declared as the value code gets.
            "count(args?: {\n    [key: string]: unknown;\n  }): Promise<number>;",
        ] {
            assert!(
                text.contains(expected),
                "{expected:?} missing from:\n{text}"
            );
        }
    }

    #[test]
    fn the_paragraph_names_each_tool_and_stays_within_its_bound() {
        let many: Vec<ToolInfo> = (0..400)
            .map(|i| {
                tool(
                    &format!("tool_{i}"),
                    "Does a thing. More detail here.",
                    json!({"type": "object", "properties": {"a": {}}, "required": ["a"]}),
                    None,
                )
            })
            .collect();
        let listed = vec![
            ("down".to_owned(), Err("connection refused".to_owned())),
            ("big".to_owned(), Ok(Arc::new(many))),
        ];
        let text = paragraph(&listed);
        assert!(
            text.contains("[down] tools not listed (connection refused)"),
            "{text}"
        );
        assert!(text.contains(" tool_0(a): Does a thing;"), "{text}");
        assert!(text.len() <= MAX_DESCRIPTION_CHARS + 200, "{}", text.len());
        assert!(text.contains("more tools not shown"), "{text}");
    }

    #[test]
    fn uris_name_their_server() {
        assert_eq!(server_of_uri(&declarations_uri("gh")), Some("gh"));
        assert_eq!(server_of_uri("mcp-v8://mcp-servers//tools.d.ts"), None);
        assert_eq!(server_of_uri("mcp-v8://heaps/x"), None);
    }
}
