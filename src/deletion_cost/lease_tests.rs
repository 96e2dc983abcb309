//! The elector against an in-memory Lease store and a clock the test
//! moves: no API server, no waiting for real leases to expire.

use std::sync::{Arc, Mutex};

use kube::core::Status;

use super::*;

const DURATION: Duration = Duration::from_secs(15);
/// Two thirds of [`DURATION`].
const RENEW_DEADLINE: Duration = Duration::from_secs(10);

/// One Lease as an API server keeps it: a resourceVersion per write, 409
/// for a stale one; or no answer at all once hung.
#[derive(Clone, Default)]
struct FakeLeases(Arc<Mutex<Stored>>);

#[derive(Default)]
struct Stored {
    lease: Option<Lease>,
    version: u64,
    hung: bool,
    /// Answer the next replace with this code instead of writing.
    refuse_replace: Option<u16>,
}

fn error(code: u16, reason: &str) -> kube::Error {
    kube::Error::Api(Status::failure(reason, reason).with_code(code).boxed())
}

impl FakeLeases {
    fn hang(&self) {
        self.0.lock().unwrap().hung = true;
    }

    fn refuse_next_replace(&self, code: u16) {
        self.0.lock().unwrap().refuse_replace = Some(code);
    }

    fn spec(&self) -> LeaseSpec {
        let stored = self.0.lock().unwrap();
        stored.lease.as_ref().unwrap().spec.clone().unwrap()
    }

    fn holder(&self) -> String {
        self.spec().holder_identity.unwrap()
    }

    /// Wait forever when hung, else answer from the store.
    async fn answer<T>(&self, call: impl FnOnce(&mut Stored) -> T) -> T {
        let hung = self.0.lock().unwrap().hung;
        if hung {
            std::future::pending::<()>().await;
        }
        call(&mut self.0.lock().unwrap())
    }
}

impl Stored {
    fn write(&mut self, mut lease: Lease) -> Lease {
        self.version += 1;
        lease.metadata.resource_version = Some(self.version.to_string());
        self.lease = Some(lease.clone());
        lease
    }
}

impl LeaseApi for FakeLeases {
    fn get(&self, _: &str) -> impl Future<Output = Result<Option<Lease>, kube::Error>> + Send {
        let api = self.clone();
        async move { api.answer(|s| Ok(s.lease.clone())).await }
    }

    fn create(&self, lease: &Lease) -> impl Future<Output = Result<Lease, kube::Error>> + Send {
        let (api, lease) = (self.clone(), lease.clone());
        async move {
            api.answer(|s| match s.lease {
                Some(_) => Err(error(409, "AlreadyExists")),
                None => Ok(s.write(lease)),
            })
            .await
        }
    }

    fn replace(
        &self,
        _: &str,
        lease: &Lease,
    ) -> impl Future<Output = Result<Lease, kube::Error>> + Send {
        let (api, lease) = (self.clone(), lease.clone());
        async move {
            api.answer(|s| {
                if let Some(code) = s.refuse_replace.take() {
                    return Err(error(code, "Refused"));
                }
                if lease.metadata.resource_version != Some(s.version.to_string()) {
                    return Err(error(409, "Conflict"));
                }
                Ok(s.write(lease))
            })
            .await
        }
    }
}

/// A replica's own clock, moved by the test.
#[derive(Clone)]
struct Clock(Arc<Mutex<Instant>>);

impl Clock {
    fn new() -> Self {
        Self(Arc::new(Mutex::new(Instant::now())))
    }

    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }

    fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }
}

fn elector(
    api: &FakeLeases,
    clock: &Clock,
    identity: &str,
    duration: Duration,
) -> Elector<FakeLeases, impl Fn() -> Instant> {
    let clock = clock.clone();
    Elector::new(
        api.clone(),
        move || clock.now(),
        "scale-in",
        identity,
        duration,
    )
}

/// The step's answer, or a failure if it has none after far longer than
/// any budget here: an unbounded step fails the test instead of hanging it.
async fn returns<T>(step: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), step)
        .await
        .expect("the step never returned")
}

#[tokio::test]
async fn the_first_candidate_creates_the_lease_and_renews_it_each_step() {
    let (api, clock) = (FakeLeases::default(), Clock::new());
    let mut a = elector(&api, &clock, "a", DURATION);
    let t0 = clock.now();
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    assert_eq!(
        a.term(t0),
        Some(Term {
            since: t0,
            until: t0 + RENEW_DEADLINE
        })
    );
    clock.advance(Duration::from_secs(2));
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    let term = a.term(clock.now()).unwrap();
    assert_eq!(term.since, t0, "a renewal continues the term");
    assert_eq!(term.until, clock.now() + RENEW_DEADLINE);
    assert_eq!(api.spec().lease_transitions, Some(0));
}

/// The API server stops answering: the holder's step gives up when its
/// term ends (not later), and from then on it may not write.
#[tokio::test]
async fn a_hung_renewal_times_out_when_the_term_ends_and_the_holder_stops_writing() {
    let (api, clock) = (FakeLeases::default(), Clock::new());
    let mut a = elector(&api, &clock, "a", DURATION);
    let t0 = clock.now();
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    api.hang();
    // Late in the term: 200 ms of it left.
    clock.advance(RENEW_DEADLINE - Duration::from_millis(200));
    let step = returns(a.step()).await;
    assert!(
        matches!(step, Err(StepError::TimedOut(d)) if d == Duration::from_millis(200)),
        "{step:?}"
    );
    // The unanswered step changed nothing: the term ends at its deadline.
    assert!(a.term(clock.now()).is_some());
    assert_eq!(a.term(t0 + RENEW_DEADLINE), None);
}

/// A candidate's step is bounded too: by one renew deadline.
#[tokio::test]
async fn a_hung_first_step_times_out_after_one_renew_deadline() {
    let (api, clock) = (FakeLeases::default(), Clock::new());
    // 300 ms lease: a 200 ms renew deadline.
    let mut a = elector(&api, &clock, "a", Duration::from_millis(300));
    api.hang();
    let step = returns(a.step()).await;
    assert!(
        matches!(step, Err(StepError::TimedOut(d)) if d == Duration::from_millis(200)),
        "{step:?}"
    );
    assert_eq!(a.term(clock.now()), None);
}

#[tokio::test]
async fn a_lease_whose_record_stood_still_for_its_duration_is_taken_over() {
    let api = FakeLeases::default();
    let (clock_a, clock_b) = (Clock::new(), Clock::new());
    let mut a = elector(&api, &clock_a, "a", DURATION);
    let mut b = elector(&api, &clock_b, "b", DURATION);
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    assert_eq!(b.step().await.unwrap(), Step::Following { conflict: false });
    // a renews: b's wait starts again from the new record.
    clock_b.advance(DURATION - Duration::from_secs(1));
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    clock_b.advance(Duration::from_secs(2));
    assert_eq!(
        b.step().await.unwrap(),
        Step::Following { conflict: false },
        "16 s since b first saw a's Lease, but a renewed 2 s ago"
    );
    // a stops renewing; b waits one whole duration from when it saw the
    // last record, by its own clock.
    clock_b.advance(DURATION - Duration::from_millis(1));
    assert_eq!(b.step().await.unwrap(), Step::Following { conflict: false });
    clock_b.advance(Duration::from_millis(1));
    assert_eq!(b.step().await.unwrap(), Step::Leading);
    assert_eq!(api.holder(), "b");
    assert_eq!(api.spec().lease_transitions, Some(1));
    // a, which stopped renewing, stopped writing a renew deadline after
    // its last renewal; it now finds b holding the Lease.
    assert_eq!(a.term(clock_a.now() + RENEW_DEADLINE), None);
    clock_a.advance(RENEW_DEADLINE);
    assert_eq!(a.step().await.unwrap(), Step::Following { conflict: false });
}

/// Someone else wrote the Lease between this replica's read and its
/// renewal: it stops at once, not at the end of its term.
#[tokio::test]
async fn a_conflict_on_renewal_ends_the_term_at_once() {
    let (api, clock) = (FakeLeases::default(), Clock::new());
    let mut a = elector(&api, &clock, "a", DURATION);
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    clock.advance(Duration::from_secs(2));
    api.refuse_next_replace(409);
    assert_eq!(a.step().await.unwrap(), Step::Following { conflict: true });
    assert_eq!(a.term(clock.now()), None);
}

/// The API server answered with an error: as with no answer, the holder
/// keeps its term until the deadline (nobody else can take the Lease
/// before) and tries again.
#[tokio::test]
async fn a_refused_renewal_keeps_the_term_until_its_deadline() {
    let (api, clock) = (FakeLeases::default(), Clock::new());
    let mut a = elector(&api, &clock, "a", DURATION);
    let t0 = clock.now();
    assert_eq!(a.step().await.unwrap(), Step::Leading);
    clock.advance(Duration::from_secs(2));
    api.refuse_next_replace(500);
    assert!(matches!(a.step().await, Err(StepError::Api(_))));
    assert!(a.term(clock.now()).is_some());
    assert_eq!(a.term(t0 + RENEW_DEADLINE), None);
    assert_eq!(
        a.budget(clock.now()),
        RENEW_DEADLINE - Duration::from_secs(2),
        "the next try must end within what is left of the term"
    );
}

#[test]
fn each_start_is_a_new_holder_named_after_its_pod() {
    let (a, b) = (identity(), identity());
    assert_ne!(a, b);
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kube-arbiter".into());
    let suffix = a.strip_prefix(&format!("{host}_")).unwrap();
    assert!(uuid::Uuid::parse_str(suffix).is_ok(), "{a}");
}
