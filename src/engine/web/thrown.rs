//! What a thrown value says: its name, message and stack, read once here
//! for a run's error and for the rejections nobody handled.

use crate::engine::capability::outcome::RunError;
use crate::engine::capability::positions::SCRIPT_NAME;
use crate::engine::web::inspect;

/// The error `exception` describes; `message`, when V8 gives one, locates
/// a SyntaxError, which carries its position nowhere else.
pub(crate) fn error_from<'s>(
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
        _ => {
            // A thrown string or object has no stack; V8's message still
            // knows where the `throw` was.
            let value = inspect(scope, exception);
            let at = message.and_then(|message| in_run_script(scope, message));
            match at {
                Some((line, column)) => RunError {
                    name: "Uncaught".to_owned(),
                    message: format!(
                        "{value} (line {line}, column {column}): the code threw a value that is \
                         not an Error; throw new Error(…) to get a stack"
                    ),
                    stack: Some(format!(
                        "Uncaught {value}\n    at {SCRIPT_NAME}:{line}:{column}"
                    )),
                },
                None => RunError {
                    name: "Uncaught".to_owned(),
                    message: value,
                    stack: None,
                },
            }
        }
    };
    // Compile errors carry their position only on the message object; one
    // thrown elsewhere (a package, the module loader) has it in its stack.
    if error.name == "SyntaxError"
        && let Some((line, column)) = message.and_then(|message| in_run_script(scope, message))
    {
        error.message = format!("{} (line {line}, column {column})", error.message);
        error.stack = Some(format!(
            "SyntaxError: {}\n    at {SCRIPT_NAME}:{line}:{column}",
            error.message
        ));
    }
    error
}

/// Line and column (from 1) that `message` points at, when that is in the
/// run's own script (not a package's, not the module loader's).
fn in_run_script<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    message: v8::Local<'s, v8::Message>,
) -> Option<(usize, usize)> {
    let name = message.get_script_resource_name(scope)?;
    if name.to_rust_string_lossy(scope) != SCRIPT_NAME {
        return None;
    }
    Some((
        message.get_line_number(scope)?,
        message.get_start_column() + 1,
    ))
}
