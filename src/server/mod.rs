//! The HTTPS edge: router, TLS, limits, metrics, shutdown.

pub mod access;
pub mod declared_length;
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

pub use error::{ApiError, ApiJson};
pub use router::router;
pub use serve::{ServeError, ServeOptions, Server, serve, termination_signal};
pub use state::AppState;
