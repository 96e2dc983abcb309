//! A response body of several byte chunks, sent one after another as they
//! are: a 5,000-name filter answer is the runs of failed nodes each core
//! wrote, and joining them first copied hundreds of KB on one core. Its
//! length is exact, so the answer carries a Content-Length as a one-piece
//! body does, and its bytes on the wire are the same.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

pub(super) struct ChunksBody {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl ChunksBody {
    pub(super) fn new(chunks: Vec<Bytes>) -> Self {
        let chunks: VecDeque<Bytes> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Self { chunks, remaining }
    }
}

impl Body for ChunksBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn chunks_come_in_order_with_their_exact_length() {
        let body = ChunksBody::new(vec![
            Bytes::from_static(b"{\"a\":"),
            Bytes::new(),
            Bytes::from(vec![b'1'; 10_000]),
            Bytes::from_static(b"}"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(10_006));
        let mut frames = 0;
        let mut body = body;
        let mut got = Vec::new();
        while let Some(frame) = body.frame().await {
            got.extend_from_slice(&frame.unwrap().into_data().unwrap());
            frames += 1;
        }
        assert_eq!(frames, 3, "the empty chunk is dropped");
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
        assert_eq!(got.len(), 10_006);
        assert!(got.starts_with(b"{\"a\":1") && got.ends_with(b"1}"));
    }
}
