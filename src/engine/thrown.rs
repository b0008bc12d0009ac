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

/// For `X.y is not a function` (or `a constructor`) where `X` is what a
/// package gave the run: the message says which package and what it does
/// have, so the model fixes the import instead of blaming its own code.
pub(super) fn add_package_hint<'s>(scope: &mut v8::PinScope<'s, '_>, error: &mut RunError) {
    if error.name != "TypeError" || scope.is_execution_terminating() {
        return;
    }
    let Some((binding, member)) = missing_member(&error.message) else {
        return;
    };
    // Only when the run's modules family is loaded: no package, no hint.
    let Some(modules) = crate::engine::layer::loaded(scope, "modules") else {
        return;
    };
    v8::tc_scope!(let tc, scope);
    let hint = (|| {
        let key = v8::String::new(tc, "packageOf")?;
        let package_of = v8::Local::<v8::Function>::try_from(modules.get(tc, key.into())?).ok()?;
        let source = v8::String::new(tc, binding)?;
        let value = v8::Script::compile(tc, source, None)?.run(tc)?;
        let member = v8::String::new(tc, member)?;
        let undefined = v8::undefined(tc).into();
        let hint = package_of.call(tc, undefined, &[value, member.into()])?;
        hint.is_string().then(|| hint.to_rust_string_lossy(tc))
    })();
    if let Some(hint) = hint {
        error.message = format!("{} ({hint})", error.message);
    }
}

/// `("R", "Readable")` of `R.Readable is not a constructor`.
fn missing_member(message: &str) -> Option<(&str, &str)> {
    let access = message
        .strip_suffix(" is not a function")
        .or_else(|| message.strip_suffix(" is not a constructor"))?;
    let (binding, member) = access.split_once('.')?;
    let identifier = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    (identifier(binding) && identifier(member)).then_some((binding, member))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_member_is_read_from_the_message() {
        use super::missing_member;
        assert_eq!(
            missing_member("R.Readable is not a constructor"),
            Some(("R", "Readable"))
        );
        assert_eq!(
            missing_member("_.chunk is not a function"),
            Some(("_", "chunk"))
        );
        assert_eq!(missing_member("a.b.c is not a function"), None);
        assert_eq!(missing_member("f is not a function"), None);
    }
}
