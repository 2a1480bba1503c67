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
//!
//! **Working memory is reused.** Each hash needs `memory_kib` of blocks. Left to the allocator,
//! every freed 19 MiB buffer raised glibc's dynamic mmap threshold, so later buffers came from
//! arenas that were never given back: 66 hashes, two at a time, left 670 MB behind. The hasher
//! keeps the buffers it used ([`BlockPool`]) and hands them to argon2
//! (`hash_password_into_with_memory`), so memory stays at the number of hashes running at once
//! (bounded by `HashGate`) times `memory_kib`. A buffer is zeroed before it goes back.

use std::sync::{Arc, Mutex, OnceLock};

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
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

/// Buffers of argon2 blocks kept for the next hash.
#[derive(Debug, Default)]
struct BlockPool(Mutex<Vec<Vec<Block>>>);

/// At most this many buffers are kept; more than `HashGate` lets run at once only happen
/// without the gate (tests), and are then freed.
const POOL_KEEP: usize = 16;

impl BlockPool {
    /// Runs `work` with `count` blocks of working memory, reusing a kept buffer.
    fn with<T>(&self, count: usize, work: impl FnOnce(&mut [Block]) -> T) -> T {
        let mut blocks = crate::lock::unpoisoned(&self.0).pop().unwrap_or_default();
        if blocks.len() < count {
            blocks.resize(count, Block::default());
        }
        let result = work(&mut blocks[..count]);
        // Derived from a password: zeroed before it waits for the next hash.
        blocks.fill(Block::default());
        let mut kept = crate::lock::unpoisoned(&self.0);
        if kept.len() < POOL_KEEP {
            kept.push(blocks);
        }
        result
    }
}

/// Hashes and verifies passwords with argon2id (version 0x13).
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    /// Cost parameters for new hashes (not secret, so `Debug` may show them).
    params: Params,
    /// The hash unknown accounts are verified against: a random password's, made on first use
    /// and shared by the hasher's clones. Not secret: nothing verifies against it successfully.
    dummy: Arc<OnceLock<String>>,
    /// Working memory, shared by the clones.
    blocks: Arc<BlockPool>,
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
            blocks: Arc::default(),
        })
    }

    /// Hashes `password` with a fresh random salt and returns the PHC string
    /// (`$argon2id$v=19$m=…,t=…,p=…$<salt>$<hash>`).
    pub fn hash(&self, password: &str) -> Result<String, PasswordError> {
        let mut salt = [0u8; SALT_BYTES];
        rand::thread_rng().fill_bytes(&mut salt);
        let fail = |err: &dyn std::fmt::Display| PasswordError::Hash(err.to_string());
        let salt_string = SaltString::encode_b64(&salt).map_err(|err| fail(&err))?;
        let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, self.params.clone());
        let mut output = [0u8; Params::DEFAULT_OUTPUT_LEN];
        self.blocks
            .with(self.params.block_count(), |blocks| {
                argon2.hash_password_into_with_memory(
                    password.as_bytes(),
                    &salt,
                    &mut output,
                    blocks,
                )
            })
            .map_err(|err| fail(&err))?;
        let hash = PasswordHash {
            algorithm: Algorithm::Argon2id.ident(),
            version: Some(Version::V0x13.into()),
            params: ParamsString::try_from(&self.params).map_err(|err| fail(&err))?,
            salt: Some(salt_string.as_salt()),
            hash: Some(Output::new(&output).map_err(|err| fail(&err))?),
        };
        Ok(hash.to_string())
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
        self.verify_stored(password, phc).unwrap_or(false)
    }

    /// [`PasswordHasher::verify`]; `None` for a malformed hash. It re-hashes with the algorithm,
    /// version and cost stored in `phc`, not with `self.params`, so the configured cost only
    /// matters for new hashes.
    fn verify_stored(&self, password: &str, phc: &str) -> Option<bool> {
        let hash = PasswordHash::new(phc).ok()?;
        let algorithm = Algorithm::try_from(hash.algorithm).ok()?;
        let version = match hash.version {
            Some(version) => Version::try_from(version).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&hash).ok()?;
        let expected = hash.hash?;
        let mut salt = [0u8; 64];
        let salt = hash.salt?.decode_b64(&mut salt).ok()?;
        let mut computed = vec![0u8; expected.len()];
        let argon2 = Argon2::new(algorithm, version, params.clone());
        self.blocks
            .with(params.block_count(), |blocks| {
                argon2.hash_password_into_with_memory(
                    password.as_bytes(),
                    salt,
                    &mut computed,
                    blocks,
                )
            })
            .ok()?;
        // `Output`'s equality is constant time.
        Some(Output::new(&computed).ok()? == expected)
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

    /// Hashes written by argon2's own `PasswordHasher` (what earlier builds stored) verify, and
    /// the hasher's own hashes verify with argon2's `PasswordVerifier`.
    #[test]
    fn hashes_stay_compatible_with_argon2s_phc_api() {
        use argon2::{PasswordHasher as _, PasswordVerifier as _};
        let params = Params::new(8, 1, 1, None).unwrap();
        let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let theirs = argon2
            .hash_password(b"pw-123456789", &salt)
            .unwrap()
            .to_string();
        assert!(hasher().verify("pw-123456789", &theirs));
        assert!(!hasher().verify("pw-123456788", &theirs));
        let ours = hasher().hash("pw-123456789").unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"pw-123456789", &parsed)
                .is_ok()
        );
    }

    /// Finding 2 of issue 21: the working memory of a hash is kept for the next one instead of
    /// being left to the allocator, and is zeroed when kept.
    #[test]
    fn parallel_logins_reuse_the_working_memory_of_a_hash() {
        let hasher = hasher();
        for _ in 0..3 {
            hasher.hash("very-strong-password-123").unwrap();
        }
        let kept = crate::lock::unpoisoned(&hasher.blocks.0);
        assert_eq!(kept.len(), 1, "one buffer, reused");
        assert!(
            kept[0]
                .iter()
                .all(|block| block.as_ref().iter().all(|word| *word == 0))
        );
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
