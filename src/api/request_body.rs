//! The extender verbs' request body, read whole.
//!
//! axum's `Bytes` keeps every chunk hyper read until the body is complete,
//! then copies them into one new buffer: a 27 MB Nodes-mode body was held
//! twice, and both copies were fresh memory the kernel had to fault in page
//! by page (70 % of the request's page faults). A body of
//! [`REUSED_FROM`] bytes or more is copied chunk by chunk into a buffer of
//! its declared length, so hyper reuses its own read buffer, and the buffer
//! is kept for the next large body ([`SPARE_BUFFERS`] of them at most).
//! Smaller bodies are read as before.

use std::ops::Deref;
use std::sync::Mutex;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use crate::server::ApiError;
use crate::server::declared_length::declared_length;

/// Bodies from this size (declared in Content-Length) are read into a kept
/// buffer.
pub const REUSED_FROM: usize = 1 << 20;

/// Buffers kept between requests: kube-scheduler asks one question at a
/// time, so one is reused in the common case, and a second covers a filter
/// overlapping a prioritize.
const SPARE_BUFFERS: usize = 2;

/// A buffer larger than this is not kept (the memory would stay resident
/// for a rare request).
const KEPT_MAX: usize = 64 << 20;

/// The buffers kept between requests.
pub struct Spares(Mutex<Vec<Vec<u8>>>);

static SPARES: Spares = Spares::new();

impl Spares {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A spare with room for `len` bytes (the largest spare, grown if
    /// needed), or a new buffer.
    fn take(&self, len: usize) -> Vec<u8> {
        let largest = {
            let mut list = self.list();
            let at = (0..list.len()).max_by_key(|&i| list[i].capacity());
            at.map(|i| list.swap_remove(i))
        };
        let mut buffer = largest.unwrap_or_default();
        // A declared length is a promise, not bytes: reserve no more than a
        // buffer worth keeping, and let a larger body grow it.
        buffer.reserve_exact(len.min(KEPT_MAX));
        buffer
    }

    fn give_back(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() > KEPT_MAX {
            return;
        }
        buffer.clear();
        let mut list = self.list();
        if list.len() < SPARE_BUFFERS {
            list.push(buffer);
        }
    }

    /// `req`'s body, of `len` declared bytes, copied into a spare chunk by
    /// chunk.
    async fn read(&'static self, req: Request, len: usize) -> Result<RequestBody, Response> {
        let mut buffer = self.take(len);
        let mut incoming = req.into_body();
        while let Some(frame) = incoming.frame().await {
            match frame {
                Ok(frame) => {
                    if let Some(data) = frame.data_ref() {
                        buffer.extend_from_slice(data);
                    }
                }
                Err(e) => {
                    self.give_back(buffer);
                    let message = format!("cannot read the request body: {e}");
                    return Err(ApiError::bad_request(message).into_response());
                }
            }
        }
        Ok(RequestBody::Kept(buffer, self))
    }
}

/// The whole body; a kept buffer goes back to its spares when dropped.
pub enum RequestBody {
    Read(Bytes),
    Kept(Vec<u8>, &'static Spares),
}

impl Deref for RequestBody {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Read(bytes) => bytes,
            Self::Kept(buffer, _) => buffer,
        }
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        if let Self::Kept(buffer, spares) = self {
            spares.give_back(std::mem::take(buffer));
        }
    }
}

impl<S: Send + Sync> FromRequest<S> for RequestBody {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        // The router has already refused a declared length over the
        // endpoint's limit, and hyper reads no more than the declared length.
        let declared = declared_length(&req).and_then(|len| usize::try_from(len).ok());
        match declared.filter(|&len| len >= REUSED_FROM) {
            Some(len) => SPARES.read(req, len).await,
            None => Bytes::from_request(req, state)
                .await
                .map(Self::Read)
                .map_err(IntoResponse::into_response),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::header::CONTENT_LENGTH;

    use super::*;

    fn request(body: Body, declared: Option<usize>) -> Request {
        let mut builder = Request::builder().method("POST").uri("/scheduler/filter");
        if let Some(len) = declared {
            builder = builder.header(CONTENT_LENGTH, len);
        }
        builder.body(body).unwrap()
    }

    /// A body in many chunks, as hyper hands a large one over.
    fn chunked(text: &[u8]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = text
            .chunks(7_919)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_large_body_is_read_whole_and_its_buffer_reused() {
        let spares: &'static Spares = Box::leak(Box::new(Spares::new()));
        let text: Vec<u8> = (0..REUSED_FROM + 12_345).map(|i| (i % 251) as u8).collect();
        let first = spares
            .read(request(chunked(&text), Some(text.len())), text.len())
            .await
            .unwrap_or_else(|_| panic!("read"));
        assert_eq!(&*first, &text[..]);
        let at = first.as_ptr();
        drop(first);
        let shorter = &text[..REUSED_FROM];
        let second = spares
            .read(
                request(chunked(shorter), Some(shorter.len())),
                shorter.len(),
            )
            .await
            .unwrap_or_else(|_| panic!("read"));
        assert_eq!(&*second, shorter);
        assert_eq!(second.as_ptr(), at, "the first buffer was not reused");
        drop(second);
        assert_eq!(spares.list().len(), 1);
    }

    #[tokio::test]
    async fn large_bodies_go_through_the_kept_buffers() {
        let text = vec![b' '; REUSED_FROM];
        let body = RequestBody::from_request(request(chunked(&text), Some(text.len())), &())
            .await
            .unwrap_or_else(|_| panic!("read"));
        assert!(matches!(body, RequestBody::Kept(..)));
        assert_eq!(&*body, &text[..]);
    }

    #[test]
    fn at_most_two_buffers_are_kept_and_none_too_large() {
        let spares = Spares::new();
        spares.give_back(Vec::with_capacity(KEPT_MAX + 1));
        for _ in 0..3 {
            spares.give_back(Vec::with_capacity(10));
        }
        assert_eq!(spares.list().len(), SPARE_BUFFERS);
        assert!(spares.list().iter().all(|b| b.capacity() <= KEPT_MAX));
    }

    #[tokio::test]
    async fn small_or_undeclared_bodies_are_read_as_axum_reads_them() {
        for declared in [Some(3), None] {
            let body = RequestBody::from_request(request(Body::from("abc"), declared), &())
                .await
                .unwrap_or_else(|_| panic!("read"));
            assert!(matches!(body, RequestBody::Read(_)));
            assert_eq!(&*body, b"abc");
        }
    }

    #[tokio::test]
    async fn a_body_that_fails_midway_is_refused() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from(vec![b'{'; 1000])),
            Err(std::io::Error::other("connection reset")),
        ];
        let refused = RequestBody::from_request(
            request(
                Body::from_stream(futures::stream::iter(chunks)),
                Some(REUSED_FROM),
            ),
            &(),
        )
        .await;
        let Err(response) = refused else {
            panic!("a broken body was read")
        };
        assert_eq!(response.status(), axum::http::StatusCode::BAD_REQUEST);
    }
}
