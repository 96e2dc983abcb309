//! Who a bearer token belongs to and whether that user may do something,
//! asked of the API server the way kube-rbac-proxy and metrics-server do
//! (k8s.io/apiserver's delegating authenticator and authorizer): a
//! TokenReview (authentication.k8s.io/v1), then a SubjectAccessReview
//! (authorization.k8s.io/v1). kube-arbiter never decides authorization
//! itself. Answers are cached briefly, keyed by SHA-256 digests (never the
//! token itself); an API server that fails to answer is never cached.

mod ttl_cache;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use ring::digest;

use self::ttl_cache::{Key, TtlCache};
use crate::cluster::live::describe;
use crate::server::metrics::{Metrics, ReviewLabel};

/// How long a user found for a token is reused, and a token the API server
/// refused: k8s.io/apiserver's `DelegatingAuthenticationOptions.CacheTTL`
/// default (`NewDelegatingAuthenticationOptions`), used for both answers.
pub const AUTHENTICATED_TTL: Duration = Duration::from_secs(10);
pub const UNAUTHENTICATED_TTL: Duration = Duration::from_secs(10);
/// How long an allowed and a denied access answer are reused:
/// `DelegatingAuthorizationOptions.AllowCacheTTL` / `DenyCacheTTL` defaults
/// (`NewDelegatingAuthorizationOptions`).
pub const ALLOWED_TTL: Duration = Duration::from_secs(10);
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// Entries per cache (tokens, access answers): bounds memory whatever
/// callers send.
pub const CACHE_CAPACITY: usize = 4096;
/// One review's deadline, as upstream's `TokenRequestTimeout` and
/// `DelegatingAuthorizationOptions.ClientTimeout` (10 s each).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// An authenticated caller, as the API server's TokenReview names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What a caller wants to do, in SubjectAccessReview terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// `verb` on `resource` of API `group` ("" is core); `namespace` None
    /// asks for every namespace (or a cluster-scoped resource).
    Resource {
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        namespace: Option<String>,
        name: Option<String>,
    },
    /// `verb` on a URL path, as RBAC's nonResourceURLs (`get` `/metrics`).
    NonResource { verb: &'static str, path: String },
}

impl fmt::Display for Access {
    /// "get pods in namespace \"b\"", "list pods at the cluster scope" (no
    /// namespace: every one, worded as RBAC's refusals word it),
    /// "get priorityclasses.scheduling.k8s.io \"high\" at the cluster scope",
    /// "get path \"/metrics\"".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::Resource {
                verb,
                group,
                resource,
                namespace,
                name,
            } => {
                write!(f, "{verb} {resource}")?;
                if !group.is_empty() {
                    write!(f, ".{group}")?;
                }
                if let Some(name) = name {
                    write!(f, " {name:?}")?;
                }
                match namespace {
                    Some(ns) => write!(f, " in namespace {ns:?}"),
                    None => write!(f, " at the cluster scope"),
                }
            }
            Access::NonResource { verb, path } => write!(f, "{verb} path {path:?}"),
        }
    }
}

/// Why a caller is turned away.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// No usable token: answer 401.
    #[error("{0}")]
    Unauthenticated(String),
    /// The user may not do it: answer 403. Names user, verb, resource and
    /// namespace.
    #[error("{0}")]
    Forbidden(String),
    /// The API server did not answer the review: answer 503 (not cached).
    #[error("{0}")]
    Unavailable(String),
}

impl AuthFailure {
    pub fn status(&self) -> StatusCode {
        match self {
            AuthFailure::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            AuthFailure::Forbidden(_) => StatusCode::FORBIDDEN,
            AuthFailure::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// A cached SubjectAccessReview answer: allowed, or the API server's reason
/// for not allowing (may be empty).
#[derive(Clone)]
enum Decision {
    Allowed,
    Denied(String),
}

impl Decision {
    fn result(&self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied(_) => "denied",
        }
    }
}

fn token_result(answer: &Result<User, String>) -> &'static str {
    match answer {
        Ok(_) => "authenticated",
        Err(_) => "unauthenticated",
    }
}

/// Asks the API server, through kube-arbiter's own credentials (which need
/// `create` on `tokenreviews` and `subjectaccessreviews`).
pub struct DelegatedAuth {
    token_reviews: Api<TokenReview>,
    access_reviews: Api<SubjectAccessReview>,
    /// SHA-256(token) → the user, or the API server's reason for refusing it.
    users: TtlCache<Result<User, String>>,
    /// SHA-256(user, access) → the decision.
    decisions: TtlCache<Decision>,
    /// [`Metrics::auth_reviews`] and [`Metrics::auth_cache_hits`].
    reviews: Family<ReviewLabel, Counter>,
    cache_hits: Family<ReviewLabel, Counter>,
}

impl DelegatedAuth {
    /// Reviews and cache hits are counted in `metrics`.
    pub fn new(client: kube::Client, metrics: &Metrics) -> Self {
        DelegatedAuth {
            token_reviews: Api::all(client.clone()),
            access_reviews: Api::all(client),
            users: TtlCache::new(CACHE_CAPACITY),
            decisions: TtlCache::new(CACHE_CAPACITY),
            reviews: metrics.auth_reviews.clone(),
            cache_hits: metrics.auth_cache_hits.clone(),
        }
    }

    fn count(counters: &Family<ReviewLabel, Counter>, review: &'static str, result: &'static str) {
        counters
            .get_or_create(&ReviewLabel { review, result })
            .inc();
    }

    /// The user `bearer_token` belongs to (upstream `WebhookTokenAuthenticator.AuthenticateToken`
    /// behind `cachedTokenAuthenticator`).
    pub async fn authenticate(&self, bearer_token: &str) -> Result<User, AuthFailure> {
        if bearer_token.is_empty() {
            return Err(AuthFailure::Unauthenticated("empty bearer token".into()));
        }
        let key: Key = sha256(bearer_token.as_bytes());
        let answer = match self.users.get(&key, Instant::now()) {
            Some(answer) => {
                Self::count(&self.cache_hits, "token", token_result(&answer));
                answer
            }
            None => {
                let answer = self.review_token(bearer_token).await.inspect_err(|_| {
                    Self::count(&self.reviews, "token", "unavailable");
                })?;
                Self::count(&self.reviews, "token", token_result(&answer));
                let ttl = match answer {
                    Ok(_) => AUTHENTICATED_TTL,
                    Err(_) => UNAUTHENTICATED_TTL,
                };
                self.users.insert(key, answer.clone(), ttl, Instant::now());
                answer
            }
        };
        answer.map_err(|reason| {
            AuthFailure::Unauthenticated(format!(
                "the API server did not accept the bearer token: {reason}"
            ))
        })
    }

    /// Whether `user` may do `access` (upstream `WebhookAuthorizer.Authorize`:
    /// allowed only when the answer says allowed and not denied).
    pub async fn authorize(&self, user: &User, access: &Access) -> Result<(), AuthFailure> {
        let key = access_key(user, access);
        let decision = match self.decisions.get(&key, Instant::now()) {
            Some(decision) => {
                Self::count(&self.cache_hits, "access", decision.result());
                decision
            }
            None => {
                let decision = self.review_access(user, access).await.inspect_err(|_| {
                    Self::count(&self.reviews, "access", "unavailable");
                })?;
                Self::count(&self.reviews, "access", decision.result());
                let ttl = match decision {
                    Decision::Allowed => ALLOWED_TTL,
                    Decision::Denied(_) => DENIED_TTL,
                };
                self.decisions
                    .insert(key, decision.clone(), ttl, Instant::now());
                decision
            }
        };
        match decision {
            Decision::Allowed => Ok(()),
            Decision::Denied(reason) => {
                let mut message = format!("user {:?} may not {access}", user.name);
                if !reason.is_empty() {
                    message.push_str(": ");
                    message.push_str(&reason);
                }
                Err(AuthFailure::Forbidden(message))
            }
        }
    }

    /// One TokenReview: Ok(Ok(user)) authenticated, Ok(Err(reason)) not.
    async fn review_token(&self, token: &str) -> Result<Result<User, String>, AuthFailure> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let answer = ask(
            "TokenReview",
            self.token_reviews.create(&PostParams::default(), &review),
        )
        .await?;
        let status = answer.status.unwrap_or_default();
        if status.authenticated != Some(true) {
            let reason = status
                .error
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "not authenticated".into());
            return Ok(Err(reason));
        }
        let info = status.user.unwrap_or_default();
        Ok(Ok(User {
            name: info.username.unwrap_or_default(),
            uid: info.uid.unwrap_or_default(),
            groups: info.groups.unwrap_or_default(),
            extra: info.extra.unwrap_or_default(),
        }))
    }

    async fn review_access(&self, user: &User, access: &Access) -> Result<Decision, AuthFailure> {
        let review = SubjectAccessReview {
            spec: access_spec(user, access),
            ..Default::default()
        };
        let answer = ask(
            "SubjectAccessReview",
            self.access_reviews.create(&PostParams::default(), &review),
        )
        .await?;
        let status = answer.status.unwrap_or_default();
        if status.allowed && status.denied != Some(true) {
            return Ok(Decision::Allowed);
        }
        let reason = [status.reason, status.evaluation_error]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        Ok(Decision::Denied(reason))
    }
}

/// Send one review within [`REVIEW_TIMEOUT`]; any failure is Unavailable.
async fn ask<T>(
    what: &str,
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, AuthFailure> {
    match tokio::time::timeout(REVIEW_TIMEOUT, request).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(AuthFailure::Unavailable(format!(
            "cannot check credentials: the API server did not answer the {what}: {}",
            describe(&e)
        ))),
        Err(_) => Err(AuthFailure::Unavailable(format!(
            "cannot check credentials: the API server did not answer the {what} within {}s",
            REVIEW_TIMEOUT.as_secs()
        ))),
    }
}

/// The SubjectAccessReview spec for `user` doing `access` (upstream
/// `WebhookAuthorizer.Authorize` builds the same from request attributes).
fn access_spec(user: &User, access: &Access) -> SubjectAccessReviewSpec {
    let (resource_attributes, non_resource_attributes) = match access {
        Access::Resource {
            verb,
            group,
            resource,
            namespace,
            name,
        } => (
            Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                namespace: namespace.clone(),
                name: name.clone(),
                ..Default::default()
            }),
            None,
        ),
        Access::NonResource { verb, path } => (
            None,
            Some(NonResourceAttributes {
                verb: Some(verb.to_string()),
                path: Some(path.clone()),
            }),
        ),
    };
    SubjectAccessReviewSpec {
        user: Some(user.name.clone()),
        uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
        groups: Some(user.groups.clone()),
        extra: Some(user.extra.clone()).filter(|e| !e.is_empty()),
        resource_attributes,
        non_resource_attributes,
    }
}

fn sha256(bytes: &[u8]) -> Key {
    let mut key = [0u8; 32];
    key.copy_from_slice(digest::digest(&digest::SHA256, bytes).as_ref());
    key
}

/// SHA-256 over every field of the question, each length-prefixed so no two
/// different questions hash the same input (upstream keys its cache by the
/// whole SubjectAccessReview spec).
fn access_key(user: &User, access: &Access) -> Key {
    let mut ctx = digest::Context::new(&digest::SHA256);
    let mut field = |bytes: &[u8]| {
        ctx.update(&(bytes.len() as u64).to_le_bytes());
        ctx.update(bytes);
    };
    field(user.name.as_bytes());
    field(user.uid.as_bytes());
    field(&(user.groups.len() as u64).to_le_bytes());
    for group in &user.groups {
        field(group.as_bytes());
    }
    field(&(user.extra.len() as u64).to_le_bytes());
    for (k, values) in &user.extra {
        field(k.as_bytes());
        field(&(values.len() as u64).to_le_bytes());
        for v in values {
            field(v.as_bytes());
        }
    }
    match access {
        Access::Resource {
            verb,
            group,
            resource,
            namespace,
            name,
        } => {
            field(b"resource");
            field(verb.as_bytes());
            field(group.as_bytes());
            field(resource.as_bytes());
            for part in [namespace, name] {
                match part {
                    Some(s) => {
                        field(b"some");
                        field(s.as_bytes());
                    }
                    None => field(b"none"),
                }
            }
        }
        Access::NonResource { verb, path } => {
            field(b"nonresource");
            field(verb.as_bytes());
            field(path.as_bytes());
        }
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(ctx.finish().as_ref());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }

    fn get_pods(namespace: Option<&str>) -> Access {
        Access::Resource {
            verb: "get",
            group: "",
            resource: "pods",
            namespace: namespace.map(String::from),
            name: None,
        }
    }

    #[test]
    fn the_access_key_tells_apart_every_part_of_the_question() {
        let alice = user("alice", &["dev"]);
        let base = access_key(&alice, &get_pods(Some("a")));
        assert_eq!(base, access_key(&alice, &get_pods(Some("a"))));
        let different = [
            access_key(&alice, &get_pods(Some("b"))),
            access_key(&alice, &get_pods(None)),
            access_key(&alice, &get_pods(Some(""))),
            access_key(&user("bob", &["dev"]), &get_pods(Some("a"))),
            access_key(&user("alice", &["ops"]), &get_pods(Some("a"))),
            access_key(&user("alice", &["de", "v"]), &get_pods(Some("a"))),
            access_key(
                &alice,
                &Access::NonResource {
                    verb: "get",
                    path: "/metrics".into(),
                },
            ),
        ];
        for (n, key) in different.iter().enumerate() {
            assert_ne!(*key, base, "question {n} shares the key of get pods in a");
        }
    }

    #[test]
    fn the_token_cache_key_is_a_digest_not_the_token() {
        let key = sha256(b"secret-token");
        assert_ne!(&key[..12], b"secret-token");
        assert_eq!(key, sha256(b"secret-token"));
        assert_ne!(key, sha256(b"secret-token2"));
    }

    #[test]
    fn refusals_name_user_verb_resource_and_namespace() {
        assert_eq!(
            get_pods(Some("tenant-b")).to_string(),
            r#"get pods in namespace "tenant-b""#
        );
        let list_all = Access::Resource {
            verb: "list",
            group: "scheduling.k8s.io",
            resource: "priorityclasses",
            namespace: None,
            name: Some("high".into()),
        };
        assert_eq!(
            list_all.to_string(),
            r#"list priorityclasses.scheduling.k8s.io "high" at the cluster scope"#
        );
        let metrics = Access::NonResource {
            verb: "get",
            path: "/metrics".into(),
        };
        assert_eq!(metrics.to_string(), r#"get path "/metrics""#);
    }

    #[test]
    fn a_resource_question_carries_the_user_and_its_attributes() {
        let mut alice = user("alice", &["system:authenticated"]);
        alice.uid = "u-1".into();
        let spec = access_spec(&alice, &get_pods(Some("a")));
        assert_eq!(spec.user.as_deref(), Some("alice"));
        assert_eq!(spec.uid.as_deref(), Some("u-1"));
        assert_eq!(spec.groups, Some(vec!["system:authenticated".to_string()]));
        assert_eq!(spec.extra, None);
        assert!(spec.non_resource_attributes.is_none());
        let attrs = spec.resource_attributes.unwrap_or_default();
        assert_eq!(attrs.verb.as_deref(), Some("get"));
        assert_eq!(attrs.group.as_deref(), Some(""));
        assert_eq!(attrs.resource.as_deref(), Some("pods"));
        assert_eq!(attrs.namespace.as_deref(), Some("a"));
    }
}
