//! The TLS side of the one HTTPS port: which certificate is served (files
//! from disk, or a generated localhost one for trying things out), whether
//! client certificates are required, and the checks every (re)load passes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::certs;

/// Names the generated certificate is valid for.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Where the serving certificate comes from and who may connect.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// `None`: generate a self-signed localhost certificate in memory.
    pub cert_key: Option<CertKeyFiles>,
    /// Require client certificates signed by this CA bundle.
    pub client_ca: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct CertKeyFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a usable PEM file: {reason}")]
    Pem { path: String, reason: String },
    #[error("{path}: holds no certificate")]
    NoCertificate { path: String },
    #[error("{cert} and {key} are not a usable pair: {source}")]
    Pair {
        cert: String,
        key: String,
        source: rustls::Error,
    },
    #[error("{path}: cannot read the certificate's validity: {reason}")]
    Validity { path: String, reason: String },
    #[error("client CA {path}: {reason}")]
    ClientCa { path: String, reason: String },
    #[error("generating the self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// Make ring the process-wide rustls provider. Harmless when already done.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A ready rustls configuration and the facts metrics report about it.
pub struct ServingCert {
    pub config: Arc<ServerConfig>,
    /// notAfter of the end-entity certificate, unix seconds.
    pub not_after: i64,
}

/// The client-certificate check for `--client-ca`: a client that presents a
/// certificate must present one signed by one of the bundle's CAs. Clients
/// without one still connect (the API server calling a webhook, kubelet
/// probes, people with tokens); the route guards decide what they may call.
pub fn client_verifier(ca: &Path) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let pem = std::fs::read(ca).map_err(|source| TlsError::Read {
        path: ca.display().to_string(),
        source,
    })?;
    client_verifier_from_pem(ca, &pem)
}

/// [`client_verifier`] from the bundle's bytes; `ca` only names it in errors.
pub fn client_verifier_from_pem(
    ca: &Path,
    pem: &[u8],
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let path = ca.display().to_string();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TlsError::Pem {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        roots.add(cert).map_err(|e| TlsError::ClientCa {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCertificate { path });
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::ClientCa {
            path,
            reason: e.to_string(),
        })
}

/// A certificate for localhost made in memory; nothing outside this process
/// trusts it, so it is for trying kube-arbiter out only.
pub fn self_signed(verifier: Option<Arc<dyn ClientCertVerifier>>) -> Result<ServingCert, TlsError> {
    let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| n.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names)?;
    certs::set_validity(&mut params, certs::today_utc(), 1).map_err(|e| TlsError::Validity {
        path: "self-signed certificate".into(),
        reason: e.to_string(),
    })?;
    let signing_key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&signing_key)?.der().clone();
    let key = PrivateKeyDer::Pkcs8(signing_key.serialize_der().into());
    let not_after = not_after(&cert, "self-signed certificate")?;
    let config = server_config(vec![cert], key, verifier).map_err(|source| TlsError::Pair {
        cert: "self-signed certificate".into(),
        key: "its key".into(),
        source,
    })?;
    Ok(ServingCert { config, not_after })
}

/// Read the pair from disk as it is now.
pub fn read_pair(files: &CertKeyFiles) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.display().to_string(),
            source,
        })
    };
    Ok((read(&files.cert)?, read(&files.key)?))
}

/// The bytes of every file a served configuration is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsMaterial {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
    /// The `--client-ca` bundle, when one is given.
    pub client_ca: Option<Vec<u8>>,
}

/// Read the pair and the client CA bundle from disk as they are now.
pub fn read_material(
    files: &CertKeyFiles,
    client_ca: Option<&Path>,
) -> Result<TlsMaterial, TlsError> {
    let (cert, key) = read_pair(files)?;
    let client_ca = client_ca
        .map(|path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.display().to_string(),
                source,
            })
        })
        .transpose()?;
    Ok(TlsMaterial {
        cert,
        key,
        client_ca,
    })
}

/// The served configuration made of `material` (read from `files` and
/// `client_ca`, which only name them in errors).
pub fn serving_from_material(
    files: &CertKeyFiles,
    client_ca: Option<&Path>,
    material: &TlsMaterial,
) -> Result<ServingCert, TlsError> {
    let verifier = match (client_ca, &material.client_ca) {
        (Some(path), Some(pem)) => Some(client_verifier_from_pem(path, pem)?),
        _ => None,
    };
    pair_from_pem(files, &material.cert, &material.key, verifier)
}

/// Parse a PEM certificate chain and key and check the key belongs to the
/// first certificate; `files` only names them in errors.
pub fn pair_from_pem(
    files: &CertKeyFiles,
    cert_pem: &[u8],
    key_pem: &[u8],
    verifier: Option<Arc<dyn ClientCertVerifier>>,
) -> Result<ServingCert, TlsError> {
    let cert_path = files.cert.display().to_string();
    let key_path = files.key.display().to_string();
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: cert_path.clone(),
            reason: e.to_string(),
        })?;
    let Some(leaf) = chain.first() else {
        return Err(TlsError::NoCertificate { path: cert_path });
    };
    let not_after = not_after(leaf, &cert_path)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        path: key_path.clone(),
        reason: e.to_string(),
    })?;
    // with_single_cert refuses a key whose public half is not the leaf's.
    let config = server_config(chain, key, verifier).map_err(|source| TlsError::Pair {
        cert: cert_path,
        key: key_path,
        source,
    })?;
    Ok(ServingCert { config, not_after })
}

/// TLS 1.2 and 1.3, ALPN h2 then http/1.1, one certificate for every name.
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
) -> Result<Arc<ServerConfig>, rustls::Error> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?;
    let builder = match verifier {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn not_after(cert: &CertificateDer<'_>, name: &str) -> Result<i64, TlsError> {
    let (_, parsed) =
        x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|e| TlsError::Validity {
            path: name.to_string(),
            reason: e.to_string(),
        })?;
    Ok(parsed.validity().not_after.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem_pair(names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let generated = rcgen::generate_simple_self_signed(names).unwrap();
        (generated.cert.pem(), generated.signing_key.serialize_pem())
    }

    fn files() -> CertKeyFiles {
        CertKeyFiles {
            cert: "tls.crt".into(),
            key: "tls.key".into(),
        }
    }

    #[test]
    fn matching_pair_is_served_with_h2_and_http1() {
        let (cert, key) = pem_pair(&["localhost"]);
        let serving = pair_from_pem(&files(), cert.as_bytes(), key.as_bytes(), None).unwrap();
        assert_eq!(
            serving.config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(serving.not_after > 0);
    }

    #[test]
    fn key_of_another_certificate_is_refused() {
        let (cert, _) = pem_pair(&["localhost"]);
        let (_, other_key) = pem_pair(&["localhost"]);
        let err = pair_from_pem(&files(), cert.as_bytes(), other_key.as_bytes(), None)
            .err()
            .unwrap();
        assert!(matches!(err, TlsError::Pair { .. }), "{err}");
    }

    #[test]
    fn file_without_certificate_is_refused_naming_it() {
        let (_, key) = pem_pair(&["localhost"]);
        let err = pair_from_pem(&files(), b"", key.as_bytes(), None)
            .err()
            .unwrap();
        assert!(err.to_string().contains("tls.crt"), "{err}");
    }

    #[test]
    fn garbage_key_is_refused_naming_it() {
        let (cert, _) = pem_pair(&["localhost"]);
        let err = pair_from_pem(&files(), cert.as_bytes(), b"not a key", None)
            .err()
            .unwrap();
        assert!(err.to_string().contains("tls.key"), "{err}");
    }

    #[test]
    fn self_signed_certificate_is_usable() {
        let serving = self_signed(None).unwrap();
        assert!(serving.not_after > 0);
    }
}
