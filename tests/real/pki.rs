//! The control plane's certificates: one cluster CA for kube-apiserver's
//! serving certificate and every component's client certificate (the
//! Subject's CN is the user, O the groups, as kube-apiserver reads them),
//! the service-account signing key, and kubeconfig files.

use std::net::IpAddr;
use std::path::Path;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// PEM certificate and key.
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The cluster CA.
pub struct ClusterCa {
    pub cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl ClusterCa {
    pub fn new() -> Self {
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "real-cluster-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert_pem = params.self_signed(&key).unwrap().pem();
        Self {
            cert_pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// kube-apiserver's serving pair: loopback and the in-cluster names.
    pub fn apiserver(&self) -> Pair {
        let mut params = CertificateParams::new(vec![
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default.svc".to_string(),
        ])
        .unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress("127.0.0.1".parse::<IpAddr>().unwrap()));
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate for user `name` in `groups`.
    pub fn client(&self, name: &str, groups: &[&str]) -> Pair {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Pair {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// The service-account token signing key: (private PEM, public PEM).
pub fn service_account_keys() -> (String, String) {
    let key = KeyPair::generate().unwrap();
    (key.serialize_pem(), key.public_key_pem())
}

/// Who a kubeconfig authenticates as.
pub enum User<'a> {
    Certificate(&'a Pair),
    Token(&'a str),
}

/// Writes a kubeconfig for `server` that trusts `ca_pem`.
pub fn write_kubeconfig(path: &Path, server: &str, ca_pem: &str, user: User) {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user = match user {
        User::Certificate(pair) => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&pair.cert_pem),
            b64(&pair.key_pem)
        ),
        User::Token(token) => format!("    token: {token}\n"),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: user\n  user:\n{user}contexts:\n- name: real\n  context:\n    cluster: real\n    user: user\ncurrent-context: real\n",
        b64(ca_pem)
    );
    std::fs::write(path, text).unwrap();
}
