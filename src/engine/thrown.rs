//! What a thrown value says: its name, message and stack, read once here
//! for a run's error and for the rejections nobody handled.

use super::outcome::RunError;
use super::positions::SCRIPT_NAME;
use super::web::inspect;

/// The error `exception` describes; `message`, when V8 gives one, locates
/// a SyntaxError, which carries its position nowhere else.
pub(super) fn error_from<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    exception: v8::Local<'s, v8::Value>,
    message: Option<v8::Local<'s, v8::Message>>,
) -> RunError {
    let mut error = match v8::Local::<v8::Object>::try_from(exception) {
        Ok(object) if exception.is_native_error() => {
            let text = |scope: &mut v8::PinScope<'s, '_>, name: &str| -> Option<String> {
                let key = v8::String::new(scope, name)?;
                let value = object.get(scope, key.into())?;
                (!value.is_undefined()).then(|| value.to_rust_string_lossy(scope))
            };
            RunError {
                name: text(scope, "name").unwrap_or_else(|| "Error".to_owned()),
                message: text(scope, "message").unwrap_or_default(),
                stack: text(scope, "stack"),
            }
        }
        _ => RunError {
            name: "Uncaught".to_owned(),
            message: inspect(scope, exception),
            stack: None,
        },
    };
    // Compile errors carry their position only on the message object; one
    // thrown elsewhere (a package, the module loader) has it in its stack.
    if error.name == "SyntaxError"
        && let Some(message) = message
        && message
            .get_script_resource_name(scope)
            .is_some_and(|name| name.to_rust_string_lossy(scope) == SCRIPT_NAME)
        && let Some(line) = message.get_line_number(scope)
    {
        let column = message.get_start_column() + 1;
        error.message = format!("{} (line {line}, column {column})", error.message);
        error.stack = Some(format!(
            "SyntaxError: {}\n    at {SCRIPT_NAME}:{line}:{column}",
            error.message
        ));
    }
    error
}
