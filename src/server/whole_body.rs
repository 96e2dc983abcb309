//! A request body read whole into one buffer as it arrives.
//!
//! axum's `Bytes` extractor keeps each chunk hyper hands over and copies
//! them all into one new buffer once the last has come. For a Nodes-mode
//! body (tens of MB) that copy, and the first touch of the new buffer's
//! pages, came after the last byte, on the request's critical path: 9 % of
//! the server's CPU for such a filter (perf). Here each chunk is appended
//! while the next is still on the wire, into a buffer reserved for the
//! declared length (the route's limit has already refused a longer one).
//! A body that comes in one chunk is kept as it is, uncopied.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use http_body_util::{BodyExt, LengthLimitError};

use super::ApiError;

/// The whole request body.
pub struct WholeBody(pub Bytes);

impl<S: Sync> FromRequest<S> for WholeBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let declared = declared_length(&request);
        let mut body = request.into_body();
        let mut first: Option<Bytes> = None;
        let mut joined: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(unreadable)?.into_data() else {
                continue; // trailers
            };
            match first.take() {
                None if joined.is_empty() => first = Some(data),
                None => joined.extend_from_slice(&data),
                Some(earlier) => {
                    let expected = declared.unwrap_or(0).max(earlier.len() + data.len());
                    // Reserved, not touched: pages are used as bytes come.
                    // A failed reservation only means growing as they come.
                    let _ = joined.try_reserve_exact(expected);
                    joined.extend_from_slice(&earlier);
                    joined.extend_from_slice(&data);
                }
            }
        }
        Ok(Self(first.unwrap_or_else(|| Bytes::from(joined))))
    }
}

/// The body length `request` declares (`Content-Length`), if it says one.
pub fn declared_length(request: &Request) -> Option<usize> {
    request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
}

/// 413 when the route's limit cut the body (the router words it), 400 for
/// a body that broke off.
fn unreadable(e: axum::Error) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(error) = source {
        if error.is::<LengthLimitError>() {
            return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "request body is too large");
        }
        source = error.source();
    }
    ApiError::bad_request(format!("cannot read the request body: {e}"))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use http_body_util::Limited;

    use super::*;

    async fn read(body: Body, declared: Option<usize>) -> Result<Bytes, ApiError> {
        let mut request = Request::post("/").body(body).unwrap();
        if let Some(len) = declared {
            request.headers_mut().insert(CONTENT_LENGTH, len.into());
        }
        WholeBody::from_request(request, &()).await.map(|b| b.0)
    }

    fn chunks(parts: Vec<Result<&'static [u8], std::io::Error>>) -> Body {
        let parts = parts.into_iter().map(|p| p.map(Bytes::from_static));
        Body::from_stream(futures::stream::iter(parts))
    }

    #[tokio::test]
    async fn chunks_are_joined_in_order_whatever_length_is_declared() {
        for declared in [None, Some(0), Some(3), Some(9), Some(1 << 20)] {
            let body = chunks(vec![Ok(b"{\"a\""), Ok(b""), Ok(b":"), Ok(b"[1,2]}")]);
            assert_eq!(read(body, declared).await.unwrap(), &b"{\"a\":[1,2]}"[..]);
        }
        assert_eq!(read(Body::empty(), None).await.unwrap(), &b""[..]);
    }

    #[tokio::test]
    async fn a_body_in_one_chunk_is_not_copied() {
        let chunk = Bytes::from(vec![7u8; 4096]);
        let read = read(Body::from(chunk.clone()), Some(4096)).await.unwrap();
        assert_eq!(read.as_ptr(), chunk.as_ptr());
    }

    #[tokio::test]
    async fn a_body_that_breaks_off_is_400_and_one_over_the_limit_413() {
        let broken = chunks(vec![
            Ok(b"{\"a\""),
            Err(std::io::Error::other("reset by peer")),
        ]);
        let e = read(broken, Some(100)).await.unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("reset by peer"), "{}", e.message);
        let long = chunks(vec![Ok(b"0123456789"), Ok(b"0123456789")]);
        let e = read(Body::new(Limited::new(long, 15)), None)
            .await
            .unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
    }
}
