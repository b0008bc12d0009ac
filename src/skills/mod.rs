//! Agent Skills this server serves (the Skills extension, SEP-2640): its
//! own, built into the binary, and an operator's, read from a directory at
//! start. Each skill is a directory of files addressed as
//! `skill://<skill path>/<file path>`; the catalog keeps every file's bytes
//! with their digest, so a manifest always describes exactly the bytes a
//! read returns.

mod builtin;
mod dir;
mod frontmatter;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::Digest;

use crate::protocol::mcp::{Resource, ResourceContents};
use crate::protocol::skills::{DIRECTORY_MIME_TYPE, SCHEME, SkillEntry, SkillResource};
use crate::protocol::uri;

use crate::units::MIB_U64;
pub use builtin::{BUILTIN_PREFIX, Builtins};
pub use dir::{Rejected, load_dir};

/// Most files one skill may have (the extension's limit).
pub const MAX_FILES: usize = 512;

/// Most bytes one skill's files may hold together (the extension's limit).
pub const MAX_BYTES: u64 = 16 * MIB_U64;

/// A skill's `SKILL.md`.
pub const SKILL_MD: &str = "SKILL.md";

/// One file of a skill, with what a manifest says of it.
#[derive(Debug, Clone)]
struct SkillFile {
    /// Relative to the skill's directory, `/`-separated.
    path: String,
    /// Its resource URI, made once from the skill's path and its own.
    uri: String,
    bytes: Cow<'static, [u8]>,
    /// `sha256:` and the hex digest of `bytes`.
    digest: String,
    mime_type: &'static str,
}

impl SkillFile {
    /// The file at `path` in the skill at `skill_path`.
    fn new(skill_path: &str, path: String, bytes: Cow<'static, [u8]>) -> Self {
        let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes)));
        let mime_type = mime_type(&path, &bytes);
        let segments: Vec<String> = format!("{skill_path}/{path}")
            .split('/')
            .map(uri::segment)
            .collect();
        Self {
            uri: format!("{SCHEME}{}", segments.join("/")),
            path,
            bytes,
            digest,
            mime_type,
        }
    }
}

/// One skill, checked: its `SKILL.md` has valid frontmatter whose name is
/// its directory's, and it is within the limits.
#[derive(Debug, Clone)]
pub struct Skill {
    name: String,
    description: String,
    frontmatter: Map<String, Value>,
    /// `SKILL.md` first, then by path.
    files: Vec<SkillFile>,
}

impl Skill {
    /// The skill at `path` (its last segment must be the name its
    /// `SKILL.md` gives) made of `files` (paths relative to its directory).
    pub fn new(path: &str, files: Vec<(String, Cow<'static, [u8]>)>) -> Result<Self, String> {
        let directory = path.rsplit('/').next().unwrap_or(path);
        if files.len() > MAX_FILES {
            return Err(format!(
                "it has {} files, more than the {MAX_FILES} a skill may have",
                files.len()
            ));
        }
        let total: u64 = files.iter().map(|(_, bytes)| bytes.len() as u64).sum();
        if total > MAX_BYTES {
            return Err(format!(
                "its files hold {total} bytes, more than the {MAX_BYTES} (16 MiB) a skill may hold"
            ));
        }
        let mut files: Vec<SkillFile> = files
            .into_iter()
            .map(|(file, bytes)| SkillFile::new(path, file, bytes))
            .collect();
        files.sort_by(|a, b| (a.path != SKILL_MD, &a.path).cmp(&(b.path != SKILL_MD, &b.path)));
        let Some(skill_md) = files.first().filter(|file| file.path == SKILL_MD) else {
            return Err(format!("it has no {SKILL_MD}"));
        };
        let text = std::str::from_utf8(&skill_md.bytes)
            .map_err(|_| format!("its {SKILL_MD} is not UTF-8 text"))?;
        let parsed = frontmatter::parse(text)?;
        if parsed.name != directory {
            return Err(format!(
                "its {SKILL_MD} names it {:?}, but a skill's name must be its directory's, {directory:?}",
                parsed.name
            ));
        }
        Ok(Self {
            name: parsed.name,
            description: parsed.description,
            frontmatter: parsed.fields,
            files,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URI of its `SKILL.md`, which is always its first file.
    pub fn uri(&self) -> &str {
        &self.files[0].uri
    }

    /// Its entry, as `skills/list` and `skills/get` give it.
    pub fn entry(&self) -> SkillEntry {
        SkillEntry {
            uri: self.uri().to_owned(),
            frontmatter: self.frontmatter.clone(),
            resources: self
                .files
                .iter()
                .map(|file| SkillResource {
                    uri: file.uri.clone(),
                    digest: file.digest.clone(),
                    size: file.bytes.len() as u64,
                })
                .collect(),
        }
    }
}

/// Where a file is: its skill and its place among the skill's files.
#[derive(Debug, Clone, Copy)]
struct Located {
    skill: usize,
    file: usize,
}

/// The skills a server serves, fixed for its life.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    /// Every file's URI.
    files: HashMap<String, Located>,
    /// Every directory's URI and its children's (URI, whether a directory).
    directories: BTreeMap<String, BTreeSet<(String, bool)>>,
}

impl Skills {
    /// A catalog of `skills`, in that order.
    pub fn new(skills: Vec<Skill>) -> Self {
        let mut files = HashMap::new();
        let mut directories: BTreeMap<String, BTreeSet<(String, bool)>> = BTreeMap::new();
        for (index, skill) in skills.iter().enumerate() {
            for (file, entry) in skill.files.iter().enumerate() {
                let after = &entry.uri[SCHEME.len()..];
                let segments: Vec<&str> = after.split('/').collect();
                for depth in 1..segments.len() {
                    let parent = format!("{SCHEME}{}", segments[..depth].join("/"));
                    let child = format!("{SCHEME}{}", segments[..=depth].join("/"));
                    let is_directory = depth + 1 < segments.len();
                    directories
                        .entry(parent)
                        .or_default()
                        .insert((child, is_directory));
                }
                files.insert(entry.uri.clone(), Located { skill: index, file });
            }
        }
        Self {
            skills,
            files,
            directories,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Every skill, in order.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn get(&self, uri: &str) -> Option<&Skill> {
        let located = self.files.get(uri)?;
        let skill = &self.skills[located.skill];
        (located.file == 0).then_some(skill)
    }

    /// Each skill's `SKILL.md` as a resource, for `resources/list`.
    pub fn resources(&self) -> Vec<Resource> {
        self.skills
            .iter()
            .map(|skill| Resource {
                uri: skill.uri().to_owned(),
                name: skill.name.clone(),
                title: format!("Skill: {}", skill.name),
                description: skill.description.clone(),
                mime_type: "text/markdown",
            })
            .collect()
    }

    /// The file at `uri`, as `resources/read` gives it: text where its
    /// bytes are UTF-8 (the same bytes), else base64.
    pub fn read(&self, uri: &str) -> Option<ResourceContents> {
        let located = self.files.get(uri)?;
        let file = &self.skills[located.skill].files[located.file];
        let (text, blob) = match std::str::from_utf8(&file.bytes) {
            Ok(text) => (Some(text.to_owned()), None),
            Err(_) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(&file.bytes)),
            ),
        };
        Some(ResourceContents {
            uri: uri.to_owned(),
            mime_type: file.mime_type.to_owned(),
            text,
            blob,
            meta: None,
        })
    }

    /// The direct children of the directory at `uri`, or `None` when no
    /// directory is there.
    pub fn directory(&self, uri: &str) -> Option<Vec<Resource>> {
        let children = self.directories.get(uri.trim_end_matches('/'))?;
        Some(
            children
                .iter()
                .map(|(child, is_directory)| {
                    let name = child.rsplit('/').next().unwrap_or(child);
                    let name = percent_encoding::percent_decode_str(name)
                        .decode_utf8_lossy()
                        .into_owned();
                    let (mime_type, description) = if *is_directory {
                        (
                            DIRECTORY_MIME_TYPE,
                            "A directory of skill files.".to_owned(),
                        )
                    } else {
                        let located = self.files[child];
                        let skill = &self.skills[located.skill];
                        let file = &skill.files[located.file];
                        (
                            file.mime_type,
                            format!("A file of the skill {}.", skill.name),
                        )
                    };
                    Resource {
                        uri: child.clone(),
                        title: name.clone(),
                        name,
                        description,
                        mime_type,
                    }
                })
                .collect(),
        )
    }
}

/// The media type a host reads a skill file as: Markdown for `.md`, by
/// extension otherwise, and plain text or bytes where the extension says
/// nothing.
fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("ts" | "mts" | "cts") => "text/x-typescript",
        Some(extension) => match mime_guess::from_ext(extension).first_raw() {
            Some(known) => known,
            None if std::str::from_utf8(bytes).is_ok() => "text/plain",
            None => "application/octet-stream",
        },
        None if std::str::from_utf8(bytes).is_ok() => "text/plain",
        None => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> (String, Cow<'static, [u8]>) {
        (path.to_owned(), Cow::Owned(text.as_bytes().to_vec()))
    }

    const SKILL: &str =
        "---\nname: refunds\ndescription: Process refunds\nlicense: MIT\n---\n# Refunds\n";

    #[test]
    fn an_entry_lists_every_file_with_the_digest_and_size_of_what_a_read_gives() {
        let skill = Skill::new(
            "acme/refunds",
            vec![
                file("templates/email.md", "Dear {name}"),
                file(SKILL_MD, SKILL),
            ],
        )
        .unwrap();
        let skills = Skills::new(vec![skill]);
        let entry = skills.all()[0].entry();
        assert_eq!(entry.uri, "skill://acme/refunds/SKILL.md");
        assert_eq!(entry.frontmatter["license"], "MIT");
        assert_eq!(entry.resources.len(), 2);
        assert_eq!(entry.resources[0].uri, entry.uri, "SKILL.md first");
        for resource in &entry.resources {
            let read = skills.read(&resource.uri).unwrap();
            let bytes = read.text.unwrap().into_bytes();
            assert_eq!(bytes.len() as u64, resource.size);
            let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes)));
            assert_eq!(digest, resource.digest);
            assert_eq!(read.mime_type, "text/markdown");
        }
        assert!(skills.get("skill://acme/refunds/SKILL.md").is_some());
        assert!(
            skills
                .get("skill://acme/refunds/templates/email.md")
                .is_none()
        );
        assert!(skills.read("skill://acme/refunds/missing.md").is_none());
    }

    #[test]
    fn directories_list_their_direct_children() {
        let skill = Skill::new(
            "acme/refunds",
            vec![
                file(SKILL_MD, SKILL),
                file("templates/email.md", "x"),
                file("templates/regional/eu.md", "y"),
            ],
        )
        .unwrap();
        let skills = Skills::new(vec![skill]);
        let children = |uri: &str| -> Vec<(String, &'static str)> {
            skills
                .directory(uri)
                .unwrap()
                .into_iter()
                .map(|r| (r.uri, r.mime_type))
                .collect()
        };
        assert_eq!(
            children("skill://acme/refunds/templates"),
            [
                (
                    "skill://acme/refunds/templates/email.md".to_owned(),
                    "text/markdown"
                ),
                (
                    "skill://acme/refunds/templates/regional".to_owned(),
                    DIRECTORY_MIME_TYPE
                ),
            ]
        );
        assert_eq!(
            children("skill://acme"),
            [("skill://acme/refunds".to_owned(), DIRECTORY_MIME_TYPE)]
        );
        assert!(skills.directory("skill://acme/refunds/SKILL.md").is_none());
        assert!(skills.directory("skill://other").is_none());
    }

    #[test]
    fn a_skill_that_breaks_a_rule_is_refused_with_the_reason() {
        let cases = [
            (vec![file("README.md", "x")], "no SKILL.md"),
            (
                vec![file(SKILL_MD, &SKILL.replace("refunds", "other"))],
                "must be its directory's",
            ),
            (
                (0..=MAX_FILES)
                    .map(|i| file(&format!("f{i}"), "x"))
                    .collect(),
                "513 files",
            ),
        ];
        for (files, expected) in cases {
            let error = Skill::new("refunds", files).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
        let big = vec![
            file(SKILL_MD, SKILL),
            (
                "big.bin".to_owned(),
                Cow::Owned(vec![0; MAX_BYTES as usize]),
            ),
        ];
        assert!(Skill::new("refunds", big).unwrap_err().contains("16 MiB"));
    }

    #[test]
    fn bytes_that_are_not_text_are_read_as_base64() {
        let skill = Skill::new(
            "refunds",
            vec![
                file(SKILL_MD, SKILL),
                (
                    "logo.png".to_owned(),
                    Cow::Owned(vec![0x89, b'P', b'N', b'G', 0xff]),
                ),
            ],
        )
        .unwrap();
        let skills = Skills::new(vec![skill]);
        let read = skills.read("skill://refunds/logo.png").unwrap();
        assert_eq!(read.mime_type, "image/png");
        assert!(read.text.is_none());
        assert_eq!(read.blob.as_deref(), Some("iVBOR/8="));
    }
}
