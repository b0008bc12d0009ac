//! `requestState`: what a 2026-07-28 client echoes when it retries a call
//! that asked. It names the tenant, the call, the suspended run and when it
//! expires, and carries an HMAC-SHA256 under the deployment's key (kept in
//! the metadata store, never in the state), so a client cannot forge,
//! alter or move one. The client treats it as opaque.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::tenant::Tenant;

/// The version prefix of states this build writes.
const VERSION: &str = "v1";

/// The deployment's key for request states: 32 random bytes.
#[derive(Clone)]
pub struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// Bytes for a new key.
    pub fn generate() -> Vec<u8> {
        let mut bytes = vec![0u8; 32];
        rand::Rng::fill(&mut rand::rng(), bytes.as_mut_slice());
        bytes
    }

    /// A key of `bytes` (as the store keeps it).
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key length")
    }
}

/// What a request state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestState {
    /// The tenant's partition.
    #[serde(rename = "t")]
    pub tenant: String,
    /// The suspended run.
    #[serde(rename = "s")]
    pub suspension: Uuid,
    /// The call: [`call_digest`] of its tool and code.
    #[serde(rename = "c")]
    pub call: String,
    /// Unix seconds after which the state is refused.
    #[serde(rename = "e")]
    pub expires_at: i64,
    /// How many times an answer to this run's requests was refused and
    /// asked again ([`MAX_REFUSALS`]); absent in states made before.
    #[serde(rename = "r", default, skip_serializing_if = "is_zero")]
    pub refused: u32,
}

/// How many times a refused answer is asked again before the run gets
/// `{ action: "cancel" }` with the reason.
pub const MAX_REFUSALS: u32 = 3;

/// Rewrites the message of `request` (`{ method, params }`), whose answer
/// was refused for `why`, to be asked again: the reason first, then what
/// was asked (without the reason of an earlier refusal).
pub fn ask_again(request: &mut serde_json::Value, why: &str) {
    let Some(params) = request.get_mut("params") else {
        return;
    };
    let message = params["message"].as_str().unwrap_or_default();
    let asked = message
        .strip_prefix(AGAIN_START)
        .and_then(|rest| rest.split_once(AGAIN_END))
        .map_or(message, |(_, asked)| asked);
    params["message"] = format!("{AGAIN_START}{why}{AGAIN_END}{asked}").into();
}

const AGAIN_START: &str = "The answer given was not accepted (";
const AGAIN_END: &str = "); please answer again. ";

/// A refused answer's stand-in once it was refused [`MAX_REFUSALS`]
/// times: the run gets it and decides.
pub fn refused_for_good(why: &str) -> serde_json::Value {
    serde_json::json!({
        "action": "cancel",
        "reason": format!("the person's answer was not accepted {MAX_REFUSALS} times; the last: {why}"),
    })
}

/// For `skip_serializing_if` of counts that start at zero.
pub(crate) fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Why a request state is refused. Each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not a state this server wrote, or altered.
    #[error(
        "requestState is not one this server issued, or it was altered: send back the requestState \
         of the InputRequiredResult exactly as it came"
    )]
    Forged,
    /// Past its expiry.
    #[error(
        "requestState expired: the run waited for its input until {0} (Unix seconds) and was \
         dropped; call the tool again without requestState to start over from the heap before it"
    )]
    Expired(i64),
    /// Another tenant's.
    #[error("requestState belongs to another tenant")]
    OtherTenant,
    /// Another call's (other code).
    #[error(
        "requestState belongs to another call: retry the same tools/call (the same name and \
         arguments) that the InputRequiredResult answered"
    )]
    OtherCall,
}

/// Identifies a call by its tool and code, so that a state is only
/// accepted with the call it answered.
pub fn call_digest(tool: &str, code: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(tool.as_bytes());
    hash.update([0]);
    hash.update(code.as_bytes());
    hex::encode(&hash.finalize()[..16])
}

impl RequestState {
    /// The opaque string the client echoes.
    pub fn seal(&self, key: &StateKey) -> String {
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).expect("a state serializes"));
        let signed = format!("{VERSION}.{body}");
        let mut mac = key.mac();
        mac.update(signed.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// The state `sealed` says, if `key` signed it, it is `tenant`'s, for
    /// the call `call` ([`call_digest`]) and not expired at `now`.
    pub fn open(
        sealed: &str,
        key: &StateKey,
        tenant: &Tenant,
        call: &str,
        now: i64,
    ) -> Result<Self, StateError> {
        let (signed, tag) = sealed.rsplit_once('.').ok_or(StateError::Forged)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Forged)?;
        let mut mac = key.mac();
        mac.update(signed.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::Forged)?;
        let body = signed
            .strip_prefix(VERSION)
            .and_then(|rest| rest.strip_prefix('.'))
            .ok_or(StateError::Forged)?;
        let state: Self = URL_SAFE_NO_PAD
            .decode(body)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or(StateError::Forged)?;
        if state.tenant != tenant.partition() {
            return Err(StateError::OtherTenant);
        }
        if state.call != call {
            return Err(StateError::OtherCall);
        }
        if state.expires_at <= now {
            return Err(StateError::Expired(state.expires_at));
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(tenant: &Tenant) -> RequestState {
        RequestState {
            tenant: tenant.partition().to_owned(),
            suspension: Uuid::new_v4(),
            call: call_digest("run_js", "await elicit(x)"),
            expires_at: 2_000,
            refused: 0,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_unaltered_under_its_key_for_its_tenant_call_and_time() {
        let key = StateKey::new(StateKey::generate());
        let tenant = Tenant::anonymous();
        let written = state(&tenant);
        let sealed = written.seal(&key);
        let call = written.call.clone();
        assert_eq!(
            RequestState::open(&sealed, &key, &tenant, &call, 1_000),
            Ok(written.clone())
        );
        let other_key = StateKey::new(StateKey::generate());
        assert_eq!(
            RequestState::open(&sealed, &other_key, &tenant, &call, 1_000),
            Err(StateError::Forged)
        );
        // One character of the body changed.
        let mut altered = sealed.clone().into_bytes();
        altered[5] = if altered[5] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(
            RequestState::open(&altered, &key, &tenant, &call, 1_000),
            Err(StateError::Forged)
        );
        assert_eq!(
            RequestState::open(&sealed, &key, &tenant, &call, 2_000),
            Err(StateError::Expired(2_000))
        );
        let other = Tenant::of_principal("bearer:acme");
        assert_eq!(
            RequestState::open(&sealed, &key, &other, &call, 1_000),
            Err(StateError::OtherTenant)
        );
        assert_eq!(
            RequestState::open(&sealed, &key, &tenant, "other", 1_000),
            Err(StateError::OtherCall)
        );
        assert_eq!(
            RequestState::open("garbage", &key, &tenant, &call, 1_000),
            Err(StateError::Forged)
        );
    }
}
