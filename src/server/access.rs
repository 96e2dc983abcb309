//! Who may call each group of routes, checked before a body is read.
//!
//! - `/scheduler/*` (filter, prioritize, preempt, bind): kube-scheduler,
//!   known by a client certificate that `--client-ca` verified and whose
//!   name is in `--scheduler-client-name`.
//! - `/admission/*`: the API server; open by default (it calls webhooks
//!   without a client certificate unless told to), or only for the names
//!   in `--admission-client-name`.
//!
//! People and tools (`/debug/*`, `/scale-in`, `/metrics`) are checked in
//! [`super::people`]. docs/security.md has the threat model.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use super::peer::Peer;

/// The user name kube-scheduler's client certificate carries by default
/// (the CN kubeadm and `kube-arbiter certs` give it).
pub const KUBE_SCHEDULER_NAME: &str = "system:kube-scheduler";

/// Which certificate names may use a group of routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callers {
    /// Anyone who reaches the port (`--insecure-unauthenticated-extender`
    /// for the scheduler routes; the admission routes' default).
    Anyone,
    /// Only clients whose verified certificate has one of these names.
    Named(Vec<String>),
}

impl Callers {
    /// `Ok` when `peer` may call; otherwise the refusal, saying what is
    /// missing. A request without a [`Peer`] (in-process, no TLS) has no
    /// certificate.
    pub fn admit(&self, peer: Option<&Peer>, routes: &str) -> Result<(), ApiError> {
        let Self::Named(names) = self else {
            return Ok(());
        };
        match peer.and_then(|p| p.client_name.as_deref()) {
            Some(name) if names.iter().any(|n| n == name) => Ok(()),
            Some(name) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "client certificate {name:?} may not call {routes} (allowed: {})",
                    names.join(", ")
                ),
            )),
            None => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                format!(
                    "{routes} need a client certificate signed by --client-ca with one of the names {}",
                    names.join(", ")
                ),
            )),
        }
    }
}

/// The guards of the two machine-called route groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRules {
    pub scheduler: Callers,
    pub admission: Callers,
}

impl Default for AccessRules {
    /// Secure: only kube-scheduler's certificate on the extender verbs.
    fn default() -> Self {
        Self {
            scheduler: Callers::Named(vec![KUBE_SCHEDULER_NAME.to_string()]),
            admission: Callers::Anyone,
        }
    }
}

/// Middleware for `/scheduler/*`.
pub async fn scheduler_only(
    State(rules): State<Arc<AccessRules>>,
    req: Request,
    next: Next,
) -> Response {
    guard(
        &rules.scheduler,
        "the extender verbs (/scheduler/*)",
        req,
        next,
    )
    .await
}

/// Middleware for `/admission/*`.
pub async fn admission_only(
    State(rules): State<Arc<AccessRules>>,
    req: Request,
    next: Next,
) -> Response {
    guard(&rules.admission, "the admission webhooks", req, next).await
}

async fn guard(callers: &Callers, routes: &str, req: Request, next: Next) -> Response {
    let peer = req.extensions().get::<Arc<Peer>>().map(Arc::as_ref);
    match callers.admit(peer, routes) {
        Ok(()) => next.run(req).await,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(name: Option<&str>) -> Peer {
        Peer {
            addr: "10.0.0.7:40000".parse().unwrap(),
            client_name: name.map(str::to_string),
        }
    }

    #[test]
    fn the_named_certificate_is_admitted() {
        let rules = AccessRules::default();
        let p = peer(Some(KUBE_SCHEDULER_NAME));
        assert_eq!(rules.scheduler.admit(Some(&p), "x"), Ok(()));
    }

    #[test]
    fn no_certificate_is_unauthorized_and_another_name_forbidden() {
        let rules = AccessRules::default();
        let none = rules.scheduler.admit(Some(&peer(None)), "x").unwrap_err();
        assert_eq!(none.status, StatusCode::UNAUTHORIZED);
        let in_process = rules.scheduler.admit(None, "x").unwrap_err();
        assert_eq!(in_process.status, StatusCode::UNAUTHORIZED);
        let other = rules
            .scheduler
            .admit(Some(&peer(Some("system:node:n1"))), "x")
            .unwrap_err();
        assert_eq!(other.status, StatusCode::FORBIDDEN);
        assert!(
            other.message.contains("system:node:n1"),
            "{}",
            other.message
        );
    }

    #[test]
    fn admission_is_open_by_default() {
        assert_eq!(AccessRules::default().admission.admit(None, "x"), Ok(()));
    }
}
