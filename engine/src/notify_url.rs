//! Where a merchant's notify URL may point: a live one never at this
//! machine or its private network (SSRF), checked when the URL is saved
//! and again, for names that resolve there, at delivery.

use crate::error::EngineError;
use crate::input::HttpUrl;

/// True for any address that is not globally reachable, where a live
/// notify URL may not point (SSRF): loopback, private, shared (CGNAT),
/// link-local, unspecified, "this network", broadcast, multicast,
/// documentation, benchmarking and reserved ranges, and IPv6 forms that
/// carry such an IPv4 address (mapped, compatible, NAT64, 6to4).
pub fn is_private(ip: std::net::IpAddr) -> bool {
    use std::net::{IpAddr, Ipv4Addr};
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0 // "this network", 0.0.0.0/8
                || (a == 100 && (b & 0xc0) == 64) // shared address space, 100.64.0.0/10
                || (a == 192 && b == 0 && c == 0) // IETF protocol assignments, 192.0.0.0/24
                || (a == 198 && (b & 0xfe) == 18) // benchmarking, 198.18.0.0/15
                || a >= 240 // reserved, 240.0.0.0/4
        }
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let embedded_v4 = |high: u16, low: u16| Ipv4Addr::from(((high as u32) << 16) | low as u32);
            let carries = |v4: Ipv4Addr| is_private(IpAddr::V4(v4));
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (segments[0] & 0xfe00) == 0xfc00 // unique local, fc00::/7
                || (segments[0] & 0xffc0) == 0xfe80 // link-local, fe80::/10
                || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
                || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation, 2001:db8::/32
                || (segments[0] == 0x2001 && segments[1] == 0) // Teredo, 2001::/32
                || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0]) // discard-only, 100::/64
                || (segments[0] == 0x0064 && segments[1] == 0xff9b && segments[2] == 1) // local NAT64, 64:ff9b:1::/48
                || v6.to_ipv4_mapped().is_some_and(carries)
                // IPv4-compatible (deprecated, ::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d)
                || ((segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
                    && carries(embedded_v4(segments[6], segments[7])))
                // 6to4, 2002:a.b.c.d::/48
                || (segments[0] == 0x2002 && carries(embedded_v4(segments[1], segments[2])))
        }
    }
}

/// Names every resolver maps to this machine.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        name.as_str(),
        "localhost" | "ip6-localhost" | "ip6-loopback" | "localhost.localdomain"
    ) || name.ends_with(".localhost")
}

/// False for a URL naming a private host outright (`localhost`, a private
/// IP literal); names that resolve there are refused at delivery.
fn names_public_host(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(name)) => !is_local_name(name),
        Some(url::Host::Ipv4(ip)) => !is_private(std::net::IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => !is_private(std::net::IpAddr::V6(ip)),
        None => false,
    }
}

/// Checks, unless private addresses are allowed (sandbox), that a notify
/// URL (its shape checked where it was made) does not name one: a
/// merchant's URL must not make paygate call into its own network (SSRF).
pub(crate) fn ensure_public_notify_url(field: &str, url: &HttpUrl, allow_private: bool) -> Result<(), EngineError> {
    if !allow_private && !names_public_host(url.as_str()) {
        return Err(EngineError::invalid(
            field,
            "must not point to a loopback, private or link-local address",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_notify_url_is_refused_unless_private_ones_are_allowed() {
        let private = HttpUrl::parse("notify_url", "http://127.0.0.1:9000/hook").unwrap();
        let public = HttpUrl::parse("notify_url", "https://merchant.example/hook").unwrap();
        match ensure_public_notify_url("notify_url", &private, false) {
            Err(EngineError::InvalidInput { field, reason }) => {
                assert_eq!(field, "notify_url");
                assert_eq!(reason, "must not point to a loopback, private or link-local address");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(ensure_public_notify_url("notify_url", &private, true).is_ok());
        assert!(ensure_public_notify_url("notify_url", &public, false).is_ok());
    }

    #[test]
    fn addresses_that_are_not_globally_reachable_are_private() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "192.0.0.8",
            "198.18.0.1",
            "192.0.2.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "::127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2001::1",
            "2001:db8::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private} passed as public");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "100.128.0.1",
            "198.20.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_private(public.parse().unwrap()), "{public} refused as private");
        }
    }

    #[test]
    fn local_names_are_refused_with_or_without_a_trailing_dot() {
        for url in [
            "http://localhost./hook",
            "http://LOCALHOST/hook",
            "http://ip6-localhost:8080/hook",
            "http://api.localhost/hook",
            "http://[::127.0.0.1]/hook",
            "http://100.64.0.1/hook",
        ] {
            assert!(!names_public_host(url), "{url} accepted");
        }
        assert!(names_public_host("https://merchant.example/hook"));
    }
}
