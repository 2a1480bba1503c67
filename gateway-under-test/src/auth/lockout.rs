//! Login lockout (gateway-contract.md §2.3): after `max_failures` failed logins from one client IP,
//! that IP gets 429 for `lockout`.
//!
//! State is in memory and belongs to one gateway instance (hold a [`LoginLockout`] in the app
//! state), so parallel gateways in one test process never see each other's counters. Time is
//! passed in as `Instant`s so tests need no sleeping.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Above this many tracked clients, `record_failure` forgets every client that is not currently
/// locked, so a spray of failures from many addresses cannot grow memory without bound.
const MAX_TRACKED_CLIENTS: usize = 10_000;

/// Longest lock; keeps `Instant` arithmetic far from overflow whatever the configuration says.
const MAX_LOCKOUT: Duration = Duration::from_secs(365 * 86_400);

/// Failed-login counters per client IP.
#[derive(Debug)]
pub struct LoginLockout {
    /// client → (failures since the last success or lock expiry, locked until).
    clients: Mutex<HashMap<String, (u32, Option<Instant>)>>,
    /// Failures that trigger a lock; at least 1.
    max_failures: u32,
    /// How long a lock lasts.
    lockout: Duration,
}

impl LoginLockout {
    /// A lockout that locks a client for `lockout` once it reaches `max_failures` failures
    /// (the contract's values are 5 and 300 s). A `max_failures` of 0 is treated as 1, and
    /// `lockout` is capped at one year.
    pub fn new(max_failures: u32, lockout: Duration) -> LoginLockout {
        LoginLockout {
            clients: Mutex::new(HashMap::new()),
            max_failures: max_failures.max(1),
            lockout: lockout.min(MAX_LOCKOUT),
        }
    }

    /// True while `client` is locked at `now`. Once a lock has expired the client's record is
    /// dropped, so it starts again with a full allowance of failures.
    pub fn is_locked(&self, client: &str, now: Instant) -> bool {
        let mut clients = self.lock();
        match clients.get(client) {
            Some((_, Some(until))) if now < *until => true,
            Some((_, Some(_))) => {
                clients.remove(client);
                false
            }
            _ => false,
        }
    }

    /// Counts a failed login. The failure that reaches `max_failures` locks the client until
    /// `now + lockout`. Failures recorded while a lock is active neither count nor extend it
    /// (the login route refuses locked clients before checking credentials anyway); a failure
    /// after the lock expired starts a fresh count.
    pub fn record_failure(&self, client: &str, now: Instant) {
        let mut clients = self.lock();
        if clients.len() >= MAX_TRACKED_CLIENTS && !clients.contains_key(client) {
            clients.retain(|_, (_, until)| until.is_some_and(|until| now < until));
        }
        let entry = clients.entry(client.to_string()).or_insert((0, None));
        match entry.1 {
            Some(until) if now < until => return,
            Some(_) => *entry = (0, None),
            None => {}
        }
        entry.0 = entry.0.saturating_add(1);
        if entry.0 >= self.max_failures {
            // `lockout` is capped at a year in `new`, so this addition cannot overflow for any
            // real clock reading; the fallback only keeps the code free of panics.
            entry.1 = Some(now.checked_add(self.lockout).unwrap_or(now));
        }
    }

    /// Forgets `client`'s failures after a successful login.
    pub fn record_success(&self, client: &str) {
        self.lock().remove(client);
    }

    /// The map, even if a panicking thread poisoned the mutex: the counters stay consistent
    /// because every update is a single assignment.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (u32, Option<Instant>)>> {
        crate::lock::unpoisoned(&self.clients)
    }
}

/// The client address that lockout counts against.
///
/// It is the peer address, unless the peer is one of `trusted_proxies` and sent a parseable
/// `X-Real-IP`, in which case it is that header's address. `trusted_proxies` entries are single
/// addresses (`10.0.0.1`, `::1`) or CIDR ranges (`10.0.0.0/8`); unparseable entries are ignored.
/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) are treated as their IPv4 form, so a dual-stack
/// listener counts the same client under one key.
pub fn client_ip(peer: IpAddr, x_real_ip: Option<&str>, trusted_proxies: &[String]) -> String {
    let peer = peer.to_canonical();
    let trusted = trusted_proxies
        .iter()
        .any(|entry| proxy_entry_matches(entry.trim(), peer));
    let forwarded = x_real_ip
        .filter(|_| trusted)
        .and_then(|value| value.trim().parse::<IpAddr>().ok());
    forwarded.map_or(peer, |ip| ip.to_canonical()).to_string()
}

/// Whether `peer` is the address or inside the CIDR range `entry`.
fn proxy_entry_matches(entry: &str, peer: IpAddr) -> bool {
    let (address, prefix) = match entry.split_once('/') {
        Some((address, prefix)) => match prefix.trim().parse::<u32>() {
            Ok(prefix) => (address.trim(), Some(prefix)),
            Err(_) => return false,
        },
        None => (entry, None),
    };
    let Ok(network) = address.parse::<IpAddr>() else {
        return false;
    };
    match (network.to_canonical(), peer) {
        (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_matches(
            u128::from(u32::from(net)),
            u128::from(u32::from(ip)),
            32,
            prefix,
        ),
        (IpAddr::V6(net), IpAddr::V6(ip)) => {
            prefix_matches(u128::from(net), u128::from(ip), 128, prefix)
        }
        _ => false,
    }
}

/// Compares the top `prefix` bits (all `width` bits when `None`); a prefix longer than the
/// address never matches.
fn prefix_matches(net: u128, ip: u128, width: u32, prefix: Option<u32>) -> bool {
    let prefix = prefix.unwrap_or(width);
    if prefix > width {
        return false;
    }
    let ignored = width - prefix;
    net.checked_shr(ignored).unwrap_or(0) == ip.checked_shr(ignored).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lockout() -> LoginLockout {
        LoginLockout::new(5, Duration::from_secs(300))
    }

    #[test]
    fn the_fifth_failure_locks() {
        let lockout = lockout();
        let t0 = Instant::now();
        for i in 0..4 {
            lockout.record_failure("1.2.3.4", t0 + Duration::from_secs(i));
            assert!(!lockout.is_locked("1.2.3.4", t0 + Duration::from_secs(i)));
        }
        let t5 = t0 + Duration::from_secs(10);
        lockout.record_failure("1.2.3.4", t5);
        assert!(lockout.is_locked("1.2.3.4", t5));
        assert!(lockout.is_locked("1.2.3.4", t5 + Duration::from_secs(299)));
    }

    #[test]
    fn the_lock_expires_and_the_count_restarts() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            lockout.record_failure("c", t0);
        }
        assert!(lockout.is_locked("c", t0));
        // Failures during the lock do not extend it.
        lockout.record_failure("c", t0 + Duration::from_secs(200));
        let expiry = t0 + Duration::from_secs(300);
        assert!(!lockout.is_locked("c", expiry));
        lockout.record_failure("c", expiry);
        assert!(!lockout.is_locked("c", expiry));
    }

    #[test]
    fn a_failure_after_expiry_without_a_check_also_restarts_the_count() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            lockout.record_failure("c", t0);
        }
        let later = t0 + Duration::from_secs(301);
        lockout.record_failure("c", later);
        assert!(!lockout.is_locked("c", later));
    }

    #[test]
    fn success_clears_the_count() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..4 {
            lockout.record_failure("c", t0);
        }
        lockout.record_success("c");
        lockout.record_failure("c", t0);
        assert!(!lockout.is_locked("c", t0));
        for _ in 0..4 {
            lockout.record_failure("c", t0);
        }
        assert!(lockout.is_locked("c", t0));
        lockout.record_success("c");
        assert!(!lockout.is_locked("c", t0));
    }

    #[test]
    fn clients_are_independent() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            lockout.record_failure("a", t0);
        }
        assert!(lockout.is_locked("a", t0));
        assert!(!lockout.is_locked("b", t0));
        lockout.record_failure("b", t0);
        assert!(!lockout.is_locked("b", t0));
    }

    #[test]
    fn zero_max_failures_locks_on_the_first_failure() {
        let lockout = LoginLockout::new(0, Duration::from_secs(1));
        let t0 = Instant::now();
        lockout.record_failure("c", t0);
        assert!(lockout.is_locked("c", t0));
    }

    #[test]
    fn many_clients_do_not_grow_memory_without_bound() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            lockout.record_failure("locked", t0);
        }
        for i in 0..MAX_TRACKED_CLIENTS + 10 {
            lockout.record_failure(&format!("c{i}"), t0);
        }
        assert!(lockout.lock().len() <= MAX_TRACKED_CLIENTS);
        assert!(lockout.is_locked("locked", t0));
    }

    fn proxies(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn x_real_ip_is_honoured_only_from_trusted_proxies() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let trusted = proxies(&["10.0.0.1"]);
        assert_eq!(
            client_ip(proxy, Some("203.0.113.9"), &trusted),
            "203.0.113.9"
        );
        assert_eq!(
            client_ip(proxy, Some(" 203.0.113.9 "), &trusted),
            "203.0.113.9"
        );
        assert_eq!(client_ip(proxy, None, &trusted), "10.0.0.1");
        assert_eq!(client_ip(proxy, Some("not-an-ip"), &trusted), "10.0.0.1");

        let untrusted: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(
            client_ip(untrusted, Some("203.0.113.9"), &trusted),
            "198.51.100.7"
        );
        assert_eq!(client_ip(proxy, Some("203.0.113.9"), &[]), "10.0.0.1");
    }

    #[test]
    fn trusted_proxies_accept_cidr_ranges_and_ipv6() {
        let trusted = proxies(&["garbage", "172.16.0.0/12", "::1", "10.0.0.0/99"]);
        let inside: IpAddr = "172.20.1.2".parse().unwrap();
        let outside: IpAddr = "172.32.0.1".parse().unwrap();
        let loopback6: IpAddr = "::1".parse().unwrap();
        let ten: IpAddr = "10.1.1.1".parse().unwrap();
        assert_eq!(client_ip(inside, Some("1.1.1.1"), &trusted), "1.1.1.1");
        assert_eq!(client_ip(outside, Some("1.1.1.1"), &trusted), "172.32.0.1");
        assert_eq!(
            client_ip(loopback6, Some("2001:db8::1"), &trusted),
            "2001:db8::1"
        );
        assert_eq!(client_ip(ten, Some("1.1.1.1"), &trusted), "10.1.1.1");
    }

    #[test]
    fn ipv4_mapped_peers_are_reported_as_ipv4() {
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(client_ip(mapped, None, &[]), "127.0.0.1");
        assert_eq!(
            client_ip(mapped, Some("9.9.9.9"), &proxies(&["127.0.0.1"])),
            "9.9.9.9"
        );
    }
}
