//! Refuse a body whose declared length is over its route group's limit
//! before reading any of it. Bodies without a length are cut by
//! `DefaultBodyLimit` as they are read.
//!
//! A tower layer of its own, not an axum `from_fn` middleware: `from_fn`
//! clones the inner service and boxes its future on every request, about
//! 3k instructions, 4 % of an admission review in the whole server.

use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use axum::response::{IntoResponse, Response};
use futures::future::{Either, Ready, ready};
use tower::{Layer, Service};

use super::ApiError;

/// The layer for one route group, with that group's limit in bytes.
#[derive(Debug, Clone, Copy)]
pub struct RefuseDeclaredOversizeLayer {
    limit: usize,
}

impl RefuseDeclaredOversizeLayer {
    pub fn new(limit: usize) -> Self {
        Self { limit }
    }
}

impl<S> Layer<S> for RefuseDeclaredOversizeLayer {
    type Service = RefuseDeclaredOversize<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RefuseDeclaredOversize {
            inner,
            limit: self.limit,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RefuseDeclaredOversize<S> {
    inner: S,
    limit: usize,
}

impl<S> Service<Request> for RefuseDeclaredOversize<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match declared_length(&req) {
            Some(length) if length > self.limit as u64 => {
                Either::Left(ready(Ok(too_large(length, self.limit))))
            }
            _ => Either::Right(self.inner.call(req)),
        }
    }
}

/// The body length `req` declares in Content-Length, if any (and valid).
pub fn declared_length(req: &Request) -> Option<u64> {
    req.headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

fn too_large(length: u64, limit: usize) -> Response {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "request body is {length} bytes, over the limit of {limit} bytes for this endpoint"
        ),
    )
    .into_response()
}
