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

/// A text that crosses a worker frame as a [`Section`] when long ([`text`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Text(#[serde(with = "text")] pub String);

/// A `String` field that travels as a [`Section`] inside a worker frame
/// when it is long (console output, a result: up to the record's bound,
/// where JSON escaping could grow a header several times over), and as a
/// JSON string everywhere else.
pub(crate) mod text {
    use serde::de::{self, MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    use crate::engine::capability::section::{Section, TABLE};

    /// Shorter texts stay inline: a section costs a table entry.
    const INLINE_MAX: usize = 4096;
    const FIELD: &str = "section";

    pub(crate) fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        let in_frame = TABLE.with(|t| t.borrow().is_some());
        if !in_frame || text.len() <= INLINE_MAX {
            return s.serialize_str(text);
        }
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(
            FIELD,
            &Section(bytes::Bytes::copy_from_slice(text.as_bytes())),
        )?;
        map.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        d.deserialize_any(TextVisitor)
    }

    struct TextVisitor;

    impl<'de> Visitor<'de> for TextVisitor {
        type Value = String;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string or a byte section")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
            Ok(text.to_owned())
        }

        fn visit_string<E: de::Error>(self, text: String) -> Result<String, E> {
            Ok(text)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
            let mut section = None;
            while let Some(key) = map.next_key::<String>()? {
                if key == FIELD {
                    section = Some(map.next_value::<Section>()?);
                } else {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
            let section = section.ok_or_else(|| de::Error::missing_field(FIELD))?;
            String::from_utf8(section.0.to_vec())
                .map_err(|_| de::Error::custom("a text section is not UTF-8"))
        }
    }

    /// An `Option<String>` field carried as [`text`](self).
    pub(crate) mod opt {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        #[derive(Deserialize)]
        #[serde(transparent)]
        struct Text(#[serde(with = "crate::engine::capability::section::text")] String);

        struct Borrowed<'a>(&'a str);

        impl Serialize for Borrowed<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                crate::engine::capability::section::text::serialize(self.0, s)
            }
        }

        pub(crate) fn serialize<S: Serializer>(
            text: &Option<String>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match text {
                Some(text) => s.serialize_some(&Borrowed(text)),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<String>, D::Error> {
            Ok(Option::<Text>::deserialize(d)?.map(|t| t.0))
        }
    }
}
