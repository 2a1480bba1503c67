//! keyless's protocol names, one table per kind: the request headers a gateway or a driver sends,
//! the model server's own routes, and the environment variables keyless reads or sets. Every name
//! is spelt with the `keyless` prefix (`x-keyless-*`, `/_keyless/*`, `KEYLESS_*`); the spellings
//! of earlier versions (`x-harness-*`, `/_harness/*`, `HARNESS_*`) are still accepted as aliases,
//! listed beside the name they stand for, so a gateway or a suite written against them keeps
//! working (`docs/testing-your-own-gateway.md`, "Protocol names").
//!
//! A reader takes the name first and an alias only when the name is absent; a writer (the
//! environment of a launched gateway) sets the name and every alias to the same value.

use std::ffi::OsString;

/// One protocol name: its `keyless` spelling and the older spellings still accepted for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Name {
    /// The spelling keyless writes and documents.
    pub name: &'static str,
    /// The spellings still accepted, oldest last.
    pub aliases: &'static [&'static str],
}

impl Name {
    /// The name, then its aliases.
    pub fn spellings(self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }

    /// The first spelling `get` finds a value for, the name before its aliases, and that value.
    /// `get` is the lookup (the environment, a header map), so this module reads nothing itself.
    pub fn find<T>(self, mut get: impl FnMut(&str) -> Option<T>) -> Option<(&'static str, T)> {
        self.spellings()
            .find_map(|spelling| get(spelling).map(|value| (spelling, value)))
    }

    /// The value of this environment variable as `get` reads it (normally `std::env::var_os`,
    /// from a `from_env` constructor), an empty value counting as unset.
    pub fn env_value(self, mut get: impl FnMut(&str) -> Option<OsString>) -> Option<OsString> {
        self.find(|spelling| get(spelling).filter(|value| !value.is_empty()))
            .map(|(_, value)| value)
    }
}

/// The request header a gateway may send to name the caller of a model call at the wire
/// (`docs/replay-and-fixtures.md` §11, §5.6): one value per graph node that calls the model, so
/// nodes that send the same conversation get their own recorded answers.
pub const CALLER_HEADER: &str = "x-keyless-caller";
/// The request header that carries the reset token on `POST /_keyless/reset`: only the process
/// that started the model server may clear its problem ledger, never the gateway under test.
pub const RESET_TOKEN_HEADER: &str = "x-keyless-reset-token";

/// The caller header and its aliases.
pub const CALLER: Name = Name {
    name: CALLER_HEADER,
    aliases: &["x-harness-caller"],
};
/// The reset token header (it never had another spelling).
pub const RESET_TOKEN: Name = Name {
    name: RESET_TOKEN_HEADER,
    aliases: &[],
};

/// Every request header keyless reads.
pub const HEADERS: &[Name] = &[CALLER, RESET_TOKEN];

/// `GET /_keyless/misses`: every problem since the start or the last reset.
pub const MISSES_ROUTE: Name = Name {
    name: "/_keyless/misses",
    aliases: &["/_harness/misses"],
};
/// `GET /_keyless/state`: the mode, the active fixture, calls served, unused turns, problems.
pub const STATE_ROUTE: Name = Name {
    name: "/_keyless/state",
    aliases: &["/_harness/state"],
};
/// `POST /_keyless/reset`: a fresh replay, or the end of a run.
pub const RESET_ROUTE: Name = Name {
    name: "/_keyless/reset",
    aliases: &["/_harness/reset"],
};

/// Every route of the model server's own (the model wires' routes are the providers').
pub const ROUTES: &[Name] = &[MISSES_ROUTE, STATE_ROUTE, RESET_ROUTE];

/// The model server's base URL, set in a launched gateway's environment.
pub const MODEL_BASE_URL_VAR: Name = Name {
    name: "KEYLESS_MODEL_BASE_URL",
    aliases: &["HARNESS_MODEL_BASE_URL"],
};
/// The port a launched gateway must listen on, set in its environment.
pub const GATEWAY_PORT_VAR: Name = Name {
    name: "KEYLESS_GATEWAY_PORT",
    aliases: &["HARNESS_GATEWAY_PORT"],
};
/// The state directory of managed recordings, read.
pub const STATE_DIR_VAR: Name = Name {
    name: "KEYLESS_STATE_DIR",
    aliases: &["HARNESS_STATE_DIR"],
};
/// Set to print a failure's SSE transcript uncut, read.
pub const FULL_TRANSCRIPT_VAR: Name = Name {
    name: "KEYLESS_FULL_TRANSCRIPT",
    aliases: &["HARNESS_FULL_TRANSCRIPT"],
};
/// A model server's reset token, read by the drivers (`keyless test`, `xtask replay`).
pub const RESET_TOKEN_VAR: Name = Name {
    name: "KEYLESS_RESET_TOKEN",
    aliases: &[],
};
/// The mark set in a launched gateway's environment, by which its processes are found again.
pub const LAUNCH_ID_VAR: Name = Name {
    name: "KEYLESS_LAUNCH_ID",
    aliases: &[],
};

/// Every environment variable keyless reads or sets.
pub const ENV_VARS: &[Name] = &[
    MODEL_BASE_URL_VAR,
    GATEWAY_PORT_VAR,
    STATE_DIR_VAR,
    FULL_TRANSCRIPT_VAR,
    RESET_TOKEN_VAR,
    LAUNCH_ID_VAR,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's prefixes: the name's, then the only one an alias may have.
    const KINDS: &[(&str, &[Name], &str, &str)] = &[
        ("headers", HEADERS, "x-keyless-", "x-harness-"),
        ("routes", ROUTES, "/_keyless/", "/_harness/"),
        ("environment", ENV_VARS, "KEYLESS_", "HARNESS_"),
    ];

    #[test]
    fn every_name_has_the_keyless_prefix_and_every_alias_the_old_one_with_the_same_rest() {
        for (kind, table, prefix, old) in KINDS {
            for name in *table {
                let rest = name.name.strip_prefix(prefix);
                assert!(rest.is_some(), "{kind}: {} lacks {prefix}", name.name);
                for alias in name.aliases {
                    assert_eq!(
                        alias.strip_prefix(old),
                        rest,
                        "{kind}: {alias} of {}",
                        name.name
                    );
                }
            }
        }
    }

    #[test]
    fn no_spelling_appears_twice_in_a_table() {
        for (kind, table, _, _) in KINDS {
            let mut seen = std::collections::BTreeSet::new();
            for spelling in table.iter().flat_map(|name| name.spellings()) {
                assert!(seen.insert(spelling), "{kind}: {spelling} twice");
            }
        }
    }

    /// What a reader finds for each set of present spellings: the name wins over an alias, an
    /// alias serves alone, an empty variable counts as unset.
    #[test]
    fn a_reader_takes_the_name_before_an_alias_and_skips_empty_values() {
        /// (the variables set, with their values; what the reader finds)
        type Case = (
            &'static [(&'static str, &'static str)],
            Option<&'static str>,
        );
        let cases: &[Case] = &[
            (&[], None),
            (&[("HARNESS_STATE_DIR", "/old")], Some("/old")),
            (&[("KEYLESS_STATE_DIR", "/new")], Some("/new")),
            (
                &[("HARNESS_STATE_DIR", "/old"), ("KEYLESS_STATE_DIR", "/new")],
                Some("/new"),
            ),
            (
                &[("KEYLESS_STATE_DIR", ""), ("HARNESS_STATE_DIR", "/old")],
                Some("/old"),
            ),
        ];
        for (present, expected) in cases {
            let found = STATE_DIR_VAR.env_value(|spelling| {
                present
                    .iter()
                    .find(|(name, _)| *name == spelling)
                    .map(|(_, value)| OsString::from(value))
            });
            assert_eq!(
                found.as_deref().and_then(|value| value.to_str()),
                *expected,
                "{present:?}"
            );
        }
    }
}
