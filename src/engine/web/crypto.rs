//! Natives of `crypto`: random values and UUIDs, and the digests and HMAC
//! of `crypto.subtle`, by RustCrypto's `sha1`, `sha2` and `hmac`.

use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::Digest as _;
use v8::MapFnTo;

use crate::engine::capability::family_capability;
use crate::engine::layer::bytes::{array_buffer, bytes_of, string, write_into_view};
use crate::engine::layer::registry::throw_type_error;
use crate::engine::layer::registry::{Family, Natives};

family_capability!(
    /// `crypto` and its interfaces (`crypto.js`).
    WebCrypto,
    Family {
        name: "crypto",
        source: include_str!("crypto.js"),
        deps: &["encoding", "events"],
        natives,
        globals: &["crypto", "Crypto", "CryptoKey", "SubtleCrypto"],
        version: 1,
    }
);

pub(crate) fn natives() -> Natives {
    vec![
        ("randomFill", random_fill.map_fn_to()),
        ("randomUUID", random_uuid.map_fn_to()),
        ("digest", digest.map_fn_to()),
        ("hmacSign", hmac_sign.map_fn_to()),
        ("hmacVerify", hmac_verify.map_fn_to()),
    ]
}

/// Fills an integer typed array from the OS's generator (the JavaScript
/// side checks the type and the 65,536-byte quota).
fn random_fill<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(args.get(0)) else {
        throw_type_error(
            scope,
            "getRandomValues: the argument must be an integer typed array",
        );
        return;
    };
    let mut bytes = vec![0u8; view.byte_length()];
    rand::rng().fill_bytes(&mut bytes);
    write_into_view(scope, view, &bytes);
}

fn random_uuid<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    if let Some(text) = string(scope, &uuid::Uuid::new_v4().to_string()) {
        rv.set(text.into());
    }
}

/// The hash names Web Crypto uses, already normalised by the caller.
fn hash_bytes(name: &str, data: &[u8]) -> Option<Vec<u8>> {
    Some(match name {
        "SHA-1" => sha1::Sha1::digest(data).to_vec(),
        "SHA-256" => sha2::Sha256::digest(data).to_vec(),
        "SHA-384" => sha2::Sha384::digest(data).to_vec(),
        "SHA-512" => sha2::Sha512::digest(data).to_vec(),
        // Not a Web Crypto hash (subtle.digest refuses the name before it
        // gets here): node:crypto's createHash("md5").
        "MD5" => <md5::Md5 as md5::Digest>::digest(data).to_vec(),
        _ => return None,
    })
}

fn digest<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let Some(data) = bytes_of(args.get(1)) else {
        throw_type_error(scope, "digest: the data must be a BufferSource");
        return;
    };
    let Some(hash) = hash_bytes(&name, &data) else {
        throw_type_error(scope, &format!("digest: unsupported hash {name}"));
        return;
    };
    if let Some(buffer) = array_buffer(scope, &hash) {
        rv.set(buffer.into());
    }
}

/// HMAC under the named hash, or `None` for a hash that is not one.
fn mac(name: &str, key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
            .expect("HMAC takes keys of any length");
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }
    Some(match name {
        "SHA-1" => run::<Hmac<sha1::Sha1>>(key, data),
        "SHA-256" => run::<Hmac<sha2::Sha256>>(key, data),
        "SHA-384" => run::<Hmac<sha2::Sha384>>(key, data),
        "SHA-512" => run::<Hmac<sha2::Sha512>>(key, data),
        _ => return None,
    })
}

/// `hmacSign(hash, key, data)` → the signature as an `ArrayBuffer`.
fn hmac_sign<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let (Some(key), Some(data)) = (bytes_of(args.get(1)), bytes_of(args.get(2))) else {
        throw_type_error(scope, "sign: the key and the data must be BufferSources");
        return;
    };
    match mac(&name, &key, &data) {
        Some(signature) => {
            if let Some(buffer) = array_buffer(scope, &signature) {
                rv.set(buffer.into());
            }
        }
        None => throw_type_error(scope, &format!("sign: unsupported hash {name}")),
    }
}

/// `hmacVerify(hash, key, data, signature)`, compared in constant time.
fn hmac_verify<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let (Some(key), Some(data), Some(signature)) = (
        bytes_of(args.get(1)),
        bytes_of(args.get(2)),
        bytes_of(args.get(3)),
    ) else {
        throw_type_error(
            scope,
            "verify: the key, data and signature must be BufferSources",
        );
        return;
    };
    fn check<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8], signature: &[u8]) -> bool {
        let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
            .expect("HMAC takes keys of any length");
        mac.update(data);
        mac.verify_slice(signature).is_ok()
    }
    let valid = match name.as_str() {
        "SHA-1" => check::<Hmac<sha1::Sha1>>(&key, &data, &signature),
        "SHA-256" => check::<Hmac<sha2::Sha256>>(&key, &data, &signature),
        "SHA-384" => check::<Hmac<sha2::Sha384>>(&key, &data, &signature),
        "SHA-512" => check::<Hmac<sha2::Sha512>>(&key, &data, &signature),
        _ => {
            throw_type_error(scope, &format!("verify: unsupported hash {name}"));
            return;
        }
    };
    rv.set_bool(valid);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_macs_match_known_vectors() {
        let hex = |b: Vec<u8>| hex::encode(b);
        assert_eq!(
            hex(hash_bytes("SHA-256", b"abc").unwrap()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(hash_bytes("SHA-1", b"abc").unwrap()),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        // RFC 4231, test case 2.
        assert_eq!(
            hex(mac("SHA-256", b"Jefe", b"what do ya want for nothing?").unwrap()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // node:crypto's createHash("md5"); subtle.digest refuses the name
        // before it reaches the host.
        assert_eq!(
            hex(hash_bytes("MD5", b"").unwrap()),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        assert!(hash_bytes("MD4", b"").is_none());
    }
}
