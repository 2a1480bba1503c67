//! A run's event stream: frames with `<epoch_ms>-<seq>` ids, a bounded replay buffer for
//! `Last-Event-ID` reconnects, and live subscribers.
//!
//! Live subscribers get every frame through their own unbounded channel, so a slow client never
//! loses frames; the ring buffer only serves reconnects (`docs/gateway-contract.md` §5.2).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::mpsc;

/// One published frame. `data` is the serialised JSON, written once.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// `<epoch_ms>-<seq>`.
    pub id: String,
    /// The event name.
    pub event: String,
    /// The JSON data, one line.
    pub data: Arc<str>,
    seq: u64,
}

/// What a subscriber receives: the frames it missed, then live ones until the run ends.
#[derive(Debug)]
pub struct Subscription {
    /// Retained frames after the cursor, to send first.
    pub backlog: Vec<Frame>,
    /// Live frames; closes when the run finishes.
    pub live: mpsc::UnboundedReceiver<Frame>,
}

/// Why a subscription could not resume.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    /// The id the client asked to resume after.
    pub requested: String,
    /// The oldest retained id.
    pub earliest: String,
    /// The newest retained id.
    pub latest: String,
}

#[derive(Debug)]
struct Inner {
    frames: VecDeque<Frame>,
    next_seq: u64,
    finished: bool,
    subscribers: Vec<mpsc::UnboundedSender<Frame>>,
}

/// The stream of one run.
#[derive(Debug)]
pub struct RunStream {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl RunStream {
    /// A stream keeping the last `capacity` frames.
    pub fn new(capacity: usize) -> RunStream {
        RunStream {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                frames: VecDeque::new(),
                next_seq: 0,
                finished: false,
                subscribers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the buffer inconsistent (each update is
        // a single push), so a poisoned lock is safe to keep using.
        crate::lock::unpoisoned(&self.inner)
    }

    /// Publishes a frame to the buffer and every live subscriber. Ignored after [`finish`].
    ///
    /// [`finish`]: RunStream::finish
    pub fn publish(&self, event: &str, data: &Value) {
        let data: Arc<str> =
            Arc::from(serde_json::to_string(data).unwrap_or_else(|_| "null".into()));
        let mut inner = self.lock();
        if inner.finished {
            return;
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let frame = Frame {
            id: format!("{}-{seq}", crate::clock::epoch_ms()),
            event: event.to_string(),
            data,
            seq,
        };
        inner
            .subscribers
            .retain(|tx| tx.send(frame.clone()).is_ok());
        inner.frames.push_back(frame);
        if inner.frames.len() > self.capacity {
            inner.frames.pop_front();
        }
    }

    /// Marks the run finished and closes every live subscription.
    pub fn finish(&self) {
        let mut inner = self.lock();
        inner.finished = true;
        inner.subscribers.clear();
    }

    /// True once [`RunStream::finish`] ran.
    pub fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// Subscribes from the start of the retained window (`after = None`) or after the frame with
    /// id `after`. A cursor older than the window, or unknown, is a [`Gap`].
    pub fn subscribe(&self, after: Option<&str>) -> Result<Subscription, Gap> {
        let mut inner = self.lock();
        let backlog: Vec<Frame> = match after {
            None => inner.frames.iter().cloned().collect(),
            Some(cursor) => {
                let seq = cursor
                    .rsplit_once('-')
                    .and_then(|(_, seq)| seq.parse::<u64>().ok());
                let oldest = inner.frames.front().map(|f| f.seq);
                let retained = match (seq, oldest) {
                    (Some(seq), Some(oldest)) => seq + 1 >= oldest && seq < inner.next_seq,
                    // Nothing is retained yet: only "before the first frame" is resumable.
                    (Some(seq), None) => seq < inner.next_seq && inner.next_seq == 0,
                    (None, _) => false,
                };
                if !retained {
                    return Err(Gap {
                        requested: cursor.to_string(),
                        earliest: inner
                            .frames
                            .front()
                            .map(|f| f.id.clone())
                            .unwrap_or_default(),
                        latest: inner
                            .frames
                            .back()
                            .map(|f| f.id.clone())
                            .unwrap_or_default(),
                    });
                }
                let seq = seq.unwrap_or(0);
                inner
                    .frames
                    .iter()
                    .filter(|f| f.seq > seq)
                    .cloned()
                    .collect()
            }
        };
        let (tx, live) = mpsc::unbounded_channel();
        if !inner.finished {
            inner.subscribers.push(tx);
        }
        Ok(Subscription { backlog, live })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_subscriber_sees_the_backlog_then_live_frames_then_the_end() {
        let stream = RunStream::new(4);
        stream.publish("metadata", &json!({"run_id": "r"}));
        let mut sub = stream.subscribe(None).unwrap();
        stream.publish("values", &json!({}));
        stream.finish();
        assert_eq!(sub.backlog.len(), 1);
        assert!(sub.backlog[0].id.ends_with("-0"));
        assert_eq!(sub.live.recv().await.unwrap().event, "values");
        assert!(sub.live.recv().await.is_none());
    }

    #[test]
    fn resuming_after_an_id_skips_what_the_client_saw() {
        let stream = RunStream::new(4);
        for _ in 0..3 {
            stream.publish("values", &json!({}));
        }
        let first = stream.subscribe(None).unwrap().backlog[0].id.clone();
        let sub = stream.subscribe(Some(&first)).unwrap();
        assert_eq!(sub.backlog.len(), 2);
    }

    #[test]
    fn a_cursor_older_than_the_window_is_a_gap() {
        let stream = RunStream::new(2);
        for _ in 0..5 {
            stream.publish("values", &json!({}));
        }
        let gap = stream.subscribe(Some("1-0")).unwrap_err();
        assert!(
            gap.earliest.ends_with("-3") && gap.latest.ends_with("-4"),
            "{gap:?}"
        );
        assert!(
            stream.subscribe(Some("1-2")).is_ok(),
            "the frame just before the window"
        );
        assert!(stream.subscribe(Some("garbage")).is_err());
    }
}
