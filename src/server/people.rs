//! People and tools (`/debug/*`, `/scale-in`, `/metrics`): who is asking.
//!
//! With the live API server, a bearer token is reviewed by the API server
//! (TokenReview) and each question is authorized by it (SubjectAccessReview),
//! as kube-rbac-proxy and metrics-server do. In file mode there is no API
//! server to ask, so these routes answer only callers on the loopback
//! address: the person who started `serve` on their machine.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::peer::Peer;
use super::{ApiError, AppState};

/// How people and tools are authenticated.
#[derive(Clone, Default)]
pub enum PeopleAuth {
    /// No API server: loopback callers only.
    #[default]
    LoopbackOnly,
}

/// Who asked, once the guard let them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A loopback caller in file mode: everything the view holds is theirs
    /// to read (they gave us the file).
    Local,
}

impl Caller {
    /// Whether this caller may read pods in `namespace` (`verb` is `get`
    /// for one pod, `list` for a selection).
    pub async fn may_read_pods(
        &self,
        _state: &AppState,
        _verb: &'static str,
        _namespace: &str,
    ) -> Result<(), ApiError> {
        match self {
            Self::Local => Ok(()),
        }
    }
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
pub async fn people_only(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let peer = req.extensions().get::<Arc<Peer>>().cloned();
    let caller = match &state.people {
        PeopleAuth::LoopbackOnly => loopback(peer.as_deref()),
    };
    match caller {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(refusal) => {
            tracing::warn!(
                peer = peer.map(|p| p.addr.to_string()).unwrap_or_default(),
                path = %req.uri().path(),
                "refused: {}",
                refusal.message
            );
            refusal.into_response()
        }
    }
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
    fn file_mode_admits_loopback_only() {
        assert_eq!(loopback(Some(&peer("127.0.0.1:5000"))), Ok(Caller::Local));
        assert_eq!(loopback(Some(&peer("[::1]:5000"))), Ok(Caller::Local));
        let refused = loopback(Some(&peer("10.1.2.3:5000"))).unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(loopback(None).is_err());
    }
}
