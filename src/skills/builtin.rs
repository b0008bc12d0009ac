//! The server's own skills, built into the binary from `src/skills/builtin`
//! and served under `skill://mcp-v8/<name>/`. What they teach is checked
//! against the server: tests/it/protocol/skills/ runs every example.

use std::borrow::Cow;

use super::Skill;

/// The prefix of the built-in skills' paths: `skill://mcp-v8/<name>/…`.
pub const BUILTIN_PREFIX: &str = "mcp-v8";

/// One built-in skill's directory and files.
struct Builtin {
    name: &'static str,
    /// Only where upstream MCP servers are configured.
    code_mode: bool,
    files: &'static [(&'static str, &'static [u8])],
}

macro_rules! files {
    ($skill:literal: $($path:literal),+ $(,)?) => {
        &[$(($path, include_bytes!(concat!("builtin/", $skill, "/", $path)) as &[u8])),+]
    };
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "sessions-and-heaps",
        code_mode: false,
        files: files!("sessions-and-heaps": "SKILL.md", "references/session-tools.md"),
    },
    Builtin {
        name: "packages-and-files",
        code_mode: false,
        files: files!("packages-and-files": "SKILL.md"),
    },
    Builtin {
        name: "display-and-charts",
        code_mode: false,
        files: files!("display-and-charts": "SKILL.md"),
    },
    Builtin {
        name: "long-runs-and-tasks",
        code_mode: false,
        files: files!("long-runs-and-tasks": "SKILL.md"),
    },
    Builtin {
        name: "reading-failures",
        code_mode: false,
        files: files!("reading-failures": "SKILL.md", "references/statuses.md"),
    },
    Builtin {
        name: "code-mode",
        code_mode: true,
        files: files!("code-mode": "SKILL.md"),
    },
];

/// Which built-in skills a server serves.
#[derive(Debug, Clone, Copy)]
pub struct Builtins {
    /// Upstream MCP servers are configured, so code mode is there to teach.
    pub code_mode: bool,
}

impl Builtins {
    /// The names of the built-in skills that apply, in order.
    pub fn names(self) -> Vec<&'static str> {
        BUILTINS
            .iter()
            .filter(|builtin| !builtin.code_mode || self.code_mode)
            .map(|builtin| builtin.name)
            .collect()
    }

    /// The built-in skills that apply, in their fixed order.
    pub fn skills(self) -> Vec<Skill> {
        BUILTINS
            .iter()
            .filter(|builtin| !builtin.code_mode || self.code_mode)
            .map(|builtin| {
                let files = builtin
                    .files
                    .iter()
                    .map(|(path, bytes)| ((*path).to_owned(), Cow::Borrowed(*bytes)))
                    .collect();
                Skill::new(&format!("{BUILTIN_PREFIX}/{}", builtin.name), files).unwrap_or_else(
                    |why| panic!("the built-in skill {} is invalid: {why}", builtin.name),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every file under `dir`, relative, `/`-separated.
    fn files_under(dir: &Path, relative: &str, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            if entry.file_type().unwrap().is_dir() {
                files_under(&entry.path(), &format!("{relative}{name}/"), found);
            } else {
                found.push(format!("{relative}{name}"));
            }
        }
    }

    #[test]
    fn every_file_of_the_builtin_directory_is_built_in_and_every_skill_is_valid() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/skills/builtin");
        let mut on_disk = Vec::new();
        for entry in std::fs::read_dir(&root).unwrap() {
            let skill = entry.unwrap().file_name().into_string().unwrap();
            files_under(&root.join(&skill), &format!("{skill}/"), &mut on_disk);
        }
        on_disk.sort();
        let mut built_in: Vec<String> = BUILTINS
            .iter()
            .flat_map(|b| {
                b.files
                    .iter()
                    .map(move |(path, _)| format!("{}/{path}", b.name))
            })
            .collect();
        built_in.sort();
        assert_eq!(built_in, on_disk, "list each file in BUILTINS");
        let all = Builtins { code_mode: true }.skills();
        assert_eq!(all.len(), BUILTINS.len());
        let without = Builtins { code_mode: false }.skills();
        assert!(without.iter().all(|skill| skill.name() != "code-mode"));
        assert_eq!(all[0].uri(), "skill://mcp-v8/sessions-and-heaps/SKILL.md");
    }
}
