//! The suite's reference-server fixtures that answer with fixed content:
//! the content tools (text, image, audio, an embedded resource, all three
//! at once, a tool error, a JSON Schema 2020-12 input schema), the test
//! prompts and the `test://` resources. They go through the server's own
//! listing, dispatch and response limits, so the scenarios check how our
//! layer carries each kind of content; what they answer is the reference
//! server's.

use crate::fixtures::tool;
use mcp_v8_lambda::protocol::mcp::{
    CallToolResult, Content, GetPromptParams, GetPromptResult, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};
use mcp_v8_lambda::server::extra::ExtraContent;
use serde_json::{Value, json};

/// A 1×1 red PNG, the reference server's.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file, the reference server's.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const SIMPLE_TEXT: &str = "test_simple_text";
const IMAGE: &str = "test_image_content";
const AUDIO: &str = "test_audio_content";
const EMBEDDED: &str = "test_embedded_resource";
const MIXED: &str = "test_multiple_content_types";
const ERROR: &str = "test_error_handling";
const SCHEMA_2020_12: &str = "json_schema_2020_12_tool";

fn no_arguments() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The content tools' listings.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        tool(
            SIMPLE_TEXT,
            "Conformance fixture: a text block.",
            no_arguments(),
        ),
        tool(
            IMAGE,
            "Conformance fixture: an image block.",
            no_arguments(),
        ),
        tool(
            AUDIO,
            "Conformance fixture: an audio block.",
            no_arguments(),
        ),
        tool(
            EMBEDDED,
            "Conformance fixture: an embedded resource.",
            no_arguments(),
        ),
        tool(
            MIXED,
            "Conformance fixture: text, an image and a resource.",
            no_arguments(),
        ),
        tool(ERROR, "Conformance fixture: a tool error.", no_arguments()),
        tool(
            SCHEMA_2020_12,
            "Conformance fixture: an input schema with JSON Schema 2020-12 keywords.",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }),
        ),
    ]
}

fn result(content: Vec<Content>, is_error: bool) -> CallToolResult {
    CallToolResult {
        content,
        structured_content: None,
        is_error,
        meta: None,
    }
}

fn image() -> Content {
    Content::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }
}

fn embedded(uri: &str, mime_type: &str, text: String) -> Content {
    Content::Resource {
        resource: ResourceContents {
            uri: uri.into(),
            mime_type: mime_type.into(),
            text: Some(text),
            blob: None,
            meta: None,
        },
    }
}

/// A call of content tool `name` with `arguments`, if it is one.
pub(crate) fn call(name: &str, arguments: Option<&str>) -> Option<CallToolResult> {
    Some(match name {
        SIMPLE_TEXT => result(
            vec![Content::text("This is a simple text response for testing.")],
            false,
        ),
        IMAGE => result(vec![image()], false),
        AUDIO => result(
            vec![Content::Audio {
                data: WAV.into(),
                mime_type: "audio/wav".into(),
            }],
            false,
        ),
        EMBEDDED => result(
            vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.".into(),
            )],
            false,
        ),
        MIXED => result(
            vec![
                Content::text("Multiple content types test:"),
                image(),
                embedded(
                    "test://mixed-content-resource",
                    "application/json",
                    json!({ "test": "data", "value": 123 }).to_string(),
                ),
            ],
            false,
        ),
        ERROR => result(
            vec![Content::text(
                "This tool intentionally returns an error for testing",
            )],
            true,
        ),
        SCHEMA_2020_12 => result(
            vec![Content::text(format!(
                "JSON Schema 2020-12 tool called with: {}",
                arguments.unwrap_or("{}")
            ))],
            false,
        ),
        _ => return None,
    })
}

const SIMPLE_PROMPT: &str = "test_simple_prompt";
const PROMPT_WITH_ARGUMENTS: &str = "test_prompt_with_arguments";
const PROMPT_WITH_RESOURCE: &str = "test_prompt_with_embedded_resource";
const PROMPT_WITH_IMAGE: &str = "test_prompt_with_image";

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const TEMPLATE: &str = "test://template/{id}/data";

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: "user",
        content,
    }
}

/// The reference server's prompts and `test://` resources.
#[derive(Debug)]
pub(crate) struct ContentFixtures;

impl ExtraContent for ContentFixtures {
    fn prompts(&self) -> Vec<Prompt> {
        let argument = |name, description| PromptArgument {
            name,
            description,
            required: true,
        };
        vec![
            Prompt {
                name: SIMPLE_PROMPT,
                title: "Simple Test Prompt",
                description: "Conformance fixture: a prompt without arguments.",
                arguments: Vec::new(),
            },
            Prompt {
                name: PROMPT_WITH_ARGUMENTS,
                title: "Prompt With Arguments",
                description: "Conformance fixture: a prompt with two arguments.",
                arguments: vec![
                    argument("arg1", "First test argument"),
                    argument("arg2", "Second test argument"),
                ],
            },
            Prompt {
                name: PROMPT_WITH_RESOURCE,
                title: "Prompt With Embedded Resource",
                description: "Conformance fixture: a prompt that embeds a resource.",
                arguments: vec![argument("resourceUri", "URI of the resource to embed")],
            },
            Prompt {
                name: PROMPT_WITH_IMAGE,
                title: "Prompt With Image",
                description: "Conformance fixture: a prompt with an image.",
                arguments: Vec::new(),
            },
        ]
    }

    fn get_prompt(&self, params: &GetPromptParams) -> Option<Result<GetPromptResult, String>> {
        let argument = |name: &str| {
            params
                .arguments
                .get(name)
                .cloned()
                .ok_or_else(|| format!("{} needs the {name} argument", params.name))
        };
        let messages = match params.name.as_str() {
            SIMPLE_PROMPT => Ok(vec![user(Content::text(
                "This is a simple prompt for testing.",
            ))]),
            PROMPT_WITH_ARGUMENTS => argument("arg1").and_then(|arg1| {
                let arg2 = argument("arg2")?;
                Ok(vec![user(Content::text(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                )))])
            }),
            PROMPT_WITH_RESOURCE => argument("resourceUri").map(|uri| {
                vec![
                    user(embedded(
                        &uri,
                        "text/plain",
                        "Embedded resource content for testing.".into(),
                    )),
                    user(Content::text("Please process the embedded resource above.")),
                ]
            }),
            PROMPT_WITH_IMAGE => Ok(vec![
                user(image()),
                user(Content::text("Please analyze the image above.")),
            ]),
            _ => return None,
        };
        Some(messages.map(|messages| GetPromptResult {
            description: format!("Conformance fixture {}", params.name),
            messages,
        }))
    }

    fn resources(&self) -> Vec<Resource> {
        vec![
            Resource {
                uri: STATIC_TEXT.into(),
                name: "static-text".into(),
                title: "Static Text Resource".into(),
                description: "Conformance fixture: a static text resource.".into(),
                mime_type: "text/plain",
            },
            Resource {
                uri: STATIC_BINARY.into(),
                name: "static-binary".into(),
                title: "Static Binary Resource".into(),
                description: "Conformance fixture: a static binary resource (an image).".into(),
                mime_type: "image/png",
            },
        ]
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: TEMPLATE,
            name: "template",
            title: "Resource Template",
            description: "Conformance fixture: a template with one variable.",
            mime_type: "application/json",
        }]
    }

    fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let contents =
            |mime_type: &str, text: Option<String>, blob: Option<&str>| ReadResourceResult {
                contents: vec![ResourceContents {
                    uri: uri.into(),
                    mime_type: mime_type.into(),
                    text,
                    blob: blob.map(Into::into),
                    meta: None,
                }],
            };
        match uri {
            STATIC_TEXT => Some(contents(
                "text/plain",
                Some("This is the content of the static text resource.".into()),
                None,
            )),
            STATIC_BINARY => Some(contents("image/png", None, Some(PNG))),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")?
                    .strip_suffix("/data")
                    .filter(|id| !id.is_empty() && !id.contains('/'))?;
                Some(contents(
                    "application/json",
                    Some(
                        json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                            .to_string(),
                    ),
                    None,
                ))
            }
        }
    }
}
