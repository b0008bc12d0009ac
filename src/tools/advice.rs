//! What to change, added to a failed run's message where the engine can
//! only say what happened: the engine knows a run hit its timeout or heap
//! limit, while only `run_js` knows the argument that set it and how far it
//! may go; a redeclaration is only a mistake to explain in a continued heap.

use std::time::Duration;

use crate::engine::{EngineConfig, RunOutcome, RunStatus};

/// What a run asked for: its limits (else the defaults) and its code.
pub(super) struct Asked {
    pub timeout: Option<Duration>,
    pub heap_limit_mb: Option<usize>,
    pub code: String,
}

/// Appends to `outcome`'s error what the model can change.
pub(super) fn advise(outcome: &mut RunOutcome, limits: &EngineConfig, asked: &Asked) {
    let continued = outcome.input_heap.is_some();
    let status = outcome.status;
    let Some(error) = outcome.error.as_mut() else {
        return;
    };
    match status {
        RunStatus::TimedOut => {
            let had = asked
                .timeout
                .unwrap_or(limits.default_timeout)
                .as_secs_f64();
            let max = limits.max_timeout.as_secs_f64();
            error.message.push_str(&if had < max {
                format!(
                    "; raise execution_timeout_secs (this run had {had} s; at most {max} s), or do \
                     the work in parts over several runs: the heap keeps what each leaves"
                )
            } else {
                format!(
                    "; {had} s is execution_timeout_secs's maximum: do the work in parts over several \
                     runs (the heap keeps what each leaves), or process less data per run"
                )
            });
        }
        RunStatus::OutOfMemory => {
            let had = asked.heap_limit_mb.unwrap_or(limits.default_heap_limit_mb);
            let max = limits.max_heap_limit_mb;
            error.message.push_str(&if had < max {
                format!(
                    "; raise heap_memory_max_mb (this run had {had} MiB; at most {max} MiB), or keep \
                     less in memory at once: write large data to /work files and read it in parts"
                )
            } else {
                format!(
                    "; {had} MiB is heap_memory_max_mb's maximum: keep less in memory at once (write \
                     large data to /work files and read it in parts; drop what you no longer need)"
                )
            });
        }
        RunStatus::Failed if continued && error.name == "SyntaxError" => {
            if let Some(name) = redeclared(&error.message)
                && declarations_of(&asked.code, name) < 2
            {
                let advice = format!(
                    ": an earlier run of this heap declared `{name}`, and declarations stay. Assign \
                     it without let/const (`{name} = …`) to replace its value, use another name, or \
                     start from heap \"\" to begin fresh"
                );
                error.message.push_str(&advice);
                if let Some(stack) = error.stack.as_mut()
                    && let Some((first, rest)) = stack.split_once('\n')
                {
                    *stack = format!("{first}{advice}\n{rest}");
                }
            }
        }
        _ => {}
    }
}

/// `sales` of `Identifier 'sales' has already been declared (line 1, …)`.
fn redeclared(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Identifier '")?;
    let (name, after) = rest.split_once('\'')?;
    after
        .starts_with(" has already been declared")
        .then_some(name)
}

/// How many times `code` declares `name` (`let`, `const`, `var`, `class`,
/// `function`): twice is a mistake within the run, V8's own message says it.
fn declarations_of(code: &str, name: &str) -> usize {
    let identifier = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut count = 0;
    for keyword in ["let", "const", "var", "class", "function"] {
        let mut rest = code;
        while let Some(at) = rest.find(keyword) {
            let starts = rest[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !identifier(c));
            let after = &rest[at + keyword.len()..];
            let declared = after.trim_start();
            if starts
                && declared.len() < after.len()
                && declared
                    .strip_prefix(name)
                    .is_some_and(|tail| tail.chars().next().is_none_or(|c| !identifier(c)))
            {
                count += 1;
            }
            rest = after;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_redeclared_name_is_read_from_v8s_message() {
        assert_eq!(
            super::redeclared("Identifier 'sales' has already been declared (line 1, column 7)"),
            Some("sales")
        );
        assert_eq!(super::redeclared("Unexpected token ')'"), None);
        assert_eq!(super::declarations_of("let a = 1; const a = 2", "a"), 2);
        assert_eq!(super::declarations_of("const sales = 1; sales", "sales"), 1);
    }
}
