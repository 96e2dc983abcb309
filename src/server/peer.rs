//! Who is on the other end of a connection: its address and, when it
//! presented a certificate that `--client-ca` verified during the
//! handshake, the certificate's identity. Learned once per connection and
//! attached to every request on it, so the route guards can decide without
//! touching TLS.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::Request;
use axum_server::accept::Accept;
use rustls_pki_types::CertificateDer;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tower::Service;

/// The caller of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The verified client certificate's Subject CommonName, the user name
    /// Kubernetes' own x509 authenticator reads from a client certificate.
    /// `None` when no certificate was presented (or it has no CN).
    pub client_name: Option<String>,
}

impl Peer {
    pub fn is_loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }
}

/// The Subject CommonName of a DER certificate.
pub fn common_name(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = parsed.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_string)
}

/// Wraps the TLS acceptor: after the handshake, every request of the
/// connection carries its [`Peer`].
#[derive(Clone, Debug)]
pub struct PeerAcceptor<A> {
    inner: A,
}

impl<A> PeerAcceptor<A> {
    pub fn new(inner: A) -> Self {
        Self { inner }
    }
}

impl<A, IO, S> Accept<TcpStream, S> for PeerAcceptor<A>
where
    A: Accept<TcpStream, S, Stream = TlsStream<IO>>,
    A::Future: Send + 'static,
    A::Service: Send + 'static,
    IO: Send + 'static,
{
    type Stream = TlsStream<IO>;
    type Service = WithPeer<A::Service>;
    type Future = Pin<Box<dyn Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let addr = stream.peer_addr();
        let handshake = self.inner.accept(stream, service);
        Box::pin(async move {
            let addr = addr?;
            let (stream, service) = handshake.await?;
            // rustls only lists peer certificates its verifier accepted.
            let client_name = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .and_then(common_name);
            let peer = Arc::new(Peer { addr, client_name });
            Ok((
                stream,
                WithPeer {
                    inner: service,
                    peer,
                },
            ))
        })
    }
}

/// A connection's service that adds its [`Peer`] to each request.
#[derive(Clone, Debug)]
pub struct WithPeer<S> {
    inner: S,
    peer: Arc<Peer>,
}

impl<S, B> Service<Request<B>> for WithPeer<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.extensions_mut().insert(Arc::clone(&self.peer));
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_name_is_read_from_the_subject() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "system:kube-scheduler");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            common_name(cert.der()).as_deref(),
            Some("system:kube-scheduler")
        );
    }

    #[test]
    fn a_certificate_without_common_name_has_no_name() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(common_name(cert.der()), None);
    }

    #[test]
    fn garbage_is_no_name() {
        assert_eq!(common_name(&CertificateDer::from(vec![1, 2, 3])), None);
    }
}
