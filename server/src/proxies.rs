//! Trusted reverse proxies (`--trusted-proxies`): behind nginx or a load balancer every request
//! comes from the proxy's address, so every caller would share its one free allowance. Only
//! when the TCP peer is inside one of the configured networks is the client taken from the
//! forwarding headers — `Forwarded` (RFC 7239) when present, else `X-Forwarded-For` — as the
//! right-most address that is not itself a trusted proxy (the left part of the chain is what
//! the caller chose, and would be a spoof). A peer outside them is the client, whatever headers
//! it sends. A chain that does not parse is not followed: the peer stays the client.
//!
//! Cost: nothing without the option; with it, a walk of the headers hyper already bounds
//! (`max_buf_size`, 100 headers), one list of parsed addresses per request.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::IpAddr;
use std::str::FromStr;

/// The networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

/// A `--trusted-proxies` entry that is neither an address nor a network.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not an IP address or network (CIDR): entry {position} of the list")]
pub struct BadProxyEntry {
    /// 1-based position in the comma-separated list.
    pub position: usize,
}

impl FromStr for TrustedProxies {
    type Err = BadProxyEntry;

    /// `CIDR,...` or bare addresses (a single host); empty entries are skipped.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let mut nets = Vec::new();
        for (i, entry) in list.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let net = entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| BadProxyEntry { position: i + 1 })?;
            nets.push(net.trunc());
        }
        Ok(TrustedProxies(nets))
    }
}

impl TrustedProxies {
    /// Whether no proxy is trusted (the peer is always the client).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many networks are trusted.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `ip` is inside a trusted network (IPv4-mapped IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client of a request from `peer` with `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let chain = if headers.contains_key("forwarded") {
            forwarded_for(headers)
        } else {
            x_forwarded_for(headers)
        };
        let Some(chain) = chain else {
            return peer;
        };
        // Right to left: the first hop not itself a trusted proxy is the client; a chain of
        // trusted hops only names its left-most one.
        let mut client = peer;
        for hop in chain.into_iter().rev() {
            client = hop;
            if !self.contains(hop) {
                break;
            }
        }
        client
    }
}

/// Every address of the `X-Forwarded-For` headers, in order; `None` when one does not parse.
fn x_forwarded_for(headers: &HeaderMap) -> Option<Vec<IpAddr>> {
    let mut hops = Vec::new();
    for value in headers.get_all("x-forwarded-for") {
        for item in value.to_str().ok()?.split(',') {
            hops.push(node_address(item.trim())?);
        }
    }
    Some(hops)
}

/// The `for=` address of every element of the `Forwarded` headers, in order; `None` when one
/// is missing, obfuscated (`_hidden`, `unknown`) or does not parse.
fn forwarded_for(headers: &HeaderMap) -> Option<Vec<IpAddr>> {
    let mut hops = Vec::new();
    for value in headers.get_all("forwarded") {
        for element in value.to_str().ok()?.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (key, value) = pair.trim().split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| value.trim().trim_matches('"'))
            })?;
            hops.push(node_address(node)?);
        }
    }
    Some(hops)
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:4711`.
fn node_address(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().expect("value"));
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn only_a_trusted_peer_names_the_client() {
        let trusted: TrustedProxies = "127.0.0.1/32, 10.0.0.0/8".parse().expect("list");
        let h = headers(&[("x-forwarded-for", "198.51.100.7")]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &h), ip("198.51.100.7"));
        assert_eq!(
            trusted.client(ip("::ffff:127.0.0.1"), &h),
            ip("198.51.100.7")
        );
        assert_eq!(
            trusted.client(ip("127.0.0.2"), &h),
            ip("127.0.0.2"),
            "spoofed"
        );
        assert_eq!(
            TrustedProxies::default().client(ip("127.0.0.1"), &h),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let trusted: TrustedProxies = "127.0.0.1,10.0.0.0/8".parse().expect("list");
        let h = headers(&[
            ("x-forwarded-for", "203.0.113.66, 198.51.100.7"),
            ("x-forwarded-for", "10.1.2.3"),
        ]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &h), ip("198.51.100.7"));
        let all_trusted = headers(&[("x-forwarded-for", "10.0.0.9, 10.0.0.8")]);
        assert_eq!(
            trusted.client(ip("127.0.0.1"), &all_trusted),
            ip("10.0.0.9")
        );
        let broken = headers(&[("x-forwarded-for", "198.51.100.7, not-an-ip")]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &broken), ip("127.0.0.1"));
        let empty = HeaderMap::new();
        assert_eq!(trusted.client(ip("127.0.0.1"), &empty), ip("127.0.0.1"));
    }

    #[test]
    fn forwarded_is_read_and_wins_over_x_forwarded_for() {
        let trusted: TrustedProxies = "127.0.0.1".parse().expect("list");
        let h = headers(&[
            (
                "forwarded",
                "for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\"",
            ),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &h), ip("2001:db8:cafe::17"));
        let port = headers(&[("forwarded", "For=\"192.0.2.43:47011\"")]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &port), ip("192.0.2.43"));
        let hidden = headers(&[("forwarded", "for=_hidden")]);
        assert_eq!(trusted.client(ip("127.0.0.1"), &hidden), ip("127.0.0.1"));
    }

    #[test]
    fn a_bad_entry_is_named_by_position_not_text() {
        assert_eq!(
            "10.0.0.0/8, nonsense".parse::<TrustedProxies>(),
            Err(BadProxyEntry { position: 2 })
        );
        assert!("".parse::<TrustedProxies>().expect("empty").is_empty());
        assert!(
            "2001:db8::/32"
                .parse::<TrustedProxies>()
                .expect("v6")
                .contains(ip("2001:db8::1"))
        );
    }
}
