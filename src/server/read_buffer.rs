//! Each TLS connection's socket is read in large chunks.
//!
//! rustls asks its transport for at most 4 KiB per read, so without a buffer
//! under it a 23 KB filter body costs six `recvfrom` system calls and a
//! 27 MB Nodes-mode body about 3,400 (strace: 606 → 109 calls for 100
//! filter requests, 3,390 → 1,270 for one Nodes-mode request). A buffer
//! between the socket and TLS turns them into reads of up to
//! [`READ_BUFFER`] bytes. Writes pass straight through, unbuffered, so
//! nothing waits for a flush.

use std::future::{Ready, ready};
use std::io;

use axum_server::accept::Accept;
use tokio::io::BufReader;
use tokio::net::TcpStream;

/// Bytes read from the socket at once (two full TLS records); also what an
/// idle keep-alive connection holds, so 1,000 connections hold 32 MiB.
pub const READ_BUFFER: usize = 32 * 1024;

/// Accepts a TCP connection with `TCP_NODELAY` set (a response written as
/// headers then body would otherwise wait for the client's delayed ACK,
/// ~40 ms on Linux) and reads under a [`READ_BUFFER`]-byte buffer.
#[derive(Clone, Copy, Debug, Default)]
pub struct BufferedAcceptor;

impl<S> Accept<TcpStream, S> for BufferedAcceptor {
    type Stream = BufReader<TcpStream>;
    type Service = S;
    type Future = Ready<io::Result<(Self::Stream, S)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let accepted = stream
            .set_nodelay(true)
            .map(|()| (BufReader::with_capacity(READ_BUFFER, stream), service));
        ready(accepted)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    #[tokio::test]
    async fn the_stream_reads_and_writes_what_the_peer_sends_with_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let body = vec![7u8; 3 * READ_BUFFER + 5];
            c.write_all(&body).await.unwrap();
            let mut echo = [0u8; 4];
            c.read_exact(&mut echo).await.unwrap();
            echo
        });
        let (tcp, _) = listener.accept().await.unwrap();
        let (mut stream, ()) = BufferedAcceptor.accept(tcp, ()).await.unwrap();
        assert!(stream.get_ref().nodelay().unwrap());
        let mut got = vec![0u8; 3 * READ_BUFFER + 5];
        stream.read_exact(&mut got).await.unwrap();
        assert!(got.iter().all(|&b| b == 7));
        stream.write_all(b"done").await.unwrap();
        assert_eq!(&client.await.unwrap(), b"done");
    }
}
