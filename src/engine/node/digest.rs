//! Hashes that run as data comes, for node:crypto's `createHash`: a run
//! hashes a stream of any size (a `/work` file read back in chunks) while
//! holding none of it. The state lives in a slot for one run: a `Hash`
//! carried in a heap to the next run cannot be continued (no snapshot
//! holds a host's hasher), and says so.

use std::collections::HashMap;

use sha2::digest::DynDigest;
use v8::MapFnTo;

use crate::engine::capability::slot_capability;
use crate::engine::layer::bytes::{array_buffer, bytes_of};
use crate::engine::layer::registry::{Family, Natives, throw_type_error};

/// The run's hashes in progress, by number.
#[derive(Default)]
pub(crate) struct Digests {
    next: u32,
    running: HashMap<u32, Hasher>,
}

/// A hash in progress: RustCrypto's, `md5` on a newer `digest` than the rest.
enum Hasher {
    Sha(Box<dyn DynDigest>),
    Md5(md5::Md5),
}

impl Hasher {
    fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha(hasher) => hasher.update(data),
            Self::Md5(hasher) => md5::Digest::update(hasher, data),
        }
    }

    fn finalize(self) -> Vec<u8> {
        match self {
            Self::Sha(hasher) => hasher.finalize().to_vec(),
            Self::Md5(hasher) => md5::Digest::finalize(hasher).to_vec(),
        }
    }
}

slot_capability!(
    Digests,
    Some(&Family {
        name: "digest",
        source: include_str!("digest.js"),
        deps: &[],
        natives,
        globals: &[],
        version: 1,
    })
);

fn natives() -> Natives {
    vec![
        ("start", start.map_fn_to()),
        ("update", update.map_fn_to()),
        ("finish", finish.map_fn_to()),
    ]
}

/// A hasher by the name `createHash` normalised it to.
fn hasher(name: &str) -> Option<Hasher> {
    Some(Hasher::Sha(match name {
        "SHA-1" => Box::new(sha1::Sha1::default()),
        "SHA-256" => Box::new(sha2::Sha256::default()),
        "SHA-384" => Box::new(sha2::Sha384::default()),
        "SHA-512" => Box::new(sha2::Sha512::default()),
        "MD5" => return Some(Hasher::Md5(md5::Md5::default())),
        _ => return None,
    }))
}

const EARLIER_RUN: &str = "this Hash was made in an earlier run, and a heap cannot keep a hash \
    in progress: make the hash, update it and call digest() in one run";

/// `start(name)`: the number of a new hash.
fn start<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let Some(hasher) = hasher(&name) else {
        throw_type_error(scope, &format!("digest: unsupported hash {name}"));
        return;
    };
    let Some(digests) = scope.get_slot_mut::<Digests>() else {
        throw_type_error(scope, "hashes are not available outside a run");
        return;
    };
    digests.next += 1;
    let id = digests.next;
    digests.running.insert(id, hasher);
    rv.set_uint32(id);
}

/// `update(id, bytes)`.
fn update<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = args.get(0).uint32_value(scope).unwrap_or(0);
    let Some(data) = bytes_of(args.get(1)) else {
        throw_type_error(scope, "digest: the data must be bytes");
        return;
    };
    match scope
        .get_slot_mut::<Digests>()
        .and_then(|d| d.running.get_mut(&id))
    {
        Some(hasher) => hasher.update(&data),
        None => throw_type_error(scope, EARLIER_RUN),
    }
}

/// `finish(id)`: the digest, as an `ArrayBuffer`; the hash is done.
fn finish<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = args.get(0).uint32_value(scope).unwrap_or(0);
    let Some(hasher) = scope
        .get_slot_mut::<Digests>()
        .and_then(|d| d.running.remove(&id))
    else {
        throw_type_error(scope, EARLIER_RUN);
        return;
    };
    let out = hasher.finalize();
    if let Some(buffer) = array_buffer(scope, &out) {
        rv.set(buffer.into());
    }
}
