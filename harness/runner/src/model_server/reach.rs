//! Whether each call the recording proxy forwarded got an HTTP answer from the upstream (issue
//! 48). A provider's own error answer (a 400, a 429, a 529 with its body) is a real answer, and
//! recording it is right; a transport failure before any answer (no connection, DNS, TLS, a
//! reset before the status line, no answer within the call's time limit, a request that could not
//! be signed) is not, and a fixture built from it would replay "could not connect" as if the
//! provider had said so. The proxy counts the three kinds as it goes ([`ReachTally`]); the
//! fixture built at the end carries the count ([`UpstreamReach`]), and `keyless record` refuses
//! to write a fixture with an unreached call unless asked to.
//!
//! A stream that breaks once the upstream has answered (`RemoteProtocolError`) did get an
//! answer: it is counted as answered, and recorded as the failure it is.

use parking_lot::Mutex;

/// How the calls of one recording went at the upstream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamReach {
    /// Calls the upstream answered with a success status.
    pub answered: usize,
    /// Calls the upstream answered with its own error status (a 400, a 429, a 529).
    pub provider_errors: usize,
    /// Calls that never got an HTTP answer from the upstream.
    pub unreached: usize,
    /// The first of those, to name in the error.
    pub first_unreached: Option<Unreached>,
}

/// A call that never got an HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    /// The call's index in the recording.
    pub call_index: usize,
    /// Why, as the transport said it (redacted): the class the gateway's client raises
    /// (`APIConnectionError`, `APITimeoutError`) and every cause, e.g. `APIConnectionError:
    /// error sending request for url (…): client error (Connect): tcp connect error: Connection
    /// refused (os error 111)`.
    pub failure: String,
}

impl UpstreamReach {
    /// All the calls counted.
    pub fn calls(&self) -> usize {
        self.answered + self.provider_errors + self.unreached
    }

    /// The summary line: `<n> model call(s): <a> answered by the upstream, <e> answered with
    /// the provider's error, <u> never reached it`.
    pub fn summary(&self) -> String {
        format!(
            "{} model call(s): {} answered by the upstream, {} answered with the provider's \
             error, {} never reached it",
            self.calls(),
            self.answered,
            self.provider_errors,
            self.unreached
        )
    }
}

/// The proxy's running count, shared by its calls.
#[derive(Debug, Default)]
pub(super) struct ReachTally {
    reach: Mutex<UpstreamReach>,
}

impl ReachTally {
    /// A call the upstream answered with a success status.
    pub(super) fn answered(&self) {
        self.reach.lock().answered += 1;
    }

    /// A call the upstream answered with its own error status.
    pub(super) fn provider_error(&self) {
        self.reach.lock().provider_errors += 1;
    }

    /// A call that never got an HTTP answer, and why.
    pub(super) fn unreached(&self, call_index: usize, failure: String) {
        let mut reach = self.reach.lock();
        reach.unreached += 1;
        reach.first_unreached.get_or_insert(Unreached {
            call_index,
            failure,
        });
    }

    /// The count so far.
    pub(super) fn reach(&self) -> UpstreamReach {
        self.reach.lock().clone()
    }
}

/// `err` and each of its causes, `: `-separated, each once (reqwest's own text names the URL
/// but not why: the cause, `Connection refused`, is further down).
pub(super) fn with_causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_each_kind_and_keeps_the_first_unreached_call() {
        let tally = ReachTally::default();
        tally.answered();
        tally.provider_error();
        tally.unreached(2, "APIConnectionError: refused".into());
        tally.unreached(3, "APITimeoutError: later".into());
        let reach = tally.reach();
        assert_eq!(
            (reach.answered, reach.provider_errors, reach.unreached),
            (1, 1, 2)
        );
        assert_eq!(reach.first_unreached.map(|first| first.call_index), Some(2));
        assert_eq!(
            tally.reach().summary(),
            "4 model call(s): 1 answered by the upstream, 1 answered with the provider's error, \
             2 never reached it"
        );
    }
}
