//! JSON Schemas of the tools' arguments and results, derived with
//! `schemars` from the types the tools deserialize and serialize, so that
//! `tools/list` cannot drift from what a tool accepts or returns (the
//! end-to-end clients also validate results against these).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The pattern of a heap key argument.
pub(in crate::tools) const HEAP_KEY: &str = "^[0-9a-f]{64}$";

/// The schema of the arguments `T` deserializes from.
pub(in crate::tools) fn input<T: JsonSchema>() -> Value {
    let generator = tidy(SchemaSettings::draft2020_12().for_deserialize()).into_generator();
    let mut schema = strip_root(generator.into_root_schema_for::<T>().to_value());
    omit_nulls(&mut schema);
    schema
}

/// The schema of the arguments `T` deserializes from, with `extra`'s
/// (arguments others take from the same call) beside them.
pub(in crate::tools) fn input_with<T: JsonSchema>(
    extra: impl Iterator<Item = crate::engine::CallArgument>,
) -> Value {
    let mut generator = tidy(SchemaSettings::draft2020_12().for_deserialize()).into_generator();
    let extra: Vec<(&str, Value)> = extra
        .map(|argument| (argument.name, (argument.schema)(&mut generator).to_value()))
        .collect();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.extend(
            extra
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value)),
        );
    }
    let mut schema = strip_root(schema);
    omit_nulls(&mut schema);
    schema
}

/// The schema of the result `T` serializes to.
pub(in crate::tools) fn output<T: JsonSchema>() -> Value {
    let generator = tidy(SchemaSettings::draft2020_12().for_serialize()).into_generator();
    strip_root(generator.into_root_schema_for::<T>().to_value())
}

/// The schema of a `RunOutcome`.
pub(in crate::tools) fn run_outcome() -> Value {
    output::<crate::engine::RunOutcome>()
}

/// One schema per tool, whole: no `$defs` to resolve, since some clients
/// show the schema to the model as is.
fn tidy(settings: SchemaSettings) -> SchemaSettings {
    settings.with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    })
}

/// The root's `title` and `description` are the Rust type's name and docs, which mean nothing to a
/// model; the integer formats schemars adds (`uint`, `uint64`, `double`)
/// are not JSON Schema formats, and validators in strict mode (ajv, which
/// the TypeScript SDK uses) refuse unknown formats.
fn strip_root(mut schema: Value) -> Value {
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    tidy_keywords(&mut schema);
    schema
}

/// An argument a caller may leave out is shown as its type alone: that
/// it may also be `null`, the default, only adds a choice nobody needs.
fn omit_nulls(schema: &mut Value) {
    let required: Vec<Value> = schema["required"].as_array().cloned().unwrap_or_default();
    let Some(properties) = schema["properties"].as_object_mut() else {
        return;
    };
    for (name, property) in properties {
        if required.contains(&Value::String(name.clone())) {
            continue;
        }
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        if property.get("default") == Some(&Value::Null) {
            property.remove("default");
        }
        if let Some(Value::Array(types)) = property.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                property.insert("type".into(), only);
            }
        }
    }
}

/// Also joins the lines of descriptions taken from doc comments, which
/// keep the source's line breaks.
fn tidy_keywords(schema: &mut Value) {
    const NOT_JSON_SCHEMA: [&str; 12] = [
        "uint", "uint8", "uint16", "uint32", "uint64", "int", "int8", "int16", "int32", "int64",
        "float", "double",
    ];
    match schema {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| NOT_JSON_SCHEMA.contains(&format))
            {
                map.remove("format");
            }
            if let Some(Value::String(description)) = map.get_mut("description") {
                *description = description.replace('\n', " ");
            }
            // A flattened struct's required fields join the outer ones as
            // they are, so one named in both is listed twice; JSON Schema
            // wants the names unique, and the Python SDK refuses the tool.
            if let Some(Value::Array(required)) = map.get_mut("required") {
                let mut seen = std::collections::HashSet::new();
                required.retain(|name| seen.insert(name.clone()));
            }
            map.values_mut().for_each(tidy_keywords);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy_keywords),
        _ => {}
    }
}

/// Writes every `"type": [A, B, …]` as `"anyOf": [{"type": A, …}, …]`: the
/// keywords that constrain a value (`properties`, `items`, `pattern`, …) go
/// into each branch but `null`'s, while `description` and `default` stay
/// where they were.
pub(in crate::tools) fn without_type_unions(schema: &mut Value) {
    const ANNOTATIONS: [&str; 7] = [
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ];
    match schema {
        Value::Object(map) => {
            map.values_mut().for_each(without_type_unions);
            let Some(Value::Array(types)) = map.get("type").cloned() else {
                return;
            };
            map.remove("type");
            let constraints: serde_json::Map<String, Value> = map
                .iter()
                .filter(|(key, _)| !ANNOTATIONS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            map.retain(|key, _| ANNOTATIONS.contains(&key.as_str()));
            let branches = types
                .into_iter()
                .map(|kind| {
                    let mut branch = serde_json::Map::new();
                    if kind != "null" {
                        branch.extend(constraints.clone());
                    }
                    branch.insert("type".to_owned(), kind);
                    Value::Object(branch)
                })
                .collect();
            map.insert("anyOf".to_owned(), Value::Array(branches));
        }
        Value::Array(items) => items.iter_mut().for_each(without_type_unions),
        _ => {}
    }
}

/// Sets `description` (and `maximum`, when given) of property `name` of an
/// object schema, for the limits only known at run time.
pub(in crate::tools) fn describe_property(
    schema: &mut Value,
    name: &str,
    description: String,
    maximum: Option<Value>,
) {
    let property = &mut schema["properties"][name];
    property["description"] = Value::String(description);
    if let Some(maximum) = maximum {
        property["maximum"] = maximum;
    }
}

/// Removes properties of an object schema (those a mode does not offer).
pub(in crate::tools) fn remove_properties(schema: &mut Value, names: &[&str]) {
    if let Some(properties) = schema["properties"].as_object_mut() {
        for name in names {
            properties.remove(*name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// A count.
        count: u64,
        #[serde(default)]
        nested: Option<Inner>,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        ratio: f64,
    }

    #[test]
    fn a_type_union_becomes_any_of_with_its_constraints_in_each_branch() {
        let mut schema = serde_json::json!({
            "type": "object",
            "properties": {
                "key": { "type": ["string", "null"], "pattern": "^x$", "description": "d" },
                "list": { "type": "array", "items": { "type": ["integer", "null"] } },
            },
        });
        without_type_unions(&mut schema);
        assert_eq!(
            schema["properties"]["key"],
            serde_json::json!({
                "description": "d",
                "anyOf": [{ "type": "string", "pattern": "^x$" }, { "type": "null" }],
            })
        );
        assert_eq!(
            schema["properties"]["list"]["items"],
            serde_json::json!({ "anyOf": [{ "type": "integer" }, { "type": "null" }] })
        );
        assert_eq!(schema["type"], "object");
    }

    #[test]
    fn schemas_are_whole_closed_and_use_json_schema_formats_only() {
        let schema = input::<Example>();
        let text = schema.to_string();
        assert!(!text.contains("$defs") && !text.contains("$ref"), "{text}");
        assert!(!text.contains("\"format\""), "{text}");
        assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], serde_json::json!(["count"]));
        assert_eq!(schema["properties"]["count"]["description"], "A count.");
        assert_eq!(
            schema["properties"]["nested"]["type"], "object",
            "an optional argument is not offered as null"
        );
        assert!(schema["properties"]["nested"].get("default").is_none());
    }

    /// get_execution's result flattens the run outcome, which has an
    /// `execution_id` of its own: the name is required once.
    #[test]
    fn a_flattened_outcome_lists_each_required_name_once() {
        let schema = output::<crate::tools::executions::ExecutionView>();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required names")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let unique: std::collections::HashSet<&str> = required.iter().copied().collect();
        assert_eq!(required.len(), unique.len(), "{required:?}");
        assert!(unique.contains("execution_id") && unique.contains("started_at"));
    }
}
