//! A request body read whole, the split's helper threads woken first when
//! the declared length says the request will likely split over the cores.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, Request};

use crate::parallel::Splitter;
use crate::server::{ApiError, WholeBody, declared_length};

/// The whole body ([`WholeBody`]). When the request declares `MIN` bytes or
/// more, the state's [`Splitter::prewarm`] runs before the body is read,
/// for the `SPLITS` splits the request then likely makes: a helper takes
/// 100–150 µs from its wake-up to running here, about what receiving a
/// 5,000-name filter takes, so it is running when the decision splits
/// instead of starting half-way through it.
pub struct SplitBody<const MIN: usize, const SPLITS: usize>(pub Bytes);

impl<S, const MIN: usize, const SPLITS: usize> FromRequest<S> for SplitBody<MIN, SPLITS>
where
    S: Sync,
    Splitter: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if declared_length(&request).is_some_and(|len| len >= MIN) {
            Splitter::from_ref(state).prewarm(SPLITS);
        }
        WholeBody::from_request(request, state)
            .await
            .map(|WholeBody(body)| Self(body))
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::http::header::CONTENT_LENGTH;
    use http_body_util::Limited;

    use super::*;

    async fn read<const MIN: usize>(body: Body, declared: usize) -> Result<Bytes, ApiError> {
        let mut request = Request::post("/").body(body).unwrap();
        request
            .headers_mut()
            .insert(CONTENT_LENGTH, declared.into());
        SplitBody::<MIN, 1>::from_request(request, &Splitter::default())
            .await
            .map(|b| b.0)
    }

    fn chunks(parts: &[&'static [u8]]) -> Body {
        let parts: Vec<Result<Bytes, std::io::Error>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        Body::from_stream(futures::stream::iter(parts))
    }

    /// Above and below the wake-up's threshold the body is read whole, and
    /// a body over the route's limit is refused as `WholeBody` refuses it.
    #[tokio::test]
    async fn reads_as_whole_body_does_on_both_sides_of_the_threshold() {
        let parts: &[&'static [u8]] = &[b"{\"NodeNames\":", b"[\"a\",", b"\"b\"]}"];
        let whole = &b"{\"NodeNames\":[\"a\",\"b\"]}"[..];
        assert_eq!(read::<8>(chunks(parts), whole.len()).await.unwrap(), whole);
        assert_eq!(
            read::<4096>(chunks(parts), whole.len()).await.unwrap(),
            whole
        );
        let limited = Body::new(Limited::new(chunks(parts), 10));
        let e = read::<8>(limited, whole.len()).await.unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
    }
}
