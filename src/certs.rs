//! `kube-arbiter certs`: a private CA, the server certificate it signs (PEM
//! files ready for a `kubernetes.io/tls` Secret), kube-scheduler's client
//! certificate for the extender verbs (mTLS, docs/security.md), and the
//! base64 `caBundle` the webhook and scheduler configurations need.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const SERVER_CERT: &str = "tls.crt";
pub const SERVER_KEY: &str = "tls.key";
pub const SCHEDULER_CLIENT_CERT: &str = "scheduler-client.crt";
pub const SCHEDULER_CLIENT_KEY: &str = "scheduler-client.key";
/// The client certificate's Subject CommonName: the user name Kubernetes'
/// x509 authenticator gives kube-scheduler, and the default of
/// `serve --scheduler-client-name`.
pub const SCHEDULER_CLIENT_NAME: &str = "system:kube-scheduler";

const CA_YEARS: i16 = 10;
const SERVER_YEARS: i16 = 1;
const CLIENT_YEARS: i16 = 1;

/// The names kube-scheduler and kube-apiserver use to reach the
/// `kube-arbiter` Service in `kube-system`.
pub fn default_dns_names() -> Vec<String> {
    [
        "kube-arbiter",
        "kube-arbiter.kube-system",
        "kube-arbiter.kube-system.svc",
        "kube-arbiter.kube-system.svc.cluster.local",
    ]
    .map(String::from)
    .to_vec()
}

#[derive(Debug, Clone)]
pub struct CertsRequest {
    pub out: PathBuf,
    /// Empty: [`default_dns_names`] (unless IPs are given).
    pub dns: Vec<String>,
    pub ip: Vec<IpAddr>,
    /// Overwrite existing files.
    pub force: bool,
}

#[derive(Debug)]
pub struct WrittenCerts {
    pub dir: PathBuf,
    pub names: Vec<String>,
    /// base64 of `ca.crt`, for `caBundle` fields.
    pub ca_bundle: String,
    /// base64 of `scheduler-client.crt`, for the extender's
    /// `tlsConfig.certData`. The key's base64 is never printed: it would
    /// land in terminal scrollback and CI logs.
    pub client_cert_data: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    #[error("{} already exist(s); pass --force to overwrite", .0.join(", "))]
    Exists(Vec<String>),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid DNS name {name:?}: {reason}")]
    Name { name: String, reason: String },
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot compute the validity period: {0}")]
    Date(#[from] jiff::Error),
}

/// Generate a CA and a server certificate and write all four files.
pub fn write(request: &CertsRequest) -> Result<WrittenCerts, CertsError> {
    let dir = &request.out;
    let targets = [
        CA_CERT,
        CA_KEY,
        SERVER_CERT,
        SERVER_KEY,
        SCHEDULER_CLIENT_CERT,
        SCHEDULER_CLIENT_KEY,
    ]
    .map(|f| dir.join(f));
    if !request.force {
        let existing: Vec<String> = targets
            .iter()
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect();
        if !existing.is_empty() {
            return Err(CertsError::Exists(existing));
        }
    }
    let names = if request.dns.is_empty() && request.ip.is_empty() {
        default_dns_names()
    } else {
        request.dns.clone()
    };
    let issued = issue(&names, &request.ip)?;
    std::fs::create_dir_all(dir).map_err(|source| CertsError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let [ca_crt, ca_key, tls_crt, tls_key, client_crt, client_key] = &targets;
    write_file(ca_crt, issued.ca_cert.as_bytes(), 0o644)?;
    write_file(ca_key, issued.ca_key.as_bytes(), 0o600)?;
    write_file(tls_crt, issued.server_cert.as_bytes(), 0o644)?;
    write_file(tls_key, issued.server_key.as_bytes(), 0o600)?;
    write_file(client_crt, issued.client_cert.as_bytes(), 0o644)?;
    write_file(client_key, issued.client_key.as_bytes(), 0o600)?;
    let mut all_names = names;
    all_names.extend(request.ip.iter().map(IpAddr::to_string));
    Ok(WrittenCerts {
        dir: dir.clone(),
        names: all_names,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(issued.ca_cert),
        client_cert_data: base64::engine::general_purpose::STANDARD.encode(issued.client_cert),
    })
}

/// What to do with the files, printed after writing them.
pub fn next_steps(written: &WrittenCerts) -> String {
    let dir = written.dir.display();
    format!(
        "Wrote {dir}/{CA_CERT}, {dir}/{CA_KEY}, {dir}/{SERVER_CERT}, {dir}/{SERVER_KEY},\n\
         {dir}/{SCHEDULER_CLIENT_CERT}, {dir}/{SCHEDULER_CLIENT_KEY}\n\
         Server certificate names: {names}\n\
         kube-scheduler client certificate: CN {SCHEDULER_CLIENT_NAME}, client auth only\n\
         \n\
         caBundle (for the webhook configurations' clientConfig.caBundle and the\n\
         scheduler's extender tlsConfig.caData):\n\
         {bundle}\n\
         \n\
         certData (for the scheduler's extender tlsConfig.certData):\n\
         {cert_data}\n\
         keyData (tlsConfig.keyData) is not printed; make it with: base64 -w0 {dir}/{SCHEDULER_CLIENT_KEY}\n\
         \n\
         Next:\n\
         1. kubectl -n kube-system create secret generic kube-arbiter-tls --type=kubernetes.io/tls \\\n   \
            --from-file=tls.crt={dir}/{SERVER_CERT} --from-file=tls.key={dir}/{SERVER_KEY} \\\n   \
            --from-file=ca.crt={dir}/{CA_CERT}\n   \
            The server reads the client CA from it: serve --client-ca /etc/kube-arbiter/tls/ca.crt\n   \
            (the shipped manifests/deployment.yaml passes exactly that).\n\
         2. Put the caBundle above into the webhook configurations.\n\
         3. kube-scheduler's extender tlsConfig: caData = the caBundle, certData = the value above,\n   \
            keyData = base64 -w0 {dir}/{SCHEDULER_CLIENT_KEY}; or copy the files onto the control-plane\n   \
            node and use caFile/certFile/keyFile. Either way the scheduler configuration then holds a\n   \
            private key: keep it mode 0600, readable by kube-scheduler only.\n\
         4. Keep {dir}/{CA_KEY} secret and out of the cluster; it signs future certificates.\n\
         See certs/README.md for rotation.\n",
        names = written.names.join(", "),
        bundle = written.ca_bundle,
        cert_data = written.client_cert_data,
    )
}

struct Issued {
    ca_cert: String,
    ca_key: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn issue(dns: &[String], ips: &[IpAddr]) -> Result<Issued, CertsError> {
    let today = today_utc();

    let mut ca = CertificateParams::default();
    ca.distinguished_name = common_name("kube-arbiter CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut ca, today, CA_YEARS)?;
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;

    let mut server = CertificateParams::default();
    server.distinguished_name = common_name(dns.first().map_or("kube-arbiter", String::as_str));
    server.subject_alt_names = dns
        .iter()
        .map(|name| dns_san(name))
        .chain(ips.iter().map(|ip| Ok(SanType::IpAddress(*ip))))
        .collect::<Result<_, _>>()?;
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    set_validity(&mut server, today, SERVER_YEARS)?;
    let server_key = KeyPair::generate()?;

    // kube-scheduler's identity for the extender verbs: CN is the user name
    // (as Kubernetes' x509 authenticator reads it), clientAuth only, so it
    // cannot serve, and the server certificate (serverAuth only) cannot
    // act as a client.
    let mut client = CertificateParams::default();
    client.distinguished_name = common_name(SCHEDULER_CLIENT_NAME);
    client.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    set_validity(&mut client, today, CLIENT_YEARS)?;
    let client_key = KeyPair::generate()?;

    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca, &ca_key);
    let server_cert = server.signed_by(&server_key, &issuer)?;
    let client_cert = client.signed_by(&client_key, &issuer)?;

    Ok(Issued {
        ca_cert: ca_pem,
        ca_key: ca_key.serialize_pem(),
        server_cert: server_cert.pem(),
        server_key: server_key.serialize_pem(),
        client_cert: client_cert.pem(),
        client_key: client_key.serialize_pem(),
    })
}

/// A SAN for `name`, refused unless it is a name TLS clients could match.
fn dns_san(name: &str) -> Result<SanType, CertsError> {
    let invalid = |reason: String| CertsError::Name {
        name: name.to_string(),
        reason,
    };
    rustls_pki_types::DnsName::try_from(name).map_err(|e| invalid(e.to_string()))?;
    let ia5 = name
        .to_string()
        .try_into()
        .map_err(|e: rcgen::Error| invalid(e.to_string()))?;
    Ok(SanType::DnsName(ia5))
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

/// Valid `years` from the start of today (UTC), so clocks a little behind
/// still accept it.
pub(crate) fn today_utc() -> jiff::civil::Date {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}

pub(crate) fn set_validity(
    params: &mut CertificateParams,
    today: jiff::civil::Date,
    years: i16,
) -> Result<(), CertsError> {
    let end = today.checked_add(jiff::Span::new().years(years))?;
    let ymd = |d: jiff::civil::Date| {
        // jiff keeps month in 1..=12 and day in 1..=31.
        rcgen::date_time_ymd(i32::from(d.year()), d.month() as u8, d.day() as u8)
    };
    params.not_before = ymd(today);
    params.not_after = ymd(end);
    Ok(())
}

fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), CertsError> {
    let io_err = |source| CertsError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(io_err)?;
    // `mode` only applies to new files; an overwritten one keeps its own.
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io_err)?;
    file.write_all(contents).map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dir: &Path) -> CertsRequest {
        CertsRequest {
            out: dir.to_path_buf(),
            dns: vec![],
            ip: vec![],
            force: false,
        }
    }

    fn san_dns_names(pem: &[u8]) -> Vec<String> {
        let der = rustls_pki_types::CertificateDer::from_pem_slice(pem).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let san = cert.subject_alternative_name().unwrap().unwrap();
        san.value
            .general_names
            .iter()
            .filter_map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                _ => None,
            })
            .collect()
    }

    use rustls_pki_types::pem::PemObject;

    #[test]
    fn default_names_are_the_in_cluster_service_names() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        let pem = std::fs::read(dir.path().join(SERVER_CERT)).unwrap();
        assert_eq!(san_dns_names(&pem), default_dns_names());
    }

    #[test]
    fn key_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        for key in [CA_KEY, SERVER_KEY, SCHEDULER_CLIENT_KEY] {
            let mode = std::fs::metadata(dir.path().join(key))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{key}");
        }
    }

    #[test]
    fn existing_files_are_kept_without_force() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        let before = std::fs::read(dir.path().join(SERVER_CERT)).unwrap();
        let err = write(&request(dir.path())).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read(dir.path().join(SERVER_CERT)).unwrap(), before);
        let forced = CertsRequest {
            force: true,
            ..request(dir.path())
        };
        write(&forced).unwrap();
        assert_ne!(std::fs::read(dir.path().join(SERVER_CERT)).unwrap(), before);
    }

    #[test]
    fn ca_bundle_is_base64_of_ca_crt() {
        let dir = tempfile::tempdir().unwrap();
        let written = write(&request(dir.path())).unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&written.ca_bundle)
            .unwrap();
        assert_eq!(decoded, std::fs::read(dir.path().join(CA_CERT)).unwrap());
    }

    fn parsed(pem: &[u8]) -> x509_parser::certificate::X509Certificate<'static> {
        let der = rustls_pki_types::CertificateDer::from_pem_slice(pem).unwrap();
        let der: &'static [u8] = Vec::leak(der.to_vec());
        x509_parser::parse_x509_certificate(der).unwrap().1
    }

    /// What kube-arbiter's listener does with a presented client
    /// certificate: webpki path building to `ca_pem` with the clientAuth
    /// key purpose.
    fn verify_as_client(ca_pem: &[u8], cert_pem: &[u8]) -> Result<(), rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls_pki_types::CertificateDer::from_pem_slice(ca_pem).unwrap())
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .unwrap();
        let cert = rustls_pki_types::CertificateDer::from_pem_slice(cert_pem).unwrap();
        verifier
            .verify_client_cert(&cert, &[], rustls_pki_types::UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn scheduler_client_certificate_names_kube_scheduler_for_client_auth_only() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        let pem = std::fs::read(dir.path().join(SCHEDULER_CLIENT_CERT)).unwrap();
        let cert = parsed(&pem);
        let cn: Vec<&str> = cert
            .subject()
            .iter_common_name()
            .map(|cn| cn.as_str().unwrap())
            .collect();
        assert_eq!(cn, [SCHEDULER_CLIENT_NAME]);
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth, "{eku:?}");
        assert!(cert.subject_alternative_name().unwrap().is_none());
        assert!(!cert.is_ca());
    }

    #[test]
    fn scheduler_client_certificate_verifies_against_the_ca_as_a_client() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
        verify_as_client(&read(CA_CERT), &read(SCHEDULER_CLIENT_CERT)).unwrap();
        // The serving certificate is serverAuth only: whoever holds the
        // server's key still cannot call the extender verbs with it.
        let err = verify_as_client(&read(CA_CERT), &read(SERVER_CERT)).unwrap_err();
        assert!(format!("{err:?}").contains("Purpose"), "{err:?}");
        // Another run's CA does not vouch for this client.
        let other = tempfile::tempdir().unwrap();
        write(&request(other.path())).unwrap();
        let other_ca = std::fs::read(other.path().join(CA_CERT)).unwrap();
        assert!(verify_as_client(&other_ca, &read(SCHEDULER_CLIENT_CERT)).is_err());
    }

    #[test]
    fn client_key_matches_the_client_certificate() {
        let dir = tempfile::tempdir().unwrap();
        write(&request(dir.path())).unwrap();
        let key = std::fs::read_to_string(dir.path().join(SCHEDULER_CLIENT_KEY)).unwrap();
        let key = KeyPair::from_pem(&key).unwrap();
        let pem = std::fs::read(dir.path().join(SCHEDULER_CLIENT_CERT)).unwrap();
        assert_eq!(
            &*parsed(&pem).public_key().subject_public_key.data,
            key.public_key_raw()
        );
    }

    #[test]
    fn an_existing_client_key_alone_is_kept_without_force() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SCHEDULER_CLIENT_KEY), "mine").unwrap();
        let err = write(&request(dir.path())).unwrap_err();
        assert!(err.to_string().contains(SCHEDULER_CLIENT_KEY), "{err}");
        assert_eq!(
            std::fs::read(dir.path().join(SCHEDULER_CLIENT_KEY)).unwrap(),
            b"mine"
        );
    }

    #[test]
    fn next_steps_give_cert_data_and_the_client_ca_but_never_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let written = write(&request(dir.path())).unwrap();
        let text = next_steps(&written);
        let b64 = |f: &str| {
            base64::engine::general_purpose::STANDARD
                .encode(std::fs::read(dir.path().join(f)).unwrap())
        };
        assert!(text.contains(&b64(SCHEDULER_CLIENT_CERT)), "{text}");
        assert!(!text.contains(&b64(SCHEDULER_CLIENT_KEY)), "{text}");
        assert!(
            text.contains("--client-ca /etc/kube-arbiter/tls/ca.crt"),
            "{text}"
        );
        assert!(text.contains("--from-file=ca.crt="), "{text}");
    }

    #[test]
    fn invalid_dns_name_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let bad = CertsRequest {
            dns: vec!["bad name!".into()],
            ..request(dir.path())
        };
        let err = write(&bad).unwrap_err();
        assert!(err.to_string().contains("bad name!"), "{err}");
    }
}
