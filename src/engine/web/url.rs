//! Natives of `URL` and `URLSearchParams`. WHATWG parsing and setters are
//! ada's (the `ada-url` crate), the parser Node uses, so a URL parses here
//! as it does in Node 22; `application/x-www-form-urlencoded` is the `url`
//! crate's.

use ada_url::Url;
use v8::MapFnTo;

use crate::engine::capability::family_capability;
use crate::engine::layer::bytes::{flat_pairs, string, utf16_held};
use crate::engine::layer::registry::{Family, Natives};
use crate::engine::services::memory::Held;

family_capability!(
    /// `URL` and `URLSearchParams` (`url.js`).
    WebUrl,
    Family {
        name: "url",
        source: include_str!("url.js"),
        deps: &[],
        natives,
        globals: &["URL", "URLSearchParams"],
        version: 1,
    }
);

pub(crate) fn natives() -> Natives {
    vec![
        ("parse", parse.map_fn_to()),
        ("set", set.map_fn_to()),
        ("formParse", form_parse.map_fn_to()),
        ("formSerialize", form_serialize.map_fn_to()),
    ]
}

/// A string argument as a USV string: lone surrogates become U+FFFD, as
/// Web IDL converts them. The host's copies count against the run's
/// budget while the native works; `None` (a `RangeError` thrown) when they
/// do not fit.
fn usv(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Option<(String, Option<Held>)> {
    let (units, held) = utf16_held(scope, value, "URL")?;
    Some((String::from_utf16_lossy(&units), held))
}

/// The order of the components array the JavaScript side indexes.
fn components<'s>(scope: &mut v8::PinScope<'s, '_>, url: &Url) -> v8::Local<'s, v8::Value> {
    let origin = url.origin();
    let parts = [
        url.href(),
        &origin,
        url.protocol(),
        url.username(),
        url.password(),
        url.host(),
        url.hostname(),
        url.port(),
        url.pathname(),
        url.search(),
        url.hash(),
    ];
    let values: Vec<v8::Local<v8::Value>> = parts
        .into_iter()
        .map(|part| match string(scope, part) {
            Some(s) => s.into(),
            None => v8::undefined(scope).into(),
        })
        .collect();
    v8::Array::new_with_elements(scope, &values).into()
}

/// `parse(input, base?)` → components, or `undefined` on failure.
fn parse<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some((input, _held)) = usv(scope, args.get(0)) else {
        return;
    };
    let parsed = if args.get(1).is_undefined() {
        Url::parse(input.as_str(), None)
    } else {
        let Some((base, _held)) = usv(scope, args.get(1)) else {
            return;
        };
        Url::parse(input.as_str(), Some(&base))
    };
    if let Ok(url) = parsed {
        rv.set(components(scope, &url));
    }
}

/// `set(href, index, value)` → components after the setter for that
/// component (the components array's index), or `undefined` when `href`
/// is set to something that does not parse. Other setters ignore values
/// they cannot apply, as the URL Standard's do.
fn set<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some((href, _held)) = usv(scope, args.get(0)) else {
        return;
    };
    let Ok(mut url) = Url::parse(href.as_str(), None) else {
        return;
    };
    let index = args.get(1).uint32_value(scope).unwrap_or(u32::MAX);
    let Some((value, _held)) = usv(scope, args.get(2)) else {
        return;
    };
    // As Node hands each setter's value to ada: a value a setter cannot
    // apply leaves the URL as it was (the URL Standard's setters), and
    // only `href` throws.
    let value = value.as_str();
    let _ = match index {
        0 => return set_href(scope, &mut rv, url, value),
        2 => url.set_protocol(value),
        3 => url.set_username(Some(value)),
        4 => url.set_password(Some(value)),
        5 => url.set_host(Some(value)),
        6 => url.set_hostname(Some(value)),
        7 => url.set_port(Some(value)),
        8 => url.set_pathname(Some(value)),
        9 => {
            url.set_search(Some(value));
            Ok(())
        }
        10 => {
            url.set_hash(Some(value));
            Ok(())
        }
        _ => return,
    };
    rv.set(components(scope, &url));
}

/// `href`'s setter, the one that fails the whole assignment.
fn set_href<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    rv: &mut v8::ReturnValue<'s, v8::Value>,
    mut url: Url,
    value: &str,
) {
    if url.set_href(value).is_ok() {
        rv.set(components(scope, &url));
    }
}
/// `formParse(query)` → `[name, value, name, value, …]`.
fn form_parse<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some((query, _held)) = usv(scope, args.get(0)) else {
        return;
    };
    let mut flat: Vec<v8::Local<v8::Value>> = Vec::new();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        for part in [name, value] {
            match string(scope, &part) {
                Some(s) => flat.push(s.into()),
                None => return,
            }
        }
    }
    rv.set(v8::Array::new_with_elements(scope, &flat).into());
}

/// `formSerialize([name, value, …])` → the urlencoded string.
fn form_serialize<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(flat) = v8::Local::<v8::Array>::try_from(args.get(0)) else {
        return;
    };
    let Some(pairs) = flat_pairs(scope, flat) else {
        return;
    };
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    // Every pair's copies are held until the text is made: it grows with
    // them (percent-encoding triples a byte at most, within the hold).
    let mut held = Vec::new();
    for (name, value) in pairs {
        let Some((name, on_name)) = usv(scope, name) else {
            return;
        };
        let Some((value, on_value)) = usv(scope, value) else {
            return;
        };
        held.extend([on_name, on_value]);
        serializer.append_pair(&name, &value);
    }
    if let Some(text) = string(scope, &serializer.finish()) {
        rv.set(text.into());
    }
}
