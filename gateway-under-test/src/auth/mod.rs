//! Authentication primitives (docs/gateway-contract.md §2): pure building blocks that the auth
//! routes and the CSRF / auth-gate middleware are written against. Nothing here touches HTTP state,
//! the database or globals; every piece of mutable state ([`LoginLockout`]) is an ordinary value
//! owned by one gateway instance.
//!
//! - [`JwtKeys`] issues and verifies the HS256 session token (§2.6); [`JwtError`] maps to the
//!   401 codes `token_expired` / `token_invalid` (§2.9).
//! - [`HashGate`] bounds how many password hashes run and wait at once (§2.3).
//! - [`PasswordHasher`] hashes and verifies argon2id passwords; [`validate_email`] and
//!   [`validate_password`] are the register-time checks (§2.2, 422 on failure).
//! - [`LoginLockout`] and [`client_ip`] implement the 5-failures / 300-seconds login lockout
//!   (§2.3), counted per account and client before the password check, with a higher limit per
//!   account.
//! - [`new_csrf_token`], [`tokens_match`], [`origin_allowed`] and [`normalize_origin`] are the
//!   CSRF double-submit and Origin checks (§2.8).
//! - [`CookieJarPolicy`], [`session_cookies`], [`clear_session_cookies`] and [`cookie_value`]
//!   write and read the session cookies (§2.7).

mod cookies;
mod csrf;
mod hash_gate;
mod jwt;
mod lockout;
mod password;

pub use cookies::{
    ACCESS_TOKEN_COOKIE, CSRF_COOKIE, CookieJarPolicy, PERSISTENT_COOKIE, clear_session_cookies,
    cookie_value, session_cookies,
};
pub use csrf::{new_csrf_token, normalize_origin, origin_allowed, tokens_match};
pub use hash_gate::{HashBusy, HashGate, HashGateError, HashPermit};
pub use jwt::{Claims, JwtError, JwtKeys, token_id};
pub use lockout::{Locked, LoginAttempt, LoginLockout, client_ip, is_trusted_proxy};
pub use password::{PasswordError, PasswordHasher};

/// Passwords refused at registration whatever their length, compared case-insensitively (all
/// entries are lowercase). Only entries of at least 8 characters matter, since shorter ones fail
/// the length rule first. The contract leaves the list open (§2.2); this is a small sample of the
/// most common leaked passwords.
const COMMON_PASSWORDS: &[&str] = &[
    "password",
    "password1",
    "password12",
    "password123",
    "passw0rd",
    "p@ssw0rd",
    "12345678",
    "123456789",
    "1234567890",
    "87654321",
    "11111111",
    "00000000",
    "123123123",
    "qwertyui",
    "qwerty123",
    "qwertyuiop",
    "1qaz2wsx",
    "q1w2e3r4",
    "zaq12wsx",
    "abcd1234",
    "abc12345",
    "aa123456",
    "iloveyou",
    "admin123",
    "administrator",
    "welcome1",
    "welcome123",
    "letmein1",
    "letmein123",
    "changeme",
    "sunshine",
    "princess",
    "football",
    "baseball",
    "superman",
    "trustno1",
    "starwars",
    "computer",
    "whatever",
    "monkey123",
    "dragon123",
    "master123",
];

/// Minimum password length, in characters (Unicode scalar values, like Python's `len`).
const MIN_PASSWORD_CHARS: usize = 8;

/// Longest e-mail address accepted (RFC 5321's path limit minus the angle brackets).
const MAX_EMAIL_CHARS: usize = 254;

/// Longest part before the `@` (RFC 5321).
const MAX_LOCAL_PART_CHARS: usize = 64;

/// Longest domain label (RFC 1035).
const MAX_LABEL_CHARS: usize = 63;

/// Checks that `email` is a syntactically valid address (`local@domain.tld`); deliverability is
/// not checked and the address is not normalised. On failure the message names the problem,
/// e.g. `"invalid email address: it must have an @-sign"`.
///
/// Accepted: a dot-atom local part (letters, digits, ``!#$%&'*+/=?^_`{|}~-`` and non-leading,
/// non-trailing, non-doubled dots) of at most 64 characters; a domain of at least two
/// dot-separated labels of letters, digits and inner hyphens, each at most 63 characters, whose
/// last label is not all digits. Non-ASCII letters are allowed (internationalised addresses).
/// Quoted local parts, IP-literal domains and whitespace are refused. Reserved names such as
/// `.local` are accepted, unlike Python's `email-validator`, so test addresses like
/// `default@test.local` validate.
pub fn validate_email(email: &str) -> Result<(), String> {
    let fail = |problem: &str| Err(format!("invalid email address: {problem}"));
    if email.is_empty() {
        return fail("it is empty");
    }
    if email.chars().count() > MAX_EMAIL_CHARS {
        return fail("it is longer than 254 characters");
    }
    if email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return fail("it must not contain spaces or control characters");
    }
    let Some((local, domain)) = email.rsplit_once('@') else {
        return fail("it must have an @-sign");
    };
    if local.contains('@') {
        return fail("it must have only one @-sign");
    }

    if local.is_empty() {
        return fail("there must be something before the @-sign");
    }
    if local.chars().count() > MAX_LOCAL_PART_CHARS {
        return fail("the part before the @-sign is longer than 64 characters");
    }
    if let Some(bad) = local.chars().find(|c| !is_local_part_char(*c)) {
        return fail(&format!(
            "the part before the @-sign contains the invalid character '{bad}'"
        ));
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return fail(
            "the part before the @-sign cannot start or end with a period or have two periods in a row",
        );
    }

    if domain.is_empty() {
        return fail("there must be something after the @-sign");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.iter().any(|label| label.is_empty()) {
        return fail("the domain cannot start or end with a period or have two periods in a row");
    }
    if labels.len() < 2 {
        return fail("the domain must contain a period, as in example.com");
    }
    for label in &labels {
        if label.chars().count() > MAX_LABEL_CHARS {
            return fail("a part of the domain is longer than 63 characters");
        }
        if let Some(bad) = label.chars().find(|c| !(c.is_alphanumeric() || *c == '-')) {
            return fail(&format!(
                "the domain contains the invalid character '{bad}'"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return fail("a part of the domain cannot start or end with a hyphen");
        }
    }
    if labels
        .last()
        .is_some_and(|tld| tld.chars().all(|c| c.is_ascii_digit()))
    {
        return fail("the domain must end in a name, not a number");
    }
    Ok(())
}

/// Characters of an RFC 5322 dot-atom, plus non-ASCII letters and digits (RFC 6531).
fn is_local_part_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || "!#$%&'*+/=?^_`{|}~-.".contains(c)
        || (!c.is_ascii() && c.is_alphanumeric())
}

/// Checks a new password: at least 8 characters and not one of a built-in list of common
/// passwords (compared case-insensitively, so `Password` is refused). The message names the
/// problem and never contains the password.
pub fn validate_password(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!(
            "password must be at least {MIN_PASSWORD_CHARS} characters long"
        ));
    }
    let lowered = password.to_lowercase();
    if COMMON_PASSWORDS.contains(&lowered.as_str()) {
        return Err("password is too common; choose a less guessable one".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_emails_are_accepted() {
        for email in [
            "alice@example.com",
            "default@test.local",
            "first.last+tag@sub.example.co.uk",
            "o'brien@example.ie",
            "x@a-b.io",
            "user_1@xn--bcher-kva.example",
            "jörg@bücher.de",
        ] {
            assert_eq!(validate_email(email), Ok(()), "{email}");
        }
    }

    #[test]
    fn invalid_emails_name_the_problem() {
        let cases = [
            ("", "empty"),
            ("alice.example.com", "@-sign"),
            ("a@b@example.com", "only one @-sign"),
            ("@example.com", "before the @-sign"),
            ("alice@", "after the @-sign"),
            ("alice@localhost", "must contain a period"),
            ("alice@example..com", "two periods"),
            ("alice@.example.com", "two periods"),
            ("alice@example.com.", "two periods"),
            (".alice@example.com", "two periods"),
            ("al..ice@example.com", "two periods"),
            ("al ice@example.com", "spaces"),
            (" alice@example.com", "spaces"),
            ("al(ice@example.com", "invalid character '('"),
            ("alice@exa_mple.com", "invalid character '_'"),
            ("alice@-example.com", "hyphen"),
            ("alice@1.2.3.4", "not a number"),
            ("alice@[127.0.0.1]", "invalid character '['"),
        ];
        for (email, fragment) in cases {
            let err = validate_email(email).unwrap_err();
            assert!(err.contains(fragment), "{email}: {err}");
            assert!(err.starts_with("invalid email address: "), "{err}");
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(validate_email(&long_local).unwrap_err().contains("64"));
        let long_label = format!("a@{}.com", "b".repeat(64));
        assert!(validate_email(&long_label).unwrap_err().contains("63"));
        let long = format!("{}@{}.com", "a".repeat(64), "b.".repeat(100));
        assert!(validate_email(&long).unwrap_err().contains("254"));
    }

    #[test]
    fn password_rules() {
        assert_eq!(validate_password("very-strong-password-123"), Ok(()));
        assert_eq!(validate_password("correct horse"), Ok(()));
        assert_eq!(
            validate_password("ünïcödé"),
            Err("password must be at least 8 characters long".into())
        );
        assert_eq!(validate_password("ünïcödé!"), Ok(()));
        assert!(
            validate_password("short")
                .unwrap_err()
                .contains("at least 8")
        );
        assert!(validate_password("").unwrap_err().contains("at least 8"));
        for common in [
            "password",
            "Password",
            "PASSWORD123",
            "12345678",
            "QwertyUI",
            "iloveyou",
            "admin123",
        ] {
            let err = validate_password(common).unwrap_err();
            assert!(err.contains("too common"), "{common}: {err}");
        }
    }

    #[test]
    fn the_common_list_is_lowercase_and_long_enough_to_matter() {
        for entry in COMMON_PASSWORDS {
            assert_eq!(*entry, entry.to_lowercase());
            assert!(entry.chars().count() >= MIN_PASSWORD_CHARS, "{entry}");
        }
        assert!(COMMON_PASSWORDS.len() >= 30);
    }
}
