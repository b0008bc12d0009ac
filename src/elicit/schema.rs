//! What an elicitation may ask and what a response may say: MCP's
//! restricted subset of JSON Schema (a flat object of string, number,
//! integer, boolean, enum and string-array properties), checked before a
//! request is sent and again on the response before the run sees it.

use serde_json::{Map, Value, json};

use super::{MAX_MESSAGE_BYTES, MAX_RESPONSE_BYTES, MAX_SCHEMA_BYTES, Reach};

/// The formats a string property may name (MCP's list).
const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// `params` of `elicit()` as sent: `{ message, requestedSchema }` (form)
/// or `{ mode: "url", message, url }`, checked against `reach` and made
/// into the params of `elicitation/create` (`mode` always named). `Err`
/// says what is wrong and what to write instead.
pub fn check_request(params: &Value, reach: &Reach) -> Result<Value, String> {
    let Value::Object(params) = params else {
        return Err(
            "elicit: pass one object, { message, requestedSchema } for a form or \
             { mode: \"url\", message, url } for a link"
                .into(),
        );
    };
    let mode = match params.get("mode") {
        None | Some(Value::Null) => "form",
        Some(Value::String(mode)) if mode == "form" || mode == "url" => mode.as_str(),
        Some(other) => {
            return Err(format!(
                "elicit: mode must be \"form\" or \"url\", not {other}"
            ));
        }
    };
    if let Some(why) = reach.refusal(mode) {
        return Err(why);
    }
    let allowed: &[&str] = match mode {
        "url" => &["mode", "message", "url"],
        _ => &["mode", "message", "requestedSchema"],
    };
    if let Some(key) = params.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "elicit: a {mode} elicitation has no {key:?}; it takes {}",
            allowed.join(", ")
        ));
    }
    let message = match params.get("message") {
        Some(Value::String(message)) if !message.trim().is_empty() => message,
        _ => {
            return Err(
                "elicit: message must be a non-empty string saying what you ask and why".into(),
            );
        }
    };
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(format!(
            "elicit: message is {} bytes, over the {MAX_MESSAGE_BYTES}-byte limit",
            message.len()
        ));
    }
    if mode == "url" {
        let url = match params.get("url") {
            Some(Value::String(url)) => url,
            _ => return Err("elicit: a url elicitation needs url, a string".into()),
        };
        if url.len() > MAX_SCHEMA_BYTES {
            return Err(format!("elicit: url is over {MAX_SCHEMA_BYTES} bytes"));
        }
        match url::Url::parse(url) {
            Ok(parsed) if parsed.scheme() == "https" || parsed.scheme() == "http" => {}
            _ => {
                return Err(format!(
                    "elicit: url must be an absolute http or https URL, not {url:?}"
                ));
            }
        }
        return Ok(json!({ "mode": "url", "message": message, "url": url }));
    }
    let schema = params.get("requestedSchema").ok_or(
        "elicit: a form elicitation needs requestedSchema, like \
         { type: \"object\", properties: { name: { type: \"string\" } }, required: [\"name\"] }",
    )?;
    let len = serde_json::to_vec(schema).map_or(usize::MAX, |json| json.len());
    if len > MAX_SCHEMA_BYTES {
        return Err(format!(
            "elicit: requestedSchema is {len} bytes, over the {MAX_SCHEMA_BYTES}-byte limit"
        ));
    }
    check_schema(schema)?;
    Ok(json!({ "mode": "form", "message": message, "requestedSchema": schema }))
}

/// A form's schema: an object of primitive properties.
fn check_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Err("elicit: requestedSchema must be an object".into());
    };
    if schema.get("type") != Some(&json!("object")) {
        return Err("elicit: requestedSchema must have type: \"object\"".into());
    }
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) => properties,
        _ => {
            return Err(
                "elicit: requestedSchema needs properties, an object naming each field".into(),
            );
        }
    };
    for (name, property) in properties {
        check_property(name, property)?;
    }
    match schema.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                let known = name.as_str().is_some_and(|n| properties.contains_key(n));
                if !known {
                    return Err(format!(
                        "elicit: required names {name}, which is not one of the properties"
                    ));
                }
            }
        }
        Some(_) => {
            return Err("elicit: required must be an array of property names".into());
        }
    }
    Ok(())
}

fn check_property(name: &str, property: &Value) -> Result<(), String> {
    let Value::Object(property) = property else {
        return Err(format!("elicit: property {name:?} must be a schema object"));
    };
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "string" => {
            if let Some(format) = property.get("format")
                && !format.as_str().is_some_and(|f| FORMATS.contains(&f))
            {
                return Err(format!(
                    "elicit: property {name:?} has format {format}; a form takes {}",
                    FORMATS.join(", ")
                ));
            }
            if let Some(options) = property.get("enum") {
                strings(name, options, "enum")?;
            }
            if let Some(Value::Array(options)) = property.get("oneOf") {
                for option in options {
                    if !option.get("const").is_some_and(Value::is_string) {
                        return Err(format!(
                            "elicit: property {name:?}: each oneOf entry is {{ const: \"value\", title: \"label\" }}"
                        ));
                    }
                }
            }
            Ok(())
        }
        "number" | "integer" | "boolean" => Ok(()),
        "array" => {
            let items = property.get("items");
            let listed = items.and_then(|i| i.get("enum")).is_some()
                || items.and_then(|i| i.get("anyOf")).is_some();
            if !listed {
                return Err(format!(
                    "elicit: property {name:?} is an array; a form's arrays choose among listed \
                     strings: items: {{ type: \"string\", enum: [\"a\", \"b\"] }}"
                ));
            }
            if let Some(options) = items.and_then(|i| i.get("enum")) {
                strings(name, options, "items.enum")?;
            }
            Ok(())
        }
        "object" => Err(format!(
            "elicit: property {name:?} is an object, but a form is flat: ask for its fields as \
             properties of their own"
        )),
        other => Err(format!(
            "elicit: property {name:?} has type {other:?}; a form's properties are string, \
             number, integer, boolean, or array (of listed strings)"
        )),
    }
}

fn strings(name: &str, options: &Value, what: &str) -> Result<(), String> {
    match options {
        Value::Array(options) if !options.is_empty() && options.iter().all(Value::is_string) => {
            Ok(())
        }
        _ => Err(format!(
            "elicit: property {name:?}: {what} must be a non-empty array of strings"
        )),
    }
}

/// The client's `response` to `request` (the params sent), as the run gets
/// it: `{ action, content }` with content only when a form was accepted,
/// and every value of that content as the schema asks. `Err` says why the
/// response is refused; the run is not told.
pub fn check_response(request: &Value, response: &Value) -> Result<Value, String> {
    let len = serde_json::to_vec(response).map_or(usize::MAX, |json| json.len());
    if len > MAX_RESPONSE_BYTES {
        return Err(format!(
            "the response is {len} bytes, over the {MAX_RESPONSE_BYTES}-byte limit"
        ));
    }
    let Value::Object(response) = response else {
        return Err("a response is an object { action, content }".into());
    };
    let action = match response.get("action").and_then(Value::as_str) {
        Some(action @ ("accept" | "decline" | "cancel")) => action,
        _ => return Err("its action must be \"accept\", \"decline\" or \"cancel\"".into()),
    };
    let form = request.get("mode").and_then(Value::as_str) != Some("url");
    if action != "accept" || !form {
        return Ok(json!({ "action": action }));
    }
    let schema = &request["requestedSchema"];
    let empty = Map::new();
    let content = match response.get("content") {
        Some(Value::Object(content)) => content,
        None | Some(Value::Null) => &empty,
        Some(_) => return Err("an accepted form's content must be an object".into()),
    };
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    for (name, value) in content {
        let Some(property) = properties.get(name) else {
            return Err(format!(
                "its content has {name:?}, which the form did not ask for"
            ));
        };
        check_value(name, property, value)?;
    }
    if let Some(required) = schema["required"].as_array() {
        for name in required.iter().filter_map(Value::as_str) {
            if !content.contains_key(name) {
                return Err(format!("its content lacks the required {name:?}"));
            }
        }
    }
    Ok(json!({ "action": "accept", "content": content }))
}

fn check_value(name: &str, property: &Value, value: &Value) -> Result<(), String> {
    let wrong = |what: &str| Err(format!("{name:?} must be {what}, not {value}"));
    match property["type"].as_str().unwrap_or("") {
        "string" => {
            let Some(text) = value.as_str() else {
                return wrong("a string");
            };
            let listed = property["enum"].as_array().cloned().or_else(|| {
                property["oneOf"]
                    .as_array()
                    .map(|options| options.iter().map(|o| o["const"].clone()).collect())
            });
            if let Some(listed) = listed
                && !listed.contains(value)
            {
                return wrong("one of the listed values");
            }
            let chars = text.chars().count() as u64;
            if property["minLength"]
                .as_u64()
                .is_some_and(|min| chars < min)
                || property["maxLength"]
                    .as_u64()
                    .is_some_and(|max| chars > max)
            {
                return wrong("a string of the length the form asks");
            }
            Ok(())
        }
        "number" | "integer" => {
            let Some(number) = value.as_f64() else {
                return wrong("a number");
            };
            if property["type"] == "integer" && number.fract() != 0.0 {
                return wrong("an integer");
            }
            if property["minimum"].as_f64().is_some_and(|min| number < min)
                || property["maximum"].as_f64().is_some_and(|max| number > max)
            {
                return wrong("within the form's minimum and maximum");
            }
            Ok(())
        }
        "boolean" => match value {
            Value::Bool(_) => Ok(()),
            _ => wrong("true or false"),
        },
        "array" => {
            let Some(chosen) = value.as_array() else {
                return wrong("an array of strings");
            };
            let items = &property["items"];
            let listed: Vec<Value> = match items["enum"].as_array() {
                Some(listed) => listed.clone(),
                None => items["anyOf"]
                    .as_array()
                    .map(|o| o.iter().map(|o| o["const"].clone()).collect())
                    .unwrap_or_default(),
            };
            if chosen.iter().any(|c| !listed.contains(c)) {
                return wrong("an array of the listed strings");
            }
            let count = chosen.len() as u64;
            if property["minItems"].as_u64().is_some_and(|min| count < min)
                || property["maxItems"].as_u64().is_some_and(|max| count > max)
            {
                return wrong("as many choices as the form asks");
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Reach {
        Reach {
            form: true,
            url: false,
            refused: None,
        }
    }

    #[test]
    fn a_flat_form_is_sent_with_its_mode_and_a_nested_one_is_refused() {
        let asked = json!({ "message": "Delete 300 rows?", "requestedSchema": {
            "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] } });
        let sent = check_request(&asked, &form()).unwrap();
        assert_eq!(sent["mode"], "form");
        let nested = json!({ "message": "m", "requestedSchema": {
            "type": "object", "properties": { "who": { "type": "object" } } } });
        let error = check_request(&nested, &form()).unwrap_err();
        assert!(error.contains("flat"), "{error}");
        let unknown = json!({ "message": "m", "requestedSchema": {
            "type": "object", "properties": {}, "required": ["x"] } });
        assert!(
            check_request(&unknown, &form())
                .unwrap_err()
                .contains("required")
        );
    }

    #[test]
    fn a_client_that_did_not_declare_elicitation_cannot_be_asked() {
        let asked =
            json!({ "message": "m", "requestedSchema": { "type": "object", "properties": {} } });
        let error = check_request(&asked, &Reach::default()).unwrap_err();
        assert!(error.contains("cannot be asked"), "{error}");
        let url = json!({ "mode": "url", "message": "sign in", "url": "https://example.com/a" });
        let error = check_request(&url, &form()).unwrap_err();
        assert!(error.contains("only form"), "{error}");
        let declared =
            crate::elicit::Declared::of(Some(json!({ "elicitation": {} }).as_object().unwrap()));
        assert_eq!(Reach::of(declared, None), form());
        let declared =
            crate::elicit::Declared::of(Some(json!({ "elicitation": {} }).as_object().unwrap()));
        assert_eq!(Reach::of(declared, None), form());
    }

    #[test]
    fn a_response_must_match_the_schema_it_answers() {
        let request = json!({ "mode": "form", "message": "m", "requestedSchema": {
            "type": "object",
            "properties": { "n": { "type": "integer", "minimum": 1 }, "c": { "type": "string", "enum": ["a", "b"] } },
            "required": ["n"] } });
        let ok = check_response(
            &request,
            &json!({ "action": "accept", "content": { "n": 3, "c": "a" } }),
        );
        assert_eq!(ok.unwrap()["content"]["n"], 3);
        for bad in [
            json!({ "action": "accept", "content": { "c": "a" } }),
            json!({ "action": "accept", "content": { "n": 0 } }),
            json!({ "action": "accept", "content": { "n": 1.5 } }),
            json!({ "action": "accept", "content": { "n": 1, "c": "z" } }),
            json!({ "action": "accept", "content": { "n": 1, "extra": true } }),
            json!({ "action": "maybe" }),
        ] {
            assert!(check_response(&request, &bad).is_err(), "{bad}");
        }
        let declined = check_response(
            &request,
            &json!({ "action": "decline", "content": { "x": 1 } }),
        );
        assert_eq!(declined.unwrap(), json!({ "action": "decline" }));
    }
}
