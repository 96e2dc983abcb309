//! The HTTPS edge: router, TLS, limits, guards, metrics, shutdown, and the
//! error every handler answers with (`ApiError`). It mounts the route
//! groups it is given, over a state it knows only as [`ServerState`], and
//! never names the handlers (`api` uses it, not the other way).

pub mod access;
pub mod delegated_auth;
pub mod error;
pub mod metrics;
mod middleware;
pub mod peer;
pub mod people;
pub mod probes;
mod read_buffer;
mod router;
mod serve;
pub mod state;
pub mod tls;
mod tls_reload;
mod whole_body;

pub use error::{ApiError, ApiJson};
pub use router::{Routes, router};
pub use serve::{ServeError, ServeOptions, Server, requests_runtime, serve, termination_signal};
pub use state::ServerState;
pub use whole_body::{WholeBody, declared_length};
