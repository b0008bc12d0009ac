//! Typed reads of the environment: each variable parsed into its type,
//! every error naming the variable, its value and what was wrong.

/// A variable with a value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    pub(super) name: &'static str,
    pub(super) value: String,
    pub(super) reason: std::borrow::Cow<'static, str>,
}

/// The smallest value a number variable accepts.
#[derive(Clone, Copy)]
pub(super) enum Least {
    One,
    Zero,
}

/// Typed reads of one variable source, each error naming its variable.
pub(super) struct Vars<F>(pub(super) F);

impl<F: Fn(&str) -> Option<String>> Vars<F> {
    pub(super) fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }

    /// The trimmed value, unless unset or blank.
    pub(super) fn non_empty(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    pub(super) fn number<T: std::str::FromStr + PartialOrd + Default>(
        &self,
        name: &'static str,
        default: T,
        least: Least,
    ) -> Result<T, ConfigError> {
        let Some(value) = self.get(name) else {
            return Ok(default);
        };
        let (fits, reason): (fn(&T, &T) -> bool, _) = match least {
            Least::One => (T::gt, "expected a positive whole number"),
            Least::Zero => (T::ge, "expected a whole number, 0 or more"),
        };
        match value.trim().parse::<T>() {
            Ok(parsed) if fits(&parsed, &T::default()) => Ok(parsed),
            _ => Err(ConfigError {
                name,
                value,
                reason: reason.into(),
            }),
        }
    }

    pub(super) fn flag(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref().map(str::trim) {
            None | Some("") | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") => Ok(true),
            Some(other) => Err(ConfigError {
                name,
                value: other.to_owned(),
                reason: "expected true or false".into(),
            }),
        }
    }

    /// A directory that exists, unless unset or blank: a typo fails the
    /// start rather than serving without what it names.
    pub(super) fn directory(
        &self,
        name: &'static str,
    ) -> Result<Option<std::path::PathBuf>, ConfigError> {
        let Some(value) = self.non_empty(name) else {
            return Ok(None);
        };
        match std::fs::metadata(&value) {
            Ok(metadata) if metadata.is_dir() => Ok(Some(value.into())),
            Ok(_) => Err(ConfigError {
                name,
                value,
                reason: "expected a directory, and this is a file".into(),
            }),
            Err(e) => Err(ConfigError {
                name,
                value,
                reason: format!("expected a directory that can be read: {e}").into(),
            }),
        }
    }

    pub(super) fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The heap cache bound when none is set: under Lambda half of the
/// function's `/tmp` (`MCP_V8_EPHEMERAL_STORAGE_MB`, which the template sets
/// from its `EphemeralStorage`; Lambda's default 512 MB when unset), so that
/// the cache leaves room for everything else there; 512 MiB elsewhere.
pub(super) fn default_cache_mb<F: Fn(&str) -> Option<String>>(
    vars: &Vars<F>,
    under_lambda: bool,
) -> Result<u64, ConfigError> {
    if !under_lambda {
        return Ok(512);
    }
    half_of_tmp_mb(vars).map(|mb| mb as u64)
}

/// Half the function's `/tmp` in MB (`MCP_V8_EPHEMERAL_STORAGE_MB`,
/// Lambda's default 512 when unset), at least 1: the heap cache's share,
/// and the runs' local disk's.
fn half_of_tmp_mb<F: Fn(&str) -> Option<String>>(vars: &Vars<F>) -> Result<usize, ConfigError> {
    let tmp_mb: usize = vars.number("MCP_V8_EPHEMERAL_STORAGE_MB", 512, Least::One)?;
    Ok((tmp_mb / 2).max(1))
}

/// The local disk one run's `/work` files may hold when no bound is set:
/// under Lambda the half of `/tmp` the heap cache leaves, shared by the
/// invocations an instance takes at once (`AWS_LAMBDA_MAX_CONCURRENCY`);
/// 4 GiB elsewhere.
pub(super) fn default_run_disk_mb<F: Fn(&str) -> Option<String>>(
    vars: &Vars<F>,
    under_lambda: bool,
) -> Result<usize, ConfigError> {
    if !under_lambda {
        return Ok(4096);
    }
    let at_once: usize = vars.number("AWS_LAMBDA_MAX_CONCURRENCY", 1, Least::One)?;
    Ok((half_of_tmp_mb(vars)? / at_once).max(1))
}

/// The local disk a tenant's runs on one process may hold together when no
/// bound is set: under Lambda all of the runs' half of `/tmp` (each run
/// is bound by its own share already); 8 GiB elsewhere, two runs' worth.
pub(super) fn default_tenant_disk_mb<F: Fn(&str) -> Option<String>>(
    vars: &Vars<F>,
    under_lambda: bool,
) -> Result<usize, ConfigError> {
    if !under_lambda {
        return Ok(8192);
    }
    half_of_tmp_mb(vars)
}
