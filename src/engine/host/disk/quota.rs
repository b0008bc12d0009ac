//! How much local disk a run may hold: its own bound (`MCP_V8_RUN_DISK_MB`)
//! and its tenant's (`MCP_V8_TENANT_DISK_MB`), shared by the tenant's runs
//! on this machine whichever process runs them. Each run's folder sits in
//! a folder of its tenant and holds a `grant` file whose length (a sparse
//! file: no blocks) is what the run has reserved; a run takes more under
//! an exclusive lock of the tenant's folder, after adding up the others'.
//! The host removes a run's folder when the run ends however it ends (an
//! engine worker killed too), and with it the grant.

use std::fs::File;
use std::path::Path;

use super::error::{DiskError, DiskResult};
use crate::units::MIB_U64;

/// What a run reserves at once beyond what it needs: few locks for a
/// stream of small writes, and little held from the tenant's other runs.
const GRANT_STEP: u64 = 64 * MIB_U64;

/// The file in a run's folder whose length is what the run reserved.
pub(crate) const GRANT_FILE: &str = "grant";

/// A run's bounds and what it has reserved of its tenant's.
#[derive(Debug, Clone)]
pub(crate) struct Quota {
    run_bytes: u64,
    tenant_bytes: u64,
    granted: u64,
}

impl Quota {
    /// A run may hold `run_bytes`, and its tenant's runs `tenant_bytes`
    /// together.
    pub(crate) fn new(run_bytes: u64, tenant_bytes: u64) -> Self {
        Self {
            run_bytes,
            tenant_bytes,
            granted: 0,
        }
    }

    /// Room for the run, whose folder is `run_dir` and which holds `used`
    /// bytes, to hold `more`; ENOSPC naming the setting that refuses it.
    pub(crate) fn reserve(&mut self, run_dir: &Path, used: u64, more: u64) -> DiskResult<()> {
        let want = used.saturating_add(more);
        if want > self.run_bytes {
            return Err(DiskError::new(
                "ENOSPC",
                format!(
                    "a run's files hold at most {} MiB of local disk at once (MCP_V8_RUN_DISK_MB); \
                     this run holds {used} bytes and the write needs {more} more; remove files it \
                     no longer needs, or write less at once",
                    self.run_bytes / MIB_U64
                ),
            ));
        }
        if want <= self.granted {
            return Ok(());
        }
        let Some(tenant_dir) = run_dir.parent() else {
            return Ok(());
        };
        fn io(what: &'static str) -> impl Fn(std::io::Error) -> DiskError {
            move |e| DiskError::io(what, e)
        }
        let lock =
            File::create(tenant_dir.join(".lock")).map_err(io("locking the tenant's disk"))?;
        lock.lock().map_err(io("locking the tenant's disk"))?;
        let others = others_granted(tenant_dir, run_dir);
        let step = want
            .max(self.granted.saturating_add(GRANT_STEP))
            .min(self.run_bytes);
        let grant = if others.saturating_add(step) <= self.tenant_bytes {
            step
        } else if others.saturating_add(want) <= self.tenant_bytes {
            want
        } else {
            return Err(DiskError::new(
                "ENOSPC",
                format!(
                    "a tenant's runs hold at most {} MiB of local disk at once on this machine \
                     (MCP_V8_TENANT_DISK_MB); its other runs now hold {others} bytes, this one \
                     {used}, and the write needs {more} more; remove files no longer needed, or \
                     run again when the other runs have ended",
                    self.tenant_bytes / MIB_U64
                ),
            ));
        };
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(run_dir.join(GRANT_FILE))
            .and_then(|file| file.set_len(grant))
            .map_err(io("recording the run's disk grant"))?;
        self.granted = grant;
        Ok(())
    }
}

/// What the tenant's runs other than `run_dir` have reserved.
fn others_granted(tenant_dir: &Path, run_dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(tenant_dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| entry.path() != run_dir)
        .filter_map(|entry| std::fs::metadata(entry.path().join(GRANT_FILE)).ok())
        .map(|grant| grant.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_dir(tenant: &Path, name: &str) -> std::path::PathBuf {
        let dir = tenant.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_tenants_runs_share_its_bound_and_another_tenant_has_its_own() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let (a1, a2, b1) = (run_dir(&a, "1"), run_dir(&a, "2"), run_dir(&b, "1"));
        let mut first = Quota::new(80 * MIB_U64, 100 * MIB_U64);
        let mut second = first.clone();
        let mut other = first.clone();
        first.reserve(&a1, 0, 70 * MIB_U64).unwrap();
        // What the first holds counts for the second: 70 + 40 > 100.
        let refused = second.reserve(&a2, 0, 40 * MIB_U64).unwrap_err();
        assert_eq!(refused.code, "ENOSPC");
        assert!(
            refused.hint.contains("MCP_V8_TENANT_DISK_MB"),
            "{}",
            refused.hint
        );
        assert!(
            !a2.join(GRANT_FILE).exists(),
            "a refused grant records nothing"
        );
        // Exactly what is left is granted when a whole step is not.
        second.reserve(&a2, 0, 30 * MIB_U64).unwrap();
        assert_eq!(
            std::fs::metadata(a2.join(GRANT_FILE)).unwrap().len(),
            30 * MIB_U64
        );
        // Another tenant is not touched by the first's runs.
        other.reserve(&b1, 0, 80 * MIB_U64).unwrap();
        // A run's own bound comes first, naming its setting.
        let past = other.reserve(&b1, 80 * MIB_U64, 1).unwrap_err();
        assert!(past.hint.contains("MCP_V8_RUN_DISK_MB"), "{}", past.hint);
        // When the first run's folder goes (its run ended), its share is free.
        std::fs::remove_dir_all(&a1).unwrap();
        second.reserve(&a2, 30 * MIB_U64, 40 * MIB_U64).unwrap();
    }

    #[test]
    fn small_writes_take_the_lock_once_a_step() {
        let root = tempfile::tempdir().unwrap();
        let dir = run_dir(&root.path().join("t"), "1");
        let mut quota = Quota::new(1 << 30, 1 << 30);
        quota.reserve(&dir, 0, 4096).unwrap();
        assert_eq!(
            std::fs::metadata(dir.join(GRANT_FILE)).unwrap().len(),
            GRANT_STEP
        );
        std::fs::remove_file(dir.join(GRANT_FILE)).unwrap();
        // Within the grant: no file touched.
        quota.reserve(&dir, 4096, GRANT_STEP - 8192).unwrap();
        assert!(!dir.join(GRANT_FILE).exists());
    }
}
