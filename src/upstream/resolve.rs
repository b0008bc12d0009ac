//! The resolver of an upstream's HTTP client: the egress policy decides
//! which addresses a name may reach, and its refusals are worded for an
//! upstream.

use std::sync::Arc;

use crate::BoxError;
use crate::egress::Policy;

/// The egress policy's resolver for an upstream's client: a name must
/// resolve to addresses the policy allows, and those are connected to.
pub(super) struct Resolver {
    pub(super) policy: Arc<Policy>,
}

impl reqwest_013::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest_013::dns::Name) -> reqwest_013::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let allowed = crate::egress::resolve_checked(&policy, &host, None)
                .await
                .map_err(refusal_of_upstream)?;
            Ok(Box::new(allowed.into_iter()) as reqwest_013::dns::Addrs)
        })
    }
}

/// The policy's refusal in words for an upstream (its own text names
/// fetch's variable); other errors as they are.
pub(super) fn refusal_of_upstream(error: BoxError) -> BoxError {
    match error.downcast::<crate::egress::PolicyError>() {
        Ok(refusal) => match *refusal {
            crate::egress::PolicyError::Refused(why) => format!(
                "refused by the egress policy: {why} (an upstream on a loopback or private address is named by its IP literal)"
            )
            .into(),
            other => Box::new(other),
        },
        Err(other) => other,
    }
}
