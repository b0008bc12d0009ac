//! `structuredClone` by V8's own ValueSerializer and ValueDeserializer.

use v8::{MapFnTo, ValueDeserializerHelper as _, ValueSerializerHelper as _};

use crate::engine::capability::family_capability;
use crate::engine::layer::bytes::{array_buffer, bytes_of};
use crate::engine::layer::registry::{Family, Natives};

family_capability!(
    /// `structuredClone` (`clone.js`).
    StructuredClone,
    Family {
        name: "clone",
        source: include_str!("clone.js"),
        deps: &["events"],
        natives,
        globals: &["structuredClone"],
        version: 1,
    }
);

pub(crate) fn natives() -> Natives {
    vec![("clone", clone.map_fn_to())]
}

/// Throws V8's clone errors as `DOMException` `DataCloneError`s, made by
/// the constructor the JavaScript side passes in.
struct Serializer {
    dom_exception: v8::Global<v8::Function>,
}

impl Serializer {
    fn throw<'s>(&self, scope: &mut v8::PinScope<'s, '_>, message: v8::Local<'s, v8::String>) {
        let constructor = v8::Local::new(scope, &self.dom_exception);
        let name = v8::String::new(scope, "DataCloneError").expect("short name");
        if let Some(error) = constructor.new_instance(scope, &[message.into(), name.into()]) {
            scope.throw_exception(error.into());
        }
    }
}

impl v8::ValueSerializerImpl for Serializer {
    fn throw_data_clone_error<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        message: v8::Local<'s, v8::String>,
    ) {
        self.throw(scope, message);
    }

    fn write_host_object<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        _object: v8::Local<'s, v8::Object>,
        _serializer: &dyn v8::ValueSerializerHelper,
    ) -> Option<bool> {
        let message = v8::String::new(scope, "a host object cannot be cloned").expect("short");
        self.throw(scope, message);
        None
    }
}

struct Deserializer;

impl v8::ValueDeserializerImpl for Deserializer {}

/// `clone(value, DOMException, transfer)`: a deep copy of `value`; the
/// `ArrayBuffer`s in `transfer` move into the copy and are detached here.
fn clone<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(dom_exception) = v8::Local::<v8::Function>::try_from(args.get(1)) else {
        return;
    };
    let transfer: Vec<v8::Local<v8::ArrayBuffer>> =
        match v8::Local::<v8::Array>::try_from(args.get(2)) {
            Ok(list) => (0..list.length())
                .filter_map(|i| list.get_index(scope, i))
                .filter_map(|v| v8::Local::<v8::ArrayBuffer>::try_from(v).ok())
                .collect(),
            Err(_) => Vec::new(),
        };
    let context = scope.get_current_context();
    let serializer = v8::ValueSerializer::new(
        scope,
        Box::new(Serializer {
            dom_exception: v8::Global::new(scope, dom_exception),
        }),
    );
    for (id, buffer) in transfer.iter().enumerate() {
        serializer.transfer_array_buffer(id as u32, *buffer);
    }
    serializer.write_header();
    if serializer.write_value(context, args.get(0)) != Some(true) {
        return;
    }
    let data = serializer.release();
    let moved: Vec<Vec<u8>> = transfer
        .iter()
        .map(|buffer| {
            let bytes = bytes_of((*buffer).into()).unwrap_or_default();
            buffer.detach(None);
            bytes
        })
        .collect();
    let deserializer = v8::ValueDeserializer::new(scope, Box::new(Deserializer), &data);
    for (id, bytes) in moved.iter().enumerate() {
        let Some(buffer) = array_buffer(scope, bytes) else {
            return;
        };
        deserializer.transfer_array_buffer(id as u32, buffer);
    }
    if deserializer.read_header(context) != Some(true) {
        return;
    }
    if let Some(copy) = deserializer.read_value(context) {
        rv.set(copy);
    }
}
