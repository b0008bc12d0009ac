//! Pages of a run's kept output and result that a model can read one at a
//! time and use as they are: a JSON array paged by whole elements (each
//! page a JSON array), an object by whole top-level entries (each page an
//! object), a string result and console output by whole lines, never
//! splitting a character (docs/tools.md, "The answer budget").

use serde_json::Value;

use crate::protocol::uri::RunText;

/// How a kept text is paged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A JSON array, by elements.
    Array,
    /// A JSON object, by top-level entries.
    Object,
    /// Text (console output, a string result, any other result), by lines.
    Lines,
}

impl Shape {
    /// What one page is, for a note ("each page …").
    pub fn each_page(self) -> &'static str {
        match self {
            Self::Array => "a JSON array of whole elements",
            Self::Object => "a JSON object of whole top-level entries",
            Self::Lines => "whole lines of text",
        }
    }

    /// The page's media type.
    pub fn mime_type(self) -> &'static str {
        match self {
            Self::Array | Self::Object => "application/json",
            Self::Lines => "text/plain",
        }
    }
}

/// A kept text cut into pages of about `size` bytes: each page holds whole
/// elements, entries or lines, and only an element, entry or line longer
/// than `size` makes a longer page on its own (a line longer than `size`
/// is split at character boundaries instead).
#[derive(Debug)]
pub struct Paged {
    shape: Shape,
    /// Each page's text.
    pages: Vec<String>,
    /// For arrays and objects: the index of each page's first item, and
    /// the number of items.
    firsts: Vec<usize>,
    items: usize,
}

/// One page, as `resources/read` serves it.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    /// Its text.
    pub text: String,
    /// How the whole was paged.
    pub shape: Shape,
    /// Its number, from 1.
    pub number: usize,
    /// The number of pages.
    pub pages: usize,
    /// For an array or object: its items `from..to` (from 0) of `of`.
    pub items: Option<(usize, usize, usize)>,
}

impl Paged {
    /// `text`, the whole `part` of a run, in pages of about `size` bytes.
    pub fn new(text: &str, part: RunText, size: usize) -> Self {
        let size = size.max(64);
        let parsed = match part {
            RunText::Result => serde_json::from_str::<Value>(text).ok(),
            RunText::Output => None,
        };
        match parsed {
            Some(Value::Array(items)) => {
                let count = items.len();
                let items = items.iter().map(|item| item.to_string());
                Self::grouped(Shape::Array, items, count, size, ('[', ']'))
            }
            Some(Value::Object(entries)) => {
                let count = entries.len();
                let items = entries
                    .iter()
                    .map(|(key, value)| format!("{}:{value}", Value::String(key.clone())));
                Self::grouped(Shape::Object, items, count, size, ('{', '}'))
            }
            Some(Value::String(string)) => Self::lines(&string, size),
            _ => Self::lines(text, size),
        }
    }

    fn grouped(
        shape: Shape,
        items: impl Iterator<Item = String>,
        count: usize,
        size: usize,
        (open, close): (char, char),
    ) -> Self {
        let mut pages = Vec::new();
        let mut firsts = Vec::new();
        let mut page = String::from(open);
        let mut first = 0;
        for (index, item) in items.enumerate() {
            if page.len() > 1 && page.len() + item.len() + 2 > size {
                page.push(close);
                pages.push(std::mem::replace(&mut page, String::from(open)));
                firsts.push(first);
                first = index;
            }
            if page.len() > 1 {
                page.push(',');
            }
            page.push_str(&item);
        }
        page.push(close);
        pages.push(page);
        firsts.push(first);
        Self {
            shape,
            pages,
            firsts,
            items: count,
        }
    }

    fn lines(text: &str, size: usize) -> Self {
        let mut pages = Vec::new();
        let mut page = String::new();
        for line in text.split_inclusive('\n') {
            let mut line = line;
            if !page.is_empty() && page.len() + line.len() > size {
                pages.push(std::mem::take(&mut page));
            }
            // A line longer than a page: whole pages of it, at characters.
            while line.len() > size {
                let cut = line
                    .floor_char_boundary(size)
                    .max(line.ceil_char_boundary(1));
                pages.push(line[..cut].to_owned());
                line = &line[cut..];
            }
            page.push_str(line);
        }
        if !page.is_empty() || pages.is_empty() {
            pages.push(page);
        }
        Self {
            shape: Shape::Lines,
            pages,
            firsts: Vec::new(),
            items: 0,
        }
    }

    /// How it is paged.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// How many pages there are (at least one).
    pub fn count(&self) -> usize {
        self.pages.len()
    }

    /// Bytes of its pages.
    pub fn bytes(&self) -> usize {
        self.pages.iter().map(String::len).sum()
    }

    /// Page `number` (from 1); `None` past the last.
    pub fn page(&self, number: usize) -> Option<Page> {
        let index = number.checked_sub(1).filter(|&i| i < self.pages.len())?;
        let pages = self.pages.len();
        let items = (self.shape != Shape::Lines).then(|| {
            let to = self.firsts.get(index + 1).copied().unwrap_or(self.items);
            (self.firsts[index], to, self.items)
        });
        Some(Page {
            text: self.pages[index].clone(),
            shape: self.shape,
            number,
            pages,
            items,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all(text: &str, part: RunText, size: usize) -> Vec<Page> {
        let paged = Paged::new(text, part, size);
        (1..=paged.count())
            .map(|n| paged.page(n).unwrap())
            .collect()
    }

    #[test]
    fn an_array_is_paged_by_whole_elements_each_page_parsing() {
        let rows: Vec<Value> = (0..5000).map(|i| json!({"i": i, "name": "row"})).collect();
        let text = serde_json::to_string(&rows).unwrap();
        let pages = all(&text, RunText::Result, 4096);
        assert!(pages.len() > 10);
        let mut seen = Vec::new();
        for page in &pages {
            let items: Vec<Value> = serde_json::from_str(&page.text).unwrap();
            let (from, to, of) = page.items.unwrap();
            assert_eq!((to - from, of), (items.len(), 5000));
            assert_eq!(from, seen.len());
            assert!(page.text.len() <= 4096, "{}", page.text.len());
            seen.extend(items);
        }
        assert_eq!(seen, rows);
        assert_eq!(pages[0].shape.mime_type(), "application/json");
    }

    #[test]
    fn an_object_is_paged_by_top_level_entries() {
        let object: serde_json::Map<String, Value> = (0..3000)
            .map(|i| (format!("key{i}"), json!([i, "v"])))
            .collect();
        let text = Value::Object(object.clone()).to_string();
        let mut whole = serde_json::Map::new();
        for page in all(&text, RunText::Result, 2048) {
            let part: serde_json::Map<String, Value> = serde_json::from_str(&page.text).unwrap();
            whole.extend(part);
        }
        assert_eq!(whole, object);
    }

    #[test]
    fn text_is_paged_by_lines_without_splitting_a_character() {
        let output: String = (0..20_000).map(|i| format!("ligne é {i}\n")).collect();
        let pages = all(&output, RunText::Output, 1000);
        assert!(
            pages
                .iter()
                .all(|p| p.text.ends_with('\n') && p.items.is_none())
        );
        assert_eq!(
            pages.iter().map(|p| p.text.as_str()).collect::<String>(),
            output
        );
        let long = "é".repeat(5000);
        let pages = all(&long, RunText::Output, 1001);
        assert_eq!(
            pages.iter().map(|p| p.text.as_str()).collect::<String>(),
            long
        );
        assert!(pages.iter().all(|p| p.text.len() <= 1001));
    }

    #[test]
    fn a_string_result_is_paged_as_its_text() {
        let string = format!("{}THE END", "a line\n".repeat(100_000));
        let text = Value::String(string.clone()).to_string();
        let pages = all(&text, RunText::Result, 32 * 1024);
        assert_eq!(
            pages.iter().map(|p| p.text.as_str()).collect::<String>(),
            string
        );
        assert!(pages.last().unwrap().text.ends_with("THE END"));
        assert_eq!(pages[0].shape, Shape::Lines);
    }

    #[test]
    fn past_the_last_page_there_is_none() {
        let paged = Paged::new("[1,2,3]", RunText::Result, 4096);
        assert_eq!(paged.count(), 1);
        assert!(paged.page(2).is_none());
        assert!(paged.page(0).is_none());
        assert_eq!(Paged::new("", RunText::Output, 4096).count(), 1);
    }
}
