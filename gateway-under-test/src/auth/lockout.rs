//! Login lockout (docs/gateway-contract.md §2.3): after `max_failures` failed logins for one
//! account from one client, that pair gets 429 for `lockout`; after `max_account_failures` failures
//! for one account from any clients, the account gets 429 for everyone for `lockout`.
//!
//! **Why these keys.** DeerFlow counts per client IP alone: it checks the count before the
//! password check, records the failure after it, and any success from the address clears it.
//! That has three holes: parallel attempts all pass the check before the first failure is
//! recorded; a success on the attacker's own account from the same address clears the count;
//! and behind a proxy every user shares one address, so one client can lock them all out. Here
//!
//! - an attempt is **counted when it starts** ([`LoginLockout::begin`]), before the slow hash
//!   check, and stays counted unless it succeeds ([`LoginAttempt::succeeded`]); an attempt
//!   abandoned half-way (the client went away) counts as a failure;
//! - the count is kept per **(account, client)**, so a locked client can still log in to other
//!   accounts and other clients to the locked account, and only a success for the same account
//!   and client clears it;
//! - a second, higher count per **account** bounds guessing spread over many addresses; a
//!   success only takes its own attempt back from it, so it expires with its window;
//! - the per-account lock does not refuse a **known client**: one that signed in to the
//!   account successfully within the last [`KNOWN_CLIENT_TTL`]. Otherwise anyone could lock
//!   a known account out for everyone, its owner included, by spreading failures over
//!   addresses. The trade-off (docs/gateway-contract.md §2.3): guessing from a known address
//!   is bounded by the pair limit alone, and the owner signing in from a new address still
//!   waits out the account lock.
//!
//! Failures are counted within a window of `lockout` from the first one; a lock lasts `lockout`.
//! Accounts are keyed by the SHA-256 of the trimmed, lower-cased name, so that unknown names cost
//! no more memory than known ones (and are treated the same). Both tables are bounded: past
//! [`MAX_TRACKED_KEYS`] the expired counts and then the oldest tenth of the unlocked ones are
//! dropped (never every count, which a spray of random names could otherwise use to wipe a
//! victim's count), and past [`MAX_KNOWN_CLIENTS`] the known clients that expire first.
//!
//! State is in memory and belongs to one gateway instance (hold a [`LoginLockout`] in the app
//! state), so parallel gateways in one test process never see each other's counters. Time is
//! passed in as `Instant`s so tests need no sleeping.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Above this many tracked keys, starting an attempt with a new key first forgets the expired
/// counts, then the oldest tenth of the unlocked ones, so a spray of attempts with many names or
/// addresses cannot grow memory without bound, nor wipe every count.
const MAX_TRACKED_KEYS: usize = 10_000;

/// How long a successful sign-in makes its client known to the account (passing the account
/// lock).
pub const KNOWN_CLIENT_TTL: Duration = Duration::from_secs(30 * 86_400);

/// At most this many (account, client) pairs are remembered as known.
const MAX_KNOWN_CLIENTS: usize = 10_000;

/// Longest lock; keeps `Instant` arithmetic far from overflow whatever the configuration says.
const MAX_LOCKOUT: Duration = Duration::from_secs(365 * 86_400);

/// What a count is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// One account from one client.
    Pair {
        /// The account's digest.
        account: [u8; 32],
        /// The client address.
        client: String,
    },
    /// One account from any client.
    Account([u8; 32]),
}

/// The count of one key.
#[derive(Debug, Clone, Copy)]
struct Count {
    /// Attempts counted in the current window that did not succeed.
    failures: u32,
    /// When the window started (the first counted attempt).
    since: Instant,
    /// Locked until then, once `failures` reached the key's limit.
    locked_until: Option<Instant>,
}

/// The (account, client) and account keys of a login.
fn keys(account: &str, client: &str) -> (Key, Key) {
    let digest: [u8; 32] = Sha256::digest(account.trim().to_lowercase().as_bytes()).into();
    let pair = Key::Pair {
        account: digest,
        client: client.to_string(),
    };
    (pair, Key::Account(digest))
}

/// Login attempts are refused until `retry_after` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locked {
    /// How long until the lock expires (at least one second, for `Retry-After`).
    pub retry_after: Duration,
}

impl Locked {
    /// `retry_after` in whole seconds, rounded up: the `Retry-After` header's value.
    pub fn retry_after_seconds(&self) -> u64 {
        let seconds = self.retry_after.as_secs();
        if self.retry_after.subsec_nanos() > 0 {
            seconds + 1
        } else {
            seconds
        }
        .max(1)
    }
}

/// The counts, and the known clients (pair keys) with when they stop being known.
#[derive(Debug, Default)]
struct Tables {
    counts: HashMap<Key, Count>,
    known: HashMap<Key, Instant>,
}

/// Failed-login counters per (account, client) and per account.
#[derive(Debug)]
pub struct LoginLockout {
    tables: Mutex<Tables>,
    /// Failures of one account from one client that trigger a lock; at least 1.
    max_failures: u32,
    /// Failures of one account from all clients that trigger a lock; at least `max_failures`.
    max_account_failures: u32,
    /// How long a window and a lock last.
    lockout: Duration,
}

/// A login attempt that has been counted. Call [`LoginAttempt::succeeded`] when the credentials
/// were right; otherwise (or if it is dropped half-way) it stays counted as a failure.
#[derive(Debug)]
#[must_use = "an attempt that is not marked succeeded counts as a failure"]
pub struct LoginAttempt<'a> {
    lockout: &'a LoginLockout,
    pair: Key,
    account: Key,
}

impl LoginLockout {
    /// A lockout that locks an (account, client) pair once it reaches `max_failures` failures
    /// and an account once it reaches `max_account_failures` (the contract's values are 5 and
    /// 300 s; the per-account limit is ours). A `max_failures` of 0 is treated as 1, a smaller
    /// `max_account_failures` as `max_failures`, and `lockout` is capped at one year.
    pub fn new(max_failures: u32, max_account_failures: u32, lockout: Duration) -> LoginLockout {
        let max_failures = max_failures.max(1);
        LoginLockout {
            tables: Mutex::default(),
            max_failures,
            max_account_failures: max_account_failures.max(max_failures),
            lockout: lockout.min(MAX_LOCKOUT),
        }
    }

    /// Starts a login attempt for `account` (as typed; trimmed and lower-cased here) from
    /// `client` at `now`: refused while the pair or the account is locked, otherwise counted
    /// against both before the caller checks the password. The attempt that reaches a limit
    /// locks at once, so attempts running in parallel cannot overshoot it.
    pub fn begin(
        &self,
        account: &str,
        client: &str,
        now: Instant,
    ) -> Result<LoginAttempt<'_>, Locked> {
        let (pair, account) = keys(account, client);
        let mut tables = self.lock();
        if let Some(locked) = self.refusal(&mut tables, &pair, &account, now) {
            return Err(locked);
        }
        if tables.counts.len() >= MAX_TRACKED_KEYS - 1 {
            self.make_room(&mut tables.counts, now);
        }
        let counts = &mut tables.counts;
        for (key, limit) in [
            (&pair, self.max_failures),
            (&account, self.max_account_failures),
        ] {
            let count = counts.entry(key.clone()).or_insert(Count {
                failures: 0,
                since: now,
                locked_until: None,
            });
            count.failures = count.failures.saturating_add(1);
            if count.failures >= limit {
                // `lockout` is capped at a year in `new`, so this addition cannot overflow for
                // any real clock reading; the fallback only keeps the code free of panics.
                count.locked_until = Some(now.checked_add(self.lockout).unwrap_or(now));
            }
        }
        Ok(LoginAttempt {
            lockout: self,
            pair,
            account,
        })
    }

    /// Whether a login for `account` from `client` would be refused at `now`, without counting
    /// it: a locked client is answered before it waits for the hash bound.
    pub fn check(&self, account: &str, client: &str, now: Instant) -> Result<(), Locked> {
        let (pair, account) = keys(account, client);
        let mut tables = self.lock();
        self.refusal(&mut tables, &pair, &account, now)
            .map_or(Ok(()), Err)
    }

    /// The lock, if any, on `pair` and `account` at `now` (the longest); the account's lock does
    /// not apply to a known client.
    fn refusal(
        &self,
        tables: &mut Tables,
        pair: &Key,
        account: &Key,
        now: Instant,
    ) -> Option<Locked> {
        let known = tables.known.get(pair).is_some_and(|until| now < *until);
        let keys = if known {
            vec![pair]
        } else {
            vec![pair, account]
        };
        keys.into_iter()
            .filter_map(|key| self.current(&mut tables.counts, key, now)?.locked_until)
            .map(|until| until.saturating_duration_since(now))
            .max()
            .map(|retry_after| Locked { retry_after })
    }

    /// Frees room in a full table: the counts whose window or lock is over go first, then the
    /// oldest tenth of the unlocked ones; locked counts stay.
    fn make_room(&self, counts: &mut HashMap<Key, Count>, now: Instant) {
        counts.retain(|_, count| match count.locked_until {
            Some(until) => now < until,
            None => now.saturating_duration_since(count.since) < self.lockout,
        });
        if counts.len() < MAX_TRACKED_KEYS - 1 {
            return;
        }
        let mut unlocked: Vec<(Instant, Key)> = counts
            .iter()
            .filter(|(_, count)| count.locked_until.is_none())
            .map(|(key, count)| (count.since, key.clone()))
            .collect();
        let evict = (MAX_TRACKED_KEYS / 10).min(unlocked.len());
        if evict == 0 {
            return;
        }
        unlocked.select_nth_unstable_by_key(evict - 1, |(since, _)| *since);
        for (_, key) in unlocked.into_iter().take(evict) {
            counts.remove(&key);
        }
    }

    /// The count of `key` at `now`, forgetting it first when its lock or its window is over.
    fn current(&self, counts: &mut HashMap<Key, Count>, key: &Key, now: Instant) -> Option<Count> {
        let count = *counts.get(key)?;
        let over = match count.locked_until {
            Some(until) => now >= until,
            None => now.saturating_duration_since(count.since) >= self.lockout,
        };
        if over {
            counts.remove(key);
            return None;
        }
        Some(count)
    }

    /// The tables, even if a panicking thread poisoned the mutex: the counters stay consistent
    /// because every update is a single assignment.
    fn lock(&self) -> MutexGuard<'_, Tables> {
        crate::lock::unpoisoned(&self.tables)
    }
}

impl LoginAttempt<'_> {
    /// The credentials were right: clears the (account, client) count, makes the client known
    /// to the account for `KNOWN_CLIENT_TTL`, and takes this attempt back from the account's
    /// count (unlocking the account if this attempt had locked it).
    pub fn succeeded(self) {
        self.succeeded_at(Instant::now());
    }

    /// [`LoginAttempt::succeeded`] at `now`.
    pub fn succeeded_at(self, now: Instant) {
        let mut tables = self.lockout.lock();
        if tables.known.len() >= MAX_KNOWN_CLIENTS && !tables.known.contains_key(&self.pair) {
            tables.known.retain(|_, until| now < *until);
            if tables.known.len() >= MAX_KNOWN_CLIENTS {
                let first_to_expire = tables
                    .known
                    .iter()
                    .min_by_key(|(_, until)| **until)
                    .map(|(key, _)| key.clone());
                if let Some(key) = first_to_expire {
                    tables.known.remove(&key);
                }
            }
        }
        let until = now.checked_add(KNOWN_CLIENT_TTL).unwrap_or(now);
        tables.known.insert(self.pair.clone(), until);
        let counts = &mut tables.counts;
        counts.remove(&self.pair);
        if let Some(count) = counts.get_mut(&self.account) {
            count.failures = count.failures.saturating_sub(1);
            if count.failures < self.lockout.max_account_failures {
                count.locked_until = None;
            }
        }
    }

    /// The credentials were wrong: the attempt stays counted. (Dropping the attempt does the
    /// same; this names it.)
    pub fn failed(self) {}
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
    let trusted = is_trusted_proxy(peer, trusted_proxies);
    let forwarded = x_real_ip
        .filter(|_| trusted)
        .and_then(|value| value.trim().parse::<IpAddr>().ok());
    forwarded.map_or(peer, |ip| ip.to_canonical()).to_string()
}

/// Whether `peer` is one of `trusted_proxies` (addresses or CIDR ranges, as for [`client_ip`]).
pub fn is_trusted_proxy(peer: IpAddr, trusted_proxies: &[String]) -> bool {
    let peer = peer.to_canonical();
    trusted_proxies
        .iter()
        .any(|entry| proxy_entry_matches(entry.trim(), peer))
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
        LoginLockout::new(5, 8, Duration::from_secs(300))
    }

    /// Starts and fails an attempt; `Err` when it was refused.
    fn fail(
        lockout: &LoginLockout,
        account: &str,
        client: &str,
        now: Instant,
    ) -> Result<(), Locked> {
        lockout
            .begin(account, client, now)
            .map(LoginAttempt::failed)
    }

    #[test]
    fn the_fifth_failure_locks_the_pair_until_the_lockout_is_over() {
        let lockout = lockout();
        let t0 = Instant::now();
        for i in 0..5 {
            assert_eq!(
                fail(&lockout, "a@x.io", "1.2.3.4", t0 + Duration::from_secs(i)),
                Ok(())
            );
        }
        let locked = fail(&lockout, "a@x.io", "1.2.3.4", t0 + Duration::from_secs(10));
        assert_eq!(
            locked.map_err(|locked| locked.retry_after_seconds()),
            Err(294)
        );
        // Another spelling of the same account is the same account.
        assert!(lockout.begin(" A@X.io ", "1.2.3.4", t0).is_err());
        let expiry = t0 + Duration::from_secs(4 + 300);
        assert!(lockout.begin("a@x.io", "1.2.3.4", expiry).is_ok());
    }

    #[test]
    fn attempts_count_when_they_start() {
        let lockout = lockout();
        let t0 = Instant::now();
        let running: Vec<_> = (0..5)
            .map(|_| lockout.begin("a", "c", t0).expect("not locked yet"))
            .collect();
        assert!(lockout.begin("a", "c", t0).is_err(), "five are in flight");
        // The fifth was the right password: the pair is free again.
        let mut running = running.into_iter();
        if let Some(right_password) = running.next() {
            right_password.succeeded();
        }
        assert!(lockout.begin("a", "c", t0).is_ok());
    }

    #[test]
    fn only_a_success_of_the_same_pair_clears_it() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "victim", "c", t0), Ok(()));
        }
        lockout
            .begin("attacker", "c", t0)
            .map(LoginAttempt::succeeded)
            .ok();
        assert_eq!(fail(&lockout, "victim", "c", t0), Ok(()));
        assert!(lockout.begin("victim", "c", t0).is_err());
        // A success of the pair itself clears it (the account limit is out of the way here).
        let lockout = LoginLockout::new(5, 20, Duration::from_secs(300));
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "victim", "c", t0), Ok(()));
        }
        lockout
            .begin("victim", "c", t0)
            .map(LoginAttempt::succeeded)
            .ok();
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "victim", "c", t0), Ok(()));
        }
        assert!(lockout.begin("victim", "c", t0).is_ok());
    }

    #[test]
    fn accounts_and_clients_are_independent_until_the_account_limit() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            assert_eq!(fail(&lockout, "victim", "attacker", t0), Ok(()));
        }
        assert!(lockout.begin("victim", "attacker", t0).is_err());
        assert!(lockout.begin("other", "attacker", t0).is_ok());
        for client in ["b", "c", "d"] {
            assert_eq!(fail(&lockout, "victim", client, t0), Ok(()));
        }
        // 5 + 3 = 8 failures of the account: locked for every client.
        assert!(lockout.begin("victim", "fresh", t0).is_err());
        assert!(lockout.begin("other", "fresh", t0).is_ok());
    }

    #[test]
    fn failures_expire_with_their_window() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "a", "c", t0), Ok(()));
        }
        let later = t0 + Duration::from_secs(300);
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "a", "c", later), Ok(()));
        }
        assert!(lockout.begin("a", "c", later).is_ok());
    }

    #[test]
    fn zero_max_failures_locks_on_the_first_failure() {
        let lockout = LoginLockout::new(0, 0, Duration::from_secs(1));
        let t0 = Instant::now();
        assert_eq!(fail(&lockout, "a", "c", t0), Ok(()));
        assert!(lockout.begin("a", "c", t0).is_err());
    }

    #[test]
    fn many_keys_do_not_grow_memory_without_bound() {
        let lockout = lockout();
        let t0 = Instant::now();
        for _ in 0..5 {
            assert_eq!(fail(&lockout, "locked", "c", t0), Ok(()));
        }
        for i in 0..MAX_TRACKED_KEYS {
            let _ = fail(&lockout, &format!("a{i}"), "c", t0);
        }
        assert!(lockout.lock().counts.len() <= MAX_TRACKED_KEYS);
        assert!(lockout.begin("locked", "c", t0).is_err());
    }

    /// Finding 8 of issue 21: past 10,000 keys every unlocked count was dropped, so a spray of
    /// random names wiped a victim's four failures. The oldest tenth goes instead.
    #[test]
    fn a_spray_of_random_names_evicts_the_oldest_counts_not_all() {
        let lockout = lockout();
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(10);
        for i in 0..MAX_TRACKED_KEYS / 4 {
            let _ = fail(&lockout, &format!("early{i}"), "c", t0);
        }
        for _ in 0..4 {
            assert_eq!(fail(&lockout, "victim", "c", later), Ok(()));
        }
        // Each attempt tracks two keys (pair and account): this crosses the bound.
        for i in 0..MAX_TRACKED_KEYS / 4 {
            let _ = fail(&lockout, &format!("late{i}"), "c", later);
        }
        assert!(lockout.lock().counts.len() <= MAX_TRACKED_KEYS);
        assert_eq!(fail(&lockout, "victim", "c", later), Ok(()), "the fifth");
        assert!(lockout.begin("victim", "c", later).is_err(), "locked");
    }

    /// Finding 7 of issue 21: twenty failures from any clients locked the account for everyone,
    /// its owner included. A client that signed in before passes the account lock; a new one
    /// does not, and the known client still has its own pair limit.
    #[test]
    fn account_lockout_by_anyone_leaves_the_owner_signing_in_from_a_known_client() {
        let lockout = lockout();
        let t0 = Instant::now();
        lockout
            .begin("victim", "home", t0)
            .expect("not locked")
            .succeeded_at(t0);
        for client in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            assert_eq!(fail(&lockout, "victim", client, t0), Ok(()));
        }
        assert!(
            lockout.begin("victim", "new", t0).is_err(),
            "account locked"
        );
        assert!(
            lockout.check("victim", "home", t0).is_ok(),
            "the owner's client"
        );
        for _ in 0..5 {
            assert_eq!(fail(&lockout, "victim", "home", t0), Ok(()));
        }
        assert!(
            lockout.begin("victim", "home", t0).is_err(),
            "its pair limit"
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let cases = [(0, 1), (1, 1), (1_000, 1), (1_001, 2), (299_500, 300)];
        for (millis, seconds) in cases {
            let locked = Locked {
                retry_after: Duration::from_millis(millis),
            };
            assert_eq!(locked.retry_after_seconds(), seconds, "{millis} ms");
        }
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
