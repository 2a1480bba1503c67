//! `ignore_events` (issue 47): event types left out of a golden on purpose. A framework may
//! interleave its own telemetry with the stream a frontend reads (Agno's AG-UI router sends
//! `RAW` events inside text messages); where those land is the framework's internals, so every
//! upgrade would churn goldens that no frontend reads. The named types are dropped from a run's
//! frames before they are reduced to the golden's shapes, and the run counts what each name
//! dropped. The framing check still sees every frame: only the golden stops guarding them.

use std::collections::{BTreeMap, BTreeSet};

/// The event types a fixture's golden leaves out (by the name its shape carries: the SSE event,
/// or the JSON `type` for a dialect whose frames name themselves).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoredEvents(BTreeSet<String>);

impl IgnoredEvents {
    /// The types `names` names.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> IgnoredEvents {
        IgnoredEvents(names.into_iter().map(Into::into).collect())
    }

    /// These types and `more`'s (a fixture's own rule over the configuration's).
    pub fn with(&self, more: &IgnoredEvents) -> IgnoredEvents {
        IgnoredEvents(self.0.union(&more.0).cloned().collect())
    }

    /// Whether no type is ignored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a frame named `name` is left out.
    pub fn contains(&self, name: Option<&str>) -> bool {
        name.is_some_and(|name| self.0.contains(name))
    }

    /// How many of the frames named `names` each ignored type drops (every type listed, 0 for
    /// one that dropped nothing, so a rule that no longer matches shows).
    pub fn count<'a>(&self, names: impl IntoIterator<Item = Option<&'a str>>) -> Dropped {
        let mut counts: BTreeMap<String, usize> =
            self.0.iter().map(|name| (name.clone(), 0)).collect();
        for name in names.into_iter().flatten() {
            if let Some(count) = counts.get_mut(name) {
                *count += 1;
            }
        }
        Dropped(counts)
    }
}

/// How many frames each ignored event type dropped from a run's golden.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped(pub BTreeMap<String, usize>);

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts: Vec<String> = (self.0.iter())
            .map(|(name, count)| format!("{count} {name}"))
            .collect();
        write!(
            f,
            "ignore_events left {} frame(s) out of the golden",
            counts.join(", ")
        )
    }
}
