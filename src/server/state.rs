//! What the HTTPS layer needs from the state its routes share: the
//! handlers' layer owns that state and says, through [`ServerState`], how
//! it is guarded, limited, measured and probed.

use std::sync::Arc;

use crate::config::ServerSettings;

use super::access::AccessRules;
use super::error::ApiError;
use super::metrics::Metrics;
use super::people::PeopleAuth;

/// The state a [`super::router`] serves, as the transport sees it.
pub trait ServerState: Clone + Send + Sync + 'static {
    /// Body limits, the request time limit, the shutdown grace.
    fn settings(&self) -> &ServerSettings;
    /// Who may call the extender verbs and the webhooks.
    fn access(&self) -> &Arc<AccessRules>;
    /// How people and tools are authenticated and authorized.
    fn people(&self) -> &PeopleAuth;
    /// The instruments every request and the TLS files update.
    fn metrics(&self) -> &Arc<Metrics>;
    /// `Ok` when the answers are worth asking for (`/readyz`); the error
    /// says why not.
    fn readiness(&self) -> Result<(), ApiError>;
    /// The `/metrics` text, with what is read at scrape time read now.
    fn metrics_text(&self) -> String;
}
