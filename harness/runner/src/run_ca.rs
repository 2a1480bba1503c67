//! The forward-proxy mode's certificate authority (`docs/replay-and-fixtures.md` §12.4,
//! "The forward-proxy mode"): generated for one run with `rcgen`, its certificate written only
//! to a temporary folder of its own (removed when the run ends), its key never written at all.
//! The gateway trusts it through `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE` and
//! `NODE_EXTRA_CA_CERTS`; the model server signs with it a leaf certificate for each listed host
//! a `CONNECT` asks for, and terminates TLS with it (`rustls`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// The file name of the CA certificate in the run's folder.
const BUNDLE_FILE: &str = "keyless-run-ca.pem";

/// Why the run's certificate authority or a leaf certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RunCaError {
    /// `rcgen` refused a certificate.
    #[error("the forward proxy's certificate could not be generated: {0}")]
    Generate(#[from] rcgen::Error),
    /// The certificate could not be written to the run's folder.
    #[error("the forward proxy's CA certificate could not be written to {path}: {source}")]
    Write {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// `rustls` refused the leaf certificate or its key.
    #[error("the forward proxy's TLS setup for {host:?} failed: {source}")]
    Tls {
        /// The host.
        host: String,
        /// Why.
        source: tokio_rustls::rustls::Error,
    },
}

/// One run's certificate authority, and the TLS setups made with it so far (one per host).
pub struct RunCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// Holds the folder the certificate is in; dropping it removes the folder.
    _folder: tempfile::TempDir,
    bundle: PathBuf,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for RunCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("RunCa")
            .field("bundle", &self.bundle)
            .finish_non_exhaustive()
    }
}

impl RunCa {
    /// A new authority, its certificate written to a fresh temporary folder.
    pub fn generate() -> Result<RunCa, RunCaError> {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "keyless run CA (one run only)");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let write_error = |path: &Path, source| RunCaError::Write {
            path: path.display().to_string(),
            source,
        };
        let folder = tempfile::Builder::new()
            .prefix("keyless-proxy-ca-")
            .tempdir()
            .map_err(|source| write_error(Path::new("a temporary folder"), source))?;
        let bundle = folder.path().join(BUNDLE_FILE);
        std::fs::write(&bundle, issuer.pem()).map_err(|source| write_error(&bundle, source))?;
        Ok(RunCa {
            issuer,
            _folder: folder,
            bundle,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate's file (PEM), what the gateway's trust variables name.
    pub fn bundle(&self) -> &Path {
        &self.bundle
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The TLS setup presenting a certificate for `host` signed by this authority (made once
    /// per host; HTTP/1.1 only, as the model server speaks).
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, RunCaError> {
        if let Some(config) = self.leaves.lock().get(host) {
            return Ok(config.clone());
        }
        let mut params = CertificateParams::new(vec![host.to_owned()])?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let leaf = params.signed_by(&key, &self.issuer)?;
        let tls = |source| RunCaError::Tls {
            host: host.to_owned(),
            source,
        };
        let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls)?
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), self.issuer.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .map_err(tls)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        self.leaves.lock().insert(host.to_owned(), config.clone());
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The certificate is in its own folder, gone with the authority; the key is never written.
    #[test]
    fn the_ca_certificate_lives_in_its_own_folder_and_the_key_is_never_written() {
        let ca = RunCa::generate().expect("ca");
        let folder = ca.bundle().parent().expect("folder").to_owned();
        let written = std::fs::read_to_string(ca.bundle()).expect("bundle");
        assert!(written.contains("BEGIN CERTIFICATE"), "{written}");
        assert!(!written.contains("PRIVATE KEY"), "{written}");
        let files = std::fs::read_dir(&folder).expect("folder").count();
        assert_eq!(files, 1, "only the certificate is in {folder:?}");
        assert!(ca.server_config("api.tavily.com").is_ok());
        assert!(!format!("{ca:?}").contains("PRIVATE"));
        drop(ca);
        assert!(!folder.exists(), "{folder:?} outlived the run");
    }
}
