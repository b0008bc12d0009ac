//! A package hint on a run's error: `X.y is not a function` where `X` is
//! what a package gave the run names the package and what it does have.

use crate::engine::capability::outcome::RunError;

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
