//! What the writer knows of the watches' health, and what it tells the
//! operator. The policy: routine watch ends (410 Gone, a watch the server
//! closed) only at debug; ONE warning when the API server stops answering
//! (naming the kinds whose watches broke), then at most one "still
//! unreachable" line per [`NOTE_EVERY`]; ONE info line when it answers
//! again (with how long it was gone); an error only once a kind has been
//! out of step longer than `staleAfterSeconds`. A kind the server answers
//! with an error (500, 403) while it answers others gets its own warning
//! and its own info line when back in step, except in the first
//! [`RECOVERING`] after an outage: a kube-apiserver that just started
//! refuses requests until its authorizer has synced (`forbidden`, the
//! roles "not found"), and that is part of the outage.
//!
//! Decisions are returned as [`Note`]s so the policy is testable without
//! a log; the writer emits them.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::failure::Failure;
use crate::cluster::Kind;
use crate::cluster::sync_stats::KINDS;

/// Failures that start an outage within this window are named together
/// in its one warning.
pub const GATHER: Duration = Duration::from_secs(1);
/// At most one "still unreachable" line this often.
pub const NOTE_EVERY: Duration = Duration::from_secs(15);
/// A kind refused this soon after the API server answered again is not
/// warned about yet; refused again later, it is.
pub const RECOVERING: Duration = Duration::from_secs(10);

/// A log line the policy decided on.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// WARN: the API server stopped answering (`before_first_contact`:
    /// it never answered since the start).
    Unreachable {
        kinds: String,
        error: String,
        before_first_contact: bool,
        waited: Duration,
    },
    /// INFO: still no answer.
    StillUnreachable {
        waited: Duration,
        error: String,
        retry_in: Duration,
        before_first_contact: bool,
    },
    /// INFO: the API server answers (`waited` zero at a start without
    /// trouble).
    Reached {
        waited: Duration,
        before_first_contact: bool,
    },
    /// WARN: the server answers, but not for this kind.
    KindFailing { kind: Kind, error: String },
    /// INFO: a kind that had its own warning is in step again.
    KindBack { kind: Kind, after: Duration },
    /// ERROR: kinds out of step longer than `staleAfterSeconds`.
    Stale {
        kinds: String,
        error: String,
        stale_after: Duration,
        unreachable_for: Option<Duration>,
    },
    /// INFO: every kind in step again.
    Fresh { stale_for: Duration },
}

impl Note {
    pub fn emit(&self, url: &str) {
        match self {
            Note::Unreachable {
                kinds,
                error,
                before_first_contact: true,
                waited,
            } => tracing::warn!(
                %url, %kinds, %error, waited_s = secs(*waited),
                "cannot reach the API server yet; retrying with back-off (up to 30s); \
                 /readyz fails until every kind is listed"
            ),
            Note::Unreachable { kinds, error, .. } => tracing::warn!(
                %url, %kinds, %error,
                "API server unreachable: the watches of `kinds` broke; serving the last \
                 view, retrying with back-off (up to 30s)"
            ),
            Note::StillUnreachable {
                waited,
                error,
                retry_in,
                before_first_contact,
            } => {
                let what = if *before_first_contact {
                    "still waiting for the API server"
                } else {
                    "API server still unreachable"
                };
                tracing::info!(
                    %url, %error, waited_s = secs(*waited), retry_in_s = secs(*retry_in),
                    "{what} after {}", human(*waited)
                );
            }
            Note::Reached {
                waited,
                before_first_contact: true,
            } => tracing::info!(
                %url, waited_s = secs(*waited),
                "connected to the API server after {}", human(*waited)
            ),
            Note::Reached { waited, .. } => tracing::info!(
                %url, down_s = secs(*waited),
                "API server reachable again after {}; relisting", human(*waited)
            ),
            Note::KindFailing { kind, error } => tracing::warn!(
                %url, kind = kind.name(), %error,
                "the API server fails the watch of {}; relisting with back-off", kind.name()
            ),
            Note::KindBack { kind, after } => tracing::info!(
                kind = kind.name(),
                after_s = secs(*after),
                "watch of {} back in step after {}",
                kind.name(),
                human(*after)
            ),
            Note::Stale {
                kinds,
                error,
                stale_after,
                unreachable_for,
            } => tracing::error!(
                %url, %kinds, %error, stale_after_s = stale_after.as_secs(),
                unreachable_s = unreachable_for.map(secs),
                "the watches of `kinds` are out of step for longer than \
                 staleAfterSeconds; view is stale, /readyz fails"
            ),
            Note::Fresh { stale_for } => tracing::info!(
                stale_s = secs(*stale_for),
                "every watch in step again; view is fresh after {} stale",
                human(*stale_for)
            ),
        }
    }
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

fn human(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

#[derive(Debug, Default, Clone)]
struct KindHealth {
    listed_once: bool,
    failing_since: Option<Instant>,
    last_error: String,
    /// This kind's failure was warned about on its own (not as part of an
    /// outage), so its return is worth an info line.
    warned: bool,
}

#[derive(Debug)]
struct Outage {
    /// Since when the server has not answered (the start, before first
    /// contact).
    since: Instant,
    first_failure: Instant,
    kinds: [bool; KINDS],
    last_error: String,
    warned: bool,
    last_note: Instant,
}

impl Outage {
    /// The one warning of this outage.
    fn warn(&mut self, before_first_contact: bool, now: Instant) -> Note {
        self.warned = true;
        self.last_note = now;
        Note::Unreachable {
            kinds: names(Kind::ALL.into_iter().filter(|k| self.kinds[*k as usize])),
            error: self.last_error.clone(),
            before_first_contact,
            waited: now.saturating_duration_since(self.since),
        }
    }

    /// A "still unreachable" line, if one is due.
    fn still_unreachable(
        &mut self,
        before_first_contact: bool,
        retry_in: Duration,
        now: Instant,
    ) -> Option<Note> {
        if !self.warned || now.saturating_duration_since(self.last_note) < NOTE_EVERY {
            return None;
        }
        self.last_note = now;
        Some(Note::StillUnreachable {
            waited: now.saturating_duration_since(self.since),
            error: self.last_error.clone(),
            retry_in,
            before_first_contact,
        })
    }
}

/// The writer's view of every watch and of the API server.
#[derive(Debug)]
pub struct Health {
    stale_after: Duration,
    started: Instant,
    kinds: [KindHealth; KINDS],
    outage: Option<Outage>,
    reached_once: bool,
    /// When the last outage ended.
    recovered_at: Option<Instant>,
    stale_since: Option<Instant>,
}

fn names(kinds: impl Iterator<Item = Kind>) -> String {
    let mut out = String::new();
    for k in kinds {
        if !out.is_empty() {
            out.push_str(", ");
        }
        let _ = write!(out, "{}", k.name());
    }
    out
}

impl Health {
    pub fn new(stale_after: Duration, started: Instant) -> Self {
        Self {
            stale_after,
            started,
            kinds: Default::default(),
            outage: None,
            reached_once: false,
            recovered_at: None,
            stale_since: None,
        }
    }

    /// Every kind's initial list is in the store.
    pub fn all_listed(&self) -> bool {
        self.kinds.iter().all(|k| k.listed_once)
    }

    /// Since when the view may lag: the oldest failure not yet relisted.
    pub fn lagging_since(&self) -> Option<Instant> {
        self.kinds.iter().filter_map(|k| k.failing_since).min()
    }

    pub fn is_stale(&self) -> bool {
        self.stale_since.is_some()
    }

    /// A watch of `kind` ended with `failure`; it retries after `retry_in`.
    pub fn failed(
        &mut self,
        kind: Kind,
        failure: Failure,
        error: String,
        retry_in: Duration,
        now: Instant,
    ) -> Vec<Note> {
        tracing::debug!(
            kind = kind.name(), ?failure, %error, retry_in_ms = retry_in.as_millis() as u64,
            "watch ended; the kind will be relisted"
        );
        let before_first_contact = !self.reached_once;
        let k = &mut self.kinds[kind as usize];
        k.failing_since.get_or_insert(now);
        k.last_error.clone_from(&error);
        let mut notes = Vec::new();
        match failure {
            Failure::Expired => {}
            Failure::Unreachable => {
                let since = if before_first_contact {
                    self.started
                } else {
                    now
                };
                let outage = self.outage.get_or_insert_with(|| Outage {
                    since,
                    first_failure: now,
                    kinds: [false; KINDS],
                    last_error: String::new(),
                    warned: false,
                    last_note: now,
                });
                outage.kinds[kind as usize] = true;
                outage.last_error = error;
                if !outage.warned && outage.kinds.iter().all(|k| *k) {
                    notes.push(outage.warn(before_first_contact, now));
                } else {
                    notes.extend(outage.still_unreachable(before_first_contact, retry_in, now));
                }
            }
            // While the server is down, its first answers are often errors
            // (it is still starting): part of the same outage.
            Failure::Refused if self.outage.is_some() => {
                if let Some(o) = &mut self.outage {
                    o.last_error = error;
                    notes.extend(o.still_unreachable(before_first_contact, retry_in, now));
                }
            }
            Failure::Refused
                if self
                    .recovered_at
                    .is_some_and(|t| now.saturating_duration_since(t) < RECOVERING) =>
            {
                tracing::debug!(
                    kind = kind.name(), %error,
                    "refused while the API server is still starting; warned if it lasts"
                );
            }
            Failure::Refused if !k.warned => {
                k.warned = true;
                notes.push(Note::KindFailing { kind, error });
            }
            Failure::Refused => {}
        }
        notes
    }

    /// The server answered a list or a watch. Returns the notes and whether
    /// the watches backing off should retry now (an outage just ended).
    pub fn answered(&mut self, now: Instant) -> (Vec<Note>, bool) {
        if self.reached_once && self.outage.is_none() {
            return (Vec::new(), false);
        }
        let before_first_contact = !self.reached_once;
        self.reached_once = true;
        let Some(o) = self.outage.take() else {
            let waited = now.saturating_duration_since(self.started);
            let note = Note::Reached {
                waited,
                before_first_contact,
            };
            return (vec![note], false);
        };
        self.recovered_at = Some(now);
        let waited = now.saturating_duration_since(o.since);
        let note = (o.warned || before_first_contact).then_some(Note::Reached {
            waited,
            before_first_contact,
        });
        if note.is_none() {
            tracing::debug!(
                down_ms = waited.as_millis() as u64,
                "API server answered again after a short interruption"
            );
        }
        (note.into_iter().collect(), true)
    }

    /// `kind`'s (re)list completed: it is in step.
    pub fn listed(&mut self, kind: Kind, now: Instant) -> Vec<Note> {
        let mut notes = Vec::new();
        let k = &mut self.kinds[kind as usize];
        if let Some(since) = k.failing_since.take() {
            let after = now.saturating_duration_since(since);
            if std::mem::take(&mut k.warned) {
                notes.push(Note::KindBack { kind, after });
            } else {
                tracing::debug!(
                    kind = kind.name(),
                    after_ms = after.as_millis() as u64,
                    "watch back in step after a relist"
                );
            }
        }
        if !k.listed_once {
            k.listed_once = true;
            tracing::debug!(kind = kind.name(), "initial list complete");
        }
        notes.extend(self.tick(now));
        notes
    }

    /// Time passed: warn about a gathered outage, and decide staleness.
    pub fn tick(&mut self, now: Instant) -> Vec<Note> {
        let mut notes = Vec::new();
        let before_first_contact = !self.reached_once;
        if let Some(o) = self
            .outage
            .as_mut()
            .filter(|o| !o.warned && now.saturating_duration_since(o.first_failure) >= GATHER)
        {
            notes.push(o.warn(before_first_contact, now));
        }
        let late = |k: &KindHealth| {
            k.failing_since
                .is_some_and(|t| now.saturating_duration_since(t) > self.stale_after)
        };
        let stale = self.kinds.iter().any(late);
        match (stale, self.stale_since) {
            (true, None) => {
                self.stale_since = Some(now);
                let late_kinds = Kind::ALL
                    .into_iter()
                    .filter(|k| late(&self.kinds[*k as usize]));
                let error = Kind::ALL
                    .into_iter()
                    .map(|k| &self.kinds[k as usize])
                    .find(|k| late(k))
                    .map(|k| k.last_error.clone())
                    .unwrap_or_default();
                notes.push(Note::Stale {
                    kinds: names(late_kinds),
                    error,
                    stale_after: self.stale_after,
                    unreachable_for: self
                        .outage
                        .as_ref()
                        .map(|o| now.saturating_duration_since(o.since)),
                });
            }
            (false, Some(since)) => {
                self.stale_since = None;
                notes.push(Note::Fresh {
                    stale_for: now.saturating_duration_since(since),
                });
            }
            _ => {}
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALE: Duration = Duration::from_secs(60);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// Every kind listed once at `t0`, then reached.
    fn serving(t0: Instant) -> Health {
        let mut h = Health::new(STALE, t0);
        let (notes, _) = h.answered(t0);
        assert!(matches!(notes[..], [Note::Reached { .. }]));
        for k in Kind::ALL {
            assert!(h.listed(k, t0).is_empty());
        }
        assert!(h.all_listed());
        h
    }

    fn fail_all(h: &mut Health, failure: Failure, now: Instant) -> Vec<Note> {
        Kind::ALL
            .into_iter()
            .flat_map(|k| h.failed(k, failure, "refused".into(), Duration::from_secs(1), now))
            .collect()
    }

    #[test]
    fn a_restart_is_one_warning_then_one_info_with_the_downtime() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let notes = fail_all(&mut h, Failure::Unreachable, at(t0, 1000));
        let [Note::Unreachable { kinds, .. }] = &notes[..] else {
            panic!("{notes:?}")
        };
        assert_eq!(
            kinds.split(", ").count(),
            KINDS,
            "names every kind: {kinds}"
        );
        // Retries keep failing: nothing more until NOTE_EVERY has passed.
        for ms in [1200, 2000, 5000] {
            assert!(fail_all(&mut h, Failure::Unreachable, at(t0, ms)).is_empty());
            assert!(h.tick(at(t0, ms)).is_empty());
        }
        let (notes, wake) = h.answered(at(t0, 7000));
        assert!(wake, "the other kinds retry now");
        assert_eq!(
            notes,
            [Note::Reached {
                waited: Duration::from_secs(6),
                before_first_contact: false
            }]
        );
        for k in Kind::ALL {
            assert!(h.listed(k, at(t0, 7100)).is_empty(), "{k:?}");
        }
        assert_eq!(h.lagging_since(), None);
        assert!(!h.is_stale());
    }

    #[test]
    fn a_long_outage_notes_the_wait_and_errors_once_past_stale_after() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        fail_all(&mut h, Failure::Unreachable, at(t0, 0));
        let notes = fail_all(&mut h, Failure::Unreachable, at(t0, 16_000));
        let [Note::StillUnreachable { waited, .. }] = &notes[..] else {
            panic!("{notes:?}")
        };
        assert_eq!(*waited, Duration::from_secs(16));
        let notes = h.tick(at(t0, 61_000));
        let [
            Note::Stale {
                kinds,
                unreachable_for,
                ..
            },
        ] = &notes[..]
        else {
            panic!("{notes:?}")
        };
        assert_eq!(kinds.split(", ").count(), KINDS);
        assert_eq!(*unreachable_for, Some(Duration::from_secs(61)));
        assert!(h.is_stale());
        assert!(h.tick(at(t0, 62_000)).is_empty(), "the error is said once");
        let (notes, _) = h.answered(at(t0, 70_000));
        assert!(matches!(notes[..], [Note::Reached { .. }]));
        let mut back = Vec::new();
        for k in Kind::ALL {
            back.extend(h.listed(k, at(t0, 70_500)));
        }
        assert_eq!(
            back,
            [Note::Fresh {
                stale_for: Duration::from_millis(9500)
            }]
        );
    }

    #[test]
    fn a_partial_outage_is_warned_after_the_gather_window_naming_its_kinds() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let d = Duration::from_secs(1);
        assert!(
            h.failed(
                Kind::Pod,
                Failure::Unreachable,
                "reset".into(),
                d,
                at(t0, 10)
            )
            .is_empty()
        );
        assert!(
            h.failed(
                Kind::Node,
                Failure::Unreachable,
                "reset".into(),
                d,
                at(t0, 20)
            )
            .is_empty()
        );
        assert!(h.tick(at(t0, 500)).is_empty());
        let notes = h.tick(at(t0, 1010));
        assert_eq!(
            notes,
            [Note::Unreachable {
                kinds: "Node, Pod".into(),
                error: "reset".into(),
                before_first_contact: false,
                waited: Duration::from_millis(1000),
            }]
        );
    }

    #[test]
    fn a_blip_shorter_than_the_gather_window_is_not_warned() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let d = Duration::from_millis(200);
        h.failed(
            Kind::Pod,
            Failure::Unreachable,
            "reset".into(),
            d,
            at(t0, 10),
        );
        let (notes, wake) = h.answered(at(t0, 300));
        assert!(notes.is_empty() && wake);
        assert!(h.listed(Kind::Pod, at(t0, 310)).is_empty());
        assert!(h.tick(at(t0, 2000)).is_empty());
    }

    #[test]
    fn routine_watch_ends_say_nothing() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let d = Duration::from_millis(200);
        assert!(
            h.failed(Kind::Pod, Failure::Expired, "410".into(), d, at(t0, 5))
                .is_empty()
        );
        assert!(h.listed(Kind::Pod, at(t0, 50)).is_empty());
        assert!(h.tick(at(t0, 5000)).is_empty());
    }

    #[test]
    fn one_kind_refused_while_others_answer_is_its_own_warning_and_return() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let d = Duration::from_secs(1);
        let notes = h.failed(
            Kind::StatefulSet,
            Failure::Refused,
            "500".into(),
            d,
            at(t0, 0),
        );
        assert_eq!(
            notes,
            [Note::KindFailing {
                kind: Kind::StatefulSet,
                error: "500".into()
            }]
        );
        assert!(
            h.failed(
                Kind::StatefulSet,
                Failure::Refused,
                "500".into(),
                d,
                at(t0, 1000)
            )
            .is_empty()
        );
        assert_eq!(
            h.listed(Kind::StatefulSet, at(t0, 3000)),
            [Note::KindBack {
                kind: Kind::StatefulSet,
                after: Duration::from_secs(3)
            }]
        );
    }

    #[test]
    fn a_kind_refused_just_after_an_outage_is_warned_only_if_it_lasts() {
        let t0 = Instant::now();
        let mut h = serving(t0);
        let d = Duration::from_secs(1);
        fail_all(&mut h, Failure::Unreachable, at(t0, 0));
        h.tick(at(t0, 1500));
        let (notes, _) = h.answered(at(t0, 2000));
        assert!(matches!(notes[..], [Note::Reached { .. }]));
        let refused = "statefulsets.apps is forbidden";
        let early = h.failed(
            Kind::StatefulSet,
            Failure::Refused,
            refused.into(),
            d,
            at(t0, 2100),
        );
        assert!(early.is_empty(), "{early:?}");
        let late = at(t0, 2000) + RECOVERING;
        assert_eq!(
            h.failed(Kind::StatefulSet, Failure::Refused, refused.into(), d, late),
            [Note::KindFailing {
                kind: Kind::StatefulSet,
                error: refused.into()
            }]
        );
    }

    #[test]
    fn starting_before_the_api_server_warns_once_and_says_how_long_it_waited() {
        let t0 = Instant::now();
        let mut h = Health::new(STALE, t0);
        let notes = fail_all(&mut h, Failure::Unreachable, at(t0, 100));
        assert!(matches!(
            notes[..],
            [Note::Unreachable {
                before_first_contact: true,
                ..
            }]
        ));
        // The server comes up but still answers errors: the same wait.
        assert!(fail_all(&mut h, Failure::Refused, at(t0, 2000)).is_empty());
        let (notes, _) = h.answered(at(t0, 3000));
        assert_eq!(
            notes,
            [Note::Reached {
                waited: Duration::from_secs(3),
                before_first_contact: true
            }]
        );
        assert!(!h.all_listed());
    }
}
