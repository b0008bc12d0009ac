//! What a run's `fetch` may reach.
//!
//! # Contract
//! - An origin is reachable only when an entry of `MCP_V8_FETCH_ALLOW`
//!   names it: scheme, host (exactly, or `*.` for any subdomain) and port.
//! - Some addresses are never reachable, whatever the list says: the Lambda
//!   Runtime API (it hands out other invocations), link-local and the
//!   instance-metadata addresses (169.254.0.0/16, fe80::/10,
//!   fd00:ec2::254: credentials).
//! - Loopback, private, unique-local and other non-public ranges are
//!   reachable only through an entry that is that IP literal; a name that
//!   resolves into them is refused, so DNS cannot open them.
//! - Every refusal's message names the policy, so it cannot be mistaken for
//!   a network error.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// A refusal, or an unusable entry; the message names the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A request the policy does not allow, and why.
    #[error("fetch refused by the egress policy (MCP_V8_FETCH_ALLOW): {0}")]
    Refused(String),
    /// An allow-list entry that is not an origin the policy can use.
    #[error("MCP_V8_FETCH_ALLOW entry {entry:?} is invalid: {reason}")]
    Entry {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl PolicyError {
    /// Why, without the words that name fetch's allow list: for callers
    /// whose own setting it is (an upstream's URL), which that list does
    /// not open.
    pub fn reason(self) -> String {
        match self {
            Self::Refused(why) | Self::Entry { reason: why, .. } => why,
        }
    }
}

fn refused(reason: impl Into<String>) -> PolicyError {
    PolicyError::Refused(reason.into())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    Name(String),
    /// `*.suffix`: any name ending in `.suffix`, not `suffix` itself.
    Subdomains(String),
    Address(IpAddr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    scheme: String,
    host: HostRule,
    port: u16,
}

/// The parsed allow list and the addresses that are never reachable.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    entries: Vec<Entry>,
    runtime_api: Option<(String, u16)>,
}

/// `scheme://host[:port]` as an origin string (`https://api.example.com`),
/// for the keys of `MCP_V8_FETCH_HEADERS`.
pub(crate) fn normalize_origin(origin: &str) -> Result<String, String> {
    let url = Url::parse(origin).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("not an http or https origin".into());
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err("an origin has no path, query or fragment".into());
    }
    Ok(url.origin().ascii_serialization())
}

impl Policy {
    /// Parses `MCP_V8_FETCH_ALLOW` entries; `runtime_api` is
    /// `AWS_LAMBDA_RUNTIME_API`.
    pub fn new(allow: &[String], runtime_api: Option<&str>) -> Result<Self, PolicyError> {
        let entries = allow
            .iter()
            .map(|raw| parse_entry(raw))
            .collect::<Result<_, _>>()?;
        let runtime_api = runtime_api.and_then(|value| {
            let (host, port) = value.rsplit_once(':')?;
            Some((
                host.trim_matches(['[', ']']).to_ascii_lowercase(),
                port.parse().ok()?,
            ))
        });
        Ok(Self {
            entries,
            runtime_api,
        })
    }

    /// Checks a URL before anything is resolved or sent: the scheme, the
    /// origin against the list, and an IP-literal host's address.
    pub fn check_url(&self, url: &Url) -> Result<(), PolicyError> {
        let origin = url.origin().ascii_serialization();
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refused(format!("{} URLs cannot be fetched", url.scheme())));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| refused(format!("{origin} has no port")))?;
        let host = url
            .host()
            .ok_or_else(|| refused(format!("{url} has no host")))?;
        let literal = match host {
            Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
            Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
            Host::Domain(_) => None,
        };
        if let Some((api_host, api_port)) = &self.runtime_api
            && port == *api_port
        {
            // Any spelling of the address: `[::ffff:127.0.0.1]` is 127.0.0.1.
            let same = match (literal, api_host.parse::<IpAddr>()) {
                (Some(address), Ok(api)) => canonical(address) == canonical(api),
                _ => url
                    .host_str()
                    .is_some_and(|h| h.eq_ignore_ascii_case(api_host)),
            };
            if same {
                return Err(refused(format!("{origin} is the Lambda Runtime API")));
            }
        }
        if let Some(address) = literal {
            never(address).map_err(|why| refused(format!("{origin} is {why}")))?;
        }
        let name = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let allowed = self.entries.iter().any(|entry| {
            entry.scheme == url.scheme()
                && entry.port == port
                && match (&entry.host, literal) {
                    (HostRule::Address(a), Some(b)) => canonical(*a) == canonical(b),
                    (HostRule::Name(n), None) => *n == name,
                    (HostRule::Subdomains(suffix), None) => {
                        name.len() > suffix.len() + 1
                            && name.ends_with(suffix.as_str())
                            && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
                    }
                    _ => false,
                }
        });
        if !allowed {
            return Err(refused(format!("{origin} is not in the allow list")));
        }
        Ok(())
    }

    /// Checks an address a name resolved to: names reach public addresses
    /// only.
    pub fn check_resolved(&self, name: &str, address: IpAddr) -> Result<(), PolicyError> {
        let why = never(address).err().or_else(|| non_public(address));
        match why {
            Some(why) => Err(refused(format!("{name} resolves to {address}, {why}"))),
            None => match &self.runtime_api {
                Some((host, _))
                    if host.parse::<IpAddr>().ok().map(canonical) == Some(canonical(address)) =>
                {
                    Err(refused(format!(
                        "{name} resolves to the Lambda Runtime API"
                    )))
                }
                _ => Ok(()),
            },
        }
    }
}

fn parse_entry(raw: &str) -> Result<Entry, PolicyError> {
    let invalid = |reason: &str| PolicyError::Entry {
        entry: raw.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = raw.trim().trim_end_matches('/');
    let (scheme, rest) = trimmed
        .split_once("://")
        .ok_or_else(|| invalid("expected scheme://host[:port]"))?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(invalid("only http and https can be allowed"));
    }
    let (wildcard, rest) = match rest.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let url = Url::parse(&format!("{scheme}://{rest}")).map_err(|e| invalid(&e.to_string()))?;
    if url.path() != "/"
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
    {
        return Err(invalid(
            "an entry is an origin: no path, query, fragment or user",
        ));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| invalid("no port"))?;
    let host = match url.host().ok_or_else(|| invalid("no host"))? {
        Host::Ipv4(v4) if !wildcard => HostRule::Address(IpAddr::V4(v4)),
        Host::Ipv6(v6) if !wildcard => HostRule::Address(IpAddr::V6(v6)),
        Host::Domain(name) if wildcard => HostRule::Subdomains(name.to_ascii_lowercase()),
        Host::Domain(name) => HostRule::Name(name.to_ascii_lowercase()),
        _ => return Err(invalid("a wildcard needs a domain name")),
    };
    if let HostRule::Address(address) = host {
        never(address)
            .map_err(|why| invalid(&format!("{address} is {why}, which is never reachable")))?;
    }
    Ok(Entry { scheme, host, port })
}

/// IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(address),
        v4 => v4,
    }
}

const EC2_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// The addresses no entry can open.
fn never(address: IpAddr) -> Result<(), &'static str> {
    match canonical(address) {
        IpAddr::V4(v4) if v4.is_link_local() => Err("link-local (instance metadata lives there)"),
        IpAddr::V6(v6) if v6 == EC2_METADATA_V6 => Err("the instance metadata address"),
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => Err("link-local"),
        _ => Ok(()),
    }
}

/// Why an address is not public, if it is not.
fn non_public(address: IpAddr) -> Option<&'static str> {
    match canonical(address) {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if (first & 0xfe00) == 0xfc00 {
                Some("unique-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if first == 0x64 && v6.segments()[1] == 0xff9b {
                // NAT64: the IPv4 address it carries decides.
                let [.., a, b] = v6.segments();
                non_public_v4(Ipv4Addr::new(
                    (a >> 8) as u8,
                    a as u8,
                    (b >> 8) as u8,
                    b as u8,
                ))
            } else {
                None
            }
        }
    }
}

fn non_public_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_loopback() {
        Some("loopback")
    } else if v4.is_private() {
        Some("private")
    } else if v4.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared address space (carrier-grade NAT)")
    } else if v4.is_link_local() {
        Some("link-local")
    } else if v4.is_multicast() || v4.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(entries: &[&str]) -> Policy {
        let entries: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        Policy::new(&entries, Some("127.0.0.1:9001")).unwrap()
    }

    fn check(policy: &Policy, url: &str) -> Result<(), PolicyError> {
        policy.check_url(&Url::parse(url).unwrap())
    }

    #[test]
    fn origins_are_matched_by_scheme_host_and_port() {
        let p = policy(&[
            "https://api.example.com",
            "https://*.example.org",
            "http://example.net:8080",
        ]);
        assert!(check(&p, "https://api.example.com/v1?x").is_ok());
        assert!(check(&p, "https://API.example.com:443/").is_ok());
        assert!(check(&p, "http://api.example.com/").is_err(), "scheme");
        assert!(check(&p, "https://api.example.com:8443/").is_err(), "port");
        assert!(check(&p, "https://other.example.com/").is_err());
        assert!(check(&p, "https://a.example.org/").is_ok());
        assert!(check(&p, "https://a.b.example.org/").is_ok());
        assert!(
            check(&p, "https://example.org/").is_err(),
            "a wildcard is subdomains only"
        );
        assert!(check(&p, "https://badexample.org/").is_err());
        assert!(check(&p, "http://example.net:8080/").is_ok());
        assert!(check(&p, "http://example.net/").is_err());
        assert!(check(&p, "ftp://api.example.com/").is_err());
        let message = check(&p, "https://nope.example/").unwrap_err().to_string();
        assert!(
            message.contains("egress policy (MCP_V8_FETCH_ALLOW)"),
            "{message}"
        );
    }

    #[test]
    fn nothing_is_reachable_by_default() {
        let p = policy(&[]);
        assert!(check(&p, "https://example.com/").is_err());
        assert!(check(&p, "http://127.0.0.1:8080/").is_err());
    }

    #[test]
    fn an_ip_literal_entry_opens_that_address_only() {
        let p = policy(&["http://127.0.0.1:8080", "http://[::1]:8081"]);
        assert!(check(&p, "http://127.0.0.1:8080/x").is_ok());
        assert!(check(&p, "http://127.0.0.1:8081/").is_err());
        assert!(check(&p, "http://127.0.0.2:8080/").is_err());
        assert!(check(&p, "http://[::1]:8081/").is_ok());
        assert!(
            check(&p, "http://[::ffff:127.0.0.1]:8080/").is_ok(),
            "mapped form of the same address"
        );
        assert!(
            check(&p, "http://localhost:8080/").is_err(),
            "a name is not the literal"
        );
    }

    #[test]
    fn the_runtime_api_and_metadata_are_never_reachable() {
        let p = policy(&["http://127.0.0.1:9001"]);
        let message = check(
            &p,
            "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("Runtime API"), "{message}");
        let mapped = policy(&["http://[::ffff:127.0.0.1]:9001"]);
        let message = check(&mapped, "http://[::ffff:127.0.0.1]:9001/")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("Runtime API"),
            "another spelling of it: {message}"
        );
        for entry in [
            "http://169.254.169.254",
            "http://[fd00:ec2::254]",
            "http://[fe80::1]",
            "http://*.169.254.169.254",
        ] {
            assert!(
                Policy::new(&[entry.to_string()], None).is_err(),
                "{entry} must not parse"
            );
        }
        let p = policy(&["https://example.com"]);
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:169.254.169.254]/",
            "http://169.254.170.2/",
        ] {
            let message = check(&p, url).unwrap_err().to_string();
            assert!(message.contains("egress policy"), "{url}: {message}");
        }
    }

    #[test]
    fn names_reach_public_addresses_only() {
        let p = policy(&["https://example.com"]);
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
        ] {
            let address: IpAddr = address.parse().unwrap();
            let message = p
                .check_resolved("example.com", address)
                .unwrap_err()
                .to_string();
            assert!(message.contains("egress policy"), "{address}: {message}");
        }
        for address in [
            "93.184.215.14",
            "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
            "64:ff9b::5db8:d70e",
        ] {
            assert!(
                p.check_resolved("example.com", address.parse().unwrap())
                    .is_ok(),
                "{address}"
            );
        }
    }

    #[test]
    fn invalid_entries_are_refused_with_the_reason() {
        for entry in [
            "example.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://u@example.com",
            "https://*.[::1]",
        ] {
            let error = Policy::new(&[entry.to_string()], None).unwrap_err();
            assert!(
                matches!(error, PolicyError::Entry { .. }),
                "{entry}: {error}"
            );
        }
        assert!(
            normalize_origin("https://Example.com:443").is_ok_and(|o| o == "https://example.com")
        );
        assert!(normalize_origin("https://example.com/x").is_err());
    }
}
