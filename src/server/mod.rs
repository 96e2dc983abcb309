//! The HTTPS edge: router, TLS, limits, metrics, shutdown.

pub mod error;
pub mod metrics;
pub mod state;

pub use error::{ApiError, ApiJson};
pub use state::AppState;
