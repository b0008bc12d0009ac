//! An operator's skills: every subdirectory of one directory
//! (`MCP_V8_SKILLS_DIR`) that holds a valid skill, read once at start. A
//! subdirectory that is not one is left out, with the reason, and the rest
//! are served.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::{BUILTIN_PREFIX, MAX_BYTES, MAX_FILES, Skill};

/// A subdirectory left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The subdirectory.
    pub directory: PathBuf,
    /// Why it is not served.
    pub reason: String,
}

/// The skills of `root`'s subdirectories, by name, and those left out.
/// Hidden entries (a name starting with `.`) are not read: neither skills
/// nor files of one.
pub fn load_dir(root: &Path) -> std::io::Result<(Vec<Skill>, Vec<Rejected>)> {
    let mut directories = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || !entry.file_type()?.is_dir() {
            continue;
        }
        directories.push(entry.path());
    }
    directories.sort();
    let mut skills = Vec::new();
    let mut rejected = Vec::new();
    for directory in directories {
        match load_skill(&directory) {
            Ok(skill) => skills.push(skill),
            Err(reason) => rejected.push(Rejected { directory, reason }),
        }
    }
    Ok((skills, rejected))
}

/// The skill in `directory`, or why it is not one.
fn load_skill(directory: &Path) -> Result<Skill, String> {
    let name = directory
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("its directory's name is not UTF-8")?;
    if name == BUILTIN_PREFIX {
        return Err(format!(
            "{BUILTIN_PREFIX:?} is kept for the server's own skills (skill://{BUILTIN_PREFIX}/…)"
        ));
    }
    let mut files = Vec::new();
    let mut total = 0;
    collect(directory, "", &mut files, &mut total)?;
    Skill::new(name, files)
}

/// Reads the files under `directory` (at `relative` in the skill) into
/// `files`, stopping as soon as a limit is passed.
fn collect(
    directory: &Path,
    relative: &str,
    files: &mut Vec<(String, Cow<'static, [u8]>)>,
    total: &mut u64,
) -> Result<(), String> {
    let entries = std::fs::read_dir(directory)
        .map_err(|e| format!("{} cannot be read: {e}", directory.display()))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{} cannot be read: {e}", directory.display()))?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(format!(
                "{} has a file name that is not UTF-8",
                directory.display()
            ));
        };
        if name.starts_with('.') {
            continue;
        }
        let path = format!("{relative}{name}");
        let kind = entry
            .file_type()
            .map_err(|e| format!("{path} cannot be read: {e}"))?;
        if kind.is_symlink() {
            // A link could serve what lies outside the skill's directory.
            return Err(format!("{path} is a symbolic link, which is not served"));
        }
        if kind.is_dir() {
            collect(&entry.path(), &format!("{path}/"), files, total)?;
            continue;
        }
        let bytes =
            std::fs::read(entry.path()).map_err(|e| format!("{path} cannot be read: {e}"))?;
        *total += bytes.len() as u64;
        if files.len() >= MAX_FILES {
            return Err(format!(
                "it has more than the {MAX_FILES} files a skill may have"
            ));
        }
        if *total > MAX_BYTES {
            return Err(format!(
                "its files hold more than the {MAX_BYTES} bytes (16 MiB) a skill may hold"
            ));
        }
        files.push((path, Cow::Owned(bytes)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill_md(name: &str) -> String {
        format!("---\nname: {name}\ndescription: Does {name} things\n---\n# {name}\n")
    }

    #[test]
    fn valid_skills_are_served_and_the_others_left_out_with_their_reason() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        write(root, "billing/SKILL.md", &skill_md("billing"));
        write(root, "billing/references/rates.md", "rates");
        write(root, "billing/.git/HEAD", "hidden");
        write(root, "misnamed/SKILL.md", &skill_md("other-name"));
        write(root, "empty/notes.txt", "no SKILL.md");
        write(root, "mcp-v8/SKILL.md", &skill_md("mcp-v8"));
        write(root, "README.md", "a file, not a skill");
        std::os::unix::fs::symlink("/etc/hostname", root.join("billing-link")).unwrap();
        let (skills, rejected) = load_dir(root).unwrap();
        let names: Vec<&str> = skills.iter().map(Skill::name).collect();
        assert_eq!(names, ["billing"]);
        let entry = skills[0].entry();
        let uris: Vec<&str> = entry.resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://billing/SKILL.md",
                "skill://billing/references/rates.md"
            ]
        );
        let reasons: Vec<(String, &str)> = rejected
            .iter()
            .map(|r| {
                let name = r
                    .directory
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (name, r.reason.as_str())
            })
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].0 == "empty" && reasons[0].1.contains("no SKILL.md"));
        assert!(reasons[1].0 == "mcp-v8" && reasons[1].1.contains("kept for the server's own"));
        assert!(reasons[2].0 == "misnamed" && reasons[2].1.contains("\"other-name\""));
    }

    #[test]
    fn a_link_inside_a_skill_leaves_the_skill_out() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "docs/SKILL.md", &skill_md("docs"));
        std::os::unix::fs::symlink("/etc/passwd", root.path().join("docs/passwd")).unwrap();
        let (skills, rejected) = load_dir(root.path()).unwrap();
        assert!(skills.is_empty());
        assert!(rejected[0].reason.contains("symbolic link"), "{rejected:?}");
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        assert!(load_dir(Path::new("/nonexistent/skills")).is_err());
    }
}
