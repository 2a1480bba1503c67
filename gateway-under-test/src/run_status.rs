//! The vocabulary of a run's life, one type per concept for the HTTP layer, the runtime and the
//! store: [`RunStatus`] and the [`MultitaskStrategy`] that decides what a new run does to the
//! run already active on its thread (`docs/gateway-contract.md` §4.1, §4.5).
//!
//! Both travel as lowercase strings (JSON and the `runs` table) and parse back with
//! [`FromStr`], whose error names the value and the accepted ones.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// A string that names no variant of one of these enums.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{value}' (expected one of: {expected})")]
pub struct UnknownVariant {
    /// What was being parsed (`run status`, `multitask strategy`).
    pub kind: &'static str,
    /// The text that matched nothing.
    pub value: String,
    /// The accepted names, comma-separated.
    pub expected: String,
}

/// An enum that travels as one of a fixed set of names.
trait Named: Copy + 'static {
    /// What the enum is called in errors.
    const KIND: &'static str;
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// The wire and database name.
    fn name(self) -> &'static str;
}

fn parse_name<T: Named>(text: &str) -> Result<T, UnknownVariant> {
    T::ALL
        .iter()
        .copied()
        .find(|variant| variant.name() == text)
        .ok_or_else(|| UnknownVariant {
            kind: T::KIND,
            value: text.to_string(),
            expected: T::ALL
                .iter()
                .map(|variant| variant.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Where a run is in its life (§4.5's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Recorded, not yet started by its worker.
    Pending,
    /// The worker is executing it.
    Running,
    /// Finished with a final answer.
    Success,
    /// Finished with an error (an escaped graph error or an LLM fallback message).
    Error,
    /// Stopped by a time limit (part of the contract; this gateway sets no time limit).
    Timeout,
    /// Cancelled (by a client, a disconnect, a newer run or shutdown).
    Interrupted,
}

impl RunStatus {
    /// Every status, in declaration order.
    pub const ALL: &'static [RunStatus] = &[
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Success,
        RunStatus::Error,
        RunStatus::Timeout,
        RunStatus::Interrupted,
    ];

    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// What starting a run does when another run is active on the same thread (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MultitaskStrategy {
    /// Refuse the new run with 409.
    #[default]
    Reject,
    /// Cancel the active run, then start; the steps it already checkpointed are kept.
    Rollback,
    /// Cancel the active run, then start.
    Interrupt,
}

impl MultitaskStrategy {
    /// Every strategy, in declaration order.
    pub const ALL: &'static [MultitaskStrategy] = &[
        MultitaskStrategy::Reject,
        MultitaskStrategy::Rollback,
        MultitaskStrategy::Interrupt,
    ];

    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            MultitaskStrategy::Reject => "reject",
            MultitaskStrategy::Rollback => "rollback",
            MultitaskStrategy::Interrupt => "interrupt",
        }
    }
}

impl Named for RunStatus {
    const KIND: &'static str = "run status";
    const ALL: &'static [RunStatus] = RunStatus::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Named for MultitaskStrategy {
    const KIND: &'static str = "multitask strategy";
    const ALL: &'static [MultitaskStrategy] = MultitaskStrategy::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl FromStr for RunStatus {
    type Err = UnknownVariant;

    fn from_str(text: &str) -> Result<RunStatus, UnknownVariant> {
        parse_name(text)
    }
}

impl FromStr for MultitaskStrategy {
    type Err = UnknownVariant;

    fn from_str(text: &str) -> Result<MultitaskStrategy, UnknownVariant> {
        parse_name(text)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for MultitaskStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_text_and_json() {
        for status in RunStatus::ALL {
            assert_eq!(status.as_str().parse::<RunStatus>(), Ok(*status));
            assert_eq!(serde_json::json!(status), status.as_str());
        }
        for strategy in MultitaskStrategy::ALL {
            assert_eq!(
                strategy.as_str().parse::<MultitaskStrategy>(),
                Ok(*strategy)
            );
            assert_eq!(serde_json::json!(strategy), strategy.as_str());
        }
    }

    #[test]
    fn an_unknown_name_is_an_error_that_lists_the_accepted_ones() {
        let cases = [
            (
                "enqueue".parse::<MultitaskStrategy>().unwrap_err(),
                "unknown multitask strategy 'enqueue' (expected one of: reject, rollback, interrupt)",
            ),
            (
                "Success".parse::<RunStatus>().unwrap_err(),
                "unknown run status 'Success' (expected one of: pending, running, success, error, timeout, interrupted)",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }
}
