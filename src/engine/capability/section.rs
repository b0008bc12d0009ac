//! Bytes carried beside a worker frame's JSON rather than inside it.

use std::cell::RefCell;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that travel beside a frame's JSON rather than inside it (a heap's
/// payload, files, `display()` bytes): in JSON a section is its index in
/// the frame's table, which [`write_sections`] and [`read_sections`] fill
/// around one serialisation, as ipc-channel carries shared memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Section(pub Bytes);

impl From<Bytes> for Section {
    fn from(bytes: Bytes) -> Self {
        Self(bytes)
    }
}

impl From<Vec<u8>> for Section {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Bytes::from(bytes))
    }
}

impl std::ops::Deref for Section {
    type Target = Bytes;
    fn deref(&self) -> &Bytes {
        &self.0
    }
}

thread_local! {
    /// The table of the frame being written or read on this thread.
    static TABLE: RefCell<Option<Vec<Bytes>>> = const { RefCell::new(None) };
}

/// Serialises with `write`, collecting every [`Section`] it meets into the
/// returned table, in index order.
pub(crate) fn write_sections<T, E>(
    write: impl FnOnce() -> Result<T, E>,
) -> (Result<T, E>, Vec<Bytes>) {
    let outer = TABLE.with(|t| t.borrow_mut().replace(Vec::new()));
    let written = write();
    let table = TABLE.with(|t| std::mem::replace(&mut *t.borrow_mut(), outer));
    (written, table.unwrap_or_default())
}

/// Deserialises with `read`, each [`Section`] taken from `table` by index.
pub(crate) fn read_sections<T, E>(
    table: Vec<Bytes>,
    read: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let outer = TABLE.with(|t| t.borrow_mut().replace(table));
    let read = read();
    TABLE.with(|t| *t.borrow_mut() = outer);
    read
}

impl Serialize for Section {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let index = TABLE.with(|t| {
            t.borrow_mut().as_mut().map(|table| {
                table.push(self.0.clone());
                table.len() - 1
            })
        });
        match index {
            Some(index) => serializer.serialize_u64(index as u64),
            None => Err(serde::ser::Error::custom(
                "a byte section outside a worker frame",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Section {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let index = u64::deserialize(deserializer)? as usize;
        TABLE
            .with(|t| {
                t.borrow()
                    .as_ref()
                    .and_then(|table| table.get(index).cloned())
            })
            .map(Section)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("byte section {index} is not in the frame"))
            })
    }
}

/// An `Option<Bytes>` field carried as an optional [`Section`].
pub(crate) mod section_opt {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::engine::capability::section::Section;

    pub(crate) fn serialize<S: Serializer>(bytes: &Option<Bytes>, s: S) -> Result<S::Ok, S::Error> {
        bytes.clone().map(Section).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
        Ok(Option::<Section>::deserialize(d)?.map(|section| section.0))
    }
}
