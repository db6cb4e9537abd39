//! Who a caller is, for the free allowance and the pool's per-client share: its network address
//! as the edge saw it. An IPv4 address is one client; an IPv6 address is its network prefix (a
//! /64 by default: one subscriber or host gets a whole /64, so counting single IPv6 addresses
//! would give it unlimited free calls).

use std::net::{IpAddr, Ipv6Addr};

/// The prefix length IPv6 callers are grouped by, unless configured.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;

/// The client key of an address as the edge wrote it (`203.0.113.9`, `2001:db8::1`, an
/// IPv4-mapped IPv6 address); text that is not an address is kept as it is.
pub fn client_key(raw: &str, ipv6_prefix: u8) -> String {
    let Ok(ip) = raw.trim().parse::<IpAddr>() else {
        return raw.trim().to_owned();
    };
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let prefix = u32::from(ipv6_prefix.min(128));
                let mask = if prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - prefix)
                };
                let network = Ipv6Addr::from(u128::from(v6) & mask);
                format!("{network}/{prefix}")
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_per_address_and_ipv6_per_prefix() {
        assert_eq!(client_key("203.0.113.9", 64), "203.0.113.9");
        assert_eq!(client_key(" 203.0.113.9 ", 64), "203.0.113.9");
        assert_eq!(client_key("::ffff:203.0.113.9", 64), "203.0.113.9");
        let a = client_key("2001:db8:1:2:aaaa::1", 64);
        let b = client_key("2001:db8:1:2:bbbb:cccc:dddd:eeee", 64);
        assert_eq!(a, "2001:db8:1:2::/64");
        assert_eq!(a, b);
        assert_ne!(a, client_key("2001:db8:1:3::1", 64));
        assert_eq!(client_key("2001:db8:1:2::1", 48), "2001:db8:1::/48");
        assert_eq!(client_key("2001:db8::1", 128), "2001:db8::1/128");
        assert_eq!(client_key("::1", 64), "::/64");
        assert_eq!(client_key("unknown", 64), "unknown");
    }
}
