//! People and tools (`/debug/*`, `/scale-in`, `/metrics`): who is asking.
//!
//! With the live API server, a bearer token is reviewed by the API server
//! (TokenReview) and each question is authorized by it (SubjectAccessReview),
//! as kube-rbac-proxy and metrics-server do. In file mode there is no API
//! server to ask, so these routes answer only callers on the loopback
//! address: the person who started `serve` on their machine.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::delegated_auth::{Access, AuthFailure, DelegatedAuth, User};
use super::peer::Peer;
use super::{ApiError, ServerState};

/// How people and tools are authenticated.
#[derive(Clone, Default)]
pub enum PeopleAuth {
    /// No API server: loopback callers only.
    #[default]
    LoopbackOnly,
    /// Bearer tokens reviewed, and each question authorized, by the API
    /// server.
    Delegated(Arc<DelegatedAuth>),
}

/// Who asked, once the guard let them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A loopback caller in file mode: everything the view holds is theirs
    /// to read (they gave us the file).
    Local,
    /// A user the API server vouched for; each question is asked of it.
    User(User),
}

impl Caller {
    /// `Ok` when this caller may `verb` pods in `namespace` (`get` for one
    /// pod, `list` for a selection or for pods an answer names).
    pub async fn may_read_pods(
        &self,
        people: &PeopleAuth,
        verb: &'static str,
        namespace: &str,
    ) -> Result<(), ApiError> {
        self.may(
            people,
            Access::Resource {
                verb,
                group: "",
                resource: "pods",
                namespace: Some(namespace.to_string()),
                name: None,
            },
        )
        .await
    }

    /// `Ok` when this caller may do `access`, as the API server's
    /// authorizer answers for a user (always for a [`Caller::Local`]).
    pub async fn may(&self, people: &PeopleAuth, access: Access) -> Result<(), ApiError> {
        let (Self::User(user), PeopleAuth::Delegated(auth)) = (self, people) else {
            return match self {
                Self::Local => Ok(()),
                Self::User(_) => Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "no API server to authorize this user",
                )),
            };
        };
        auth.authorize(user, &access).await.map_err(refusal)
    }
}

fn refusal(failure: AuthFailure) -> ApiError {
    ApiError::new(failure.status(), failure.to_string())
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    /// The [`Caller`] the guard attached; a route mounted without the guard
    /// has none and refuses, rather than answering anyone.
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this route needs an authenticated caller",
            )
        })
    }
}

/// Middleware for the people routes: attach the [`Caller`] or refuse.
pub async fn people_only<S: ServerState>(
    State(state): State<S>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req.extensions().get::<Arc<Peer>>().cloned();
    let caller = match state.people() {
        PeopleAuth::LoopbackOnly => loopback(peer.as_deref()),
        PeopleAuth::Delegated(auth) => match bearer_token(req.headers()) {
            Some(token) => auth
                .authenticate(token)
                .await
                .map(Caller::User)
                .map_err(refusal),
            None => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this route needs a bearer token (Authorization: Bearer $(kubectl create token ...))",
            )),
        },
    };
    match caller {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(refused) => {
            tracing::warn!(
                peer = peer.map(|p| p.addr.to_string()).unwrap_or_default(),
                path = %req.uri().path(),
                "refused: {}",
                refused.message
            );
            let unauthenticated = refused.status == StatusCode::UNAUTHORIZED;
            let mut response = refused.into_response();
            if unauthenticated {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
    }
}

/// Middleware inside [`people_only`] for `/metrics` on the HTTPS port: the
/// caller must be allowed `get` on the non-resource URL `/metrics`, as for
/// every Kubernetes component's metrics.
pub async fn metrics_reader<S: ServerState>(
    State(state): State<S>,
    caller: Caller,
    req: Request,
    next: Next,
) -> Response {
    let access = Access::NonResource {
        verb: "get",
        path: "/metrics".to_string(),
    };
    match caller.may(state.people(), access).await {
        Ok(()) => next.run(req).await,
        Err(refused) => refused.into_response(),
    }
}

/// The token of an `Authorization: Bearer` header.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn loopback(peer: Option<&Peer>) -> Result<Caller, ApiError> {
    match peer {
        Some(p) if p.is_loopback() => Ok(Caller::Local),
        _ => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "without an API server to review tokens (--cluster-state), this route answers loopback callers only",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(addr: &str) -> Peer {
        Peer {
            addr: addr.parse().unwrap(),
            client_name: None,
        }
    }

    #[test]
    fn the_bearer_token_is_read_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        for (value, token) in [
            ("Bearer abc.def", Some("abc.def")),
            ("bearer  abc ", Some("abc")),
            ("Basic dXNlcjpwdw==", None),
            ("Bearer ", None),
        ] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            assert_eq!(bearer_token(&headers), token, "{value:?}");
        }
    }

    #[test]
    fn file_mode_admits_loopback_only() {
        assert_eq!(loopback(Some(&peer("127.0.0.1:5000"))), Ok(Caller::Local));
        assert_eq!(loopback(Some(&peer("[::1]:5000"))), Ok(Caller::Local));
        let refused = loopback(Some(&peer("10.1.2.3:5000"))).unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(loopback(None).is_err());
    }
}
