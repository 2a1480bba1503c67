//! Password hashing: argon2id with the cost from `[auth.password_hash]`, stored as PHC strings.
//!
//! Hashing uses the configured cost; verification uses the cost recorded in the PHC string, so a
//! gateway whose cost setting changed still accepts the hashes it wrote before. Both are
//! deliberately slow (tens of milliseconds at the default cost): async callers should run them on
//! a blocking thread (`tokio::task::spawn_blocking`).
//!
//! **No account enumeration by timing.** A login for an unknown e-mail is verified against a
//! dummy hash of the configured cost ([`PasswordHasher::verify_or_dummy`]), so it takes as long
//! as a wrong password for a known one. The dummy is made on first use and kept by the hasher.

use argon2::password_hash::{PasswordHash, SaltString};
use std::sync::{Arc, OnceLock};

use argon2::{Algorithm, Argon2, Params, PasswordHasher as _, PasswordVerifier as _, Version};
use rand::RngCore;

use crate::config::PasswordHashConfig;

/// Salt length in bytes; 16 is the PHC / argon2 recommendation.
const SALT_BYTES: usize = 16;

/// A password could not be hashed. The message never contains the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// argon2 refused the parameters or the input; the text is argon2's reason.
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// Hashes and verifies passwords with argon2id (version 0x13).
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    /// Cost parameters for new hashes (not secret, so `Debug` may show them).
    params: Params,
    /// The hash unknown accounts are verified against: a random password's, made on first use
    /// and shared by the hasher's clones. Not secret: nothing verifies against it successfully.
    dummy: Arc<OnceLock<String>>,
}

impl PasswordHasher {
    /// A hasher with the configured cost. Fails when argon2 rejects the parameters (e.g.
    /// `memory_kib` below 8 × `parallelism`), naming the problem.
    pub fn new(config: &PasswordHashConfig) -> Result<PasswordHasher, PasswordError> {
        let params = Params::new(
            config.memory_kib,
            config.iterations,
            config.parallelism,
            None,
        )
        .map_err(|err| PasswordError::Hash(err.to_string()))?;
        Ok(PasswordHasher {
            params,
            dummy: Arc::default(),
        })
    }

    /// Hashes `password` with a fresh random salt and returns the PHC string
    /// (`$argon2id$v=19$m=…,t=…,p=…$<salt>$<hash>`).
    pub fn hash(&self, password: &str) -> Result<String, PasswordError> {
        let mut salt = [0u8; SALT_BYTES];
        rand::thread_rng().fill_bytes(&mut salt);
        let salt =
            SaltString::encode_b64(&salt).map_err(|err| PasswordError::Hash(err.to_string()))?;
        Argon2::new(Algorithm::Argon2id, Version::V0x13, self.params.clone())
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|err| PasswordError::Hash(err.to_string()))
    }

    /// Checks a login: true when `password` matches the stored PHC string `phc`. For an unknown
    /// account (`phc` is `None`) the password is verified against [`PasswordHasher::dummy_hash`]
    /// instead and the answer is false, so that both cases cost the same work.
    pub fn verify_or_dummy(&self, password: &str, phc: Option<&str>) -> bool {
        match phc {
            Some(phc) => self.verify(password, phc),
            None => {
                // Evaluated, not short-circuited: the verification is the point.
                let _ = self.verify(password, self.dummy_hash());
                false
            }
        }
    }

    /// The hash of a random password with the configured cost, made on first use.
    pub fn dummy_hash(&self) -> &str {
        self.dummy.get_or_init(|| {
            let mut password = [0u8; 32];
            rand::thread_rng().fill_bytes(&mut password);
            // Hashing only fails for parameters `new` already accepted, or an over-long input;
            // an empty string still makes `verify` do nothing but fail fast, which is the
            // previous behaviour rather than a panic.
            self.hash(&hex::encode(password)).unwrap_or_default()
        })
    }

    /// True when `password` matches the PHC string `phc`. A malformed or non-argon2 `phc` gives
    /// `false`, never a panic. The comparison inside argon2 is constant time.
    pub fn verify(&self, password: &str, phc: &str) -> bool {
        let Ok(hash) = PasswordHash::new(phc) else {
            return false;
        };
        // `verify_password` re-hashes with the algorithm, version and cost stored in `hash`, not
        // with `self.params`, so the configured cost only matters for new hashes.
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hasher() -> PasswordHasher {
        PasswordHasher::new(&PasswordHashConfig::cheap()).unwrap()
    }

    #[test]
    fn hash_then_verify() {
        let phc = hasher().hash("very-strong-password-123").unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{phc}");
        assert!(hasher().verify("very-strong-password-123", &phc));
        assert!(!hasher().verify("very-strong-password-124", &phc));
        assert!(!hasher().verify("", &phc));
    }

    #[test]
    fn salts_are_random() {
        let a = hasher().hash("same password").unwrap();
        let b = hasher().hash("same password").unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn verification_uses_the_cost_stored_in_the_hash() {
        let phc = hasher().hash("very-strong-password-123").unwrap();
        let pricier = PasswordHasher::new(&PasswordHashConfig {
            memory_kib: 16,
            iterations: 2,
            parallelism: 1,
        })
        .unwrap();
        assert!(pricier.verify("very-strong-password-123", &phc));
    }

    /// Finding 7 of issue 10 ("account enumeration"): a wrong password took ~1 s for a known
    /// e-mail and ~4 ms for an unknown one. An unknown account is now verified against a dummy
    /// hash of the configured cost, so both cost one hash of the same work; the answer is false
    /// whatever the password.
    #[test]
    fn account_enumeration_unknown_accounts_cost_one_hash_of_the_configured_cost() {
        for config in [
            PasswordHashConfig::cheap(),
            PasswordHashConfig {
                memory_kib: 16,
                iterations: 2,
                parallelism: 1,
            },
        ] {
            let hasher = PasswordHasher::new(&config).unwrap();
            let dummy = hasher.dummy_hash().to_string();
            let cost = format!(
                "$argon2id$v=19$m={},t={},p={}$",
                config.memory_kib, config.iterations, config.parallelism
            );
            assert!(dummy.starts_with(&cost), "{dummy} should start with {cost}");
            assert_eq!(hasher.dummy_hash(), dummy, "computed once");
            for password in ["", "very-strong-password-123", &dummy] {
                assert!(!hasher.verify_or_dummy(password, None), "{password}");
            }
            let stored = hasher.hash("very-strong-password-123").unwrap();
            assert!(hasher.verify_or_dummy("very-strong-password-123", Some(&stored)));
            assert!(!hasher.verify_or_dummy("wrong", Some(&stored)));
        }
    }

    #[test]
    fn a_malformed_hash_is_false() {
        for phc in [
            "",
            "plain-text",
            "$argon2id$",
            "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$",
            "$bcrypt$whatever",
            "$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
        ] {
            assert!(!hasher().verify("password", phc), "{phc}");
        }
    }

    #[test]
    fn bad_parameters_are_an_error() {
        let err = PasswordHasher::new(&PasswordHashConfig {
            memory_kib: 1,
            iterations: 0,
            parallelism: 1,
        })
        .unwrap_err();
        assert!(
            err.to_string().starts_with("password hashing failed: "),
            "{err}"
        );
    }
}
