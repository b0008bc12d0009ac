//! The answer budget: what a model reads of a run stays within a size it
//! can afford. A run's outcome is spent in a fixed order (its status and
//! error, the result, the ends of the output, the warnings) until the
//! budget is used; what does not fit stays in the run's execution record,
//! readable whole or in pages by the URIs the answer names, and a result
//! that does not fit `structuredContent` becomes a typed stand-in, never
//! JSON cut in the middle (docs/tools.md, "The answer budget").

use serde_json::{Map, Value};
use uuid::Uuid;

use crate::engine::{StandIn, cap_text, cap_text_ends};
use crate::protocol::mcp::CallToolResult;
use crate::protocol::uri::{self, RunText};
use crate::tools::toolbox::json_result;

/// Room kept for the lines that say what was cut and where it is.
const NOTES_ROOM: usize = 1200;
/// Longest preview of a stand-in, in bytes.
const PREVIEW_BYTES: usize = 1024;
/// The markers `cap_text` and `cap_text_ends` add.
const MARKER_ROOM: usize = 200;

/// Where what does not fit an answer is kept.
#[derive(Debug, Clone, Copy)]
pub(in crate::tools) enum Kept {
    /// In the execution record of this run.
    Record(Uuid),
    /// Nowhere; the reason, for the note.
    Nowhere(&'static str),
}

impl Kept {
    /// Where an answer of `id` that `keeps` a record leaves what it cut.
    pub(in crate::tools) fn for_run(id: Uuid, keeps: Result<(), &'static str>) -> Self {
        match keeps {
            Ok(()) => Self::Record(id),
            Err(why) => Self::Nowhere(why),
        }
    }

    fn uri(self, part: RunText) -> Option<String> {
        match self {
            Self::Record(id) => Some(uri::run_text_uri(id, part, None)),
            Self::Nowhere(_) => None,
        }
    }

    /// Where `part`, whose kept text is `text`, is, for a note: exactly
    /// what its link opens, whole and in pages.
    fn place(self, part: RunText, text: &str, budget: usize) -> String {
        match self {
            Self::Record(id) => {
                let paged = super::pages::Paged::new(text, part, budget);
                let pages = paged.count();
                let whole = uri::run_text_uri(id, part, None);
                let cut = match engine_cut(text, part) {
                    Some((total, unit)) => format!(
                        " (only its first {} bytes: the value has {total} {unit}, past \
                         MCP_V8_RECORD_MAX_MB, which bounds what the record keeps)",
                        text.len()
                    ),
                    None => String::new(),
                };
                if pages > 1 {
                    format!(
                        "the whole{cut} is kept with the run: resources/read {whole}, or in {pages} pages of about \
                         {budget} bytes, each {}: {whole}?page=1 to ?page={pages}",
                        paged.shape().each_page()
                    )
                } else {
                    format!("the whole{cut} is kept with the run: resources/read {whole}")
                }
            }
            Self::Nowhere(why) => format!("the rest is not kept ({why})"),
        }
    }
}

/// The whole size of `part` and its unit (`bytes`, or `characters` for a
/// result the engine measured in UTF-16 units) when the engine cut it at
/// the record's bound, from the marker it ends with (a result) or is split
/// by (output).
fn engine_cut(text: &str, part: RunText) -> Option<(usize, &'static str)> {
    let marker = format!("\n[{} truncated: ", part.as_str());
    let at = text.rfind(&marker)? + marker.len();
    // "N bytes, the first M shown]", "D of N bytes dropped from the middle; …",
    // "JSON of N characters, …", "a string of N characters, …".
    let said = text[at..].split([',', ';', ']']).next()?;
    let words: Vec<&str> = said.split_whitespace().collect();
    words.windows(2).rev().find_map(|pair| {
        let unit = match pair[1] {
            "bytes" => "bytes",
            "characters" => "characters",
            _ => return None,
        };
        Some((pair[0].parse().ok()?, unit))
    })
}

/// The tool result of a run outcome's JSON `json` within `budget`: its
/// text is the same JSON with `result` as `shown_result` (the REPL's view
/// of the value) when given, and `structuredContent`, where the protocol
/// has it, the JSON itself; each is fitted on its own ([`fit`]).
pub(in crate::tools) fn answer(
    json: Value,
    shown_result: Option<&str>,
    budget: usize,
    kept: Kept,
    is_error: bool,
    structured: bool,
) -> CallToolResult {
    let mut text = json.clone();
    if let Some(shown) = shown_result {
        text["result"] = shown.into();
    }
    fit(&mut text, budget, kept, ResultForm::Text);
    let json = structured.then(|| {
        let mut json = json;
        fit(&mut json, budget, kept, ResultForm::StandIn);
        json
    });
    json_result(
        text.to_string(),
        json.unwrap_or_default(),
        is_error,
        structured,
    )
}

/// How a `result` that does not fit is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tools) enum ResultForm {
    /// The text the model reads: the value's text cut, with a marker.
    Text,
    /// `structuredContent`: a [`StandIn`] in the value's place.
    StandIn,
}

/// Length of `value`'s JSON.
pub(in crate::tools) fn json_len(value: &(impl serde::Serialize + ?Sized)) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |json| json.len())
}

/// Makes `view`, the JSON object of a run's outcome, at most `budget`
/// bytes of JSON: unchanged when it fits; else the result, the output and
/// the warnings are given room in that order (the output and the warnings
/// keep some room, so that the ends of a log are never crowded out), each
/// cut or replaced as it must be, with a note (first among the warnings)
/// saying what was cut and where the whole is.
pub(in crate::tools) fn fit(view: &mut Value, budget: usize, kept: Kept, form: ResultForm) {
    if json_len(view) <= budget {
        return;
    }
    let Some(fields) = view.as_object_mut() else {
        return;
    };
    let parts = Parts {
        result: match fields.remove("result") {
            Some(Value::String(text)) => Some(text),
            _ => None,
        },
        output: match fields.remove("output") {
            Some(Value::String(text)) => text,
            _ => String::new(),
        },
        warnings: match fields.remove("warnings") {
            Some(Value::Array(warnings)) => warnings
                .into_iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        },
        places: Default::default(),
    };
    cap_error(fields, budget / 4);
    let base = json_len(fields) + r#","result":null,"output":"","warnings":[]"#.len();
    let mut avail = budget.saturating_sub(base + NOTES_ROOM);
    // Escaping is estimated from each part's ratio; a few rounds settle it.
    for _ in 0..8 {
        let mut shaped = fields.clone();
        parts.spend(&mut shaped, avail, budget, kept, form);
        let shaped = Value::Object(shaped);
        let len = json_len(&shaped);
        if len <= budget || avail == 0 {
            *view = shaped;
            return;
        }
        avail = avail.saturating_sub(len - budget + 64);
    }
}

/// Error texts longer than `max` bytes are cut: the outcome's own fields
/// come first, but a message of megabytes is not one of them.
fn cap_error(fields: &mut Map<String, Value>, max: usize) {
    let Some(Value::Object(error)) = fields.get_mut("error") else {
        return;
    };
    for (name, what) in [("message", "message"), ("stack", "stack")] {
        if let Some(Value::String(text)) = error.get_mut(name)
            && text.len() > max
        {
            *text = cap_text_ends(std::mem::take(text), max / 2, what);
        }
    }
}

/// The parts of an outcome that an answer may cut.
struct Parts {
    result: Option<String>,
    output: String,
    warnings: Vec<String>,
    /// Where the result and the output are kept, for their notes: saying
    /// it pages the whole text, so it is worked out once, not every round.
    places: [std::cell::OnceCell<String>; 2],
}

impl Parts {
    /// Writes the parts into `fields` within `avail` bytes of JSON.
    fn spend(
        &self,
        fields: &mut Map<String, Value>,
        avail: usize,
        budget: usize,
        kept: Kept,
        form: ResultForm,
    ) {
        let mut notes = Vec::new();
        let output_need = json_len(&self.output);
        let warnings_need: usize = self.warnings.iter().map(|w| json_len(w) + 1).sum();
        let hold_output = output_need.min(avail / 4);
        let hold_warnings = warnings_need.min(avail / 8);
        let result_room = avail.saturating_sub(hold_output + hold_warnings);
        let result = match &self.result {
            None => Value::Null,
            Some(text) if json_len(text) <= result_room => Value::String(text.clone()),
            Some(text) => {
                let (value, shown) = cut_result(text, result_room, kept, form);
                notes.push(format!(
                    "result: {} bytes, over this answer's budget of {budget} bytes \
                     (MCP_V8_ANSWER_BUDGET_KB); {shown}; {}. To work with it, keep it in a variable \
                     (heap: \"latest\") or write it to a /work file, and return a summary",
                    text.len(),
                    self.places[0].get_or_init(|| kept.place(RunText::Result, text, budget))
                ));
                value
            }
        };
        let result_used = json_len(&result);
        let output_room = avail.saturating_sub(result_used + hold_warnings);
        let output = if output_need <= output_room {
            self.output.clone()
        } else {
            let (cut, raw) = within(&self.output, output_room, |raw| {
                cap_text_ends(self.output.clone(), raw, "output")
            });
            notes.push(format!(
                "output: {} bytes, over this answer's budget of {budget} bytes \
                 (MCP_V8_ANSWER_BUDGET_KB); its first and last {} bytes are shown; {}",
                self.output.len(),
                raw / 2,
                self.places[1].get_or_init(|| kept.place(RunText::Output, &self.output, budget))
            ));
            cut
        };
        let mut warnings_room = avail.saturating_sub(result_used + json_len(&output));
        let mut warnings: Vec<Value> = Vec::new();
        let mut left_out = 0;
        for warning in &self.warnings {
            let cost = json_len(warning) + 1;
            if left_out == 0 && cost <= warnings_room {
                warnings_room -= cost;
                warnings.push(Value::String(warning.clone()));
            } else {
                left_out += 1;
            }
        }
        if left_out > 0 {
            notes.push(match kept {
                Kept::Record(id) => format!(
                    "{left_out} more warnings did not fit this answer: the run's whole record has \
                     them (resources/read mcp-v8://executions/{id})"
                ),
                Kept::Nowhere(why) => {
                    format!("{left_out} more warnings did not fit this answer ({why})")
                }
            });
        }
        let notes = notes.into_iter().map(Value::String);
        fields.insert("result".into(), result);
        fields.insert("output".into(), Value::String(output));
        fields.insert(
            "warnings".into(),
            Value::Array(notes.chain(warnings).collect()),
        );
    }
}

/// `cut(raw)` of `text` with the largest `raw` whose JSON is at most
/// `room` bytes, and that `raw`: escaping is estimated from the whole
/// text's ratio, then corrected, since the ends of a text escape
/// differently from its middle.
fn within(text: &str, room: usize, cut: impl Fn(usize) -> String) -> (String, usize) {
    let mut raw = raw_room(text, room).saturating_sub(MARKER_ROOM);
    let mut shown = cut(raw);
    for _ in 0..6 {
        let len = json_len(&shown);
        if len <= room || raw == 0 {
            break;
        }
        raw = raw.saturating_sub(len - room + 16);
        shown = cut(raw);
    }
    (shown, raw)
}

/// Bytes of `text` whose JSON takes about `room` bytes.
fn raw_room(text: &str, room: usize) -> usize {
    let escaped = json_len(text).max(1);
    (room as u128 * text.len() as u128 / escaped as u128) as usize
}

/// `text`, a result over its `room`: cut with a marker for the model,
/// or a stand-in; and what the answer shows of it, for the note.
fn cut_result(text: &str, room: usize, kept: Kept, form: ResultForm) -> (Value, String) {
    match form {
        ResultForm::Text => {
            let (cut, raw) = within(text, room, |raw| cap_text(text.to_owned(), raw, "result"));
            (
                Value::String(cut),
                format!("its first {raw} bytes are shown"),
            )
        }
        ResultForm::StandIn => {
            let preview_room = raw_room(text, room.saturating_sub(400)).min(PREVIEW_BYTES);
            let end = text.floor_char_boundary(preview_room);
            let stand_in = stand_in(text, &text[..end], kept.uri(RunText::Result));
            let shown = format!("it is a stand-in here (its type, size and first {end} bytes)");
            (
                serde_json::to_value(stand_in).expect("stand-ins serialize"),
                shown,
            )
        }
    }
}

/// The stand-in of the value whose text is `text`.
fn stand_in(text: &str, preview: &str, uri: Option<String>) -> StandIn {
    let (kind, length) = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => ("array", Some(items.len())),
        Ok(Value::Object(keys)) => ("object", Some(keys.len())),
        Ok(Value::String(s)) => ("string", Some(s.chars().count())),
        Ok(Value::Number(_)) => ("number", None),
        Ok(Value::Bool(_)) => ("boolean", None),
        Ok(Value::Null) => ("null", None),
        // JSON the engine cut at its own limit, or text without a JSON form.
        Err(_) => match text.as_bytes().first() {
            Some(b'[') => ("array", None),
            Some(b'{') => ("object", None),
            Some(b'"') => ("string", None),
            _ => ("text", None),
        },
    };
    StandIn {
        kind: kind.to_owned(),
        // Past the record's bound, the whole size the engine measured.
        bytes: engine_cut(text, RunText::Result)
            .map_or(text.len(), |(total, _)| total.max(text.len())),
        length,
        preview: preview.to_owned(),
        uri,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(result: Option<String>, output: String, warnings: Vec<String>) -> Value {
        json!({
            "execution_id": Uuid::nil(),
            "status": "completed",
            "result": result,
            "output": output,
            "heap": null,
            "input_heap": null,
            "error": null,
            "warnings": warnings,
            "duration_ms": 3,
        })
    }

    #[test]
    fn an_outcome_that_fits_is_unchanged() {
        let mut view = outcome(Some("42".into()), "hi\n".into(), vec!["w".into()]);
        let before = view.clone();
        fit(
            &mut view,
            4096,
            Kept::Record(Uuid::nil()),
            ResultForm::StandIn,
        );
        assert_eq!(view, before);
    }

    #[test]
    fn a_large_result_becomes_a_stand_in_with_its_type_and_link() {
        let rows: Vec<Value> = (0..20_000).map(|i| json!({"i": i, "name": "x"})).collect();
        let text = serde_json::to_string(&rows).unwrap();
        let mut view = outcome(Some(text.clone()), "done\n".into(), vec![]);
        let id = Uuid::new_v4();
        fit(&mut view, 16 * 1024, Kept::Record(id), ResultForm::StandIn);
        assert!(json_len(&view) <= 16 * 1024, "{}", json_len(&view));
        let stand_in: StandIn = serde_json::from_value(view["result"].clone()).unwrap();
        assert_eq!(stand_in.kind, "array");
        assert_eq!(stand_in.length, Some(20_000));
        assert_eq!(stand_in.bytes, text.len());
        assert!(text.starts_with(&stand_in.preview));
        assert_eq!(
            stand_in.uri.as_deref(),
            Some(format!("mcp-v8://executions/{id}/result").as_str())
        );
        assert_eq!(view["output"], "done\n");
        let note = view["warnings"][0].as_str().unwrap();
        assert!(note.contains("MCP_V8_ANSWER_BUDGET_KB"), "{note}");
        assert!(note.contains("?page="), "{note}");
    }

    #[test]
    fn output_keeps_both_ends_and_the_result_comes_first() {
        let output = format!("first line\n{}last line\n", "é\"\n".repeat(400_000));
        let mut view = outcome(
            Some("\"the answer\"".into()),
            output,
            vec!["a warning".into()],
        );
        fit(
            &mut view,
            8 * 1024,
            Kept::Nowhere("a stateless server keeps nothing"),
            ResultForm::Text,
        );
        assert!(json_len(&view) <= 8 * 1024, "{}", json_len(&view));
        assert_eq!(view["result"], "\"the answer\"");
        let output = view["output"].as_str().unwrap();
        assert!(output.starts_with("first line"), "{output}");
        assert!(output.ends_with("last line\n"), "{output}");
        let warnings = view["warnings"].as_array().unwrap();
        assert!(
            warnings[0]
                .as_str()
                .unwrap()
                .contains("not kept (a stateless server")
        );
        assert_eq!(warnings[1], "a warning");
    }

    #[test]
    fn a_warning_keeps_its_room_when_the_ends_of_a_log_escape_more_than_its_middle() {
        let output: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let warning = format!("this run started from a fresh isolate {}", "x".repeat(400));
        let mut view = outcome(None, output, vec![warning.clone()]);
        fit(
            &mut view,
            32 * 1024,
            Kept::Record(Uuid::nil()),
            ResultForm::StandIn,
        );
        assert!(json_len(&view) <= 32 * 1024, "{}", json_len(&view));
        assert_eq!(
            view["warnings"][1],
            warning.as_str(),
            "{}",
            view["warnings"]
        );
    }

    #[test]
    fn a_huge_error_message_is_cut_too() {
        let mut view = outcome(None, String::new(), vec![]);
        view["status"] = "failed".into();
        view["error"] = json!({"name": "Error", "message": "m".repeat(1 << 20), "stack": null});
        fit(
            &mut view,
            8 * 1024,
            Kept::Record(Uuid::nil()),
            ResultForm::Text,
        );
        assert!(json_len(&view) <= 8 * 1024, "{}", json_len(&view));
    }

    #[test]
    fn a_text_the_engine_cut_names_its_whole_size() {
        let result = crate::engine::cap_text("x".repeat(100), 10, "result");
        assert_eq!(engine_cut(&result, RunText::Result), Some((100, "bytes")));
        let output = crate::engine::cap_text_ends("y".repeat(100), 10, "output");
        assert_eq!(engine_cut(&output, RunText::Output), Some((100, "bytes")));
        let json = "[1,2\n[result truncated: JSON of 5000 characters, the first 4 shown]";
        assert_eq!(
            engine_cut(json, RunText::Result),
            Some((5000, "characters"))
        );
        assert_eq!(
            engine_cut(
                "a log that says [result truncated: 5 bytes",
                RunText::Result
            ),
            None
        );
    }
}
