//! The one JSON error every non-protocol failure is answered with:
//! `{"error": "..."}` and a fitting status code.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// The view has not been published yet (file not loaded, API not synced).
    pub fn not_ready() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "cluster view is not ready yet",
        )
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s: 400 for unreadable JSON or
/// wrong field types, 415 for a wrong content type (a body over the limit
/// is answered by the route group's limit, `server::router`).
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    let status = rejection.status();
    let message = match &rejection {
        JsonRejection::JsonDataError(e) => {
            format!("request body has the wrong shape: {}", source_text(e))
        }
        JsonRejection::JsonSyntaxError(e) => {
            format!("request body is not valid JSON: {}", source_text(e))
        }
        JsonRejection::MissingJsonContentType(_) => {
            "expected a request with header Content-Type: application/json".to_string()
        }
        other => other.body_text(),
    };
    ApiError::new(status, message)
}

/// serde's message with its line/column, without axum's generic prefix.
fn source_text(e: &dyn std::error::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}
