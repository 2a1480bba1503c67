//! `keyless test --partition`: one shard of the fixtures, so a CI matrix of N machines runs
//! each fixture exactly once. The two kinds are cargo-nextest's, with its assignment:
//!
//! - `count:K/N`: the fixtures (after the names given on the command line), sorted by name, are
//!   dealt round-robin: the one at index `i` (from 0) is in shard `i % N + 1`. Even shards, but
//!   adding a fixture moves every later one to another shard.
//! - `hash:K/N`: a fixture is in shard `xxh64(name, seed 0) % N + 1`, its name being its file
//!   stem (`write_read_file.flash`): the assignment of a fixture never depends on the others, so
//!   adding one moves nothing, at the price of uneven shards when there are few fixtures. This is
//!   nextest's hash (`xxh64(test_name.as_bytes(), 0)`, fixed for its 0.9 series).
//!
//! A bare `K/N` is `count:K/N`.

use std::fmt;
use std::str::FromStr;

/// How fixtures are assigned to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Round-robin by index in name order.
    Count,
    /// By a stable hash of the name.
    Hash,
}

/// One shard of N: `--partition count:K/N` or `hash:K/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// The assignment.
    pub kind: Kind,
    /// The shard, from 1.
    pub shard: u64,
    /// How many shards.
    pub total: u64,
}

/// Why a `--partition` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// Not `[count:|hash:]K/N`.
    #[error("--partition {0:?}: expected count:K/N or hash:K/N (e.g. hash:1/3)")]
    Format(String),
    /// K or N is not a number.
    #[error("--partition {input:?}: {part:?} is not a whole number")]
    Number {
        /// The whole value.
        input: String,
        /// The part that is not a number.
        part: String,
    },
    /// K is not between 1 and N.
    #[error("--partition {input:?}: the shard must be between 1 and {total}, inclusive")]
    Range {
        /// The whole value.
        input: String,
        /// N.
        total: u64,
    },
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(input: &str) -> Result<Partition, PartitionError> {
        let (kind, rest) = if let Some(rest) = input.strip_prefix("hash:") {
            (Kind::Hash, rest)
        } else if let Some(rest) = input.strip_prefix("count:") {
            (Kind::Count, rest)
        } else {
            (Kind::Count, input)
        };
        let (shard, total) = rest
            .split_once('/')
            .ok_or_else(|| PartitionError::Format(input.to_owned()))?;
        let number = |part: &str| {
            part.parse::<u64>().map_err(|_| PartitionError::Number {
                input: input.to_owned(),
                part: part.to_owned(),
            })
        };
        let (shard, total) = (number(shard)?, number(total)?);
        if !(1..=total).contains(&shard) {
            return Err(PartitionError::Range {
                input: input.to_owned(),
                total,
            });
        }
        Ok(Partition { kind, shard, total })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Count => "count",
            Kind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

impl Partition {
    /// Whether the fixture `name`, at `index` in name order, is in this shard.
    pub fn holds(&self, name: &str, index: usize) -> bool {
        let bucket = match self.kind {
            Kind::Count => index as u64 % self.total,
            Kind::Hash => xxhash_rust::xxh64::xxh64(name.as_bytes(), 0) % self.total,
        };
        bucket == self.shard - 1
    }

    /// The items of this shard, `names` being sorted by name.
    pub fn select<T>(&self, items: Vec<T>, name: impl Fn(&T) -> String) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(index, item)| self.holds(&name(item), *index))
            .map(|(_, item)| item)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_parse_as_nextest_writes_them() {
        let cases = [
            ("count:1/2", Ok((Kind::Count, 1, 2))),
            ("hash:3/3", Ok((Kind::Hash, 3, 3))),
            ("2/5", Ok((Kind::Count, 2, 5))),
            ("hash:0/2", Err("between 1 and 2")),
            ("count:3/2", Err("between 1 and 2")),
            ("hash:1", Err("expected count:K/N")),
            ("slice:1/2", Err("\"slice:1\" is not")),
            ("hash:1/n", Err("\"n\" is not")),
            ("hash:1/2/3", Err("\"2/3\" is not")),
        ];
        for (input, expected) in cases {
            let parsed = input.parse::<Partition>();
            match (parsed, expected) {
                (Ok(partition), Ok((kind, shard, total))) => {
                    assert_eq!(partition, Partition { kind, shard, total }, "{input}");
                    let shown = partition.to_string();
                    assert!(input.ends_with(&format!("{shard}/{total}")), "{shown}");
                }
                (Err(err), Err(fragment)) => {
                    assert!(err.to_string().contains(fragment), "{input}: {err}")
                }
                (parsed, expected) => panic!("{input}: {parsed:?}, expected {expected:?}"),
            }
        }
    }

    /// The shards of both kinds are disjoint and together hold every name, for several N.
    #[test]
    fn the_shards_of_a_partition_are_disjoint_and_cover_every_fixture() {
        let names: Vec<String> = (0..23).map(|i| format!("fixture_{i:02}.flash")).collect();
        for kind in [Kind::Count, Kind::Hash] {
            for total in 1..=5 {
                let mut seen: Vec<String> = Vec::new();
                for shard in 1..=total {
                    let partition = Partition { kind, shard, total };
                    let mine = partition.select(names.clone(), Clone::clone);
                    assert!(
                        mine.iter().all(|name| !seen.contains(name)),
                        "{partition}: a fixture in two shards"
                    );
                    seen.extend(mine);
                }
                seen.sort();
                assert_eq!(seen, names, "{kind:?} over {total}: not every fixture ran");
            }
        }
    }

    /// Counted shards deal by index; hashed ones are nextest's xxh64 with seed 0 (values from
    /// the reference implementation's published test vectors: xxh64("", 0) and
    /// xxh64("abc", 0)), and a fixture's hashed shard does not move when others are added.
    #[test]
    fn assignments_are_nextests() {
        let count = Partition {
            kind: Kind::Count,
            shard: 2,
            total: 3,
        };
        let dealt = count.select(vec!["a", "b", "c", "d", "e"], |s| (*s).to_owned());
        assert_eq!(dealt, ["b", "e"]);
        assert_eq!(xxhash_rust::xxh64::xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxhash_rust::xxh64::xxh64(b"abc", 0), 0x44BC_2CF5_AD77_0999);
        for total in [2, 3, 7] {
            for name in ["", "abc"] {
                let hash = xxhash_rust::xxh64::xxh64(name.as_bytes(), 0);
                let shard = hash % total + 1;
                let partition = Partition {
                    kind: Kind::Hash,
                    shard,
                    total,
                };
                assert!(
                    partition.holds(name, 0) && partition.holds(name, 99),
                    "{name}"
                );
            }
        }
    }
}
