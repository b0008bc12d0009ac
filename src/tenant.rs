//! Whose data a request reads and writes. Every store scopes its keys by a
//! [`Tenant`]: the anonymous tenant keeps the original mcp-v8 layout (bare
//! names and heap keys), every other tenant gets a prefix of its own that
//! no anonymous key can take (docs/storage.md, "Tenants").

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// Separates a tenant's id from the key it scopes. No key of the anonymous
/// layout contains it (session names and tag keys refuse control
/// characters; heap keys, execution ids and tag pairs are printable), so a
/// scoped key never equals an anonymous one.
pub const SEPARATOR: char = '\u{1f}';

/// The partition of the anonymous tenant where a store needs a non-empty
/// name for it (the session index); a tenant id is hex, never this.
pub const ANONYMOUS: &str = "anonymous";

/// A namespace of sessions, logs, tags, executions and heaps.
///
/// The id of an authenticated tenant is the first 128 bits of a SHA-256 of
/// its principal, in hex: fixed length, safe in any key or path, and no
/// personal data (a JWT subject, an IAM user name) in storage keys or logs.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Tenant(Option<Arc<str>>);

impl Tenant {
    /// Callers nobody authenticated (local `serve`, tests), and every
    /// caller of a shared namespace: the original, unprefixed layout.
    pub const fn anonymous() -> Self {
        Self(None)
    }

    /// The tenant of an authenticated principal (`jwt:<iss>#<sub>`, an IAM
    /// ARN, `bearer:static-token`).
    pub fn of_principal(principal: &str) -> Self {
        let digest = Sha256::new()
            .chain_update(b"mcp-v8-lambda tenant\n")
            .chain_update(principal.as_bytes())
            .finalize();
        Self(Some(hex::encode(&digest[..16]).into()))
    }

    /// The tenant whose id is `id` (as [`Self::id`] gives it), for a store
    /// reading its own layout back; `None` when `id` is not one.
    pub fn from_id(id: &str) -> Option<Self> {
        is_tenant_id(id).then(|| Self(Some(id.into())))
    }

    /// The id: 32 lowercase hex characters, `None` for the anonymous tenant.
    pub fn id(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Whether this is the anonymous tenant.
    pub fn is_anonymous(&self) -> bool {
        self.0.is_none()
    }

    /// `key` in this tenant's namespace of a store keyed by strings:
    /// unchanged for the anonymous tenant, else `<id>` [`SEPARATOR`] `key`.
    pub fn scoped<'a>(&self, key: &'a str) -> Cow<'a, str> {
        match &self.0 {
            None => Cow::Borrowed(key),
            Some(id) => Cow::Owned(format!("{id}{SEPARATOR}{key}")),
        }
    }

    /// The tenant and key a [`Self::scoped`] string was made of.
    pub fn unscoped(stored: &str) -> (Self, &str) {
        match stored.split_once(SEPARATOR) {
            Some((id, key)) if is_tenant_id(id) => (Self(Some(id.into())), key),
            _ => (Self::anonymous(), stored),
        }
    }

    /// A name for this tenant where the anonymous one needs one too: the
    /// partition of a per-tenant index, the `tenant` field of log lines.
    pub fn partition(&self) -> &str {
        self.0.as_deref().unwrap_or(ANONYMOUS)
    }

    /// The directory (or object-key folder) of this tenant's heaps under a
    /// store's root: none for the anonymous tenant, `tenants/<id>/` else.
    pub fn heap_folder(&self) -> Option<String> {
        self.0.as_deref().map(|id| format!("tenants/{id}/"))
    }
}

impl fmt::Debug for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tenant({})", self.partition())
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.partition())
    }
}

fn is_tenant_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// How principals map to tenants in one deployment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tenancy {
    /// `MCP_V8_SHARED_NAMESPACE`: every principal works in the anonymous
    /// namespace, as a team sharing state.
    pub shared_namespace: bool,
}

impl Tenancy {
    /// The tenant of a request made by `principal` (`None`: nobody
    /// authenticated it).
    pub fn tenant_of(&self, principal: Option<&str>) -> Tenant {
        match principal {
            Some(principal) if !self.shared_namespace => Tenant::of_principal(principal),
            _ => Tenant::anonymous(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_get_distinct_fixed_length_ids() {
        let a = Tenant::of_principal("jwt:https://issuer#alice");
        let b = Tenant::of_principal("jwt:https://issuer#bob");
        assert_ne!(a, b);
        assert_eq!(a, Tenant::of_principal("jwt:https://issuer#alice"));
        assert_eq!(a.id().unwrap().len(), 32);
        assert!(Tenant::anonymous().id().is_none());
    }

    /// The recipe docs/storage.md gives operators:
    /// `printf 'mcp-v8-lambda tenant\n%s' "$principal" | sha256sum | cut -c1-32`.
    #[test]
    fn the_id_is_the_documented_shell_recipe() {
        assert_eq!(
            Tenant::of_principal("jwt:https://issuer.example#alice").id(),
            Some("af034ce27b3b1ab9e6014d0e47f522aa")
        );
    }

    #[test]
    fn scoping_round_trips_and_leaves_the_anonymous_layout_alone() {
        let a = Tenant::of_principal("p");
        assert_eq!(Tenant::anonymous().scoped("name"), "name");
        let scoped = a.scoped("name/with#chars");
        assert_ne!(scoped, "name/with#chars");
        assert_eq!(Tenant::unscoped(&scoped), (a.clone(), "name/with#chars"));
        assert_eq!(Tenant::unscoped("plain"), (Tenant::anonymous(), "plain"));
    }

    #[test]
    fn a_shared_namespace_maps_everyone_to_the_anonymous_tenant() {
        let shared = Tenancy {
            shared_namespace: true,
        };
        assert!(shared.tenant_of(Some("jwt:x#a")).is_anonymous());
        let separate = Tenancy::default();
        assert!(!separate.tenant_of(Some("jwt:x#a")).is_anonymous());
        assert!(separate.tenant_of(None).is_anonymous());
    }
}
